// The Queue controller (queue_controller.h), after Volcano's pkg/controllers/queue
// (queue_controller.go, queue_controller_handler.go, queue_controller_action.go) and its
// PodGroup gauges, pkg/controllers/metrics/queue.go.

#include "controller/queue_controller.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "api/json_access.h"
#include "boost/json/object.hpp"
#include "boost/json/serialize.hpp"
#include "client/informer.h"
#include "controller/command_watch.h"
#include "controller/default_queues.h"
#include "controller/queue_state.h"
#include "controller/work_queue.h"
#include "fmt/format.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"

namespace muster::controller {

namespace json = boost::json;

namespace {

// The PodGroup phases Volcano's queue gauges count, and each one's name in its gauge's.
struct CountedPhase {
  const char* phase;
  const char* in_name;
};
constexpr std::array<CountedPhase, 5> kCountedPhases = {{{"Inqueue", "inqueue"},
                                                         {"Pending", "pending"},
                                                         {"Running", "running"},
                                                         {"Unknown", "unknown"},
                                                         {"Completed", "completed"}}};

QueueFacts FactsOf(const json::object& queue) {
  QueueFacts f;
  f.name = api::MetaString(queue, "name");
  f.parent = api::StringAt(api::ObjectAt(queue, "spec"), "parent");
  f.state = api::StringAt(api::ObjectAt(queue, "status"), "state");
  const json::object* annotations = api::ObjectAt(api::ObjectAt(queue, "metadata"), "annotations");
  if (annotations != nullptr) {
    if (const json::value* v = annotations->if_contains(kClosedByParentAnnotation);
        v != nullptr && v->is_string()) {
      f.closed_by_parent = std::string(v->get_string());
    }
  }
  return f;
}

// volcano_queue_pod_group_<phase>_count{queue_name}: one gauge family per counted phase.
class QueuePodGroupGauges {
 public:
  explicit QueuePodGroupGauges(prometheus::Registry& registry) {
    for (size_t i = 0; i < kCountedPhases.size(); ++i) {
      families_[i] =
          &prometheus::BuildGauge()
               .Name(fmt::format("volcano_queue_pod_group_{}_count", kCountedPhases[i].in_name))
               .Help(fmt::format("The number of {} PodGroup in this queue",
                                 kCountedPhases[i].phase))
               .Register(registry);
    }
  }

  void Set(const std::string& queue, const std::array<int, kCountedPhases.size()>& counts) {
    std::lock_guard lock(mu_);
    for (size_t i = 0; i < counts.size(); ++i) {
      families_[i]->Add({{"queue_name", queue}}).Set(counts[i]);
    }
    known_.insert(queue);
  }

  // A deleted queue's series go (DeleteQueueMetrics).
  void Forget(const std::string& queue) {
    std::lock_guard lock(mu_);
    if (known_.erase(queue) == 0) return;
    for (prometheus::Family<prometheus::Gauge>* family : families_) {
      family->Remove(&family->Add({{"queue_name", queue}}));
    }
  }

 private:
  std::array<prometheus::Family<prometheus::Gauge>*, kCountedPhases.size()> families_{};
  std::mutex mu_;
  std::set<std::string> known_;
};

// The controller NewQueueController makes: its watches, queues and workers.
struct QueueController final : public Controller {
  QueueController(client::Client& c, QueueControllerOptions o)
      : client(c),
        options(std::move(o)),
        queues(c, client::Queues()),
        pod_groups(c, client::PodGroups()),
        requests({1, options.backoff_base, options.backoff_max},
                 [this](const WorkItem& item, int retries) { return Handle(item, retries); }),
        commands(c, {TargetsQueue,
                     [this](const Command& command) {
                       Enqueue(command.target->name, command.action, kCommandIssuedEvent);
                     },
                     options.backoff_base, options.backoff_max}) {
    if (options.metrics) gauges.emplace(*options.metrics);
  }

  ~QueueController() override { Stop(); }
  absl::Status Start(std::chrono::milliseconds sync_timeout) override;
  void Stop() override;
  bool WaitIdle(std::chrono::milliseconds timeout) override;

