#include "api/json_codec.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "boost/json/array.hpp"
#include "boost/json/object.hpp"
#include "boost/json/string.hpp"
#include "common/strings.h"
#include "fmt/format.h"

namespace muster::api {
namespace {

using boost::json::array;
using boost::json::object;
using boost::json::value;

using common::Cat;

// --- Schemas ----------------------------------------------------------------------------------
//
// Each model struct lists its JSON fields once, in the order they are written; the generic
// decoder and encoder below walk these lists, so a field cannot be read under one name and
// written under another. A dotted key ("guarantee.resource") reaches into a nested object that
// the model flattens away.

enum class Emit {
  kUnlessEmpty,  // omitted when zero/empty and the model's default is zero/empty too
  kAlways,       // written even when empty (fields Kubernetes marks required)
};

template <typename T, typename M>
struct Field {
  std::string_view key;
  M T::*member;
  Emit emit;
};

template <typename T, typename M>
constexpr Field<T, M> F(std::string_view key, M T::*member, Emit emit = Emit::kUnlessEmpty) {
  return {key, member, emit};
}

auto FieldsOf(std::type_identity<OwnerReference>) {
  using T = OwnerReference;
  return std::tuple(F("apiVersion", &T::api_version), F("kind", &T::kind), F("name", &T::name),
                    F("uid", &T::uid), F("controller", &T::controller),
                    F("blockOwnerDeletion", &T::block_owner_deletion));
}

auto FieldsOf(std::type_identity<ObjectMeta>) {
  using T = ObjectMeta;
  return std::tuple(F("name", &T::name), F("generateName", &T::generate_name),
                    F("namespace", &T::namespace_), F("uid", &T::uid),
                    F("resourceVersion", &T::resource_version), F("generation", &T::generation),
                    F("creationTimestamp", &T::creation_timestamp),
                    F("deletionTimestamp", &T::deletion_timestamp), F("labels", &T::labels),
                    F("annotations", &T::annotations), F("ownerReferences", &T::owner_references),
                    F("finalizers", &T::finalizers));
}

auto FieldsOf(std::type_identity<Taint>) {
  using T = Taint;
  return std::tuple(F("key", &T::key), F("value", &T::value), F("effect", &T::effect));
}

auto FieldsOf(std::type_identity<Toleration>) {
  using T = Toleration;
  return std::tuple(F("key", &T::key), F("operator", &T::op), F("value", &T::value),
                    F("effect", &T::effect), F("tolerationSeconds", &T::toleration_seconds));
}

auto FieldsOf(std::type_identity<LabelSelectorRequirement>) {
  using T = LabelSelectorRequirement;
  return std::tuple(F("key", &T::key), F("operator", &T::op), F("values", &T::values));
}

auto FieldsOf(std::type_identity<LabelSelector>) {
  using T = LabelSelector;
  return std::tuple(F("matchLabels", &T::match_labels),
                    F("matchExpressions", &T::match_expressions));
}

auto FieldsOf(std::type_identity<NodeSelectorRequirement>) {
  using T = NodeSelectorRequirement;
  return std::tuple(F("key", &T::key), F("operator", &T::op), F("values", &T::values));
}

auto FieldsOf(std::type_identity<NodeSelectorTerm>) {
  using T = NodeSelectorTerm;
  return std::tuple(F("matchExpressions", &T::match_expressions),
                    F("matchFields", &T::match_fields));
}

auto FieldsOf(std::type_identity<PreferredSchedulingTerm>) {
  using T = PreferredSchedulingTerm;
  return std::tuple(F("weight", &T::weight, Emit::kAlways),
                    F("preference", &T::preference, Emit::kAlways));
}

auto FieldsOf(std::type_identity<NodeAffinity>) {
  using T = NodeAffinity;
  return std::tuple(
      F("requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms", &T::required),
      F("preferredDuringSchedulingIgnoredDuringExecution", &T::preferred));
}

auto FieldsOf(std::type_identity<PodAffinityTerm>) {
  using T = PodAffinityTerm;
  return std::tuple(F("labelSelector", &T::label_selector), F("namespaces", &T::namespaces),
                    F("topologyKey", &T::topology_key, Emit::kAlways),
                    F("namespaceSelector", &T::namespace_selector));
}

auto FieldsOf(std::type_identity<WeightedPodAffinityTerm>) {
  using T = WeightedPodAffinityTerm;
  return std::tuple(F("weight", &T::weight, Emit::kAlways),
                    F("podAffinityTerm", &T::term, Emit::kAlways));
}

auto FieldsOf(std::type_identity<PodAffinity>) {
  using T = PodAffinity;
  return std::tuple(F("requiredDuringSchedulingIgnoredDuringExecution", &T::required),
                    F("preferredDuringSchedulingIgnoredDuringExecution", &T::preferred));
}

auto FieldsOf(std::type_identity<Affinity>) {
  using T = Affinity;
  return std::tuple(F("nodeAffinity", &T::node_affinity), F("podAffinity", &T::pod_affinity),
                    F("podAntiAffinity", &T::pod_anti_affinity));
}

auto FieldsOf(std::type_identity<TopologySpreadConstraint>) {
  using T = TopologySpreadConstraint;
  return std::tuple(F("maxSkew", &T::max_skew), F("topologyKey", &T::topology_key, Emit::kAlways),
                    F("whenUnsatisfiable", &T::when_unsatisfiable),
                    F("labelSelector", &T::label_selector), F("minDomains", &T::min_domains));
}

auto FieldsOf(std::type_identity<EnvVar>) {
  using T = EnvVar;
  return std::tuple(F("name", &T::name), F("value", &T::value));
}

auto FieldsOf(std::type_identity<ResourceRequirements>) {
  using T = ResourceRequirements;
  return std::tuple(F("limits", &T::limits), F("requests", &T::requests));
}

auto FieldsOf(std::type_identity<Container>) {
  using T = Container;
  return std::tuple(F("name", &T::name), F("image", &T::image), F("command", &T::command),
                    F("args", &T::args), F("workingDir", &T::working_dir), F("env", &T::env),
                    F("resources", &T::resources));
}

auto FieldsOf(std::type_identity<PodSpec>) {
  using T = PodSpec;
  return std::tuple(F("initContainers", &T::init_containers), F("containers", &T::containers),
                    F("restartPolicy", &T::restart_policy),
                    F("terminationGracePeriodSeconds", &T::termination_grace_period_seconds),
                    F("nodeSelector", &T::node_selector), F("nodeName", &T::node_name),
                    F("hostname", &T::hostname), F("subdomain", &T::subdomain),
                    F("affinity", &T::affinity), F("schedulerName", &T::scheduler_name),
                    F("tolerations", &T::tolerations),
                    F("priorityClassName", &T::priority_class_name), F("priority", &T::priority),
                    F("preemptionPolicy", &T::preemption_policy), F("overhead", &T::overhead),
                    F("topologySpreadConstraints", &T::topology_spread_constraints));
}

auto FieldsOf(std::type_identity<Condition>) {
  using T = Condition;
  return std::tuple(F("type", &T::type), F("status", &T::status),
                    F("transitionID", &T::transition_id),
                    F("lastTransitionTime", &T::last_transition_time), F("reason", &T::reason),
                    F("message", &T::message));
}

auto FieldsOf(std::type_identity<PodStatus>) {
  using T = PodStatus;
  return std::tuple(F("phase", &T::phase), F("conditions", &T::conditions),
                    F("message", &T::message), F("reason", &T::reason),
                    F("nominatedNodeName", &T::nominated_node_name), F("hostIP", &T::host_ip),
                    F("podIP", &T::pod_ip), F("startTime", &T::start_time));
}

auto FieldsOf(std::type_identity<Pod>) {
  using T = Pod;
  return std::tuple(F("metadata", &T::meta), F("spec", &T::spec), F("status", &T::status));
}

auto FieldsOf(std::type_identity<NodeSpec>) {
  using T = NodeSpec;
  return std::tuple(F("unschedulable", &T::unschedulable), F("taints", &T::taints));
}

auto FieldsOf(std::type_identity<NodeStatus>) {
  using T = NodeStatus;
  return std::tuple(F("capacity", &T::capacity), F("allocatable", &T::allocatable),
                    F("conditions", &T::conditions));
}

auto FieldsOf(std::type_identity<Node>) {
  using T = Node;
  return std::tuple(F("metadata", &T::meta), F("spec", &T::spec), F("status", &T::status));
}

auto FieldsOf(std::type_identity<PriorityClass>) {
  using T = PriorityClass;
  return std::tuple(F("metadata", &T::meta), F("value", &T::value, Emit::kAlways),
                    F("globalDefault", &T::global_default), F("description", &T::description),
                    F("preemptionPolicy", &T::preemption_policy));
}

auto FieldsOf(std::type_identity<NetworkTopologySpec>) {
  using T = NetworkTopologySpec;
  return std::tuple(F("mode", &T::mode), F("highestTierAllowed", &T::highest_tier_allowed),
                    F("highestTierName", &T::highest_tier_name));
}

auto FieldsOf(std::type_identity<PodGroupSpec>) {
  using T = PodGroupSpec;
  return std::tuple(F("minMember", &T::min_member), F("minTaskMember", &T::min_task_member),
                    F("queue", &T::queue), F("priorityClassName", &T::priority_class_name),
                    F("minResources", &T::min_resources),
                    F("networkTopology", &T::network_topology));
}

auto FieldsOf(std::type_identity<PodGroupStatus>) {
  using T = PodGroupStatus;
  return std::tuple(F("phase", &T::phase), F("conditions", &T::conditions),
                    F("running", &T::running), F("succeeded", &T::succeeded),
                    F("failed", &T::failed));
}

auto FieldsOf(std::type_identity<PodGroup>) {
  using T = PodGroup;
  return std::tuple(F("metadata", &T::meta), F("spec", &T::spec), F("status", &T::status));
}

auto FieldsOf(std::type_identity<QueueSpec>) {
  using T = QueueSpec;
  return std::tuple(F("weight", &T::weight), F("capability", &T::capability),
                    F("reclaimable", &T::reclaimable), F("guarantee.resource", &T::guarantee),
                    F("deserved", &T::deserved), F("parent", &T::parent),
                    F("priority", &T::priority));
}

auto FieldsOf(std::type_identity<QueueStatus>) {
  using T = QueueStatus;
  return std::tuple(F("state", &T::state), F("unknown", &T::unknown), F("pending", &T::pending),
                    F("running", &T::running), F("inqueue", &T::inqueue),
                    F("completed", &T::completed), F("allocated", &T::allocated));
}

auto FieldsOf(std::type_identity<Queue>) {
  using T = Queue;
  return std::tuple(F("metadata", &T::meta), F("spec", &T::spec), F("status", &T::status));
}

auto FieldsOf(std::type_identity<HyperNodeExactMatch>) {
  using T = HyperNodeExactMatch;
  return std::tuple(F("name", &T::name));
}

auto FieldsOf(std::type_identity<HyperNodeRegexMatch>) {
  using T = HyperNodeRegexMatch;
  return std::tuple(F("pattern", &T::pattern));
}

auto FieldsOf(std::type_identity<HyperNodeMemberSelector>) {
  using T = HyperNodeMemberSelector;
  return std::tuple(F("exactMatch", &T::exact_match), F("regexMatch", &T::regex_match),
                    F("labelMatch", &T::label_match));
}

auto FieldsOf(std::type_identity<HyperNodeMember>) {
  using T = HyperNodeMember;
  return std::tuple(F("type", &T::type), F("selector", &T::selector));
}

auto FieldsOf(std::type_identity<HyperNodeSpec>) {
  using T = HyperNodeSpec;
  return std::tuple(F("tier", &T::tier), F("tierName", &T::tier_name),
                    F("members", &T::members));
}

auto FieldsOf(std::type_identity<HyperNodeStatus>) {
  using T = HyperNodeStatus;
  return std::tuple(F("nodeCount", &T::node_count), F("conditions", &T::conditions));
}

auto FieldsOf(std::type_identity<HyperNode>) {
  using T = HyperNode;
  return std::tuple(F("metadata", &T::meta), F("spec", &T::spec), F("status", &T::status));
}

struct TypeMeta {
  std::string_view api_version;
  std::string_view kind;
};

template <typename T>
constexpr TypeMeta kTypeMeta = {};
template <>
constexpr TypeMeta kTypeMeta<Pod> = {"v1", "Pod"};
template <>
constexpr TypeMeta kTypeMeta<Node> = {"v1", "Node"};
template <>
constexpr TypeMeta kTypeMeta<PriorityClass> = {"scheduling.k8s.io/v1", "PriorityClass"};
template <>
constexpr TypeMeta kTypeMeta<PodGroup> = {"scheduling.volcano.sh/v1beta1", "PodGroup"};
template <>
constexpr TypeMeta kTypeMeta<Queue> = {"scheduling.volcano.sh/v1beta1", "Queue"};
template <>
constexpr TypeMeta kTypeMeta<HyperNode> = {"topology.volcano.sh/v1alpha1", "HyperNode"};

// --- Type traits ------------------------------------------------------------------------------

template <typename T>
struct IsOptionalType : std::false_type {};
template <typename U>
struct IsOptionalType<std::optional<U>> : std::true_type {};
template <typename T>
struct IsVectorType : std::false_type {};
template <typename U>
struct IsVectorType<std::vector<U>> : std::true_type {};
template <typename T>
struct IsStringMapType : std::false_type {};
template <typename U>
struct IsStringMapType<std::map<std::string, U>> : std::true_type {};

template <typename T>
constexpr bool kIsOptional = IsOptionalType<T>::value;
template <typename T>
constexpr bool kIsVector = IsVectorType<T>::value;
template <typename T>
constexpr bool kIsStringMap = IsStringMapType<T>::value;

template <typename T>
auto FieldsOfType() {
  return FieldsOf(std::type_identity<T>{});
}

// --- Errors -----------------------------------------------------------------------------------

std::string Join(std::string_view path, std::string_view key) {
  return path.empty() ? std::string(key) : Cat(path, ".", key);
}

absl::Status Invalid(std::string_view path, std::string_view problem) {
  return absl::InvalidArgumentError(path.empty() ? std::string(problem) : Cat(path, ": ", problem));
}

std::string_view JsonTypeName(const value& json) {
  switch (json.kind()) {
    case boost::json::kind::null:
      return "null";
    case boost::json::kind::bool_:
      return "bool";
    case boost::json::kind::int64:
    case boost::json::kind::uint64:
      return "integer";
    case boost::json::kind::double_:
      return "number";
    case boost::json::kind::string:
      return "string";
    case boost::json::kind::array:
      return "array";
    case boost::json::kind::object:
      return "object";
  }
  return "unknown";
}

absl::Status WrongType(std::string_view path, std::string_view expected, const value& json) {
  return Invalid(path, Cat("expected ", expected, ", got ", JsonTypeName(json)));
}

// The JSON text of a number: what resource.Quantity's UnmarshalJSON parses when given one.
std::string NumberText(const value& json) {
  if (json.is_int64()) return Cat(json.get_int64());
  if (json.is_uint64()) return Cat(json.get_uint64());
  std::array<char, 64> buffer;
  const auto result =
      std::to_chars(buffer.data(), buffer.data() + buffer.size(), json.get_double());
  return std::string(buffer.data(), result.ptr);
}

// --- Decoding ---------------------------------------------------------------------------------

template <typename M>
absl::StatusOr<M> DecodeInteger(const value& json, std::string_view path) {
  if (!json.is_number()) return WrongType(path, "an integer", json);
  std::optional<int64_t> number;
  if (json.is_int64()) {
    number = json.get_int64();
  } else if (json.is_uint64()) {
    if (json.get_uint64() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      number = static_cast<int64_t>(json.get_uint64());
    }
  } else {
    const double real = json.get_double();
    if (std::trunc(real) != real) {
      return Invalid(path, Cat("expected an integer, got number ", NumberText(json)));
    }
    if (real >= -0x1p63 && real < 0x1p63) number = static_cast<int64_t>(real);
  }
  if (!number || *number < std::numeric_limits<M>::min() ||
      *number > std::numeric_limits<M>::max()) {
    return Invalid(path, Cat("value ", NumberText(json), " is out of range for int",
                             std::numeric_limits<M>::digits + 1));
  }
  return static_cast<M>(*number);
}

absl::StatusOr<Quantity> DecodeQuantity(const value& json, std::string_view path) {
  std::string text;
  if (const boost::json::string* string = json.if_string()) {
    text = std::string(std::string_view(*string));
  } else if (json.is_number()) {
    text = NumberText(json);
  } else {
    return WrongType(path, "a quantity (string or number)", json);
  }
  absl::StatusOr<Quantity> quantity = Quantity::Parse(text);
  if (!quantity.ok()) return Invalid(path, std::string(quantity.status().message()));
  return *quantity;
}

template <typename T>
absl::StatusOr<T> DecodeStruct(const value& json, std::string_view path);

// Decodes a non-null JSON value as M.
template <typename M>
absl::StatusOr<M> Decode(const value& json, std::string_view path) {
  if constexpr (std::is_same_v<M, std::string>) {
    if (const boost::json::string* string = json.if_string()) {
      return std::string(std::string_view(*string));
    }
    return WrongType(path, "a string", json);
  } else if constexpr (std::is_same_v<M, bool>) {
    if (const bool* boolean = json.if_bool()) return *boolean;
    return WrongType(path, "a bool", json);
  } else if constexpr (std::is_integral_v<M>) {
    return DecodeInteger<M>(json, path);
  } else if constexpr (std::is_same_v<M, Quantity>) {
    return DecodeQuantity(json, path);
  } else if constexpr (kIsOptional<M>) {
    absl::StatusOr<typename M::value_type> inner = Decode<typename M::value_type>(json, path);
    if (!inner.ok()) return inner.status();
    return M(*std::move(inner));
  } else if constexpr (kIsVector<M>) {
    const array* elements = json.if_array();
    if (elements == nullptr) return WrongType(path, "an array", json);
    M out(elements->size());
    for (size_t i = 0; i < elements->size(); ++i) {
      if ((*elements)[i].is_null()) continue;
      auto element = Decode<typename M::value_type>((*elements)[i], Cat(path, "[", i, "]"));
      if (!element.ok()) return element.status();
      out[i] = *std::move(element);
    }
    return out;
  } else if constexpr (kIsStringMap<M>) {
    const object* entries = json.if_object();
    if (entries == nullptr) return WrongType(path, "an object", json);
    M out;
    for (const boost::json::key_value_pair& entry : *entries) {
      const std::string key(std::string_view(entry.key()));
      typename M::mapped_type& slot = out[key];
      if (entry.value().is_null()) continue;
      auto decoded = Decode<typename M::mapped_type>(entry.value(), Join(path, key));
      if (!decoded.ok()) return decoded.status();
      slot = *std::move(decoded);
    }
    return out;
  } else {
    return DecodeStruct<M>(json, path);
  }
}

// Where a (possibly dotted) key's value sits. `outer_present` is set when a dotted key's outer
// object is given even though the leaf is absent: `requiredDuring...: {}` is a node selector with
// no terms (which matches no node), not an absent one.
struct Lookup {
  const value* leaf = nullptr;
  bool outer_present = false;
};

absl::StatusOr<Lookup> Find(const object& fields, std::string_view key, std::string_view path) {
  Lookup lookup;
  const object* current = &fields;
  std::string current_path(path);
  while (true) {
    const size_t dot = key.find('.');
    const std::string_view segment = key.substr(0, dot);
    const value* found = current->if_contains(segment);
    if (found == nullptr || found->is_null()) return lookup;
    if (dot == std::string_view::npos) {
      lookup.leaf = found;
      return lookup;
    }
    lookup.outer_present = true;
    current_path = Join(current_path, segment);
    current = found->if_object();
    if (current == nullptr) return WrongType(current_path, "an object", *found);
    key.remove_prefix(dot + 1);
  }
}

template <typename T>
absl::StatusOr<T> DecodeStruct(const value& json, std::string_view path) {
  const object* fields = json.if_object();
  if (fields == nullptr) return WrongType(path, "an object", json);
  T out{};
  absl::Status status;
  auto decode_field = [&](const auto& field) {
    using M = std::remove_cvref_t<decltype(out.*field.member)>;
    absl::StatusOr<Lookup> lookup = Find(*fields, field.key, path);
    if (!lookup.ok()) {
      status = lookup.status();
      return false;
    }
    if (lookup->leaf == nullptr) {
      if constexpr (kIsOptional<M>) {
        if (lookup->outer_present) (out.*field.member).emplace();
      }
      return true;
    }
    absl::StatusOr<M> decoded = Decode<M>(*lookup->leaf, Join(path, field.key));
    if (!decoded.ok()) {
      status = decoded.status();
      return false;
    }
    out.*field.member = *std::move(decoded);
    return true;
  };
  std::apply([&](const auto&... field) { (void)(decode_field(field) && ...); }, FieldsOfType<T>());
  if (!status.ok()) return status;
  return out;
}

template <typename T>
absl::StatusOr<T> DecodeKind(const value& json) {
  const object* fields = json.if_object();
  if (fields == nullptr) return WrongType("", "an object", json);
  for (const auto& [key, expected] :
       {std::pair{"apiVersion", kTypeMeta<T>.api_version}, std::pair{"kind", kTypeMeta<T>.kind}}) {
    const value* given = fields->if_contains(key);
    if (given == nullptr || given->is_null()) continue;
    const absl::StatusOr<std::string> text = Decode<std::string>(*given, key);
    if (!text.ok()) return text.status();
    if (*text != expected)
      return Invalid(key, Cat("expected \"", expected, "\", got \"", *text, "\""));
  }
  return DecodeStruct<T>(json, "");
}

template <typename T>
absl::StatusOr<Object> DecodeKindAsObject(const value& json) {
  absl::StatusOr<T> decoded = DecodeKind<T>(json);
  if (!decoded.ok()) return decoded.status();
  return Object(*std::move(decoded));
}

struct KindDecoder {
  TypeMeta type;
  absl::StatusOr<Object> (*decode)(const value&);
};

constexpr auto kKindDecoders = std::to_array<KindDecoder>({
    {kTypeMeta<Pod>, &DecodeKindAsObject<Pod>},
    {kTypeMeta<Node>, &DecodeKindAsObject<Node>},
    {kTypeMeta<PodGroup>, &DecodeKindAsObject<PodGroup>},
    {kTypeMeta<Queue>, &DecodeKindAsObject<Queue>},
    {kTypeMeta<PriorityClass>, &DecodeKindAsObject<PriorityClass>},
    {kTypeMeta<HyperNode>, &DecodeKindAsObject<HyperNode>},
});

// --- Encoding ---------------------------------------------------------------------------------

template <typename M>
bool IsEmpty(const M& field) {
  if constexpr (std::is_same_v<M, Quantity>) {
    return field.IsZero();
  } else if constexpr (std::is_arithmetic_v<M>) {
    return field == M{};
  } else if constexpr (kIsOptional<M>) {
    return !field.has_value();
  } else if constexpr (requires { field.empty(); }) {
    return field.empty();
  } else {
    return std::apply([&](const auto&... each) { return (IsEmpty(field.*each.member) && ...); },
                      FieldsOfType<M>());
  }
}

template <typename T>
object EncodeStruct(const T& from);

template <typename M>
value Encode(const M& field) {
  if constexpr (std::is_same_v<M, std::string>) {
    return value(std::string_view(field));
  } else if constexpr (std::is_same_v<M, bool>) {
    return value(field);
  } else if constexpr (std::is_integral_v<M>) {
    return value(static_cast<int64_t>(field));
  } else if constexpr (std::is_same_v<M, Quantity>) {
    return value(std::string_view(field.ToString()));
  } else if constexpr (kIsOptional<M>) {
    return Encode(*field);
  } else if constexpr (kIsVector<M>) {
    array out;
    out.reserve(field.size());
    for (const auto& element : field) out.push_back(Encode(element));
    return out;
  } else if constexpr (kIsStringMap<M>) {
    object out;
    for (const auto& [key, element] : field) out.emplace(key, Encode(element));
    return out;
  } else {
    return EncodeStruct(field);
  }
}

// The object that holds a dotted key's last segment ("a" for "a.b"), created where missing.
object& ParentFor(object& root, std::string_view key) {
  object* current = &root;
  for (size_t dot = key.find('.'); dot != std::string_view::npos; dot = key.find('.')) {
    value& next = (*current)[key.substr(0, dot)];
    if (!next.is_object()) next.emplace_object();
    current = &next.get_object();
    key.remove_prefix(dot + 1);
  }
  return *current;
}

std::string_view LastSegment(std::string_view key) { return key.substr(key.rfind('.') + 1); }

template <typename T>
object EncodeStruct(const T& from) {
  const T defaults{};
  object out;
  auto encode_field = [&](const auto& field) {
    const auto& member = from.*field.member;
    if (field.emit == Emit::kUnlessEmpty && IsEmpty(member) && IsEmpty(defaults.*field.member)) {
      return;
    }
    if constexpr (kIsOptional<std::remove_cvref_t<decltype(member)>>) {
      if (!member.has_value()) return;
    }
    ParentFor(out, field.key)[LastSegment(field.key)] = Encode(member);
  };
  std::apply([&](const auto&... field) { (encode_field(field), ...); }, FieldsOfType<T>());
  return out;
}

template <typename T>
value EncodeKind(const T& from) {
  object out;
  out.emplace("apiVersion", kTypeMeta<T>.api_version);
  out.emplace("kind", kTypeMeta<T>.kind);
  for (boost::json::key_value_pair& entry : EncodeStruct(from)) {
    out.emplace(entry.key(), std::move(entry.value()));
  }
  return out;
}

// apiVersion or kind, which DecodeObject needs to pick a decoder.
absl::StatusOr<std::string> TypeField(const object& fields, std::string_view key) {
  const value* given = fields.if_contains(key);
  if (given == nullptr || given->is_null()) {
    return Invalid(key, "required to tell the object's type, but missing");
  }
  return Decode<std::string>(*given, key);
}

}  // namespace

absl::StatusOr<Pod> DecodePod(const value& json) { return DecodeKind<Pod>(json); }

absl::StatusOr<LabelSelector> DecodeLabelSelector(const value& json) {
  return DecodeStruct<LabelSelector>(json, "");
}
absl::StatusOr<Node> DecodeNode(const value& json) { return DecodeKind<Node>(json); }
absl::StatusOr<PodGroup> DecodePodGroup(const value& json) { return DecodeKind<PodGroup>(json); }
absl::StatusOr<Queue> DecodeQueue(const value& json) { return DecodeKind<Queue>(json); }
absl::StatusOr<PriorityClass> DecodePriorityClass(const value& json) {
  return DecodeKind<PriorityClass>(json);
}

absl::StatusOr<HyperNode> DecodeHyperNode(const value& json) { return DecodeKind<HyperNode>(json); }

absl::StatusOr<Object> DecodeObject(const value& json) {
  const object* fields = json.if_object();
  if (fields == nullptr) return WrongType("", "an object", json);
  const absl::StatusOr<std::string> api_version = TypeField(*fields, "apiVersion");
  if (!api_version.ok()) return api_version.status();
  const absl::StatusOr<std::string> kind = TypeField(*fields, "kind");
  if (!kind.ok()) return kind.status();
  for (const KindDecoder& decoder : kKindDecoders) {
    if (decoder.type.api_version == *api_version && decoder.type.kind == *kind) {
      return decoder.decode(json);
    }
  }
  return absl::InvalidArgumentError(
      Cat("no kind \"", *kind, "\" is registered for version \"", *api_version, "\""));
}

value EncodePod(const Pod& pod) { return EncodeKind(pod); }
value EncodeNode(const Node& node) { return EncodeKind(node); }
value EncodePodGroup(const PodGroup& pod_group) { return EncodeKind(pod_group); }
value EncodeQueue(const Queue& queue) { return EncodeKind(queue); }
value EncodePriorityClass(const PriorityClass& priority_class) {
  return EncodeKind(priority_class);
}

value EncodeHyperNode(const HyperNode& hyper_node) { return EncodeKind(hyper_node); }

value EncodeObject(const Object& any) {
  return std::visit([](const auto& typed) { return EncodeKind(typed); }, any);
}

}  // namespace muster::api
