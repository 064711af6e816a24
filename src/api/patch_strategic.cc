// Kubernetes strategic merge patch (patch.h): application/strategic-merge-patch+json, following
// apimachinery's strategicpatch package (mergeMap, mergeSlice and the $patch, $retainKeys,
// $setElementOrder and $deleteFromPrimitiveList directives) over the metadata table in patch.cc.

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "api/patch.h"
#include "api/patch_internal.h"
#include "boost/json/object.hpp"
#include "fmt/format.h"

namespace muster::api {
namespace {

namespace json = boost::json;
using patch_internal::Abbreviated;
using patch_internal::Contains;
using patch_internal::ElementPath;
using patch_internal::FieldPath;
using patch_internal::FindMergeListField;
using patch_internal::IdentitiesOf;
using patch_internal::Identity;
using patch_internal::JsonEqual;
using patch_internal::MergeListField;
using patch_internal::OrderLikePatch;
using patch_internal::View;
using patch_internal::Where;

constexpr std::string_view kPatchDirective = "$patch";
constexpr std::string_view kRetainKeysDirective = "$retainKeys";
constexpr std::string_view kSetElementOrderPrefix = "$setElementOrder/";
constexpr std::string_view kDeleteFromPrimitiveListPrefix = "$deleteFromPrimitiveList/";

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

}  // namespace

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

}  // namespace muster::api
