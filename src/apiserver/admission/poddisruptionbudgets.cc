#include "apiserver/admission/kinds.h"

// policy/v1 PodDisruptionBudgets: pkg/apis/policy/validation (ValidatePodDisruptionBudget,
// ValidatePodDisruptionBudgetSpec, ValidatePodDisruptionBudgetStatusUpdate) with apps
// validation's ValidatePositiveIntOrPercent and IsNotMoreThan100Percent, apimachinery's
// ValidateLabelSelector and ValidateConditions, and the PDB strategy's
// PrepareForCreate/PrepareForUpdate (the generic handlers reset status and bump generation).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/ascii.h"
#include "api/selector.h"
#include "apiserver/admission/context.h"
#include "boost/json.hpp"
#include "fmt/format.h"

namespace muster::apiserver::admission {
namespace {

constexpr char kPercentError[] =
    "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%' or "
    "'93%', regex used for validation is '[0-9]+%')";
constexpr char kNegativeError[] = "must be greater than or equal to 0";

// validation.IsValidPercent: "[0-9]+%".
bool IsValidPercentText(std::string_view text) {
  if (text.size() < 2 || text.back() != '%') return false;
  for (char ch : text.substr(0, text.size() - 1)) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(ch))) return false;
  }
  return true;
}

// Whether a valid percent text is over 100% (leading zeros allowed, as strconv.Atoi reads them).
bool PercentOver100(std::string_view text) {
  int64_t value = 0;
  for (char ch : text.substr(0, text.size() - 1)) {
    value = value * 10 + (ch - '0');
    if (value > 100) return true;
  }
  return false;
}

// The %#v of an intstr.IntOrString, which field.Invalid prints for it (it is no fmt.Stringer:
// String() has a pointer receiver).
std::string GoIntOrString(const json::value& v) {
  if (v.is_string()) {
    return fmt::format("intstr.IntOrString{{Type:1, IntVal:0, StrVal:{}}}",
                       api::GoQuote(View(v.get_string())));
  }
  return fmt::format("intstr.IntOrString{{Type:0, IntVal:{}, StrVal:\"\"}}", AsInt(v).value_or(0));
}

// ValidatePositiveIntOrPercent then IsNotMoreThan100Percent of spec.<key>. Whether it was set.
bool ValidateIntOrPercent(Context& c, const json::object& spec, std::string_view key) {
  const json::value* v = spec.if_contains(key);
  if (IsAbsent(v)) return false;
  const std::string path = fmt::format("spec.{}", key);
  if (v->is_string()) {
    std::string_view text = View(v->get_string());
    if (!IsValidPercentText(text)) {
      c.errs.Invalid(path, GoIntOrString(*v), kPercentError);
    } else if (PercentOver100(text)) {
      c.errs.Invalid(path, GoIntOrString(*v), "must not be greater than 100%");
    }
    return true;
  }
  const size_t problems = c.problems.size();
  std::optional<int64_t> n = c.reader.Int(spec, key, path);
  if (!n) {
    // The typed decoder's refusal (IntOrString.UnmarshalJSON reads a non-string as an int32).
    if (c.problems.size() > problems) c.problems.back().go_want = "intstr.IntOrString";
    return true;
  }
  if (*n < 0) c.errs.InvalidInt(path, *n, kNegativeError);
  return true;
}

// apimachinery metav1validation.ValidateLabelSelectorRequirement.
void ValidateSelectorRequirement(Context& c, const json::object& req, const std::string& path) {
  const std::string key = c.reader.StrOr(req, "key", path + ".key");
  const std::string op = c.reader.StrOr(req, "operator", path + ".operator");
  std::vector<std::string> values;
  if (const json::value* vs = req.if_contains("values"); !IsAbsent(vs)) {
    if (!vs->is_array()) {
      c.reader.Problem(path + ".values", *vs, "[]string", "array");
    } else {
      for (size_t i = 0; i < vs->get_array().size(); ++i) {
        const json::value& e = vs->get_array()[i];
        if (!e.is_string()) {
          c.reader.Problem(fmt::format("{}.values[{}]", path, i), e, "string", "string");
          continue;
        }
        values.emplace_back(View(e.get_string()));
      }
    }
  }
  if (op == "In" || op == "NotIn") {
    if (values.empty()) {
      c.errs.Required(path + ".values", "must be specified when `operator` is 'In' or 'NotIn'");
    }
  } else if (op == "Exists" || op == "DoesNotExist") {
    if (!values.empty()) {
      c.errs.Forbidden(path + ".values",
                       "may not be specified when `operator` is 'Exists' or 'DoesNotExist'");
    }
  } else {
    c.errs.InvalidString(path + ".operator", op, "not a valid selector operator");
  }
  for (const std::string& msg : QualifiedNameErrors(key)) {
    c.errs.InvalidString(path + ".key", key, msg);
  }
  for (size_t i = 0; i < values.size(); ++i) {
    for (const std::string& msg : LabelValueErrors(values[i])) {
      c.errs.InvalidString(fmt::format("{}.values[{}]", path, i), values[i], msg);
    }
  }
}

