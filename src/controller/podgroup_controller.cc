// The PodGroup controller (podgroup_controller.h), after Volcano's
// pkg/controllers/podgroup/pg_controller.go (informer, queue, workers) and
// pg_controller_handler.go (addPod, createNormalPodPGIfNotExist).

#include "controller/podgroup_controller.h"

#include <algorithm>
#include <cstdio>
#include <string_view>
#include <utility>

#include "api/json_access.h"
#include "api/json_codec.h"
#include "boost/json/array.hpp"
#include "boost/json/serialize.hpp"
#include "boost/json/value.hpp"
#include "client/informer.h"
#include "common/quantity.h"
#include "controller/work_queue.h"
#include "core/cluster.h"
#include "core/podgroup_phase.h"
#include "core/resources.h"
#include "fmt/format.h"

namespace muster::controller {

namespace json = boost::json;

namespace {

// Every pod event passes here and most pods (a Job's) already name their group: those, and
// other schedulers' pods, are passed over without decoding the pod.
bool MayNeedGroup(const json::object& pod, const std::vector<std::string>& scheduler_names) {
  const std::string_view scheduler = api::StringViewAt(api::ObjectAt(pod, "spec"), "schedulerName");
  if (std::find(scheduler_names.begin(), scheduler_names.end(), scheduler) ==
      scheduler_names.end()) {
    return false;
  }
  const json::object* annotations = api::ObjectAt(api::ObjectAt(pod, "metadata"), "annotations");
  return api::StringViewAt(annotations, api::kGroupNameAnnotation).empty();
}

const api::OwnerReference* ControllerOf(const api::Pod& pod) {
  for (const auto& ref : pod.meta.owner_references) {
    if (ref.controller) return &ref;
  }
  return nullptr;
}

json::object ResourcesJson(const core::Resources& r) {
  json::object out;
  for (core::ResourceId id = 0; id < r.Size(); ++id) {
    if (r.Get(id) == 0) continue;
    out[core::ResourceNames::Name(id)] = common::Quantity::FromMilli(r.Get(id)).ToString();
  }
  return out;
}

}  // namespace

bool NeedsStandalonePodGroup(const api::Pod& pod, const std::vector<std::string>& scheduler_names) {
  if (std::find(scheduler_names.begin(), scheduler_names.end(), pod.spec.scheduler_name) ==
      scheduler_names.end()) {
    return false;
  }
  auto group = pod.meta.annotations.find(api::kGroupNameAnnotation);
  if (group != pod.meta.annotations.end() && !group->second.empty()) return false;
  // A bound or finished pod is past scheduling; an unbound one being deleted never gets there.
  return pod.spec.node_name.empty() && pod.meta.deletion_timestamp.empty() &&
         pod.status.phase != "Succeeded" && pod.status.phase != "Failed";
}

std::string StandalonePodGroupName(const api::Pod& pod) {
  const api::OwnerReference* owner = ControllerOf(pod);
  return "podgroup-" + (owner != nullptr ? owner->uid : pod.meta.uid);
}

json::object StandalonePodGroup(const api::Pod& pod) {
  json::object meta;
  meta["name"] = StandalonePodGroupName(pod);
  meta["namespace"] = pod.meta.namespace_;
  json::array owners;
  if (ControllerOf(pod) != nullptr) {
    for (const auto& ref : pod.meta.owner_references) {
      json::object o;
      o["apiVersion"] = ref.api_version;
      o["kind"] = ref.kind;
      o["name"] = ref.name;
      o["uid"] = ref.uid;
      if (ref.controller) o["controller"] = true;
      if (ref.block_owner_deletion) o["blockOwnerDeletion"] = true;
      owners.push_back(std::move(o));
    }
  } else {
    owners.push_back(json::object{{"apiVersion", "v1"},
                                  {"kind", "Pod"},
                                  {"name", pod.meta.name},
                                  {"uid", pod.meta.uid},
                                  {"controller", true},
                                  {"blockOwnerDeletion", true}});
  }
  meta["ownerReferences"] = std::move(owners);

  json::object spec;
  spec["minMember"] = 1;
  auto queue = pod.meta.annotations.find(kQueueNameAnnotation);
  spec["queue"] =
      queue != pod.meta.annotations.end() && !queue->second.empty() ? queue->second : "default";
  if (!pod.spec.priority_class_name.empty()) {
    spec["priorityClassName"] = pod.spec.priority_class_name;
  }
  json::object min_resources = ResourcesJson(core::PodRequests(pod));
  if (!min_resources.empty()) spec["minResources"] = std::move(min_resources);

  json::object pg;
  pg["apiVersion"] = "scheduling.volcano.sh/v1beta1";
  pg["kind"] = "PodGroup";
  pg["metadata"] = std::move(meta);
  pg["spec"] = std::move(spec);
  pg["status"] = json::object{{"phase", core::PodGroupPhaseName(core::PodGroupPhase::kPending)}};
  return pg;
}

json::object GangPodGroup(const api::Pod& pod, const std::string& name, int32_t min_member) {
  json::object pg = StandalonePodGroup(pod);
  pg["metadata"].as_object()["name"] = name;
  json::object& spec = pg["spec"].as_object();
  spec["minMember"] = min_member;
  core::Resources total = core::PodRequests(pod);
  for (core::ResourceId id = 0; id < total.Size(); ++id) {
    total.Set(id, total.Get(id) * min_member);
  }
  json::object min_resources = ResourcesJson(total);
  if (min_resources.empty()) {
    spec.erase("minResources");
  } else {
    spec["minResources"] = std::move(min_resources);
  }
  return pg;
}

namespace {

// The controller NewPodGroupController makes: its watches, queues and workers.
struct PodGroupController final : public Controller {
  PodGroupController(client::Client& c, PodGroupControllerOptions o)
      : client(c),
        options(std::move(o)),
        pods(c, client::Pods()),
        queues({options.workers, options.backoff_base, options.backoff_max},
               [this](const WorkItem& item, int) { return Handle(item); }) {}

