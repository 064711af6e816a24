#include "controller/job_pods.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "api/json_access.h"
#include "boost/json/array.hpp"
#include "boost/json/serialize.hpp"
#include "boost/json/value.hpp"
#include "common/quantity.h"
#include "controller/job_state.h"
#include "fmt/format.h"

namespace muster::controller {

namespace json = boost::json;

using common::Quantity;
using Resources = std::map<std::string, Quantity>;

namespace {

using api::EnsureObject;
using api::ObjectAt;

json::object StringsToJson(const std::map<std::string, std::string>& m) {
  json::object out;
  for (const auto& [k, v] : m) out[k] = v;
  return out;
}

std::optional<Quantity> ParseQuantity(const json::value& v) {
  std::string text;
  if (v.is_string()) {
    text = std::string(v.get_string());
  } else if (v.is_number()) {
    text = json::serialize(v);
  } else {
    return std::nullopt;
  }
  absl::StatusOr<Quantity> q = Quantity::Parse(text);
  if (!q.ok()) return std::nullopt;
  return *q;
}

Resources ReadResources(const json::object* list) {
  Resources out;
  if (list == nullptr) return out;
  for (const auto& [name, value] : *list) {
    if (std::optional<Quantity> q = ParseQuantity(value)) out[std::string(name)] += *q;
  }
  return out;
}

// A container's requests; where it states none, its limits (Kubernetes defaults requests from
// limits, and the API server does so for every pod muster creates).
Resources ContainerRequests(const json::object& container) {
  const json::object* resources = ObjectAt(container, "resources");
  if (resources == nullptr) return {};
  if (const json::object* requests = ObjectAt(*resources, "requests")) {
    return ReadResources(requests);
  }
  return ReadResources(ObjectAt(*resources, "limits"));
}

// The pod's effective request: Σ containers, at least each init container, plus overhead.
Resources PodRequests(const json::object& pod_spec) {
  Resources total;
  if (const json::value* list = pod_spec.if_contains("containers"); list && list->is_array()) {
    for (const json::value& c : list->get_array()) {
      if (!c.is_object()) continue;
      for (const auto& [name, q] : ContainerRequests(c.get_object())) total[name] += q;
    }
  }
  if (const json::value* list = pod_spec.if_contains("initContainers"); list && list->is_array()) {
    for (const json::value& c : list->get_array()) {
      if (!c.is_object()) continue;
      for (const auto& [name, q] : ContainerRequests(c.get_object())) {
        Quantity& slot = total[name];
        slot = std::max(slot, q);
      }
    }
  }
  for (const auto& [name, q] : ReadResources(ObjectAt(pod_spec, "overhead"))) total[name] += q;
  return total;
}

const json::object& TemplateSpec(const TaskSpec& task) {
  static const json::object kEmpty;
  const json::object* spec = ObjectAt(task.pod_template, "spec");
  return spec != nullptr ? *spec : kEmpty;
}

std::string TemplatePriorityClass(const TaskSpec& task) {
  const json::value* pc = TemplateSpec(task).if_contains("priorityClassName");
  return pc != nullptr && pc->is_string() ? std::string(pc->get_string()) : std::string();
}

json::object MinTaskMember(const Job& job) {
  json::object out;
  for (const TaskSpec& task : job.spec.tasks) out[task.name] = task.MinAvailableOrReplicas();
  return out;
}

// Quantities compared by value, so "1000m" equals "1".
bool SameResources(const json::value* a, const json::value* b) {
  const json::object* ao = a == nullptr ? nullptr : a->if_object();
  const json::object* bo = b == nullptr ? nullptr : b->if_object();
  Resources ra = ReadResources(ao);
  Resources rb = ReadResources(bo);
  std::erase_if(ra, [](const auto& e) { return e.second.IsZero(); });
  std::erase_if(rb, [](const auto& e) { return e.second.IsZero(); });
  return ra == rb;
}

bool SameValue(const json::value* a, const json::value* b) {
  const bool a_empty = a == nullptr || a->is_null() || (a->is_string() && a->get_string().empty());
  const bool b_empty = b == nullptr || b->is_null() || (b->is_string() && b->get_string().empty());
  if (a_empty || b_empty) return a_empty == b_empty;
  return *a == *b;
}

}  // namespace

json::object MakePod(const Job& job, size_t task_index, int index) {
  const TaskSpec& task = job.spec.tasks[task_index];
  json::object labels;
  json::object annotations;
  if (const json::object* meta = ObjectAt(task.pod_template, "metadata")) {
    if (const json::object* l = ObjectAt(*meta, "labels")) labels = *l;
    if (const json::object* a = ObjectAt(*meta, "annotations")) annotations = *a;
  }
  json::object spec = TemplateSpec(task);
  if (const json::value* s = spec.if_contains("schedulerName");
      s == nullptr || !s->is_string() || s->get_string().empty()) {
    spec["schedulerName"] = job.spec.scheduler_name;
  }
  // Job volumes: each claim once, mounted into every container.
  std::vector<std::string> claims;
  for (size_t v = 0; v < job.spec.volumes.size(); ++v) {
    const JobVolume& volume = job.spec.volumes[v];
    if (std::find(claims.begin(), claims.end(), volume.volume_claim_name) != claims.end()) {
      continue;
    }
    claims.push_back(volume.volume_claim_name);
    // Volcano names the volume "<job>-<12 random characters>"; muster keeps names deterministic.
    const std::string name = fmt::format("{}-volume-{}", job.name, v);
    json::value& volumes = spec["volumes"];
    if (!volumes.is_array()) volumes = json::array();
    volumes.get_array().push_back(json::object{
        {"name", name},
        {"persistentVolumeClaim", json::object{{"claimName", volume.volume_claim_name}}}});
    if (json::value* containers = spec.if_contains("containers");
        containers != nullptr && containers->is_array()) {
      for (json::value& c : containers->get_array()) {
        if (!c.is_object()) continue;
        json::value& mounts = c.get_object()["volumeMounts"];
        if (!mounts.is_array()) mounts = json::array();
        mounts.get_array().push_back(
            json::object{{"mountPath", volume.mount_path}, {"name", name}});
      }
    }
  }

  const std::string task_key = task.name.empty() ? kDefaultTaskSpec : task.name;
  const std::string index_text = std::to_string(index);
  annotations[kTaskSpecKey] = task_key;
  annotations[kTaskIndexKey] = index_text;
  annotations[api::kGroupNameAnnotation] = PodGroupName(job);
  annotations[kJobNameKey] = job.name;
  annotations[kQueueNameKey] = job.spec.queue;
  annotations[kJobVersionKey] = std::to_string(job.status.version);
  annotations[kPodTemplateKey] = fmt::format("{}-{}", job.name, task.name);
  if (!task.topology_policy.empty()) annotations[kNumaPolicyKey] = task.topology_policy;
  for (const char* key : {kPreemptableKey, kRevocableZoneKey}) {
    if (auto it = job.annotations.find(key); it != job.annotations.end()) {
      annotations[key] = it->second;
    }
  }
  if (auto it = job.annotations.find(kJdbMinAvailableKey); it != job.annotations.end()) {
    annotations[kJdbMinAvailableKey] = it->second;
  } else if (auto it2 = job.annotations.find(kJdbMaxUnavailableKey); it2 != job.annotations.end()) {
    annotations[kJdbMaxUnavailableKey] = it2->second;
  }

  labels[kJobNameKey] = job.name;
  labels[kTaskSpecKey] = task_key;
  labels[kTaskIndexKey] = index_text;
  labels[kJobNamespaceKey] = job.ns;
  labels[kQueueNameKey] = job.spec.queue;
  if (auto it = job.labels.find(kPreemptableKey); it != job.labels.end()) {
    labels[kPreemptableKey] = it->second;
  }

  json::object metadata{{"name", PodName(job.name, task.name, index)},
                        {"namespace", job.ns},
                        {"labels", std::move(labels)},
                        {"annotations", std::move(annotations)},
                        {"ownerReferences", json::array{JobOwnerReference(job)}}};
  return json::object{{"apiVersion", "v1"},
                      {"kind", "Pod"},
                      {"metadata", std::move(metadata)},
                      {"spec", std::move(spec)}};
}

std::map<std::string, std::string> MinResources(const Job& job, const PriorityLookup& priority_of) {
  // Tasks by template priority, highest first; equal priorities keep their order.
  std::vector<std::pair<int32_t, const TaskSpec*>> tasks;
  for (const TaskSpec& task : job.spec.tasks) {
    int32_t priority = 0;
    const std::string pc = TemplatePriorityClass(task);
    if (!pc.empty() && priority_of) priority = priority_of(pc).value_or(0);
    tasks.emplace_back(priority, &task);
  }
  std::stable_sort(tasks.begin(), tasks.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });

