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

#include "absl/status/status.h"
#include "boost/json/array.hpp"
#include "boost/json/object.hpp"
#include "boost/json/serialize.hpp"
#include "boost/json/string.hpp"
#include "fmt/format.h"

namespace muster::api {
namespace {

namespace json = boost::json;

// --- Patch metadata ------------------------------------------------------------------------------

// A list field whose patchStrategy is "merge" (k8s.io/api/core/v1 struct tags). Lists not named
// here are atomic: a strategic merge patch or an apply replaces them whole.
struct MergeListField {
  // The kind the field belongs to; empty for ObjectMeta fields, which every kind has.
  std::string_view kind;
  // The field's path from the object root, dot-separated; "[]" steps into list elements.
  std::string_view path;
  // The patchMergeKey; empty for a set-like list of primitives (merged as a union).
  std::string_view merge_key;
};

// The built-in kinds the API server serves (apiserver/resources.cc): their Go types are what
// strategic merge patches are written against. Event, ConfigMap, PriorityClass and Lease have no
// merge lists of their own (only ObjectMeta's); every other list of theirs is atomic.
constexpr auto kStrategicKinds = std::to_array<std::string_view>(
    {"Namespace", "Node", "Pod", "Event", "Service", "ConfigMap", "PriorityClass", "Lease"});

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
});

const MergeListField* FindMergeListField(std::string_view kind, std::string_view path) {
  for (const MergeListField& field : kMergeListFields) {
    if ((field.kind.empty() || field.kind == kind) && field.path == path) return &field;
  }
  return nullptr;
}

// --- JSON helpers --------------------------------------------------------------------------------

constexpr std::string_view kPatchDirective = "$patch";
constexpr std::string_view kRetainKeysDirective = "$retainKeys";
constexpr std::string_view kSetElementOrderPrefix = "$setElementOrder/";
constexpr std::string_view kDeleteFromPrimitiveListPrefix = "$deleteFromPrimitiveList/";

std::string_view View(json::string_view text) { return {text.data(), text.size()}; }
std::string_view View(const json::string& text) { return {text.data(), text.size()}; }

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