  ~PodGroupController() override { Stop(); }
  absl::Status Start(std::chrono::milliseconds sync_timeout) override;
  void Stop() override;
  bool WaitIdle(std::chrono::milliseconds timeout) override;

  client::Client& client;
  PodGroupControllerOptions options;
  client::Informer pods;
  WorkQueues queues;
  bool started = false;

  void OnPod(const json::object& object) {
    if (!MayNeedGroup(object, options.scheduler_names)) return;
    absl::StatusOr<api::Pod> pod = api::DecodePod(json::value(object));
    if (!pod.ok() || !NeedsStandalonePodGroup(*pod, options.scheduler_names)) return;
    WorkItem item;
    item.key = pod->meta.namespace_ + "/" + pod->meta.name;
    queues.Add(std::move(item));
  }

  void Log(const std::string& message) {
    std::fprintf(stderr, "podgroup controller: %s\n", message.c_str());
  }

  // False when a write was refused and the pod should come back after a backoff.
  bool Handle(const WorkItem& item) {
    const size_t slash = item.key.find('/');
    const std::string ns = item.key.substr(0, slash);
    const std::string name = item.key.substr(slash + 1);
    // The informer's copy is the newest this controller knows; a pod gone or grouped meanwhile
    // needs nothing more.
    std::optional<json::object> object = pods.Get(ns, name);
    if (!object) return true;
    absl::StatusOr<api::Pod> pod = api::DecodePod(json::value(*object));
    if (!pod.ok() || !NeedsStandalonePodGroup(*pod, options.scheduler_names)) return true;

    const std::string group = StandalonePodGroupName(*pod);
    auto created = client.Create(client::PodGroups(), ns, StandalonePodGroup(*pod));
    if (!created.ok() && !absl::IsAlreadyExists(created.status())) {
      Log(fmt::format("cannot create PodGroup {}/{} for pod {}: {}", ns, group, item.key,
                      std::string(created.status().message())));
      return false;
    }
    json::object patch{
        {"metadata",
         json::object{{"annotations", json::object{{api::kGroupNameAnnotation, group}}}}}};
    absl::Status patched = client.PatchWithoutResult(client::Pods(), ns, name,
                                                     client::PatchType::kMerge,
                                                     json::serialize(patch));
    if (!patched.ok() && !absl::IsNotFound(patched)) {
      Log(fmt::format("cannot annotate pod {} with its PodGroup {}: {}", item.key, group,
                      std::string(patched.message())));
      return false;
    }
    return true;
  }
};

}  // namespace

absl::Status PodGroupController::Start(std::chrono::milliseconds sync_timeout) {
  PodGroupController& s = *this;
  if (s.started) return absl::OkStatus();
  s.started = true;
  client::InformerHandlers pods;
  pods.on_add = [&s](const json::object& o) { s.OnPod(o); };
  pods.on_update = [&s](const json::object&, const json::object& o) { s.OnPod(o); };
  s.pods.AddHandlers(std::move(pods));
  for (absl::Status started : {s.queues.Start(), s.pods.Start()}) {
    if (!started.ok()) {
      Stop();
      return started;
    }
  }
  if (!s.pods.WaitForSync(sync_timeout)) {
    Stop();
    return absl::DeadlineExceededError(fmt::format(
        "podgroup controller: the pods watch did not sync within {} ms", sync_timeout.count()));
  }
  return absl::OkStatus();
}

void PodGroupController::Stop() {
  PodGroupController& s = *this;
  s.pods.Stop();
  s.queues.Stop();
}

bool PodGroupController::WaitIdle(std::chrono::milliseconds timeout) {
  return queues.WaitIdle(timeout);
}

std::unique_ptr<Controller> NewPodGroupController(client::Client& client,
                                                  PodGroupControllerOptions options) {
  return std::make_unique<PodGroupController>(client, std::move(options));
}

}  // namespace muster::controller