  Resources total;
  int32_t pods = 0;
  const int32_t wanted = job.spec.min_available;
  auto add = [&total](const TaskSpec& task, int32_t count) {
    if (count <= 0) return;
    const Resources one = PodRequests(TemplateSpec(task));
    for (const auto& [name, q] : one) total[name] += Quantity::FromMilli(q.MilliValue() * count);
  };
  if (wanted >= job.spec.TotalTaskMinAvailable()) {
    // Every task's own minimum first, then the rest up to minAvailable.
    for (const auto& [priority, task] : tasks) {
      const int32_t n = std::min(task->MinAvailableOrReplicas(), task->replicas);
      add(*task, n);
      pods += n;
    }
    for (const auto& [priority, task] : tasks) {
      const int32_t spare =
          task->replicas - std::min(task->MinAvailableOrReplicas(), task->replicas);
      const int32_t n = std::min(spare, std::max(0, wanted - pods));
      add(*task, n);
      pods += n;
    }
  } else {
    for (const auto& [priority, task] : tasks) {
      const int32_t n = std::min(task->replicas, std::max(0, wanted - pods));
      add(*task, n);
      pods += n;
    }
  }
  std::map<std::string, std::string> out;
  for (const auto& [name, q] : total) out[name] = q.ToString();
  return out;
}