  client::Client& client;
  QueueControllerOptions options;
  client::Informer queues;
  client::Informer pod_groups;
  WorkQueues requests;
  CommandWatch commands;
  std::optional<QueuePodGroupGauges> gauges;
  bool started = false;

  struct GroupSeen {
    std::string queue;
    std::string phase;
  };
  std::mutex mu;  // guards the maps below and the gauges' updates
  // The PodGroups ("ns/name") that name each queue, and what each names and its phase
  // (Volcano's podGroups map; the phase for the gauges).
  std::map<std::string, std::set<std::string>> groups_of_queue;
  std::map<std::string, GroupSeen> group_seen;
  std::set<std::string> deleted_queues;  // deleted since last seen: no gauges until they return

  void Enqueue(const std::string& queue, const std::string& action, const std::string& event) {
    WorkItem item;
    item.key = queue;
    item.request.action = action;
    item.request.event = event;
    requests.Add(std::move(item));
  }

  static std::string GroupKey(const json::object& group) {
    return api::MetaString(group, "namespace") + "/" + api::MetaString(group, "name");
  }

  // addPodGroup, and updatePodGroup on a phase change: the queue is synced (its gauges, and a
  // Closing queue's end).
  void OnGroup(const json::object& group) {
    const std::string queue = api::StringAt(api::ObjectAt(group, "spec"), "queue");
    const std::string phase = api::StringAt(api::ObjectAt(group, "status"), "phase");
    const std::string key = GroupKey(group);
    {
      std::lock_guard lock(mu);
      auto [it, added] = group_seen.try_emplace(key, GroupSeen{queue, phase});
      if (!added) {
        if (it->second.queue == queue && it->second.phase == phase) return;
        if (it->second.queue != queue) groups_of_queue[it->second.queue].erase(key);
        it->second = GroupSeen{queue, phase};
      }
      groups_of_queue[queue].insert(key);
    }
    Enqueue(queue, kSyncQueueAction, kOutOfSyncEvent);
  }

  // A queue's last PodGroup going is what closes a Closing queue.
  void OnGroupDelete(const json::object& group) {
    std::string queue;
    {
      std::lock_guard lock(mu);
      auto it = group_seen.find(GroupKey(group));
      if (it == group_seen.end()) return;
      queue = it->second.queue;
      groups_of_queue[queue].erase(it->first);
      group_seen.erase(it);
    }
    Enqueue(queue, kSyncQueueAction, kOutOfSyncEvent);
  }

  bool HasGroups(const std::string& queue) {
    std::lock_guard lock(mu);
    auto it = groups_of_queue.find(queue);
    return it != groups_of_queue.end() && !it->second.empty();
  }

  void UpdateGauges(const std::string& queue) {
    if (!gauges) return;
    std::array<int, kCountedPhases.size()> counts{};
    {
      std::lock_guard lock(mu);
      auto it = groups_of_queue.find(queue);
      if (it != groups_of_queue.end()) {
        for (const std::string& key : it->second) {
          const std::string& phase = group_seen.at(key).phase;
          for (size_t i = 0; i < kCountedPhases.size(); ++i) {
            if (phase == kCountedPhases[i].phase) ++counts[i];
          }
        }
      }
      // Under the same lock as a deletion's Forget: a sync that read the queue before it went
      // must not bring its series back after it.
      if (deleted_queues.count(queue) != 0) return;
      gauges->Set(queue, counts);
    }
  }

  void ForgetQueue(const std::string& queue) {
    std::lock_guard lock(mu);
    deleted_queues.insert(queue);
    if (gauges) gauges->Forget(queue);
  }
  void QueueCame(const std::string& queue) {
    std::lock_guard lock(mu);
    deleted_queues.erase(queue);
  }

