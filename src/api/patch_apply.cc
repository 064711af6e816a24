// The merge step of server-side apply (patch.h): application/apply-patch+yaml. The applied
// configuration's fields win, lists merge by the keys of the metadata table in patch.cc, as
// structured-merge-diff merges an apply; field ownership is managed_fields.cc's.

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "api/patch.h"
#include "api/patch_internal.h"
#include "boost/json/object.hpp"
#include "fmt/format.h"

namespace muster::api {
namespace {

namespace json = boost::json;
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

absl::StatusOr<json::value> ApplyServerSideApply(const json::value& live,
                                                 const json::value& applied,
                                                 std::string_view kind) {
  if (!applied.is_object()) {
    return absl::InvalidArgumentError("an applied configuration must be a JSON object");
  }
  return ApplyMerge(kind).Apply(live.is_object() ? live : json::value(json::object()), applied, "");
}

}  // namespace muster::api
