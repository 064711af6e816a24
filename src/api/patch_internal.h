#pragma once

// What the patch engines (patch.cc, patch_json.cc, patch_strategic.cc, patch_apply.cc) share:
// the patch metadata table's lookup, JSON equality as the patch rules compare values, error-path
// formatting and apimachinery's ordering of merged lists. Internal to the api library; callers
// use patch.h.

#include <string>
#include <string_view>
#include <vector>

#include "api/json_access.h"
#include "boost/json/array.hpp"
#include "boost/json/string.hpp"
#include "boost/json/value.hpp"

namespace muster::api::patch_internal {

namespace json = boost::json;

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

// The entry of the metadata table (patch.cc) for the list at `path` of `kind`; nullptr for an
// atomic list.
const MergeListField* FindMergeListField(std::string_view kind, std::string_view path);

using api::View;

// Structural equality; numbers compare by value whatever their representation (RFC 6902 §4.6;
// Go decodes every JSON number as float64, so 80 and 80.0 are the same merge key upstream too).
bool JsonEqual(const json::value& a, const json::value& b);
bool Contains(const json::array& list, const json::value& item);

// A short rendering of a value for error messages.
std::string Abbreviated(const json::value& value);

// Field paths as errors and the metadata table name them: "spec.containers", "spec.containers[]".
std::string FieldPath(std::string_view parent, std::string_view field);
std::string ElementPath(std::string_view list);
// The path for an error message; "<root>" for the top level.
std::string_view Where(std::string_view path);

// What identifies a list element: the merge key's value for keyed lists, the element itself for
// primitive lists; null when the element has no identity (never matches anything).
const json::value* Identity(const json::value& element, std::string_view merge_key);
std::vector<const json::value*> IdentitiesOf(const json::array& list, std::string_view merge_key);

// Orders a merged list as apimachinery's normalizeElementOrder does: the elements named by the
// patch come in the patch's order, the server-only elements keep their live order, and the two
// runs are interleaved so that each server-only element stays in front of the first patch
// element that followed it in the live list.
json::array OrderLikePatch(json::array merged, const std::vector<const json::value*>& patch_order,
                           const std::vector<const json::value*>& server_order,
                           std::string_view merge_key);

}  // namespace muster::api::patch_internal
