#include "scheduler/scheduler.h"

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <vector>
#include <ctime>
#include <map>
#include <set>
#include <utility>
#include <variant>

#include "api/gpu_indices.h"
#include "api/json_codec.h"
#include "api/time.h"
#include "boost/json/serialize.hpp"
#include "boost/json/value.hpp"
#include "client/event_recorder.h"
#include "client/informer.h"
#include "common/parallel.h"
#include "common/thread.h"
#include "core/actions/reserve.h"
#include "core/framework/session.h"
#include "fmt/format.h"
#include "scheduler/backoff.h"
#include "scheduler/changes.h"
#include "scheduler/cluster_mirror.h"
#include "scheduler/conf_watcher.h"
#include "scheduler/cycle.h"
#include "scheduler/gang_repair.h"
#include "scheduler/metrics.h"
#include "scheduler/write_plan.h"

namespace muster::scheduler {
namespace {

namespace json = boost::json;
using Clock = std::chrono::steady_clock;

// A cycle's API calls (a gang's binds, status patches) run on this many threads at once, as
// Volcano binds from goroutines: the cycle ends sooner and, in process, its writes cost fewer
// store commits. Each call keeps its own atomicity (a gang is one call).
constexpr size_t kWriteWorkers = 8;

// Patches the status of every object of `writes` (each with .ns, .name, .patch) side by side,
// through `subresource` ("status", or "" for the object itself), then hands each outcome to
// `done`, in order, on the calling thread.
template <typename Write, typename Done>
void PatchStatuses(common::WorkerPool& pool, client::Client& client,
                   const client::Resource& resource, client::PatchType type,
                   std::string_view subresource, const std::vector<Write>& writes, Done done) {
  std::vector<absl::StatusOr<json::object>> results(writes.size());
  pool.ParallelFor(writes.size(), [&](size_t i) {
    results[i] = client.Patch(resource, writes[i].ns, writes[i].name, type, writes[i].patch,
                              subresource);
  });
  for (size_t i = 0; i < writes.size(); ++i) done(writes[i], results[i]);
}

enum class Kind { kPod, kNode, kPodGroup, kQueue, kPriorityClass };

const char* KindName(Kind k) {
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
  }
  return "object";
}

// One watched change, decoded on the informer's thread and applied on the loop's.
struct Delta {
  Kind kind = Kind::kPod;
  bool deleted = false;
  std::string ns, name, resource_version;
  std::variant<std::monostate, api::Pod, api::Node, api::PodGroup, api::Queue, api::PriorityClass>
      object;
  ChangeEffect effect;
};

std::string MetaField(const json::object& o, std::string_view field) {
  const json::value* meta = o.if_contains("metadata");
  if (meta == nullptr || !meta->is_object()) return "";
  const json::value* v = meta->get_object().if_contains(field);
  return v != nullptr && v->is_string() ? std::string(v->get_string()) : "";
}

std::string ResourceVersionOf(const absl::StatusOr<json::object>& o) {
  return o.ok() ? MetaField(*o, "resourceVersion") : "";
}

std::string Key(const std::string& ns, const std::string& name) {
  return ns.empty() ? name : ns + "/" + name;
}

}  // namespace

struct Scheduler::State {
  State(client::Client& c, SchedulerOptions o)
      : client(c),
        options(std::move(o)),
        conf(options.conf_path),
        mirror(MirrorOptions{options.scheduler_names, options.serve_default_scheduler}),
        backoff(options.backoff_initial, options.backoff_max),
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
                        Key(MetaField(o, "namespace"), MetaField(o, "name")),
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
      d.ns = MetaField(last, "namespace");
      d.name = MetaField(last, "name");
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