json::object MakePodGroup(const Job& job, const PriorityLookup& priority_of) {
  json::object metadata{{"name", PodGroupName(job)}, {"namespace", job.ns}};
  if (!job.labels.empty()) metadata["labels"] = StringsToJson(job.labels);
  if (!job.annotations.empty()) metadata["annotations"] = StringsToJson(job.annotations);
  metadata["ownerReferences"] = json::array{JobOwnerReference(job)};
  json::object spec{{"minMember", job.spec.min_available},
                    {"minTaskMember", MinTaskMember(job)},
                    {"queue", job.spec.queue},
                    {"minResources", StringsToJson(MinResources(job, priority_of))}};
  if (!job.spec.priority_class_name.empty()) {
    spec["priorityClassName"] = job.spec.priority_class_name;
  }
  if (const auto& nt = job.spec.network_topology) {
    json::object topology;
    if (!nt->mode.empty()) topology["mode"] = nt->mode;
    if (nt->highest_tier_allowed) {
      topology["highestTierAllowed"] = *nt->highest_tier_allowed;
    } else if (!nt->highest_tier_name.empty()) {
      topology["highestTierName"] = nt->highest_tier_name;
    }
    spec["networkTopology"] = std::move(topology);
  }
  return json::object{{"apiVersion", "scheduling.volcano.sh/v1beta1"},
                      {"kind", "PodGroup"},
                      {"metadata", std::move(metadata)},
                      {"spec", std::move(spec)}};
}

std::optional<json::object> UpdatedPodGroup(const json::object& existing,
                                            const json::object& desired) {
  json::object updated = existing;
  json::object& spec = EnsureObject(updated, "spec");
  static const json::object kEmpty;
  const json::object* want = ObjectAt(desired, "spec");
  if (want == nullptr) want = &kEmpty;
  bool changed = false;
  for (std::string_view key : {"priorityClassName", "minMember", "minTaskMember"}) {
    const json::value* have_v = spec.if_contains(key);
    const json::value* want_v = want->if_contains(key);
    if (SameValue(have_v, want_v)) continue;
    changed = true;
    if (want_v == nullptr) {
      spec.erase(key);
    } else {
      spec[key] = *want_v;
    }
  }
  if (!SameResources(spec.if_contains("minResources"), want->if_contains("minResources"))) {
    changed = true;
    if (const json::value* r = want->if_contains("minResources")) spec["minResources"] = *r;
  }
  if (!changed) return std::nullopt;
  return updated;
}

}  // namespace muster::controller
