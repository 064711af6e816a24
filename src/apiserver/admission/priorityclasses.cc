#include "apiserver/admission/kinds.h"

// PriorityClasses: pkg/apis/scheduling/validation (ValidatePriorityClass,
// ValidatePriorityClassUpdate), the system classes of pkg/apis/scheduling (SystemPriorityClasses),
// and plugin/pkg/admission/priority's PriorityClass side: one global default, and the lookups
// its pod side (pods_mutate.cc) uses.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "apiserver/admission/admission.h"
#include "apiserver/admission/context.h"
#include "boost/json.hpp"
#include "fmt/format.h"

namespace muster::apiserver::admission {
namespace {

constexpr char kPriorityClassesResource[] = "priorityclasses.scheduling.k8s.io";
constexpr int64_t kHighestUserDefinablePriority = 1000000000;

// The value of the system class `name`; nullopt for any other name.
std::optional<int64_t> SystemClassValue(std::string_view name) {
  for (const SystemPriorityClass& pc : kSystemPriorityClasses) {
    if (name == pc.name) return pc.value;
  }
  return std::nullopt;
}

}  // namespace

std::optional<PriorityClassInfo> FindPriorityClass(const store::Store* st,
                                                   const std::string& name) {
  if (std::optional<json::object> pc = GetObject(st, kPriorityClassesResource, "", name)) {
    PriorityClassInfo info{name, 0, StringAt(*pc, "preemptionPolicy")};
    if (const json::value* v = pc->if_contains("value")) info.value = AsInt(*v).value_or(0);
    return info;
  }
  // kube-apiserver creates these two at start-up; a store from before muster did may lack them.
  if (std::optional<int64_t> value = SystemClassValue(name)) {
    return PriorityClassInfo{name, *value, ""};
  }
  return std::nullopt;
}

// getDefaultPriorityClass: the global default with the lowest value.
std::optional<PriorityClassInfo> DefaultPriorityClass(const store::Store* st) {
  std::optional<PriorityClassInfo> best;
  for (const json::object& pc : ListObjects(st, kPriorityClassesResource)) {
    const json::value* global = pc.if_contains("globalDefault");
    if (global == nullptr || !global->is_bool() || !global->get_bool()) continue;
    PriorityClassInfo info{NestedString(pc, "metadata", "name"), 0,
                           StringAt(pc, "preemptionPolicy")};
    if (const json::value* v = pc.if_contains("value")) info.value = AsInt(*v).value_or(0);
    if (!best || info.value < best->value) best = info;
  }
  return best;
}

std::optional<ApiError> AdmitPriorityClass(Context& c) {
  DefaultString(c.obj, "preemptionPolicy", "PreemptLowerPriority");
  const json::value* value_json = c.obj.if_contains("value");
  std::optional<int64_t> value = c.reader.Int(c.obj, "value", "value");
  std::optional<bool> global = c.reader.Bool(c.obj, "globalDefault", "globalDefault");
  std::string policy = c.reader.StrOr(c.obj, "preemptionPolicy", "preemptionPolicy");
  if (std::optional<ApiError> err = TypeProblemsError(c)) return err;

  // unverified: upstream `value` is a plain int32 (absent reads as 0); muster requires it.
  if (IsAbsent(value_json)) c.errs.Required("value");
  if (c.name.starts_with("system-")) {
    const std::optional<int64_t> known = SystemClassValue(c.name);
    std::string why;
    if (!known) {
      why = fmt::format("{} is not a known system priority class", c.name);
    } else if (value && *value != *known) {
      why = fmt::format("value of {} PriorityClass must be {}", c.name, *known);
    }
    if (!why.empty()) {
      c.errs.Forbidden("metadata.name",
                       "priority class names with 'system-' prefix are reserved for system use "
                       "only. error: " +
                           why);
    }
  } else if (value && *value > kHighestUserDefinablePriority) {
    c.errs.Forbidden("value", fmt::format("maximum allowed value of a user defined priority is {}",
                                          kHighestUserDefinablePriority));
  }
  if (policy != "PreemptLowerPriority" && policy != "Never") {
    c.errs.NotSupported("preemptionPolicy", policy, {"PreemptLowerPriority", "Never"});
  }
  if (!c.create()) {
    const json::value* old_value = c.req.old->if_contains("value");
    std::optional<int64_t> old =
        old_value == nullptr ? std::optional<int64_t>(0) : AsInt(*old_value);
    if (value.value_or(0) != old.value_or(0)) {
      c.errs.Forbidden("value", "may not be changed in an update.");
    }
    std::string old_policy = StringAt(*c.req.old, "preemptionPolicy");
    if (old_policy.empty()) old_policy = "PreemptLowerPriority";
    if (policy != old_policy)
      c.errs.InvalidString("preemptionPolicy", policy, "field is immutable");
  }
  if (!c.errs.empty()) return std::nullopt;

  // The priority admission plugin: a single global default.
  if (global.value_or(false)) {
    std::optional<PriorityClassInfo> current = DefaultPriorityClass(c.req.store);
    if (current && (c.create() || current->name != c.name)) {
      return ForbiddenError(c.res, c.name,
                            fmt::format("PriorityClass {} is already marked as default. Only one "
                                        "default can exist",
                                        current->name));
    }
  }
  return std::nullopt;
}

}  // namespace muster::apiserver::admission