  void RecordQueueEvent(const json::object& queue, const PlannedEvent& e) {
    client::EventRecord event;
    event.involved_api_version = kQueueApiVersion;
    event.involved_kind = kQueueKind;
    event.involved_name = api::MetaString(queue, "name");
    event.involved_uid = api::MetaString(queue, "uid");
    event.type = e.type;
    event.reason = e.reason;
    event.message = e.message;
    event.source_component = options.component;
    if (absl::Status s = client.RecordEvent(event); !s.ok()) {
      std::fprintf(stderr, "queue controller: recording event %s on queue %s: %s\n",
                   e.reason.c_str(), event.involved_name.c_str(),
                   std::string(s.message()).c_str());
    }
  }

  std::vector<QueueFacts> KnownQueues() const {
    std::vector<QueueFacts> out;
    for (const json::object& q : queues.List()) out.push_back(FactsOf(q));
    return out;
  }

  // A merge patch of queue `name` (of its status when `status`); NotFound is success: the queue
  // is gone and nothing is left to do for it.
  absl::Status PatchQueue(const std::string& name, const json::object& patch, bool status) {
    absl::Status s =
        client.PatchWithoutResult(client::Queues(), "", name, client::PatchType::kMerge,
                                  json::serialize(patch), status ? "status" : "");
    return absl::IsNotFound(s) ? absl::OkStatus() : s;
  }

  absl::Status Mark(const std::string& name, const std::string& value) {
    return PatchQueue(
        name,
        json::object{{"metadata",
                      json::object{{"annotations",
                                    json::object{{kClosedByParentAnnotation, value}}}}}},
        false);
  }

  // handleQueueErr: false (retry) while retries are left, else the request is dropped with a
  // Warning event on the queue.
  bool Failed(const json::object& queue, const std::string& action, const std::string& error,
              int retries) {
    std::fprintf(stderr, "queue controller: %s queue %s: %s\n", action.c_str(),
                 api::MetaString(queue, "name").c_str(), error.c_str());
    if (retries < kQueueMaxRequeues) return false;
    RecordQueueEvent(queue, {"Warning", action, QueueRequestDroppedMessage(action, error)});
    return true;
  }