// metav1validation.ValidateConditions, for the status subresource.
void ValidateConditions(Context& c, json::object& status) {
  json::array* conditions =
      c.reader.Arr(status, "conditions", "status.conditions", "[]v1.Condition");
  if (conditions == nullptr) return;
  for (size_t i = 0; i < conditions->size(); ++i) {
    const std::string path = fmt::format("status.conditions[{}]", i);
    const json::object* cond = (*conditions)[i].if_object();
    if (cond == nullptr) {
      c.reader.Problem(path, (*conditions)[i], "v1.Condition", "object");
      continue;
    }
    const std::string type = c.reader.StrOr(*cond, "type", path + ".type");
    if (type.empty()) {
      c.errs.Required(path + ".type", "must be set");
    } else {
      for (const std::string& msg : QualifiedNameErrors(type)) {
        c.errs.InvalidString(path + ".type", type, msg);
      }
    }
    const std::string status_value = c.reader.StrOr(*cond, "status", path + ".status");
    if (status_value != "True" && status_value != "False" && status_value != "Unknown") {
      c.errs.NotSupported(path + ".status", status_value, {"False", "True", "Unknown"});
    }
    if (std::optional<int64_t> g =
            c.reader.Int(*cond, "observedGeneration", path + ".observedGeneration", "int64");
        g && *g < 0) {
      c.errs.InvalidInt(path + ".observedGeneration", *g, kNegativeError);
    }
    if (c.reader.StrOr(*cond, "lastTransitionTime", path + ".lastTransitionTime").empty()) {
      c.errs.Required(path + ".lastTransitionTime", "must be set");
    }
    if (c.reader.StrOr(*cond, "reason", path + ".reason").empty()) {
      c.errs.Required(path + ".reason", "must be set");
    }
  }
}

// ValidatePodDisruptionBudgetStatusUpdate (policy/v1): the counters are never negative.
void ValidateStatus(Context& c) {
  json::object* status = c.reader.Obj(c.obj, "status", "status", "v1.PodDisruptionBudgetStatus");
  if (status == nullptr) return;
  ValidateConditions(c, *status);
  for (std::string_view key :
       {"disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods"}) {
    const std::string path = fmt::format("status.{}", key);
    if (std::optional<int64_t> n = c.reader.Int(*status, key, path); n && *n < 0) {
      c.errs.InvalidInt(path, *n, kNegativeError);
    }
  }
  c.reader.Int(*status, "observedGeneration", "status.observedGeneration", "int64");
  if (const json::value* pods = status->if_contains("disruptedPods");
      !IsAbsent(pods) && !pods->is_object()) {
    c.reader.Problem("status.disruptedPods", *pods, "map[string]v1.Time", "object");
  }
}

}  // namespace

void ValidateLabelSelector(Context& c, json::object& parent, std::string_view key,
                           const std::string& path) {
  json::object* selector = c.reader.Obj(parent, key, path, "v1.LabelSelector");
  if (selector == nullptr) return;
  ValidateLabels(c, *selector, "matchLabels", path + ".matchLabels");
  json::array* exprs = c.reader.Arr(*selector, "matchExpressions", path + ".matchExpressions",
                                    "[]v1.LabelSelectorRequirement");
  if (exprs == nullptr) return;
  for (size_t i = 0; i < exprs->size(); ++i) {
    const std::string item = fmt::format("{}.matchExpressions[{}]", path, i);
    const json::object* req = (*exprs)[i].if_object();
    if (req == nullptr) {
      c.reader.Problem(item, (*exprs)[i], "v1.LabelSelectorRequirement", "object");
      continue;
    }
    ValidateSelectorRequirement(c, *req, item);
  }
}

std::optional<ApiError> AdmitPodDisruptionBudget(Context& c) {
  if (!c.main_resource()) {
    ValidateStatus(c);
    return std::nullopt;
  }
  json::object* spec = c.reader.Obj(c.obj, "spec", "spec", "v1.PodDisruptionBudgetSpec");
  if (spec == nullptr) return std::nullopt;
  const bool min_set = ValidateIntOrPercent(c, *spec, "minAvailable");
  const bool max_set = ValidateIntOrPercent(c, *spec, "maxUnavailable");
  if (min_set && max_set) {
    // unverified: field.Invalid prints the internal spec with %#v, its pointers as addresses;
    // muster writes the values they point at.
    c.errs.mutable_list().insert(
        c.errs.mutable_list().begin(),
        FieldError{ErrorType::kInvalid, "spec",
                   fmt::format("policy.PodDisruptionBudgetSpec{{MinAvailable:&{}, "
                               "MaxUnavailable:&{}}}",
                               GoIntOrString(spec->at("minAvailable")),
                               GoIntOrString(spec->at("maxUnavailable"))),
                   "minAvailable and maxUnavailable cannot be both set"});
  }
  ValidateLabelSelector(c, *spec, "selector", "spec.selector");
  if (std::optional<std::string> policy = c.reader.Str(*spec, "unhealthyPodEvictionPolicy",
                                                       "spec.unhealthyPodEvictionPolicy");
      policy && *policy != "AlwaysAllow" && *policy != "IfHealthyBudget") {
    c.errs.NotSupported("spec.unhealthyPodEvictionPolicy", *policy,
                        {"AlwaysAllow", "IfHealthyBudget"});
  }
  return std::nullopt;
}

}  // namespace muster::apiserver::admission