  client::Client& client;
  const SchedulerOptions options;
  ConfWatcher conf;
  ClusterMirror mirror;
  GangBackoff backoff;
  WriteMemo memo;
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

namespace {

// The p-th percentile (nearest rank) of `samples`, which it reorders.
std::chrono::microseconds Percentile(std::vector<std::chrono::microseconds>& samples, double p) {
  if (samples.empty()) return std::chrono::microseconds(0);
  size_t rank = static_cast<size_t>(p * static_cast<double>(samples.size()));
  rank = std::min(rank, samples.size() - 1);
  std::nth_element(samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(rank),
                   samples.end());
  return samples[rank];
}

}  // namespace

// --- the loop ----------------------------------------------------------------------------------

void Scheduler::State::Loop() {
  {
    std::unique_lock<std::mutex> lock(mu);
    while (!stop && !Synced()) cv.wait_for(lock, std::chrono::milliseconds(10));
  }
  Clock::time_point next_period = Clock::now();
  while (true) {
    std::vector<Delta> batch;
    {
      std::unique_lock<std::mutex> lock(mu);
      while (!stop) {
        Clock::time_point now = Clock::now();
        if (now >= next_period) break;
        if (wake && now >= first_wake + options.debounce) break;
        Clock::time_point deadline =
            wake ? std::min(next_period, first_wake + options.debounce) : next_period;
        cv.wait_until(lock, deadline);
      }
      if (stop) return;
      batch.swap(deltas);
      wake = false;
    }
    Clock::time_point start = Clock::now();
    next_period = start + options.period;
    RunCycle(std::move(batch), start);
  }
}

void Scheduler::State::Apply(Delta& d) {
  const std::string key = Key(d.ns, d.name);
  switch (d.kind) {
    case Kind::kPod: {
      std::string job;
      if (d.deleted) {
        job = mirror.RemovePod(d.ns, d.name);
        memo.ForgetPod(key);
      } else {
        memo.SawPod(key, d.resource_version);
        job = mirror.UpsertPod(std::get<api::Pod>(std::move(d.object)));
      }
      if (!job.empty()) dirty_jobs.insert(job);
      if (d.effect.helps == Helps::kEveryone) backoff.ResetAll();
      if (d.effect.helps == Helps::kItsGang && !job.empty()) backoff.Reset(job);
      break;
    }
    case Kind::kNode:
      if (d.deleted) {
        mirror.RemoveNode(d.name);
      } else {
        mirror.UpsertNode(std::get<api::Node>(d.object));
      }
      if (d.effect.helps != Helps::kNobody) backoff.ResetAll();
      break;
    case Kind::kPodGroup:
      if (d.deleted) {
        mirror.RemovePodGroup(d.ns, d.name);
        memo.ForgetPodGroup(key);
      } else {
        memo.SawPodGroup(key, d.resource_version);
        mirror.UpsertPodGroup(std::get<api::PodGroup>(d.object));
      }
      if (d.effect.helps != Helps::kNobody) backoff.Reset(key);
      break;
    case Kind::kQueue:
      if (d.deleted) {
        mirror.RemoveQueue(d.name);
        memo.queues.erase(d.name);
      } else {
        memo.SawQueue(d.name, d.resource_version);
        mirror.UpsertQueue(std::get<api::Queue>(d.object));
      }
      if (d.effect.helps != Helps::kNobody) backoff.ResetAll();
      break;
    case Kind::kPriorityClass:
      if (d.deleted) {
        mirror.RemovePriorityClass(d.name);
      } else {
        mirror.UpsertPriorityClass(std::get<api::PriorityClass>(d.object));
      }
      if (d.effect.helps != Helps::kNobody) backoff.ResetAll();
      break;
  }
}

// Another scheduler (kube-scheduler beside muster) may have bound pods while the session ran from
// its snapshot: those of its binds the watch has delivered since are applied now, and a gang that
// would put a node over its allocatable with them is not bound this cycle (its placement is
// undone; the next cycle, which sees them, places it again). What is left of the race, binds the
// watch has not delivered yet, is the node's to refuse, as a kubelet's admission does.
std::vector<bool> Scheduler::State::DeferGangsOnNodesFilledMeanwhile(
    const std::vector<GangBinding>& gangs) {
  std::vector<bool> deferred(gangs.size(), false);
  if (gangs.empty()) return deferred;
  std::vector<api::Pod> late;
  {
    std::lock_guard<std::mutex> lock(mu);
    for (const Delta& d : deltas) {
      const api::Pod* pod = d.kind == Kind::kPod ? std::get_if<api::Pod>(&d.object) : nullptr;
      if (pod != nullptr && !pod->spec.node_name.empty() &&
          ServedBy(*pod, mirror.options()) == Served::kNo) {
        late.push_back(*pod);
      }
    }
  }
  if (late.empty()) return deferred;
  core::Cluster& cluster = mirror.cluster();
  std::set<std::string> filled;  // nodes that took pods of others meanwhile
  for (api::Pod& pod : late) {
    const core::TaskInfo* t = cluster.FindTask(pod.meta.namespace_ + "/" + pod.meta.name);
    if (t != nullptr && t->node >= 0 && cluster.node(t->node).name == pod.spec.node_name) continue;
    filled.insert(pod.spec.node_name);
    // Applied again, in order, with the rest of the batch at the next cycle.
    mirror.UpsertPod(std::move(pod));
  }
  auto over = [&](const std::string& name) {
    const core::NodeInfo* n = cluster.FindNode(name);
    if (n == nullptr) return false;
    for (core::ResourceId r = 0; r < n->idle.Size(); ++r) {
      if (n->idle.Get(r) < 0) return true;
    }
    return n->pod_count > n->max_pods;
  };
  for (size_t g = 0; g < gangs.size(); ++g) {
    const auto& bindings = gangs[g].bindings;
    auto at = std::find_if(bindings.begin(), bindings.end(), [&](const client::Binding& b) {
      return filled.count(b.node) > 0 && over(b.node);
    });
    if (at == bindings.end()) continue;
    deferred[g] = true;
    Log(fmt::format("not binding gang {} this cycle: node {} took pods of another scheduler "
                    "while it was placed, and no longer has room for it",
                    gangs[g].job, at->node));
    for (const client::Binding& b : bindings) {
      if (core::TaskInfo* t = cluster.FindTask(b.ns + "/" + b.pod);
          t != nullptr && t->node >= 0 && t->status == core::TaskStatus::kBinding) {
        cluster.UnplaceTask(*t, core::TaskStatus::kPending);
      }
    }
  }
  return deferred;
}

void Scheduler::State::Bind(const core::CycleResult& result, PlanContext& context,
                            std::set<std::string>& placed) {
  core::Cluster& cluster = mirror.cluster();
  uint64_t bound = 0, failed = 0;
  const std::vector<GangBinding> gangs = PlanBinds(result, cluster);
  if (options.before_binds && !gangs.empty()) {
    options.before_binds([this] {
      std::lock_guard<std::mutex> lock(mu);
      return deltas.size();
    });
  }
  const std::vector<bool> deferred = DeferGangsOnNodesFilledMeanwhile(gangs);
  // Each gang's placement is recorded on its PodGroup before any of it is bound, so that a
  // crash between two binds can be repaired (gang_repair.h); a gang whose record is refused is
  // not bound this cycle.
  std::vector<std::pair<std::string, std::string>> records(gangs.size());  // PodGroup ns, name
  if (!client.transport().BindsAtomically()) {
    for (size_t g = 0; g < gangs.size(); ++g) {
      const core::JobInfo* j = cluster.FindJob(gangs[g].job);
      if (j != nullptr && j->pg && !IsDefaultSchedulerJob(*j) &&
          (j->min_available > 1 || gangs[g].bindings.size() > 1)) {
        records[g] = {j->ns, j->name};
      }
    }
  }
  std::vector<absl::StatusOr<std::vector<absl::Status>>> outcomes(gangs.size());
  writers.ParallelFor(gangs.size(), [&](size_t g) {
    if (deferred[g]) return;
    if (!records[g].second.empty()) {
      auto recorded = client.Patch(client::PodGroups(), records[g].first, records[g].second,
                                   client::PatchType::kMerge, PlacementPatch(gangs[g].bindings));
      if (!recorded.ok()) {
        outcomes[g] = absl::Status(recorded.status().code(),
                                   "recording the placement on its PodGroup: " +
                                       std::string(recorded.status().message()));
        return;
      }
    }
    if (options.fault_kill_after_binds == 0) {
      outcomes[g] = client.BindAll(gangs[g].bindings);
      return;
    }
    std::vector<absl::Status> one_by_one;
    for (const client::Binding& b : gangs[g].bindings) {
      one_by_one.push_back(client.Bind(b));
      if (one_by_one.back().ok() && ++fault_binds == options.fault_kill_after_binds) {
        ::raise(SIGKILL);
      }
    }
    outcomes[g] = std::move(one_by_one);
  });
  for (size_t g = 0; g < gangs.size(); ++g) {
    const GangBinding& gang = gangs[g];
    if (deferred[g]) {
      context.failed_jobs.insert(gang.job);
      if (core::JobInfo* j = cluster.FindJob(gang.job); j != nullptr && j->pg) {
        j->SetPhaseFromPodGroup();
      }
      std::lock_guard<std::mutex> lock(stats_mu);
      ++stats.gangs_deferred;
      continue;
    }
    const absl::StatusOr<std::vector<absl::Status>>& outcome = outcomes[g];
    bool all_bound = true;
    for (size_t i = 0; i < gang.bindings.size(); ++i) {
      const client::Binding& b = gang.bindings[i];
      absl::Status st = !outcome.ok()         ? outcome.status()
                        : i < outcome->size() ? (*outcome)[i]
                                              : absl::InternalError("no outcome");
      const std::string key = b.ns + "/" + b.pod;
      if (st.ok()) {
        auto gpus = b.annotations.find(api::kGpuIndicesAnnotation);
        mirror.AssumeBound(key, b.pod_uid, b.node,
                           gpus != b.annotations.end() ? gpus->second : std::string());
        context.bound.insert(key);
        ++bound;
        continue;
      }
      if (all_bound) {  // the gang's first failure says why
        Log(fmt::format("binding {} (gang {}) to {} failed: {}", key, gang.job, b.node,
                        std::string(st.message())));
      }
      all_bound = false;
      ++failed;
      // The placement was never made: give the resources back; the pod is tried again.
      if (core::TaskInfo* t = cluster.FindTask(key);
          t != nullptr && t->node >= 0 && t->status == core::TaskStatus::kBinding) {
        cluster.UnplaceTask(*t, core::TaskStatus::kPending);
        if (!absl::IsNotFound(st)) {
          client::EventRecord e;
          e.involved_api_version = "v1";
          e.involved_kind = "Pod";
          e.involved_namespace = b.ns;
          e.involved_name = b.pod;
          e.involved_uid = b.pod_uid;
          e.type = "Warning";
          e.reason = "FailedScheduling";
          e.message =
              fmt::format("failed to bind to node {}: {}", b.node, std::string(st.message()));
          e.source_component = t->job >= 0 && IsDefaultSchedulerJob(cluster.job(t->job))
                                   ? kDefaultSchedulerName
                                   : options.event_source;
          events.Record(std::move(e));
        }
      }
    }
    if (all_bound) {
      placed.insert(gang.job);
      continue;
    }
    // The job's phase as the API knows it; the next cycle recomputes it.
    context.failed_jobs.insert(gang.job);
    if (core::JobInfo* j = cluster.FindJob(gang.job); j != nullptr && j->pg) {
      j->SetPhaseFromPodGroup();
    }
    backoff.Reset(gang.job);
  }
  if (metrics) metrics->CountBinds(bound, failed);
  std::lock_guard<std::mutex> lock(stats_mu);
  stats.pods_bound += bound;
  stats.bind_failures += failed;
}

void Scheduler::State::Write(const CycleWrites& writes) {
  uint64_t errors = 0, evicted = 0;
  auto refused = [&](const absl::Status& st, std::string_view what) {
    if (st.ok() || absl::IsNotFound(st)) return;
    ++errors;
    Log(fmt::format("{}: {}", what, std::string(st.message())));
  };
  for (const Eviction& e : writes.evictions) {
    const std::string key = e.ns + "/" + e.name;
    auto patched = client.Patch(client::Pods(), e.ns, e.name, client::PatchType::kStrategic,
                                e.status_patch, "status");
    if (!patched.ok() && absl::IsNotFound(patched.status())) continue;
    refused(patched.status(), "marking evicted pod " + key);
    client::DeleteOptions del;
    del.precondition_uid = e.uid;
    absl::Status st = client.Delete(client::Pods(), e.ns, e.name, del);
    if (st.ok()) {
      mirror.AssumeEvicted(key, e.uid);
      ++evicted;
    } else {
      refused(st, "evicting pod " + key);
      if (!absl::IsNotFound(st)) mirror.Reapply(key);
    }
  }
  PatchStatuses(writers, client, client::Pods(), client::PatchType::kStrategic, "status",
                writes.pod_conditions, [&](const PodConditionWrite& w, const auto& r) {
                  const std::string key = w.ns + "/" + w.name;
                  if (r.ok()) {
                    memo.pods[key] = {w.view, ResourceVersionOf(r)};
                  } else {
                    refused(r.status(), "updating the condition of pod " + key);
                  }
                });
  // A PodGroup's status goes with the object, as vc-scheduler writes it: Volcano's CRD has no
  // status subresource (muster's CRD neither, apiserver/crds.h; muster's own server has both).
  PatchStatuses(writers, client, client::PodGroups(), client::PatchType::kMerge, "",
                writes.pod_groups,
                [&](const PodGroupStatusWrite& w, const auto& r) {
                  const std::string key = w.ns + "/" + w.name;
                  if (r.ok()) {
                    memo.pod_groups[key] = {w.view, ResourceVersionOf(r)};
                  } else {
                    refused(r.status(), "updating the status of PodGroup " + key);
                  }
                });
  for (const QueueStatusWrite& w : PlanQueueStatus(mirror.cluster(), memo)) {
    auto r =
        client.Patch(client::Queues(), "", w.name, client::PatchType::kMerge, w.patch, "status");
    if (r.ok()) {
      memo.queues[w.name] = {w.view, ResourceVersionOf(r)};
    } else {
      refused(r.status(), "updating the status of queue " + w.name);
    }
  }
  for (const client::EventRecord& e : writes.events) events.Record(e);
  std::lock_guard<std::mutex> lock(stats_mu);
  stats.write_errors += errors;
  stats.evictions += evicted;
}

void Scheduler::State::UpdateBackoff(const core::CycleResult& result, const PlanContext& context,
                                     const std::set<std::string>& placed, Clock::time_point start) {
  core::Cluster& cluster = mirror.cluster();
  for (const std::string& job : placed) backoff.Succeeded(job);
  // Gangs waiting for victims to leave are making progress.
  std::set<std::string> progressing;
  auto job_of = [&](const std::string& pod) -> std::string {
    core::TaskInfo* t = cluster.FindTask(pod);
    return t != nullptr && t->job >= 0 ? cluster.job(t->job).key : "";
  };
  for (const auto& [pod, node] : result.pipelined) progressing.insert(job_of(pod));
  for (const auto& pg : result.pod_groups) {
    const std::string& key = pg.pod_group;
    if (placed.count(key) || context.failed_jobs.count(key) || progressing.count(key)) continue;
    const core::JobInfo* j = cluster.FindJob(key);
    if (j == nullptr || !j->pg) continue;
    if (j->Count(core::TaskStatus::kPending) > 0 || j->IsPending()) {
      backoff.Failed(key, start);
    }
  }
}

void Scheduler::State::RepairGangs() {
  for (const GangRepair& r : PlanGangRepairs(mirror.cluster(), options.scheduler_names)) {
    bool completed = false;
    if (r.complete) {
      auto outcome = client.BindAll(r.bindings);
      completed = outcome.ok();
      for (size_t i = 0; i < r.bindings.size(); ++i) {
        const client::Binding& b = r.bindings[i];
        absl::Status st = !outcome.ok() ? outcome.status() : (*outcome)[i];
        if (!st.ok()) {
          completed = false;
          Log(fmt::format("completing gang {}: binding {}/{} to {} failed: {}", r.job, b.ns, b.pod,
                          b.node, std::string(st.message())));
          continue;
        }
        auto gpus = b.annotations.find(api::kGpuIndicesAnnotation);
        mirror.AssumeBound(b.ns + "/" + b.pod, b.pod_uid, b.node,
                           gpus != b.annotations.end() ? gpus->second : std::string());
        mirror.Reapply(b.ns + "/" + b.pod);
      }
      if (completed) {
        Log(fmt::format("gang {} was left bound below minAvailable ({} of {}): completed its "
                        "recorded placement ({} more bound)",
                        r.job, r.bound, r.min_available, r.bindings.size()));
        std::lock_guard<std::mutex> lock(stats_mu);
        ++stats.gangs_completed;
        continue;
      }
    }
    Log(fmt::format("gang {} was left bound below minAvailable ({} of {}){}: deleting its bound "
                    "members so that it is placed again whole",
                    r.job, r.bound, r.min_available, r.why.empty() ? "" : " and " + r.why));
    for (const client::Binding& b : r.undo) {
      client::DeleteOptions del;
      del.precondition_uid = b.pod_uid;
      absl::Status st = client.Delete(client::Pods(), b.ns, b.pod, del);
      if (st.ok()) {
        mirror.AssumeEvicted(b.ns + "/" + b.pod, b.pod_uid);
        mirror.Reapply(b.ns + "/" + b.pod);
      } else if (!absl::IsNotFound(st)) {
        Log(fmt::format("undoing gang {}: deleting {}/{} failed: {}", r.job, b.ns, b.pod,
                        std::string(st.message())));
      }
    }
    dirty_jobs.insert(r.job);
    std::lock_guard<std::mutex> lock(stats_mu);
    ++stats.gangs_undone;
  }
}

void Scheduler::State::RunCycle(std::vector<Delta> batch, Clock::time_point start) {
  for (Delta& d : batch) Apply(d);
  batch.clear();

  ConfWatcher::Change change = conf.Poll();
  if (!change.message.empty()) Log(change.message);
  if (change.reloaded) {
    backoff.ResetAll();
    std::lock_guard<std::mutex> lock(stats_mu);
    ++stats.conf_reloads;
  }
  if (options.repair_gangs) RepairGangs();
  if (metrics) metrics->BeforeSessions(mirror.cluster(), start);

  Clock::time_point session_start = Clock::now();
  CycleOptions cycle;
  cycle.session_id = fmt::format("{}-{}", session_prefix, ++session_seq);
  cycle.start_node_index = next_start_node;
  cycle.now_unix = static_cast<int64_t>(std::time(nullptr));
  // Strict FIFO waits for its head, and a reservation needs its gang in the session: under
  // allocate's strictOrder no gang is backed off, and with reserveGpus none that would get one.
  const core::AllocateOptions allocate =
      core::AllocateOptionsFromConf(conf.conf()).value_or(core::AllocateOptions{});
  cycle.hold_back = [this, start, allocate](const core::JobInfo& j) {
    if (allocate.strict_order || core::AsksForReservation(mirror.cluster(), j, allocate)) {
      return false;
    }
    return backoff.HeldBack(j.key, start);
  };
  if (metrics) cycle.on_step = metrics->StepTimer();
  core::CycleResult result = scheduler::RunCycle(mirror, conf.conf(), cycle);
  if (metrics) metrics->RecordDeserved(result.queue_deserved);
  next_start_node = cycle.start_node_index;
  Clock::time_point session_end = Clock::now();

  PlanContext context;
  context.source = options.event_source;
  context.now = api::FormatTime(std::chrono::system_clock::now());
  std::set<std::string> placed;
  Bind(result, context, placed);
  context.dirty_jobs.swap(dirty_jobs);
  Write(PlanWrites(result, mirror.cluster(), context, memo));
  UpdateBackoff(result, context, placed, start);
  if (metrics) metrics->CountUnschedulable(result.pod_conditions.size());

  int waiting = 0;
  int unbound = 0;
  const core::Cluster& cluster = mirror.cluster();
  for (int id : cluster.JobIds()) {
    const core::JobInfo& j = cluster.job(id);
    unbound += j.Count(core::TaskStatus::kPending);
    if (!j.pg || IsDefaultSchedulerJob(j)) continue;
    if (j.IsPending() || j.Count(core::TaskStatus::kPending) > 0) ++waiting;
  }
  Clock::time_point end = Clock::now();
  if (metrics) metrics->AfterCycle(mirror.cluster(), waiting, end, end - start);
  const auto cycle_time = std::chrono::duration_cast<std::chrono::microseconds>(end - start);
  const auto session_time =
      std::chrono::duration_cast<std::chrono::microseconds>(session_end - session_start);
  if (recent_cycles.size() < kRecentCycles) {
    recent_cycles.push_back(cycle_time);
    recent_sessions.push_back(session_time);
  } else {
    recent_cycles[recent_next] = cycle_time;
    recent_sessions[recent_next] = session_time;
    recent_next = (recent_next + 1) % kRecentCycles;
  }
  std::vector<std::chrono::microseconds> cycles = recent_cycles, sessions = recent_sessions;
  const auto cycle_p50 = Percentile(cycles, 0.50), cycle_p99 = Percentile(cycles, 0.99);
  const auto session_p50 = Percentile(sessions, 0.50), session_p99 = Percentile(sessions, 0.99);
  std::lock_guard<std::mutex> lock(stats_mu);
  ++stats.cycles;
  stats.last_cycle = cycle_time;
  stats.longest_cycle = std::max(stats.longest_cycle, stats.last_cycle);
  stats.total_cycle_time += stats.last_cycle;
  stats.last_session = session_time;
  stats.cycle_p50 = cycle_p50;
  stats.cycle_p99 = cycle_p99;
  stats.session_p50 = session_p50;
  stats.session_p99 = session_p99;
  stats.gangs_waiting = waiting;
  stats.pods_pending = unbound;
  stats.gangs_backed_off = static_cast<int>(backoff.size());
}

// --- Scheduler ---------------------------------------------------------------------------------

Scheduler::Scheduler(client::Client& client, SchedulerOptions options)
    : state_(std::make_unique<State>(client, std::move(options))) {}

Scheduler::~Scheduler() { Stop(); }

absl::Status Scheduler::Start() {
  State& s = *state_;
  if (!s.informers.empty()) return absl::FailedPreconditionError("a scheduler starts only once");
  if (absl::Status st = s.conf.Load(); !st.ok()) return st;
  s.Log(fmt::format("scheduling pods of {} with the configuration from {}",
                    fmt::join(s.options.scheduler_names, ", "), s.conf.Source()));
  auto add = [&](const client::Resource& resource, client::InformerHandlers handlers) {
    auto informer = std::make_unique<client::Informer>(s.client, resource);
    informer->AddHandlers(std::move(handlers));
    s.informers.push_back(std::move(informer));
  };
  add(client::Nodes(), s.Handlers<api::Node>(Kind::kNode, api::DecodeNode, NodeChange));
  add(client::PriorityClasses(),
      s.Handlers<api::PriorityClass>(Kind::kPriorityClass, api::DecodePriorityClass,
                                     PriorityClassChange));
  add(client::Queues(), s.Handlers<api::Queue>(Kind::kQueue, api::DecodeQueue, QueueChange));
  add(client::PodGroups(),
      s.Handlers<api::PodGroup>(Kind::kPodGroup, api::DecodePodGroup, PodGroupChange));
  add(client::Pods(), s.Handlers<api::Pod>(Kind::kPod, api::DecodePod, PodChange));
  absl::Status started = s.events.Start();
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.stop = false;
  }
  for (auto& informer : s.informers) {
    if (started.ok()) started = informer->Start();
  }
  if (started.ok()) started = common::StartThread(s.loop, "the scheduler", [&s] { s.Loop(); });
  if (!started.ok()) Stop();
  return started;
}

