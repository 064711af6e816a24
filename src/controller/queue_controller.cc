// The Queue controller (queue_controller.h), after Volcano's pkg/controllers/queue
// (queue_controller.go, queue_controller_handler.go, queue_controller_action.go).

#include "controller/queue_controller.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <utility>

#include "api/json_access.h"
#include "boost/json/object.hpp"
#include "boost/json/serialize.hpp"
#include "client/informer.h"
#include "controller/command_watch.h"
#include "controller/queue_state.h"
#include "controller/work_queue.h"
#include "fmt/format.h"

namespace muster::controller {

namespace json = boost::json;

namespace {

std::string QueueStateOf(const json::object& queue) {
  return api::StringAt(api::ObjectAt(queue, "status"), "state");
}

// The controller NewQueueController makes: its watches, queues and workers.
struct QueueController final : public Controller {
  QueueController(client::Client& c, QueueControllerOptions o)
      : client(c),
        options(std::move(o)),
        queues(c, client::Queues()),
        pod_groups(c, client::PodGroups()),
        requests({1, options.backoff_base, options.backoff_max},
                 [this](const WorkItem& item, int) { return Handle(item); }),
        commands(c, {TargetsQueue,
                     [this](const Command& command) {
                       Enqueue(command.target->name, command.action);
                     },
                     options.backoff_base, options.backoff_max}) {}

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
  bool started = false;

  std::mutex mu;  // guards the two maps
  // The PodGroups ("ns/name") that name each queue, and the queue each names (podGroups).
  std::map<std::string, std::set<std::string>> groups_of_queue;
  std::map<std::string, std::string> queue_of_group;

  void Enqueue(const std::string& queue, const std::string& action) {
    WorkItem item;
    item.key = queue;
    item.request.action = action;
    requests.Add(std::move(item));
  }

  static std::string GroupKey(const json::object& group) {
    return api::MetaString(group, "namespace") + "/" + api::MetaString(group, "name");
  }

  void OnGroup(const json::object& group) {
    const std::string queue = api::StringAt(api::ObjectAt(group, "spec"), "queue");
    std::lock_guard lock(mu);
    std::string& known = queue_of_group[GroupKey(group)];
    if (known == queue) return;
    if (!known.empty()) groups_of_queue[known].erase(GroupKey(group));
    known = queue;
    groups_of_queue[queue].insert(GroupKey(group));
  }

  // A queue's last PodGroup going is what closes a Closing queue.
  void OnGroupDelete(const json::object& group) {
    std::string queue;
    {
      std::lock_guard lock(mu);
      auto it = queue_of_group.find(GroupKey(group));
      if (it == queue_of_group.end()) return;
      queue = it->second;
      groups_of_queue[queue].erase(it->first);
      queue_of_group.erase(it);
    }
    Enqueue(queue, kSyncQueueAction);
  }

  bool HasGroups(const std::string& queue) {
    std::lock_guard lock(mu);
    auto it = groups_of_queue.find(queue);
    return it != groups_of_queue.end() && !it->second.empty();
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

  // False when a read or write was refused and the request should come back after a backoff.
  bool Handle(const WorkItem& item) {
    const std::string& name = item.key;
    const std::string& action = item.request.action;
    std::optional<json::object> cached = queues.Get("", name);
    // Not in the cache: deleted, or, for a Command (which comes through a watch of its own), a
    // queue whose add has not reached the cache yet: that is read from the API below.
    if (!cached && action == kSyncQueueAction) return true;
    // The sync every PodGroup's going brings changes nothing of an open queue; anything else is
    // decided on the queue as stored, not on a watch that may not have this controller's last
    // write yet.
    const std::string cached_state = cached ? QueueStateOf(*cached) : std::string();
    if (action == kSyncQueueAction && (cached_state.empty() || cached_state == kQueueOpen)) {
      return true;
    }
    absl::StatusOr<json::object> queue = client.Get(client::Queues(), "", name);
    if (absl::IsNotFound(queue.status())) return true;
    if (!queue.ok()) return false;
    const std::string state = QueueStateOf(*queue);
    const QueuePlan plan = PlanQueueAction(name, state, action, HasGroups(name));
    if (plan.state != state) {
      const json::object patch{{"status", json::object{{"state", plan.state}}}};
      absl::Status patched = client.PatchWithoutResult(
          client::Queues(), "", name, client::PatchType::kMerge, json::serialize(patch), "status");
      if (absl::IsNotFound(patched)) return true;
      if (!patched.ok()) {
        std::fprintf(stderr, "queue controller: %s queue %s: %s\n", action.c_str(), name.c_str(),
                     std::string(patched.message()).c_str());
        return false;
      }
    }
    for (const PlannedEvent& e : plan.events) RecordQueueEvent(*queue, e);
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
    s.Enqueue(api::MetaString(q, "name"), kSyncQueueAction);
  };
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
