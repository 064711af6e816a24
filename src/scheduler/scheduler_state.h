#pragma once

// The live scheduler's state (Scheduler::State, scheduler.h), shared by its two units:
// scheduler.cc (the informers' changes, the loop and the cycle) and scheduler_write.cc (what a
// cycle writes: binds, statuses and Events, gang repairs). Internal to src/scheduler.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "api/json_access.h"
#include "api/json_codec.h"
#include "boost/json/value.hpp"
#include "client/event_recorder.h"
#include "client/informer.h"
#include "common/parallel.h"
#include "core/framework/session.h"
#include "fmt/format.h"
#include "scheduler/backoff.h"
#include "scheduler/changes.h"
#include "scheduler/cluster_mirror.h"
#include "scheduler/conf_watcher.h"
#include "scheduler/estimates.h"
#include "scheduler/cycle.h"
#include "scheduler/metrics.h"
#include "scheduler/scheduler.h"
#include "scheduler/write_plan.h"

namespace muster::scheduler {

namespace json = boost::json;
using Clock = std::chrono::steady_clock;

// A cycle's API calls (a gang's binds, status patches) run on this many threads at once, as
// Volcano binds from goroutines: the cycle ends sooner and, in process, its writes cost fewer
// store commits. Each call keeps its own atomicity (a gang is one call).
constexpr size_t kWriteWorkers = 8;

enum class Kind { kPod, kNode, kPodGroup, kQueue, kPriorityClass, kHyperNode };

inline const char* KindName(Kind k) {
  switch (k) {
    case Kind::kPod:
      return "Pod";
    case Kind::kNode:
      return "Node";
    case Kind::kPodGroup:
      return "PodGroup";
    case Kind::kQueue:
      return "Queue";
    case Kind::kPriorityClass:
      return "PriorityClass";
    case Kind::kHyperNode:
      return "HyperNode";
  }
  return "object";
}

// One watched change, decoded on the informer's thread and applied on the loop's.
struct Delta {
  Kind kind = Kind::kPod;
  bool deleted = false;
  std::string ns, name, resource_version;
  std::variant<std::monostate, api::Pod, api::Node, api::PodGroup, api::Queue, api::PriorityClass,
               api::HyperNode>
      object;
  ChangeEffect effect;
};

inline std::string Key(const std::string& ns, const std::string& name) {
  return ns.empty() ? name : ns + "/" + name;
}


struct Scheduler::State {
  State(client::Client& c, SchedulerOptions o)
      : client(c),
        options(std::move(o)),
        conf(options.conf_path),
        mirror(MirrorOptions{options.scheduler_names, options.serve_default_scheduler}),
        backoff(options.backoff_initial, options.backoff_max),
        estimator(EstimatorOptions{.every_seconds = options.estimate_every_seconds}),
        events(c, options.event_queue_limit),
        metrics(options.metrics ? std::make_unique<SchedulerMetrics>(*options.metrics) : nullptr) {
    session_prefix = fmt::format(
        "{:x}", std::chrono::system_clock::now().time_since_epoch().count() & 0xffffffffffff);
  }

  void Log(std::string_view message) {
    if (options.log) {
      options.log(message);
    } else {
      fmt::print(stderr, "muster scheduler: {}\n", message);
    }
  }

  template <typename T>
  client::InformerHandlers Handlers(Kind kind, absl::StatusOr<T> (*decode)(const json::value&),
                                    ChangeEffect (*classify)(const json::object*,
                                                             const json::object*)) {
    client::InformerHandlers h;
    auto upsert = [this, kind, decode](const json::object& o, ChangeEffect effect) {
      absl::StatusOr<T> decoded = decode(json::value(o));
      if (!decoded.ok()) {
        Log(fmt::format("ignoring {} {}: {}", KindName(kind),
                        Key(api::MetaString(o, "namespace"), api::MetaString(o, "name")),
                        std::string(decoded.status().message())));
        return;
      }
      Delta d;
      d.kind = kind;
      d.ns = decoded->meta.namespace_;
      d.name = decoded->meta.name;
      d.resource_version = decoded->meta.resource_version;
      d.object = *std::move(decoded);
      d.effect = effect;
      Push(std::move(d));
    };
    h.on_add = [upsert, classify](const json::object& o) { upsert(o, classify(nullptr, &o)); };
    h.on_update = [upsert, classify](const json::object& before, const json::object& after) {
      upsert(after, classify(&before, &after));
    };
    h.on_delete = [this, kind, classify](const json::object& last) {
      Delta d;
      d.kind = kind;
      d.deleted = true;
      d.ns = api::MetaString(last, "namespace");
      d.name = api::MetaString(last, "name");
      d.effect = classify(&last, nullptr);
      Push(std::move(d));
    };
    return h;
  }

  void Push(Delta d) {
    bool notify = false;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (d.effect.wake && !wake) {
        wake = true;
        first_wake = Clock::now();
        notify = true;
      }
      deltas.push_back(std::move(d));
    }
    if (notify) cv.notify_one();
  }

  bool Synced() const {
    return std::all_of(informers.begin(), informers.end(),
                       [](const auto& i) { return i->Synced(); });
  }

  void Loop();
  void RunCycle(std::vector<Delta> batch, Clock::time_point start);
  void Apply(Delta& d);
  void RepairGangs();
  void Bind(const core::CycleResult& result, PlanContext& context, std::set<std::string>& placed);
  std::vector<bool> DeferGangsOnNodesFilledMeanwhile(const std::vector<GangBinding>& gangs);
  void Write(const CycleWrites& writes);
  void UpdateBackoff(const core::CycleResult& result, const PlanContext& context,
                     const std::set<std::string>& placed, Clock::time_point start);
  // The waiting gangs' estimated starts and reasons on their PodGroups' annotations
  // (estimates.h), when due and something changed; the PodGroups written are added to
  // `planned`, so that the status written next carries the same answer as its Estimated
  // condition.
  void WriteEstimates(int64_t now_unix, std::set<std::string>& planned);

  client::Client& client;
  const SchedulerOptions options;
  ConfWatcher conf;
  ClusterMirror mirror;
  GangBackoff backoff;
  WriteMemo memo;
  StartEstimator estimator;
  client::EventRecorder events;
  common::WorkerPool writers{kWriteWorkers - 1};  // with the loop's own thread
  std::unique_ptr<SchedulerMetrics> metrics;      // null without options.metrics
  std::vector<std::unique_ptr<client::Informer>> informers;

  // Changes waiting for the loop.
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Delta> deltas;
  bool wake = false;
  Clock::time_point first_wake;
  bool stop = false;
  std::thread loop;

  // The loop's own.
  std::set<std::string> dirty_jobs;
  std::atomic<uint64_t> fault_binds{0};  // options.fault_kill_after_binds
  int next_start_node = 0;
  uint64_t session_seq = 0;
  std::string session_prefix;

  // The last kRecentCycles cycles' durations (rings), for the percentiles in stats.
  static constexpr size_t kRecentCycles = 1024;
  std::vector<std::chrono::microseconds> recent_cycles, recent_sessions;
  size_t recent_next = 0;

  mutable std::mutex stats_mu;
  SchedulerStats stats;
};

}  // namespace muster::scheduler
