// The disruption controller's runner (disruption_controller.h), after kube's
// pkg/controller/disruption/disruption.go (informers, the work queue, recheck queue, sync).

#include "controller/disruption_controller.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "api/json_access.h"
#include "boost/json/value.hpp"
#include "client/informer.h"
#include "controller/disruption.h"
#include "controller/work_queue.h"
#include "fmt/format.h"

namespace muster::controller {

namespace json = boost::json;

namespace {

// Events' source, as kube-controller-manager's disruption controller names its recorder.
constexpr char kDisruptionComponent[] = "controllermanager";

// getScaleController for the kinds muster serves, none of which has a scale subresource: kube's
// errors, by the resource its REST mapper would find ("jobs.batch.volcano.sh").
absl::StatusOr<int32_t> NoScale(const ControllerRef& controller, const std::string&) {
  const size_t slash = controller.api_version.find('/');
  const std::string group =
      slash == std::string::npos ? "" : controller.api_version.substr(0, slash);
  const bool served = group.empty() || group == "batch.volcano.sh" ||
                      group == "scheduling.volcano.sh" || group == "scheduling.k8s.io" ||
                      group == "coordination.k8s.io" || group == "policy";
  if (!served) {
    return absl::NotFoundError(
        fmt::format("no matches for kind \"{}\" in group \"{}\"", controller.kind, group));
  }
  std::string resource = absl::AsciiStrToLower(controller.kind) + "s";
  if (!group.empty()) resource += "." + group;
  return absl::FailedPreconditionError(
      fmt::format("{} does not implement the scale subresource", resource));
}

int64_t WallClockSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The controller NewDisruptionController makes: its watches, queues and workers.
struct DisruptionController final : public Controller {
  DisruptionController(client::Client& c, DisruptionControllerOptions o)
      : client(c),
        options(std::move(o)),
        pods(c, client::Pods()),
        budgets(c, client::PodDisruptionBudgets()),
        queues({options.workers, options.backoff_base, options.backoff_max},
               [this](const WorkItem& item, int) { return Sync(item.key); }) {}

  ~DisruptionController() override { Stop(); }
  absl::Status Start(std::chrono::milliseconds sync_timeout) override;
  void Stop() override;
  bool WaitIdle(std::chrono::milliseconds timeout) override;

  client::Client& client;
  DisruptionControllerOptions options;
  client::Informer pods;
  client::Informer budgets;
  WorkQueues queues;
  bool started = false;

  int64_t Now() const { return options.now_unix ? options.now_unix() : WallClockSeconds(); }

  void Enqueue(const std::string& key) {
    WorkItem item;
    item.key = key;
    queues.Add(std::move(item));
  }

  void OnBudget(const json::object& budget) {
    Enqueue(api::MetaString(budget, "namespace") + "/" + api::MetaString(budget, "name"));
  }

  // A pod's change may change any budget of its namespace (kube looks up those whose selector
  // matches the old and the new pod; budgets are few, so every one of the namespace is synced).
  void OnPod(const json::object& pod) {
    const std::string ns = api::MetaString(pod, "namespace");
    for (const json::object& budget : budgets.List(ns)) OnBudget(budget);
  }

  void Log(const std::string& message) {
    std::fprintf(stderr, "disruption controller: %s\n", message.c_str());
  }

  void Record(const json::object& budget, const BudgetEvent& e) {
    client::EventRecord event;
    const std::string ns = api::MetaString(budget, "namespace");
    if (e.about_pod) {
      std::optional<json::object> pod = pods.Get(ns, e.pod);
      event = client::EventRecord::AboutPod(ns, e.pod, pod ? api::MetaString(*pod, "uid") : "");
    } else {
      event.involved_api_version = "policy/v1";
      event.involved_kind = "PodDisruptionBudget";
      event.involved_namespace = ns;
      event.involved_name = api::MetaString(budget, "name");
      event.involved_uid = api::MetaString(budget, "uid");
    }
    event.type = e.type;
    event.reason = e.reason;
    event.message = e.message;
    event.source_component = kDisruptionComponent;
    if (absl::Status s = client.RecordEvent(event); !s.ok()) {
      Log(fmt::format("cannot record event {}: {}", e.reason, std::string(s.message())));
    }
  }

  // False when the status write was refused: the budget comes back after a backoff.
  bool Sync(const std::string& key) {
    const size_t slash = key.find('/');
    const std::string ns = key.substr(0, slash);
    const std::string name = key.substr(slash + 1);
    std::optional<json::object> budget = budgets.Get(ns, name);
    if (!budget) return true;  // deleted
    const int64_t now = Now();
    BudgetSync sync = SyncBudget(*budget, pods.List(ns), NoScale, now);
    if (sync.changed) {
      json::object next = *budget;
      next["status"] = sync.status;
      absl::StatusOr<json::object> written =
          client.UpdateStatus(client::PodDisruptionBudgets(), std::move(next));
      if (absl::IsNotFound(written.status())) return true;
      if (!written.ok()) {
        // A conflict is an eviction that spent the budget meanwhile: sync again from the
        // informer's newer copy, so that its record in disruptedPods is kept.
        if (!absl::IsAborted(written.status())) {
          Log(fmt::format("cannot update the status of PodDisruptionBudget {}: {}", key,
                          std::string(written.status().message())));
        }
        return false;
      }
      for (const BudgetEvent& e : sync.events) Record(*budget, e);
    }
    if (sync.recheck_unix) {
      WorkItem item;
      item.key = key;
      queues.AddAfter(std::move(item),
                      std::chrono::seconds(std::max<int64_t>(*sync.recheck_unix - now, 0) + 1));
    }
    return true;
  }
};

}  // namespace

absl::Status DisruptionController::Start(std::chrono::milliseconds sync_timeout) {
  DisruptionController& s = *this;
  if (s.started) return absl::OkStatus();
  s.started = true;
  client::InformerHandlers pods;
  pods.on_add = [&s](const json::object& o) { s.OnPod(o); };
  pods.on_update = [&s](const json::object&, const json::object& o) { s.OnPod(o); };
  pods.on_delete = [&s](const json::object& o) { s.OnPod(o); };
  s.pods.AddHandlers(std::move(pods));
  client::InformerHandlers budgets;
  budgets.on_add = [&s](const json::object& o) { s.OnBudget(o); };
  budgets.on_update = [&s](const json::object&, const json::object& o) { s.OnBudget(o); };
  s.budgets.AddHandlers(std::move(budgets));
  // Budgets first: a pod's first add then finds its budgets in the cache.
  for (absl::Status started : {s.queues.Start(), s.budgets.Start(), s.pods.Start()}) {
    if (!started.ok()) {
      Stop();
      return started;
    }
  }
  if (!s.budgets.WaitForSync(sync_timeout) || !s.pods.WaitForSync(sync_timeout)) {
    Stop();
    return absl::DeadlineExceededError(fmt::format(
        "disruption controller: the pods and budgets watches did not sync within {} ms",
        sync_timeout.count()));
  }
  return absl::OkStatus();
}

void DisruptionController::Stop() {
  DisruptionController& s = *this;
  s.pods.Stop();
  s.budgets.Stop();
  s.queues.Stop();
}

bool DisruptionController::WaitIdle(std::chrono::milliseconds timeout) {
  return queues.WaitIdle(timeout);
}

std::unique_ptr<Controller> NewDisruptionController(client::Client& client,
                                                    DisruptionControllerOptions options) {
  return std::make_unique<DisruptionController>(client, std::move(options));
}

}  // namespace muster::controller