void Scheduler::Stop() {
  State& s = *state_;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.stop = true;
  }
  s.cv.notify_all();
  if (s.loop.joinable()) s.loop.join();
  // Each informer notices its stop within a watch poll; stop them together, not in turn.
  // One that cannot get a thread for that is stopped in turn.
  std::vector<std::thread> stopping;
  for (auto& informer : s.informers) {
    client::Informer* i = informer.get();
    std::thread t;
    if (common::StartThread(t, "stopping an informer", [i] { i->Stop(); }).ok()) {
      stopping.push_back(std::move(t));
    } else {
      i->Stop();
    }
  }
  for (auto& t : stopping) t.join();
  s.events.Stop();
}

bool Scheduler::WaitForSync(std::chrono::milliseconds timeout) const {
  Clock::time_point deadline = Clock::now() + timeout;
  for (const auto& informer : state_->informers) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (!informer->WaitForSync(std::max(left, std::chrono::milliseconds(0)))) return false;
  }
  return !state_->informers.empty();
}

SchedulerStats Scheduler::Stats() const {
  SchedulerStats out;
  {
    std::lock_guard<std::mutex> lock(state_->stats_mu);
    out = state_->stats;
  }
  out.events_written = state_->events.written();
  out.events_dropped = state_->events.dropped();
  return out;
}

}  // namespace muster::scheduler
