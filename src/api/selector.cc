// Label keys and values, label selectors and their compiled form (selector.h), following
// apimachinery's metav1.LabelSelectorAsSelector, labels.NewRequirement and
// labels.Requirement.Matches, and validation.IsQualifiedName for keys. Node selectors and taints
// are in selector_node.cc, selector text in selector_text.cc.

#include "api/selector.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <utility>

#include "absl/strings/str_join.h"
#include "api/names.h"
#include "api/selector_internal.h"

namespace muster::api {
namespace {

using selector_internal::Annotate;
using selector_internal::Cat;
using selector_internal::CheckRequirement;
using selector_internal::LabelKeyProblem;
using selector_internal::LabelValueProblem;
using selector_internal::MakeRequirement;
using selector_internal::Op;
using selector_internal::ParseLabelSelectorOp;
using selector_internal::Requirement;
using selector_internal::RequirementMatches;

constexpr size_t kMaxLabelNameLength = 63;

bool Contains(const std::vector<std::string>& values, const std::string& value) {
  return std::find(values.begin(), values.end(), value) != values.end();
}

}  // namespace

namespace selector_internal {

const char* LabelKeyProblem(std::string_view key) {
  std::string_view name = key;
  size_t slash = key.find('/');
  if (slash != std::string_view::npos) {
    if (key.find('/', slash + 1) != std::string_view::npos) {
      return "a qualified name must consist of an optional DNS subdomain prefix and '/' and a "
             "name (e.g. 'example.com/MyName')";
    }
    std::string_view prefix = key.substr(0, slash);
    if (prefix.empty()) return "prefix part must be non-empty";
    if (!IsDns1123Subdomain(prefix)) {
      return "prefix part must be a lowercase RFC 1123 subdomain of at most 253 characters";
    }
    name = key.substr(slash + 1);
  }
  if (name.empty()) return "name part must be non-empty";
  if (name.size() > kMaxLabelNameLength) return "name part must be no more than 63 characters";
  if (!MatchesQualifiedNamePart(name)) {
    return "name part must consist of alphanumeric characters, '-', '_' or '.', and must start "
           "and end with an alphanumeric character";
  }
  return nullptr;
}

const char* LabelValueProblem(std::string_view value) {
  if (value.size() > kMaxLabelNameLength) return "must be no more than 63 characters";
  if (!value.empty() && !MatchesQualifiedNamePart(value)) {
    return "must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
           "with an alphanumeric character";
  }
  return nullptr;
}

// strconv.ParseInt(s, 10, 64): an optional sign, then one or more decimal digits, in range.
std::optional<int64_t> ParseInt64(std::string_view s) {
  if (!s.empty() && s.front() == '+') {
    s.remove_prefix(1);
    if (!s.empty() && s.front() == '-') return std::nullopt;
  }
  if (s.empty()) return std::nullopt;
  int64_t value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value, 10);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return value;
}

std::optional<Op> ParseLabelSelectorOp(std::string_view op) {
  if (op == "In") return Op::kIn;
  if (op == "NotIn") return Op::kNotIn;
  if (op == "Exists") return Op::kExists;
  if (op == "DoesNotExist") return Op::kDoesNotExist;
  return std::nullopt;
}

// labels.NewRequirement's checks. Returns the Gt/Lt bound (0 for other operators).
absl::StatusOr<int64_t> CheckRequirement(const std::string& key, Op op,
                                         const std::vector<std::string>& values) {
  if (const char* problem = LabelKeyProblem(key)) {
    return absl::InvalidArgumentError(Cat("key \"", key, "\": ", problem));
  }
  int64_t bound = 0;
  switch (op) {
    case Op::kEquals:
      if (values.size() != 1) {
        return absl::InvalidArgumentError(
            Cat("key \"", key, "\": exact match requires exactly one value"));
      }
      break;
    case Op::kIn:
    case Op::kNotIn:
      if (values.empty()) {
        return absl::InvalidArgumentError(
            Cat("key \"", key, "\": values must be non-empty for operators In and NotIn"));
      }
      break;
    case Op::kExists:
    case Op::kDoesNotExist:
      if (!values.empty()) {
        return absl::InvalidArgumentError(
            Cat("key \"", key, "\": values must be empty for operators Exists and DoesNotExist"));
      }
      break;
    case Op::kGt:
    case Op::kLt: {
      if (values.size() != 1) {
        return absl::InvalidArgumentError(
            Cat("key \"", key, "\": operators Gt and Lt require exactly one value"));
      }
      std::optional<int64_t> parsed = ParseInt64(values[0]);
      if (!parsed) {
        return absl::InvalidArgumentError(
            Cat("key \"", key, "\": value \"", values[0], "\" for Gt or Lt must be an integer"));
      }
      bound = *parsed;
      break;
    }
  }
  for (const std::string& value : values) {
    if (const char* problem = LabelValueProblem(value)) {
      return absl::InvalidArgumentError(Cat("key \"", key, "\": value \"", value, "\" ", problem));
    }
  }
  return bound;
}

absl::StatusOr<Requirement> MakeRequirement(const std::string& key, Op op,
                                            const std::vector<std::string>& values) {
  absl::StatusOr<int64_t> bound = CheckRequirement(key, op, values);
  if (!bound.ok()) return bound.status();
  Requirement requirement{key, op, values, *bound};
  std::sort(requirement.values.begin(), requirement.values.end());
  requirement.values.erase(std::unique(requirement.values.begin(), requirement.values.end()),
                           requirement.values.end());
  return requirement;
}

// labels.Requirement.Matches. `bound` is the parsed Gt/Lt value.
bool RequirementMatches(const std::string& key, Op op, const std::vector<std::string>& values,
                        int64_t bound, const StringMap& labels) {
  auto it = labels.find(key);
  bool present = it != labels.end();
  switch (op) {
    case Op::kEquals:
    case Op::kIn:
      return present && Contains(values, it->second);
    case Op::kNotIn:
      return !present || !Contains(values, it->second);
    case Op::kExists:
      return present;
    case Op::kDoesNotExist:
      return !present;
    case Op::kGt:
    case Op::kLt: {
      if (!present) return false;
      std::optional<int64_t> label_value = ParseInt64(it->second);
      if (!label_value) return false;
      return op == Op::kGt ? *label_value > bound : *label_value < bound;
    }
  }
  return false;
}

bool RequirementMatches(const Requirement& r, const StringMap& labels) {
  return RequirementMatches(r.key, r.op, r.values, r.bound, labels);
}

absl::Status Annotate(const absl::Status& status, std::string_view where) {
  std::string_view message(status.message().data(), status.message().size());
  return absl::Status(status.code(), Cat(where, ": ", message));
}

}  // namespace selector_internal

