// The patch metadata table, the helpers the patch engines share (patch_internal.h) and the RFC
// 7386 merge patch (patch.h). The metadata follows the patchStrategy/patchMergeKey struct tags of
// k8s.io/api core/v1; the list ordering follows apimachinery's strategicpatch
// normalizeElementOrder. JSON patch is in patch_json.cc, strategic merge patch in
// patch_strategic.cc and the merge of server-side apply in patch_apply.cc.

#include "api/patch.h"

#include <algorithm>
#include <array>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/patch_internal.h"
#include "boost/json/object.hpp"
#include "boost/json/serialize.hpp"
#include "fmt/format.h"

namespace muster::api {
namespace {

namespace json = boost::json;
using patch_internal::FindMergeListField;
using patch_internal::JsonEqual;
using patch_internal::MergeListField;

// --- Patch metadata ------------------------------------------------------------------------------

// The built-in kinds the API server serves (apiserver/descriptors/resources.cc): their Go types are
// what strategic merge patches are written against. Event, ConfigMap, Secret, ServiceAccount,
// Endpoints, PriorityClass, Lease and CustomResourceDefinition (`kubectl apply` of a changed CRD)
// have no merge lists of their own (only ObjectMeta's); every other list of theirs is atomic.
constexpr auto kStrategicKinds = std::to_array<std::string_view>(
    {"Namespace", "Node", "Pod", "Event", "Service", "ConfigMap", "Secret", "ServiceAccount",
     "Endpoints", "PriorityClass", "Lease", "PodDisruptionBudget", "Job", "CronJob",
     "CustomResourceDefinition"});

// batch/v1 kinds embed a PodTemplateSpec: its spec's lists merge as a Pod's spec's do.
struct PodTemplateAt {
  std::string_view kind;
  std::string_view prefix;  // the template's spec, with the trailing dot
};
constexpr auto kPodTemplates = std::to_array<PodTemplateAt>({
    {"Job", "spec.template.spec."},
    {"CronJob", "spec.jobTemplate.spec.template.spec."},
});

// From the `patchStrategy:"merge"` / `patchMergeKey` struct tags of k8s.io/api core/v1 and
// k8s.io/apimachinery meta/v1 (v1.32; the served kinds only). Notable absences, as upstream: Node
// spec.taints, Pod spec.tolerations, spec.readinessGates and status.containerStatuses, Namespace
// spec.finalizers and Service status.loadBalancer.ingress are atomic (`+listType=atomic`, no
// patchStrategy). kubectl taint sends the node's whole taint list, so merging it by key would make
// `kubectl taint node n key-` a no-op. ContainerStatus' own merge lists (volumeMounts,
// allocatedResourcesStatus) sit inside the atomic containerStatuses and so never merge.
constexpr auto kMergeListFields = std::to_array<MergeListField>({
    // ObjectMeta.
    {"", "metadata.finalizers", ""},
    {"", "metadata.ownerReferences", "uid"},
    // PodSpec. Containers, init containers and ephemeral containers share the Container fields.
    {"Pod", "spec.containers", "name"},
    {"Pod", "spec.containers[].env", "name"},
    {"Pod", "spec.containers[].ports", "containerPort"},
    {"Pod", "spec.containers[].volumeMounts", "mountPath"},
    {"Pod", "spec.containers[].volumeDevices", "devicePath"},
    {"Pod", "spec.initContainers", "name"},
    {"Pod", "spec.initContainers[].env", "name"},
    {"Pod", "spec.initContainers[].ports", "containerPort"},
    {"Pod", "spec.initContainers[].volumeMounts", "mountPath"},
    {"Pod", "spec.initContainers[].volumeDevices", "devicePath"},
    {"Pod", "spec.ephemeralContainers", "name"},
    {"Pod", "spec.ephemeralContainers[].env", "name"},
    {"Pod", "spec.ephemeralContainers[].ports", "containerPort"},
    {"Pod", "spec.ephemeralContainers[].volumeMounts", "mountPath"},
    {"Pod", "spec.ephemeralContainers[].volumeDevices", "devicePath"},
    {"Pod", "spec.volumes", "name"},  // patchStrategy "merge,retainKeys"
    {"Pod", "spec.imagePullSecrets", "name"},
    {"Pod", "spec.hostAliases", "ip"},
    {"Pod", "spec.topologySpreadConstraints", "topologyKey"},
    {"Pod", "spec.schedulingGates", "name"},
    {"Pod", "spec.resourceClaims", "name"},  // patchStrategy "merge,retainKeys"
    // PodStatus.
    {"Pod", "status.conditions", "type"},
    {"Pod", "status.podIPs", "ip"},
    {"Pod", "status.hostIPs", "ip"},
    {"Pod", "status.resourceClaimStatuses", "name"},  // patchStrategy "merge,retainKeys"
    // NodeSpec and NodeStatus.
    {"Node", "spec.podCIDRs", ""},
    {"Node", "status.conditions", "type"},
    {"Node", "status.addresses", "type"},
    // NamespaceStatus.
    {"Namespace", "status.conditions", "type"},
    // ServiceSpec and ServiceStatus (metav1.Condition).
    {"Service", "spec.ports", "port"},
    {"Service", "status.conditions", "type"},
    // policy/v1 PodDisruptionBudgetStatus (spec.selector's patchStrategy is "replace").
    {"PodDisruptionBudget", "status.conditions", "type"},
    // batch/v1: the pod templates' lists are the Pod's (kPodTemplates). JobStatus.conditions is
    // left atomic (its listType): a Job's kind alone does not tell it from Volcano's, whose
    // conditions have no type.
});

// --- JSON helpers --------------------------------------------------------------------------------

double AsDouble(const json::value& number) {
  if (number.is_int64()) return static_cast<double>(number.get_int64());
  if (number.is_uint64()) return static_cast<double>(number.get_uint64());
  return number.get_double();
}

// Numbers compare by value whatever their representation (RFC 6902 §4.6; Go decodes every JSON
// number as float64, so 80 and 80.0 are the same merge key upstream too).
bool NumbersEqual(const json::value& a, const json::value& b) {
  if (a.is_double() || b.is_double()) return AsDouble(a) == AsDouble(b);
  if (a.kind() == b.kind()) {
    return a.is_int64() ? a.get_int64() == b.get_int64() : a.get_uint64() == b.get_uint64();
  }
  const json::value& signed_number = a.is_int64() ? a : b;
  const json::value& unsigned_number = a.is_int64() ? b : a;
  return signed_number.get_int64() >= 0 &&
         static_cast<uint64_t>(signed_number.get_int64()) == unsigned_number.get_uint64();
}

int IndexOf(const json::value* identity, const std::vector<const json::value*>& identities) {
  if (identity == nullptr) return -1;
  for (size_t i = 0; i < identities.size(); ++i) {
    if (identities[i] != nullptr && JsonEqual(*identities[i], *identity)) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

// --- RFC 7386 merge patch ------------------------------------------------------------------------

json::value MergePatchInto(json::value target, const json::value& patch) {
  if (!patch.is_object()) return patch;
  if (!target.is_object()) target = json::object();
  json::object& object = target.get_object();
  for (const json::key_value_pair& member : patch.get_object()) {
    if (member.value().is_null()) {
      object.stable_erase(member.key());
      continue;
    }
    json::value& slot = object[member.key()];
    slot = MergePatchInto(std::move(slot), member.value());
  }
  return target;
}

}  // namespace

namespace patch_internal {

const MergeListField* FindMergeListField(std::string_view kind, std::string_view path) {
  for (const MergeListField& field : kMergeListFields) {
    if ((field.kind.empty() || field.kind == kind) && field.path == path) return &field;
  }
  for (const PodTemplateAt& tmpl : kPodTemplates) {
    if (tmpl.kind != kind || !path.starts_with(tmpl.prefix)) continue;
    const std::string pod_path = "spec." + std::string(path.substr(tmpl.prefix.size()));
    for (const MergeListField& field : kMergeListFields) {
      if (field.kind == "Pod" && field.path == pod_path) return &field;
    }
  }
  return nullptr;
}

bool JsonEqual(const json::value& a, const json::value& b) {
  if (a.is_number() && b.is_number()) return NumbersEqual(a, b);
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case json::kind::null:
      return true;
    case json::kind::bool_:
      return a.get_bool() == b.get_bool();
    case json::kind::string:
      return a.get_string() == b.get_string();
    case json::kind::array: {
      const json::array& left = a.get_array();
      const json::array& right = b.get_array();
      if (left.size() != right.size()) return false;
      for (size_t i = 0; i < left.size(); ++i) {
        if (!JsonEqual(left[i], right[i])) return false;
      }
      return true;
    }
    case json::kind::object: {
      const json::object& left = a.get_object();
      const json::object& right = b.get_object();
      if (left.size() != right.size()) return false;
      for (const json::key_value_pair& member : left) {
        const json::value* other = right.if_contains(member.key());
        if (other == nullptr || !JsonEqual(member.value(), *other)) return false;
      }
      return true;
    }
    default:
      return false;  // numbers are handled above
  }
}

bool Contains(const json::array& list, const json::value& item) {
  return std::any_of(list.begin(), list.end(),
                     [&](const json::value& element) { return JsonEqual(element, item); });
}

// A short rendering of a value for error messages.
std::string Abbreviated(const json::value& value) {
  constexpr size_t kMaxChars = 80;
  std::string text = json::serialize(value);
  if (text.size() > kMaxChars) text = text.substr(0, kMaxChars) + "...";
  return text;
}

std::string FieldPath(std::string_view parent, std::string_view field) {
  return parent.empty() ? std::string(field) : fmt::format("{}.{}", parent, field);
}

std::string ElementPath(std::string_view list) { return fmt::format("{}[]", list); }

std::string_view Where(std::string_view path) { return path.empty() ? "<root>" : path; }

// What identifies a list element: the merge key's value for keyed lists, the element itself for
// primitive lists; null when the element has no identity (never matches anything).
const json::value* Identity(const json::value& element, std::string_view merge_key) {
  if (merge_key.empty()) return &element;
  if (!element.is_object()) return nullptr;
  return element.get_object().if_contains(merge_key);
}

std::vector<const json::value*> IdentitiesOf(const json::array& list, std::string_view merge_key) {
  std::vector<const json::value*> identities;
  identities.reserve(list.size());
  for (const json::value& element : list) identities.push_back(Identity(element, merge_key));
  return identities;
}

// Orders a merged list as apimachinery's normalizeElementOrder does: the elements named by the
// patch come in the patch's order, the server-only elements keep their live order, and the two
// runs are interleaved so that each server-only element stays in front of the first patch
// element that followed it in the live list.
json::array OrderLikePatch(json::array merged, const std::vector<const json::value*>& patch_order,
                           const std::vector<const json::value*>& server_order,
                           std::string_view merge_key) {
  struct Item {
    json::value value;
    int patch_index;
    int server_index;
  };
  std::vector<Item> patch_items;
  std::vector<Item> server_items;
  for (json::value& element : merged) {
    const json::value* identity = Identity(element, merge_key);
    const int patch_index = IndexOf(identity, patch_order);
    const int server_index = IndexOf(identity, server_order);
    (patch_index >= 0 ? patch_items : server_items)
        .push_back(Item{std::move(element), patch_index, server_index});
  }
  std::stable_sort(patch_items.begin(), patch_items.end(),
                   [](const Item& a, const Item& b) { return a.patch_index < b.patch_index; });
  const auto server_rank = [](const Item& item) {
    return item.server_index < 0 ? INT_MAX : item.server_index;
  };
  std::stable_sort(server_items.begin(), server_items.end(),
                   [&](const Item& a, const Item& b) { return server_rank(a) < server_rank(b); });

  json::array ordered;
  ordered.reserve(patch_items.size() + server_items.size());
  size_t i = 0;
  size_t j = 0;
  while (i < server_items.size() || j < patch_items.size()) {
    bool take_server;
    if (j >= patch_items.size()) {
      take_server = true;
    } else if (i >= server_items.size()) {
      take_server = false;
    } else {
      const int left = server_items[i].server_index;
      const int right = patch_items[j].server_index;
      take_server = left >= 0 && right >= 0 && left < right;
    }
    ordered.push_back(std::move(take_server ? server_items[i++].value : patch_items[j++].value));
  }
  return ordered;
}

}  // namespace patch_internal

absl::StatusOr<json::value> ApplyMergePatch(const json::value& target, const json::value& patch) {
  return MergePatchInto(target, patch);
}

bool SupportsStrategicMergePatch(std::string_view kind) {
  return std::find(kStrategicKinds.begin(), kStrategicKinds.end(), kind) != kStrategicKinds.end();
}

std::optional<std::string_view> ListMergeKey(std::string_view kind, std::string_view path) {
  const MergeListField* field = FindMergeListField(kind, path);
  if (field == nullptr) return std::nullopt;
  return field->merge_key;
}

}  // namespace muster::api