  // False when the request failed and should come back after a backoff.
  bool Handle(const WorkItem& item, int retries) {
    const std::string& name = item.key;
    const std::string& action = item.request.action;
    const std::string& event = item.request.event;
    std::optional<json::object> cached = queues.Get("", name);
    // Not in the cache: deleted, or, for a Command (which comes through a watch of its own), a
    // queue whose add has not reached the cache yet: that is read from the API below.
    if (!cached && action == kSyncQueueAction) return true;
    const std::vector<QueueFacts> known = KnownQueues();
    // What the watch shows needs nothing (the sync every PodGroup change brings, mostly): done.
    // Anything else is decided on the queue as stored, not on a watch that may not have this
    // controller's last write yet.
    if (cached) {
      const QueueFacts facts = FactsOf(*cached);
      if (QueuePlanIsIdle(facts,
                          PlanQueueAction(facts, action, event, HasGroups(name), known))) {
        UpdateGauges(name);
        return true;
      }
    }
    absl::StatusOr<json::object> queue = client.Get(client::Queues(), "", name);
    if (absl::IsNotFound(queue.status())) return true;
    if (!queue.ok()) {
      return Failed(cached ? *cached : json::object{{"metadata", json::object{{"name", name}}}},
                    action, std::string(queue.status().message()), retries);
    }
    const QueueFacts facts = FactsOf(*queue);
    const QueuePlan plan = PlanQueueAction(facts, action, event, HasGroups(name), known);
    auto failed = [&](const absl::Status& s) {
      return Failed(*queue, action, std::string(s.message()), retries);
    };
    if (plan.set_parent_root) {
      absl::Status s = PatchQueue(
          name, json::object{{"spec", json::object{{"parent", kRootQueueName}}}}, false);
      if (!s.ok()) return failed(s);
    }
    for (const std::string& child : plan.mark_children) {
      if (absl::Status s = Mark(child, "true"); !s.ok()) return failed(s);
    }
    for (const std::string& child : plan.close_children) {
      Enqueue(child, kCloseQueueAction, "");
    }
    for (const std::string& child : plan.open_children) Enqueue(child, kOpenQueueAction, "");
    if (plan.state != facts.state) {
      absl::Status s =
          PatchQueue(name, json::object{{"status", json::object{{"state", plan.state}}}}, true);
      if (!s.ok()) return failed(s);
    }
    for (const PlannedEvent& e : plan.events) RecordQueueEvent(*queue, e);
    if (plan.closed_by_parent) {
      if (absl::Status s = Mark(name, *plan.closed_by_parent); !s.ok()) return failed(s);
    }
    if (!plan.then.empty()) Enqueue(name, plan.then, "");
    UpdateGauges(name);
    if (!plan.error.empty()) return Failed(*queue, action, plan.error, retries);
    return true;
  }
};

}  // namespace

absl::Status QueueController::Start(std::chrono::milliseconds sync_timeout) {
  QueueController& s = *this;
  if (s.started) return absl::OkStatus();
  s.started = true;
  client::InformerHandlers queues;
  queues.on_add = [&s](const json::object& q) {
    s.QueueCame(api::MetaString(q, "name"));
    s.Enqueue(api::MetaString(q, "name"), kSyncQueueAction, kOutOfSyncEvent);
  };
  // updateQueue: a new parent is synced (its state may close or open the queue).
  queues.on_update = [&s](const json::object& old_queue, const json::object& q) {
    if (api::StringAt(api::ObjectAt(old_queue, "spec"), "parent") !=
        api::StringAt(api::ObjectAt(q, "spec"), "parent")) {
      s.Enqueue(api::MetaString(q, "name"), kSyncQueueAction, kOutOfSyncEvent);
    }
  };
  queues.on_delete = [&s](const json::object& q) { s.ForgetQueue(api::MetaString(q, "name")); };
  s.queues.AddHandlers(std::move(queues));
  client::InformerHandlers groups;
  groups.on_add = [&s](const json::object& g) { s.OnGroup(g); };
  groups.on_update = [&s](const json::object&, const json::object& g) { s.OnGroup(g); };
  groups.on_delete = [&s](const json::object& g) { s.OnGroupDelete(g); };
  s.pod_groups.AddHandlers(std::move(groups));
  const auto deadline = std::chrono::steady_clock::now() + sync_timeout;
  auto left = [&deadline] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::max(
        deadline - std::chrono::steady_clock::now(), std::chrono::steady_clock::duration::zero()));
  };
  // PodGroups first, so that no queue is synced before it is known which PodGroups name it.
  for (client::Informer* informer : {&s.pod_groups, &s.queues}) {
    if (absl::Status started = informer->Start(); !started.ok()) {
      Stop();
      return started;
    }
    if (!informer->WaitForSync(left())) {
      Stop();
      return absl::DeadlineExceededError(
          fmt::format("queue controller: the {} watch did not sync within {} ms",
                      informer->resource().plural, sync_timeout.count()));
    }
  }
  // As Volcano's scheduler makes them: on a cluster this controller may run without muster's.
  if (absl::Status made = EnsureDefaultQueues(s.client); !made.ok()) {
    std::fprintf(stderr, "queue controller: %s\n", std::string(made.message()).c_str());
  }
  if (absl::Status started = s.requests.Start(); !started.ok()) {
    Stop();
    return started;
  }
  if (absl::Status started = s.commands.Start(); !started.ok()) {
    Stop();
    return started;
  }
  if (!s.commands.WaitForSync(left())) {
    Stop();
    return absl::DeadlineExceededError(fmt::format(
        "queue controller: the commands watch did not sync within {} ms", sync_timeout.count()));
  }
  return absl::OkStatus();
}

void QueueController::Stop() {
  QueueController& s = *this;
  s.commands.Stop();
  s.queues.Stop();
  s.pod_groups.Stop();
  s.requests.Stop();
}

bool QueueController::WaitIdle(std::chrono::milliseconds timeout) {
  QueueController& s = *this;
  return s.commands.WaitIdle(timeout) && s.requests.WaitIdle(timeout);
}

std::unique_ptr<Controller> NewQueueController(client::Client& client,
                                               QueueControllerOptions options) {
  return std::make_unique<QueueController>(client, std::move(options));
}

}  // namespace muster::controller