namespace {

std::string RequirementString(const Requirement& r) {
  switch (r.op) {
    case Op::kEquals:
      return Cat(r.key, "=", r.values.empty() ? "" : r.values[0]);
    case Op::kIn:
      return Cat(r.key, " in (", absl::StrJoin(r.values, ","), ")");
    case Op::kNotIn:
      return Cat(r.key, " notin (", absl::StrJoin(r.values, ","), ")");
    case Op::kExists:
      return r.key;
    case Op::kDoesNotExist:
      return Cat("!", r.key);
    case Op::kGt:
      return Cat(r.key, ">", r.values.empty() ? "" : r.values[0]);
    case Op::kLt:
      return Cat(r.key, "<", r.values.empty() ? "" : r.values[0]);
  }
  return r.key;
}

}  // namespace

// --- Label keys and values -----------------------------------------------------------------------

absl::Status ValidateLabelKey(std::string_view key) {
  if (const char* problem = LabelKeyProblem(key)) {
    return absl::InvalidArgumentError(Cat("invalid label key \"", key, "\": ", problem));
  }
  return absl::OkStatus();
}

absl::Status ValidateLabelValue(std::string_view value) {
  if (const char* problem = LabelValueProblem(value)) {
    return absl::InvalidArgumentError(Cat("invalid label value \"", value, "\": ", problem));
  }
  return absl::OkStatus();
}

// --- Label selectors -----------------------------------------------------------------------------

absl::Status ValidateLabelSelector(const LabelSelector& selector) {
  return LabelSelectorMatcher::Compile(selector).status();
}

bool MatchesLabelSelector(const LabelSelector& selector, const StringMap& labels) {
  for (const auto& [key, value] : selector.match_labels) {
    if (LabelKeyProblem(key) != nullptr || LabelValueProblem(value) != nullptr) return false;
    auto it = labels.find(key);
    if (it == labels.end() || it->second != value) return false;
  }
  for (const LabelSelectorRequirement& expr : selector.match_expressions) {
    std::optional<Op> op = ParseLabelSelectorOp(expr.op);
    if (!op) return false;
    absl::StatusOr<int64_t> bound = CheckRequirement(expr.key, *op, expr.values);
    if (!bound.ok()) return false;
    if (!RequirementMatches(expr.key, *op, expr.values, *bound, labels)) return false;
  }
  return true;
}

std::string FormatLabelSelector(const LabelSelector& selector) {
  absl::StatusOr<LabelSelectorMatcher> matcher = LabelSelectorMatcher::Compile(selector);
  if (!matcher.ok()) return "<error>";
  std::string text = matcher->ToString();
  return text.empty() ? "<none>" : text;
}

absl::StatusOr<LabelSelectorMatcher> LabelSelectorMatcher::Compile(const LabelSelector& selector) {
  LabelSelectorMatcher matcher;
  matcher.requirements_.reserve(selector.match_labels.size() + selector.match_expressions.size());
  for (const auto& [key, value] : selector.match_labels) {
    absl::StatusOr<Requirement> r = MakeRequirement(key, Op::kEquals, {value});
    if (!r.ok()) return Annotate(r.status(), "matchLabels");
    matcher.requirements_.push_back(*std::move(r));
  }
  for (size_t i = 0; i < selector.match_expressions.size(); ++i) {
    const LabelSelectorRequirement& expr = selector.match_expressions[i];
    std::string where = Cat("matchExpressions[", i, "]");
    std::optional<Op> op = ParseLabelSelectorOp(expr.op);
    if (!op) {
      return absl::InvalidArgumentError(
          Cat(where, ": \"", expr.op, "\" is not a valid label selector operator"));
    }
    absl::StatusOr<Requirement> r = MakeRequirement(expr.key, *op, expr.values);
    if (!r.ok()) return Annotate(r.status(), where);
    matcher.requirements_.push_back(*std::move(r));
  }
  std::stable_sort(matcher.requirements_.begin(), matcher.requirements_.end(),
                   [](const Requirement& a, const Requirement& b) { return a.key < b.key; });
  return matcher;
}

LabelSelectorMatcher LabelSelectorMatcher::Nothing() {
  LabelSelectorMatcher matcher;
  matcher.nothing_ = true;
  return matcher;
}

bool LabelSelectorMatcher::Matches(const StringMap& labels) const {
  if (nothing_) return false;
  return std::all_of(requirements_.begin(), requirements_.end(),
                     [&](const Requirement& r) { return RequirementMatches(r, labels); });
}

std::string LabelSelectorMatcher::ToString() const {
  if (nothing_) return "<nothing>";
  return absl::StrJoin(requirements_, ",", [](std::string* out, const Requirement& r) {
    out->append(RequirementString(r));
  });
}

}  // namespace muster::api