int IndexOf(const json::value* identity, const std::vector<const json::value*>& identities) {
  if (identity == nullptr) return -1;
  for (size_t i = 0; i < identities.size(); ++i) {
    if (identities[i] != nullptr && JsonEqual(*identities[i], *identity)) {
      return static_cast<int>(i);
    }
  }
  return -1;
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

// --- RFC 6902 JSON patch -------------------------------------------------------------------------

using PointerTokens = std::vector<std::string>;

absl::StatusOr<PointerTokens> ParsePointer(std::string_view pointer) {
  PointerTokens tokens;
  if (pointer.empty()) return tokens;
  if (pointer.front() != '/') {
    return absl::InvalidArgumentError("a JSON pointer must be empty or start with '/'");
  }
  std::string token;
  for (size_t i = 1; i <= pointer.size(); ++i) {
    if (i == pointer.size() || pointer[i] == '/') {
      tokens.push_back(std::move(token));
      token.clear();
      continue;
    }
    if (pointer[i] != '~') {
      token.push_back(pointer[i]);
      continue;
    }
    const char escaped = i + 1 < pointer.size() ? pointer[i + 1] : '\0';
    if (escaped != '0' && escaped != '1') {
      return absl::InvalidArgumentError("'~' must be followed by '0' or '1' in a JSON pointer");
    }
    token.push_back(escaped == '0' ? '~' : '/');
    ++i;
  }
  return tokens;
}

// An RFC 6901 array index ("0" or digits without a leading zero) below `size`, or equal to it
// when `allow_end` (add may insert at the end; "-" names that position).
absl::StatusOr<size_t> ArrayIndex(std::string_view token, size_t size, bool allow_end) {
  if (token == "-") {
    if (allow_end) return size;
    return absl::InvalidArgumentError("path not found: \"-\" names no existing element");
  }
  const bool digits_only = !token.empty() && std::all_of(token.begin(), token.end(), [](char c) {
    return c >= '0' && c <= '9';
  });
  if (!digits_only || (token.size() > 1 && token.front() == '0')) {
    return absl::InvalidArgumentError(fmt::format("invalid array index \"{}\"", token));
  }
  // 19 digits always fit in 64 bits; longer indexes are out of range anyway.
  uint64_t index = 0;
  if (token.size() <= 19) {
    for (char c : token) index = index * 10 + static_cast<uint64_t>(c - '0');
  }
  const bool in_range = token.size() <= 19 && (allow_end ? index <= size : index < size);
  if (!in_range) {
    return absl::InvalidArgumentError(
        fmt::format("path not found: array index {} out of range (array size {})", token, size));
  }
  return static_cast<size_t>(index);
}

// The value that the first `count` tokens lead to.
absl::StatusOr<json::value*> Resolve(json::value& document, const PointerTokens& tokens,
                                     size_t count) {
  json::value* current = &document;
  for (size_t i = 0; i < count; ++i) {
    const std::string& token = tokens[i];
    if (current->is_object()) {
      current = current->get_object().if_contains(token);
      if (current == nullptr) return absl::InvalidArgumentError("path not found");
    } else if (current->is_array()) {
      json::array& array = current->get_array();
      absl::StatusOr<size_t> index = ArrayIndex(token, array.size(), /*allow_end=*/false);
      if (!index.ok()) return index.status();
      current = &array[*index];
    } else {
      return absl::InvalidArgumentError("path not found");
    }
  }
  return current;
}

absl::Status AddAt(json::value& document, const PointerTokens& tokens, json::value value) {
  if (tokens.empty()) {
    document = std::move(value);
    return absl::OkStatus();
  }
  absl::StatusOr<json::value*> parent = Resolve(document, tokens, tokens.size() - 1);
  if (!parent.ok()) return parent.status();
  const std::string& last = tokens.back();
  if ((*parent)->is_object()) {
    (*parent)->get_object()[last] = std::move(value);
    return absl::OkStatus();
  }
  if ((*parent)->is_array()) {
    json::array& array = (*parent)->get_array();
    absl::StatusOr<size_t> index = ArrayIndex(last, array.size(), /*allow_end=*/true);
    if (!index.ok()) return index.status();
    array.insert(array.begin() + static_cast<std::ptrdiff_t>(*index), std::move(value));
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError("path not found: the parent is not an object or array");
}

absl::StatusOr<json::value> RemoveAt(json::value& document, const PointerTokens& tokens) {
  if (tokens.empty()) return absl::InvalidArgumentError("cannot remove the whole document");
  absl::StatusOr<json::value*> parent = Resolve(document, tokens, tokens.size() - 1);
  if (!parent.ok()) return parent.status();
  const std::string& last = tokens.back();
  if ((*parent)->is_object()) {
    json::object& object = (*parent)->get_object();
    auto it = object.find(last);
    if (it == object.end()) return absl::InvalidArgumentError("path not found");
    json::value removed = std::move(it->value());
    object.stable_erase(it);
    return removed;
  }
  if ((*parent)->is_array()) {
    json::array& array = (*parent)->get_array();
    absl::StatusOr<size_t> index = ArrayIndex(last, array.size(), /*allow_end=*/false);
    if (!index.ok()) return index.status();
    json::value removed = std::move(array[*index]);
    array.erase(array.begin() + static_cast<std::ptrdiff_t>(*index));
    return removed;
  }
  return absl::InvalidArgumentError("path not found");
}

bool IsProperPrefix(const PointerTokens& prefix, const PointerTokens& tokens) {
  return prefix.size() < tokens.size() && std::equal(prefix.begin(), prefix.end(), tokens.begin());
}

absl::Status ApplyJsonPatchOperation(json::value& document, const json::value& operation,
                                     size_t index) {
  if (!operation.is_object()) {
    return absl::InvalidArgumentError(fmt::format("op {}: not a JSON object", index));
  }
  const json::object& fields = operation.get_object();
  const json::value* op_field = fields.if_contains("op");
  if (op_field == nullptr || !op_field->is_string()) {
    return absl::InvalidArgumentError(fmt::format("op {}: missing \"op\" string", index));
  }
  const std::string_view op = View(op_field->get_string());
  const json::value* path_field = fields.if_contains("path");
  if (path_field == nullptr || !path_field->is_string()) {
    return absl::InvalidArgumentError(
        fmt::format("op {} ({}): missing \"path\" string", index, op));
  }
  const std::string_view path = View(path_field->get_string());

  const bool needs_from = op == "move" || op == "copy";
  std::string_view from;
  if (needs_from) {
    const json::value* from_field = fields.if_contains("from");
    if (from_field == nullptr || !from_field->is_string()) {
      return absl::InvalidArgumentError(
          fmt::format("op {} ({} {}): missing \"from\" string", index, op, path));
    }
    from = View(from_field->get_string());
  }
  const std::string where = needs_from ? fmt::format("op {} ({} {} from {})", index, op, path, from)
                                       : fmt::format("op {} ({} {})", index, op, path);
  const auto fail = [&where](std::string_view why) {
    return absl::InvalidArgumentError(fmt::format("{}: {}", where, why));
  };
  const auto fail_with = [&fail](const absl::Status& status, std::string_view prefix = "") {
    return fail(fmt::format("{}{}", prefix, std::string(status.message())));
  };

  if (op != "add" && op != "remove" && op != "replace" && op != "move" && op != "copy" &&
      op != "test") {
    return fail("unknown op");
  }
  const json::value* value = fields.if_contains("value");
  if (value == nullptr && (op == "add" || op == "replace" || op == "test")) {
    return fail("missing \"value\"");
  }
  absl::StatusOr<PointerTokens> tokens = ParsePointer(path);
  if (!tokens.ok()) return fail_with(tokens.status());
  absl::StatusOr<PointerTokens> from_tokens = PointerTokens{};
  if (needs_from) {
    from_tokens = ParsePointer(from);
    if (!from_tokens.ok()) return fail_with(from_tokens.status(), "from: ");
  }

  if (op == "add") {
    absl::Status added = AddAt(document, *tokens, *value);
    return added.ok() ? added : fail_with(added);
  }
  if (op == "remove") {
    absl::StatusOr<json::value> removed = RemoveAt(document, *tokens);
    return removed.ok() ? absl::OkStatus() : fail_with(removed.status());
  }
  if (op == "replace") {
    absl::StatusOr<json::value*> target = Resolve(document, *tokens, tokens->size());
    if (!target.ok()) return fail_with(target.status());
    **target = *value;
    return absl::OkStatus();
  }
  if (op == "test") {
    absl::StatusOr<json::value*> target = Resolve(document, *tokens, tokens->size());
    if (!target.ok()) return fail_with(target.status());
    if (!JsonEqual(**target, *value)) {
      return fail(fmt::format("test failed: the value is {}, not {}", Abbreviated(**target),
                              Abbreviated(*value)));
    }
    return absl::OkStatus();
  }
  if (op == "copy") {
    absl::StatusOr<json::value*> source = Resolve(document, *from_tokens, from_tokens->size());
    if (!source.ok()) return fail_with(source.status(), "from: ");
    json::value copy = **source;
    absl::Status added = AddAt(document, *tokens, std::move(copy));
    return added.ok() ? added : fail_with(added);
  }
  // move
  if (*from_tokens == *tokens) {
    absl::StatusOr<json::value*> source = Resolve(document, *from_tokens, from_tokens->size());
    return source.ok() ? absl::OkStatus() : fail_with(source.status(), "from: ");
  }
  if (IsProperPrefix(*from_tokens, *tokens)) {
    return fail("cannot move a value into one of its own children");
  }
  absl::StatusOr<json::value> moved = RemoveAt(document, *from_tokens);
  if (!moved.ok()) return fail_with(moved.status(), "from: ");
  absl::Status added = AddAt(document, *tokens, std::move(*moved));
  return added.ok() ? added : fail_with(added);
}

// --- Strategic merge patch -----------------------------------------------------------------------

bool IsDirectiveKey(std::string_view key) {
  return key == kPatchDirective || key == kRetainKeysDirective ||
         key.starts_with(kSetElementOrderPrefix) || key.starts_with(kDeleteFromPrimitiveListPrefix);
}

// Rejects malformed directives up front, so that errors do not depend on member order.
absl::Status ValidateDirectives(const json::object& patch, std::string_view path) {
  for (const json::key_value_pair& member : patch) {
    const std::string_view key = View(member.key());
    const json::value& value = member.value();
    if (key == kPatchDirective) {
      if (!value.is_string()) {
        return absl::InvalidArgumentError(fmt::format("{}: $patch must be a string", Where(path)));
      }
      const std::string_view directive = View(value.get_string());
      if (directive != "delete" && directive != "replace" && directive != "merge") {
        return absl::InvalidArgumentError(
            fmt::format("{}: unknown $patch directive \"{}\"", Where(path), directive));
      }
    } else if (key == kRetainKeysDirective) {
      const bool strings =
          value.is_array() && std::all_of(value.get_array().begin(), value.get_array().end(),
                                          [](const json::value& v) { return v.is_string(); });
      if (!strings) {
        return absl::InvalidArgumentError(
            fmt::format("{}: $retainKeys must be a list of strings", Where(path)));
      }
    } else if (key.starts_with("$setElementOrder") || key.starts_with("$deleteFromPrimitiveList")) {
      const bool well_formed =
          (key.starts_with(kSetElementOrderPrefix) && key.size() > kSetElementOrderPrefix.size()) ||
          (key.starts_with(kDeleteFromPrimitiveListPrefix) &&
           key.size() > kDeleteFromPrimitiveListPrefix.size());
      if (!well_formed) {
        return absl::InvalidArgumentError(fmt::format(
            "{}: malformed directive \"{}\" (want {}<field>)", Where(path), key,
            key.starts_with("$set") ? kSetElementOrderPrefix : kDeleteFromPrimitiveListPrefix));
      }
      if (!value.is_array()) {
        return absl::InvalidArgumentError(fmt::format("{}: {} must be a list", Where(path), key));
      }
    }
  }
  return absl::OkStatus();
}

// apimachinery's mergeMap/mergeSlice over the metadata table, for one kind. Stateless apart
// from the kind; every method builds new values and leaves its arguments' referents alone.
class StrategicMerge {
 public:
  explicit StrategicMerge(std::string_view kind) : kind_(kind) {}

  // Merges `patch` into `original`; nullopt when the patch deletes the map (`$patch: delete`).
  absl::StatusOr<std::optional<json::object>> MergeObject(json::object original,
                                                          const json::object& patch,
                                                          const std::string& path) const;

  // A patch value for a field the original lacks, with directives applied and nulls dropped;
  // nullopt when it deletes itself.
  absl::StatusOr<std::optional<json::value>> Materialize(const json::value& patch,
                                                         const std::string& path) const;

 private:
  absl::StatusOr<json::array> MergeList(const json::array& original, const json::array& patch,
                                        const std::string& path, const MergeListField& field) const;
  absl::StatusOr<json::array> MergeKeyedList(const json::array& original, const json::array& patch,
                                             const std::string& path,
                                             std::string_view merge_key) const;
  absl::Status ApplyRetainKeys(json::object& original, const json::object& patch,
                               std::string_view path) const;

  std::string_view kind_;
};

absl::Status StrategicMerge::ApplyRetainKeys(json::object& original, const json::object& patch,
                                             std::string_view path) const {
  const json::value* retain = patch.if_contains(kRetainKeysDirective);
  if (retain == nullptr) return absl::OkStatus();
  const json::array& keep = retain->get_array();
  const auto kept = [&keep](std::string_view key) {
    return std::any_of(keep.begin(), keep.end(),
                       [key](const json::value& name) { return View(name.get_string()) == key; });
  };
  for (const json::key_value_pair& member : patch) {
    const std::string_view key = View(member.key());
    if (member.value().is_null() || IsDirectiveKey(key)) continue;
    if (!kept(key)) {
      return absl::InvalidArgumentError(fmt::format(
          "{}: field \"{}\" is set by the patch but missing from $retainKeys", Where(path), key));
    }
  }
  json::object retained;
  for (json::key_value_pair& member : original) {
    if (kept(View(member.key()))) retained[member.key()] = std::move(member.value());
  }
  original = std::move(retained);
  return absl::OkStatus();
}

absl::StatusOr<std::optional<json::object>> StrategicMerge::MergeObject(
    json::object original, const json::object& patch, const std::string& path) const {
  if (absl::Status valid = ValidateDirectives(patch, path); !valid.ok()) return valid;
  if (const json::value* directive = patch.if_contains(kPatchDirective)) {
    const std::string_view name = View(directive->get_string());
    if (name == "delete") return std::nullopt;
    if (name == "replace") {
      json::object replacement = patch;
      replacement.stable_erase(kPatchDirective);
      return MergeObject(json::object(), replacement, path);
    }
    // "merge" is the default.
  }
  if (absl::Status retained = ApplyRetainKeys(original, patch, path); !retained.ok()) {
    return retained;
  }

  // $setElementOrder/<field> together with <field>: merge, then order as the directive says.
  std::vector<std::string_view> ordered_fields;
  for (const json::key_value_pair& member : patch) {
    const std::string_view key = View(member.key());
    if (!key.starts_with(kSetElementOrderPrefix)) continue;
    const std::string_view field = key.substr(kSetElementOrderPrefix.size());
    const std::string field_path = FieldPath(path, field);
    const MergeListField* list_field = FindMergeListField(kind_, field_path);
    const json::value* patch_list = patch.if_contains(field);
    // Ordering a list that is replaced anyway, or a patch value that is no list: nothing to do.
    if (list_field == nullptr || (patch_list != nullptr && !patch_list->is_array())) continue;
    const json::value* current = original.if_contains(field);
    const json::array empty;
    const json::array& live =
        current != nullptr && current->is_array() ? current->get_array() : empty;
    json::array merged;
    if (patch_list != nullptr) {
      absl::StatusOr<json::array> result =
          MergeList(live, patch_list->get_array(), field_path, *list_field);
      if (!result.ok()) return result.status();
      merged = *std::move(result);
    } else if (current != nullptr && current->is_array()) {
      merged = live;
    } else {
      continue;
    }
    json::array ordered = OrderLikePatch(
        std::move(merged), IdentitiesOf(member.value().get_array(), list_field->merge_key),
        IdentitiesOf(live, list_field->merge_key), list_field->merge_key);
    original[field] = std::move(ordered);
    ordered_fields.push_back(field);
  }

  for (const json::key_value_pair& member : patch) {
    const std::string_view key = View(member.key());
    if (IsDirectiveKey(key) ||
        std::find(ordered_fields.begin(), ordered_fields.end(), key) != ordered_fields.end()) {
      continue;
    }
    const json::value& patch_value = member.value();
    if (patch_value.is_null()) {
      original.stable_erase(key);
      continue;
    }
    const std::string field_path = FieldPath(path, key);
    json::value* current = original.if_contains(key);
    if (current != nullptr && current->is_object() && patch_value.is_object()) {
      absl::StatusOr<std::optional<json::object>> merged =
          MergeObject(std::move(current->get_object()), patch_value.get_object(), field_path);
      if (!merged.ok()) return merged.status();
      if (merged->has_value()) {
        *current = std::move(**merged);
      } else {
        original.stable_erase(key);
      }
      continue;
    }
    if (current != nullptr && current->is_array() && patch_value.is_array()) {
      if (const MergeListField* list_field = FindMergeListField(kind_, field_path)) {
        absl::StatusOr<json::array> merged =
            MergeList(current->get_array(), patch_value.get_array(), field_path, *list_field);
        if (!merged.ok()) return merged.status();
        *current = *std::move(merged);
        continue;
      }
    }
    absl::StatusOr<std::optional<json::value>> fresh = Materialize(patch_value, field_path);
    if (!fresh.ok()) return fresh.status();
    if (fresh->has_value()) {
      original[key] = std::move(**fresh);
    } else {
      original.stable_erase(key);
    }
  }

  // $deleteFromPrimitiveList/<field>: drop the listed values from the (merged) list.
  for (const json::key_value_pair& member : patch) {
    const std::string_view key = View(member.key());
    if (!key.starts_with(kDeleteFromPrimitiveListPrefix)) continue;
    json::value* current = original.if_contains(key.substr(kDeleteFromPrimitiveListPrefix.size()));
    if (current == nullptr || !current->is_array()) continue;
    const json::array& doomed = member.value().get_array();
    json::array kept;
    for (json::value& element : current->get_array()) {
      if (!Contains(doomed, element)) kept.push_back(std::move(element));
    }
    *current = std::move(kept);
  }
  return original;
}

absl::StatusOr<json::array> StrategicMerge::MergeList(const json::array& original,
                                                      const json::array& patch,
                                                      const std::string& path,
                                                      const MergeListField& field) const {
  if (!field.merge_key.empty()) return MergeKeyedList(original, patch, path, field.merge_key);
  // A set-like list of primitives: the union, duplicates dropped, ordered like the patch.
  json::array merged;
  for (const json::array* list : {&original, &patch}) {
    for (const json::value& element : *list) {
      if (element.is_object() || element.is_array()) {
        return absl::InvalidArgumentError(fmt::format(
            "{}: cannot merge a list of objects or lists without a merge key", Where(path)));
      }
      if (!Contains(merged, element)) merged.push_back(element);
    }
  }
  return OrderLikePatch(std::move(merged), IdentitiesOf(patch, ""), IdentitiesOf(original, ""), "");
}

absl::StatusOr<json::array> StrategicMerge::MergeKeyedList(const json::array& original,
                                                           const json::array& patch,
                                                           const std::string& path,
                                                           std::string_view merge_key) const {
  const std::string element_path = ElementPath(path);
  json::array merged = original;
  std::vector<const json::object*> updates;
  bool replace = false;
  for (size_t i = 0; i < patch.size(); ++i) {
    if (!patch[i].is_object()) {
      return absl::InvalidArgumentError(
          fmt::format("{}: patch element {} is not an object", Where(path), i));
    }
    const json::object& element = patch[i].get_object();
    const json::value* directive = element.if_contains(kPatchDirective);
    const json::value* key = element.if_contains(merge_key);
    if (directive == nullptr) {
      updates.push_back(&element);
      continue;
    }
    const std::string_view name =
        directive->is_string() ? View(directive->get_string()) : std::string_view();
    if (name == "delete") {
      if (key == nullptr) {
        return absl::InvalidArgumentError(fmt::format(
            "{}: a $patch: delete element lacks the merge key \"{}\"", Where(path), merge_key));
      }
      json::array kept;
      for (json::value& live : merged) {
        const json::value* identity = Identity(live, merge_key);
        if (identity == nullptr || !JsonEqual(*identity, *key)) kept.push_back(std::move(live));
      }
      merged = std::move(kept);
    } else if (name == "replace") {
      replace = true;
    } else if (name == "merge") {
      if (key != nullptr) updates.push_back(&element);
    } else {
      return absl::InvalidArgumentError(
          fmt::format("{}: unknown $patch directive {}", Where(path), Abbreviated(*directive)));
    }
  }

  if (replace) {
    json::array replacement;
    for (const json::object* element : updates) {
      absl::StatusOr<std::optional<json::object>> fresh =
          MergeObject(json::object(), *element, element_path);
      if (!fresh.ok()) return fresh.status();
      if (fresh->has_value()) replacement.push_back(std::move(**fresh));
    }
    return replacement;
  }

  const json::array server_order = merged;
  std::vector<const json::value*> patch_order;
  for (const json::object* element : updates) {
    const json::value* key = element->if_contains(merge_key);
    if (key == nullptr) {
      return absl::InvalidArgumentError(fmt::format("{}: element {} lacks the merge key \"{}\"",
                                                    Where(path), Abbreviated(json::value(*element)),
                                                    merge_key));
    }
    patch_order.push_back(key);
    auto match = std::find_if(merged.begin(), merged.end(), [&](const json::value& live) {
      const json::value* identity = Identity(live, merge_key);
      return identity != nullptr && JsonEqual(*identity, *key);
    });
    absl::StatusOr<std::optional<json::object>> result =
        match != merged.end() ? MergeObject(std::move(match->get_object()), *element, element_path)
                              : MergeObject(json::object(), *element, element_path);
    if (!result.ok()) return result.status();
    if (match != merged.end()) {
      if (result->has_value()) {
        *match = std::move(**result);
      } else {
        merged.erase(match);
      }
    } else if (result->has_value()) {
      merged.push_back(std::move(**result));
    }
  }
  return OrderLikePatch(std::move(merged), patch_order, IdentitiesOf(server_order, merge_key),
                        merge_key);
}

absl::StatusOr<std::optional<json::value>> StrategicMerge::Materialize(
    const json::value& patch, const std::string& path) const {
  if (patch.is_object()) {
    absl::StatusOr<std::optional<json::object>> fresh =
        MergeObject(json::object(), patch.get_object(), path);
    if (!fresh.ok()) return fresh.status();
    if (!fresh->has_value()) return std::nullopt;
    return json::value(std::move(**fresh));
  }
  if (!patch.is_array()) return patch;
  if (const MergeListField* list_field = FindMergeListField(kind_, path)) {
    absl::StatusOr<json::array> fresh =
        MergeList(json::array(), patch.get_array(), path, *list_field);
    if (!fresh.ok()) return fresh.status();
    return json::value(*std::move(fresh));
  }
  json::array elements;
  const std::string element_path = ElementPath(path);
  for (const json::value& element : patch.get_array()) {
    absl::StatusOr<std::optional<json::value>> fresh = Materialize(element, element_path);
    if (!fresh.ok()) return fresh.status();
    if (fresh->has_value()) elements.push_back(std::move(**fresh));
  }
  return json::value(std::move(elements));
}

// --- Server-side apply ---------------------------------------------------------------------------

class ApplyMerge {
 public:
  explicit ApplyMerge(std::string_view kind) : kind_(kind) {}

  absl::StatusOr<json::value> Apply(json::value live, const json::value& applied,
                                    const std::string& path) const {
    if (applied.is_object()) {
      if (!live.is_object()) live = json::object();
      json::object& object = live.get_object();
      for (const json::key_value_pair& member : applied.get_object()) {
        if (member.value().is_null()) {
          object.stable_erase(member.key());
          continue;
        }
        json::value& slot = object[member.key()];
        absl::StatusOr<json::value> merged =
            Apply(std::move(slot), member.value(), FieldPath(path, View(member.key())));
        if (!merged.ok()) return merged.status();
        slot = *std::move(merged);
      }
      return live;
    }
    if (!applied.is_array()) return applied;
    if (const MergeListField* list_field = FindMergeListField(kind_, path)) {
      const json::array empty;
      return MergeList(live.is_array() ? live.get_array() : empty, applied.get_array(), path,
                       list_field->merge_key);
    }
    json::array elements;
    const std::string element_path = ElementPath(path);
    for (const json::value& element : applied.get_array()) {
      absl::StatusOr<json::value> fresh = Apply(json::value(), element, element_path);
      if (!fresh.ok()) return fresh.status();
      elements.push_back(*std::move(fresh));
    }
    return json::value(std::move(elements));
  }

 private:
  absl::StatusOr<json::value> MergeList(const json::array& live, const json::array& applied,
                                        const std::string& path, std::string_view merge_key) const {
    json::array merged = live;
    const std::string element_path = ElementPath(path);
    for (size_t i = 0; i < applied.size(); ++i) {
      const json::value& element = applied[i];
      const json::value* key = Identity(element, merge_key);
      if (key == nullptr) {
        return absl::InvalidArgumentError(
            fmt::format("{}: element {} lacks the merge key \"{}\"", Where(path), i, merge_key));
      }
      if (merge_key.empty() && (element.is_object() || element.is_array())) {
        return absl::InvalidArgumentError(fmt::format(
            "{}: cannot merge a list of objects or lists without a merge key", Where(path)));
      }
      auto match = std::find_if(merged.begin(), merged.end(), [&](const json::value& current) {
        const json::value* identity = Identity(current, merge_key);
        return identity != nullptr && JsonEqual(*identity, *key);
      });
      if (match != merged.end() && merge_key.empty()) continue;
      absl::StatusOr<json::value> result =
          Apply(match != merged.end() ? std::move(*match) : json::value(), element, element_path);
      if (!result.ok()) return result.status();
      if (match != merged.end()) {
        *match = *std::move(result);
      } else {
        merged.push_back(*std::move(result));
      }
    }
    return json::value(OrderLikePatch(std::move(merged), IdentitiesOf(applied, merge_key),
                                      IdentitiesOf(live, merge_key), merge_key));
  }

  std::string_view kind_;
};

}  // namespace

absl::StatusOr<json::value> ApplyMergePatch(const json::value& target, const json::value& patch) {
  return MergePatchInto(target, patch);
}

absl::StatusOr<json::value> ApplyJsonPatch(const json::value& target, const json::value& patch) {
  if (!patch.is_array()) {
    return absl::InvalidArgumentError("a JSON patch must be a JSON array of operations");
  }
  json::value document = target;
  const json::array& operations = patch.get_array();
  for (size_t i = 0; i < operations.size(); ++i) {
    if (absl::Status applied = ApplyJsonPatchOperation(document, operations[i], i); !applied.ok()) {
      return applied;
    }
  }
  return document;
}

bool SupportsStrategicMergePatch(std::string_view kind) {
  return std::find(kStrategicKinds.begin(), kStrategicKinds.end(), kind) != kStrategicKinds.end();
}

absl::StatusOr<json::value> ApplyStrategicMergePatch(const json::value& target,
                                                     const json::value& patch,
                                                     std::string_view kind) {
  if (!SupportsStrategicMergePatch(kind)) return ApplyMergePatch(target, patch);
  if (!patch.is_object()) {
    return absl::InvalidArgumentError("a strategic merge patch must be a JSON object");
  }
  json::object original = target.is_object() ? target.get_object() : json::object();
  absl::StatusOr<std::optional<json::object>> merged =
      StrategicMerge(kind).MergeObject(std::move(original), patch.get_object(), "");
  if (!merged.ok()) return merged.status();
  if (!merged->has_value()) return json::value(json::object());
  return json::value(std::move(**merged));
}

std::optional<std::string_view> ListMergeKey(std::string_view kind, std::string_view path) {
  const MergeListField* field = FindMergeListField(kind, path);
  if (field == nullptr) return std::nullopt;
  return field->merge_key;
}

absl::StatusOr<json::value> ApplyServerSideApply(const json::value& live,
                                                 const json::value& applied,
                                                 std::string_view kind) {
  if (!applied.is_object()) {
    return absl::InvalidArgumentError("an applied configuration must be a JSON object");
  }
  return ApplyMerge(kind).Apply(live.is_object() ? live : json::value(json::object()), applied, "");
}

}  // namespace muster::api
