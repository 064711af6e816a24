#pragma once

// What selector.cc, selector_node.cc and selector_text.cc share: the compiled requirement of
// labels.Requirement, the checks of labels.NewRequirement and the label key and value rules.
// Internal to the api library; callers use selector.h.

#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "api/model.h"
#include "api/selector.h"
#include "common/strings.h"
#include "fmt/format.h"

namespace muster::api::selector_internal {

using Op = LabelSelectorMatcher::Op;
using Requirement = LabelSelectorMatcher::Requirement;

using common::Cat;

// What is wrong with a label key, or nullptr when nothing is (validation.IsQualifiedName).
const char* LabelKeyProblem(std::string_view key);
const char* LabelValueProblem(std::string_view value);

// strconv.ParseInt(s, 10, 64): an optional sign, then one or more decimal digits, in range.
std::optional<int64_t> ParseInt64(std::string_view s);

// In, NotIn, Exists, DoesNotExist; nullopt for anything else.
std::optional<Op> ParseLabelSelectorOp(std::string_view op);

// labels.NewRequirement's checks. Returns the Gt/Lt bound (0 for other operators).
absl::StatusOr<int64_t> CheckRequirement(const std::string& key, Op op,
                                         const std::vector<std::string>& values);
// A checked requirement with its values sorted and unique.
absl::StatusOr<Requirement> MakeRequirement(const std::string& key, Op op,
                                            const std::vector<std::string>& values);

// labels.Requirement.Matches. `bound` is the parsed Gt/Lt value.
bool RequirementMatches(const std::string& key, Op op, const std::vector<std::string>& values,
                        int64_t bound, const StringMap& labels);
bool RequirementMatches(const Requirement& r, const StringMap& labels);

// `status` with "<where>: " in front of its message.
absl::Status Annotate(const absl::Status& status, std::string_view where);

}  // namespace muster::api::selector_internal
