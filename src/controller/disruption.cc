// The disruption controller's computation (disruption.h), after kube's
// pkg/controller/disruption/disruption.go (trySync, getExpectedPodCount, getExpectedScale,
// buildDisruptedPodMap, countHealthyPods, updatePdbStatus, failSafe) and component-helpers'
// apps/poddisruptionbudget (UpdateDisruptionAllowedCondition, ConditionsAreUpToDate).

#include "controller/disruption.h"

#include <map>
#include <set>
#include <string_view>
#include <utility>

#include "absl/strings/numbers.h"
#include "api/conditions.h"
#include "api/json_access.h"
#include "api/json_codec.h"
#include "api/selector.h"
#include "api/time.h"
#include "boost/json/value.hpp"
#include "fmt/format.h"

namespace muster::controller {

namespace json = boost::json;

namespace {

constexpr char kDisruptionAllowed[] = "DisruptionAllowed";

struct ExpectedCount {
  int64_t expected = 0;
  int64_t desired_healthy = 0;
  std::vector<std::string> unmanaged;  // pods without a controller
};

const json::object* MetadataOf(const json::object& o) { return api::ObjectAt(o, "metadata"); }

bool BeingDeleted(const json::object& pod) {
  const json::object* meta = MetadataOf(pod);
  const json::value* ts = meta == nullptr ? nullptr : meta->if_contains("deletionTimestamp");
  return ts != nullptr && !ts->is_null();
}

std::optional<ControllerRef> ControllerOfPod(const json::object& pod) {
  const json::object* meta = MetadataOf(pod);
  const json::array* refs = meta == nullptr ? nullptr : api::ArrayAt(*meta, "ownerReferences");
  if (refs == nullptr) return std::nullopt;
  for (const json::value& r : *refs) {
    const json::object* ref = r.if_object();
    if (ref == nullptr) continue;
    const json::value* controller = ref->if_contains("controller");
    if (controller == nullptr || !controller->is_bool() || !controller->get_bool()) continue;
    return ControllerRef{api::StringAt(*ref, "apiVersion"), api::StringAt(*ref, "kind"),
                         api::StringAt(*ref, "name"), api::StringAt(*ref, "uid")};
  }
  return std::nullopt;
}

// intstr.GetScaledValueFromIntOrPercent(v, total, roundUp=true).
absl::StatusOr<int64_t> ScaledValue(const json::value& v, int64_t total) {
  if (std::optional<int64_t> n = api::ExactInt64(v)) return *n;
  if (!v.is_string()) return absl::InvalidArgumentError("invalid type: neither int nor percentage");
  std::string_view text = v.get_string();
  if (!text.ends_with('%')) {
    return absl::InvalidArgumentError("invalid type: string is not a percentage");
  }
  int64_t percent = 0;
  if (!absl::SimpleAtoi(absl::string_view(text.data(), text.size() - 1), &percent)) {
    return absl::InvalidArgumentError(fmt::format("invalid value \"{}\"", text));
  }
  return (percent * total + 99) / 100;
}

// getExpectedScale: the sum of the scales of the pods' controllers.
absl::StatusOr<int64_t> ExpectedScale(const std::vector<const json::object*>& pods,
                                      const std::string& ns, const ScaleLookup& scale_of,
                                      std::vector<std::string>& unmanaged) {
  std::map<std::string, int64_t> scale_by_uid;
  for (const json::object* pod : pods) {
    std::optional<ControllerRef> ref = ControllerOfPod(*pod);
    if (!ref) {
      unmanaged.push_back(api::StringAt(MetadataOf(*pod), "name"));
      continue;
    }
    if (scale_by_uid.contains(ref->uid)) continue;
    absl::StatusOr<int32_t> scale = scale_of(*ref, ns);
    if (!scale.ok()) return scale.status();
    scale_by_uid[ref->uid] = *scale;
  }
  int64_t sum = 0;
  for (const auto& [uid, scale] : scale_by_uid) sum += scale;
  return sum;
}

// getExpectedPodCount.
absl::StatusOr<ExpectedCount> CountExpected(const json::object* spec,
                                            const std::vector<const json::object*>& pods,
                                            const std::string& ns, const ScaleLookup& scale_of) {
  ExpectedCount out;
  const json::value* max = spec == nullptr ? nullptr : spec->if_contains("maxUnavailable");
  const json::value* min = spec == nullptr ? nullptr : spec->if_contains("minAvailable");
  if (max != nullptr && !max->is_null()) {
    absl::StatusOr<int64_t> expected = ExpectedScale(pods, ns, scale_of, out.unmanaged);
    if (!expected.ok()) return expected.status();
    out.expected = *expected;
    absl::StatusOr<int64_t> max_unavailable = ScaledValue(*max, out.expected);
    if (!max_unavailable.ok()) return max_unavailable.status();
    out.desired_healthy = std::max<int64_t>(out.expected - *max_unavailable, 0);
  } else if (min != nullptr && !min->is_null()) {
    if (!min->is_string()) {
      out.desired_healthy = api::ExactInt64(*min).value_or(0);
      out.expected = static_cast<int64_t>(pods.size());
    } else {
      absl::StatusOr<int64_t> expected = ExpectedScale(pods, ns, scale_of, out.unmanaged);
      if (!expected.ok()) return expected.status();
      out.expected = *expected;
      absl::StatusOr<int64_t> min_available = ScaledValue(*min, out.expected);
      if (!min_available.ok()) return min_available.status();
      out.desired_healthy = *min_available;
    }
  }
  return out;
}

int64_t IntIn(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v == nullptr ? 0 : api::TruncatedInt64(*v).value_or(0);
}

// ConditionsAreUpToDate.
bool ConditionUpToDate(const json::object& status, int64_t allowed, int64_t generation) {
  const json::array* conditions = api::ArrayAt(status, "conditions");
  const json::object* c =
      conditions == nullptr ? nullptr : api::FindCondition(*conditions, kDisruptionAllowed);
  if (c == nullptr || IntIn(*c, "observedGeneration") != generation) return false;
  const std::string_view value = api::StringViewAt(c, "status");
  const std::string_view reason = api::StringViewAt(c, "reason");
  return allowed > 0 ? value == "True" && reason == "SufficientPods"
                     : value == "False" && reason == "InsufficientPods";
}

// UpdateDisruptionAllowedCondition.
void SetAllowedCondition(json::object& status, const std::string& now) {
  const int64_t allowed = IntIn(status, "disruptionsAllowed");
  const int64_t generation = IntIn(status, "observedGeneration");
  api::SetStatusCondition(api::EnsureArray(status, "conditions"),
                          allowed > 0 ? api::MetaCondition{kDisruptionAllowed, "True",
                                                           "SufficientPods", "", generation}
                                      : api::MetaCondition{kDisruptionAllowed, "False",
                                                           "InsufficientPods", "", generation},
                          now);
}

}  // namespace

std::vector<const json::object*> BudgetPods(const json::object& budget,
                                            const std::vector<json::object>& pods) {
  std::vector<const json::object*> out;
  const json::object* spec = api::ObjectAt(budget, "spec");
  const json::value* selector = spec == nullptr ? nullptr : spec->if_contains("selector");
  if (selector == nullptr || selector->is_null()) return out;  // a nil selector: nothing
  absl::StatusOr<api::LabelSelector> decoded = api::DecodeLabelSelector(*selector);
  if (!decoded.ok()) return out;
  absl::StatusOr<api::LabelSelectorMatcher> matcher = api::LabelSelectorMatcher::Compile(*decoded);
  if (!matcher.ok()) return out;
  const std::string ns = api::StringAt(MetadataOf(budget), "namespace");
  for (const json::object& pod : pods) {
    if (api::StringAt(MetadataOf(pod), "namespace") != ns) continue;
    api::StringMap labels;
    if (const json::object* l = api::ObjectAt(MetadataOf(pod), "labels")) {
      for (const auto& [k, v] : *l) {
        if (v.is_string()) labels[std::string(k)] = std::string(v.get_string());
      }
    }
    if (matcher->Matches(labels)) out.push_back(&pod);
  }
  return out;
}

BudgetSync SyncBudget(const json::object& budget, const std::vector<json::object>& pods,
                      const ScaleLookup& scale_of, int64_t now_unix) {
  BudgetSync sync;
  const std::string now = api::FormatUnixTime(now_unix);
  const std::string ns = api::StringAt(MetadataOf(budget), "namespace");
  const json::object* budget_meta = MetadataOf(budget);
  const int64_t generation = budget_meta == nullptr ? 0 : IntIn(*budget_meta, "generation");
  const json::object* old_status = api::ObjectAt(budget, "status");
  json::object status = old_status == nullptr ? json::object() : *old_status;

  std::vector<const json::object*> selected = BudgetPods(budget, pods);
  if (selected.empty()) {
    sync.events.push_back({false, "", "Normal", "NoPods", "No matching pods found"});
  }
  absl::StatusOr<ExpectedCount> counted =
      CountExpected(api::ObjectAt(budget, "spec"), selected, ns, scale_of);
  if (!counted.ok()) {
    const std::string why(counted.status().message());
    sync.events.push_back(
        {false, "", "Warning", "CalculateExpectedPodCountFailed",
         fmt::format("Failed to calculate the number of expected pods: {}", why)});
    // failSafe: nothing else of the status changes.
    status["disruptionsAllowed"] = 0;
    api::SetStatusCondition(
        api::EnsureArray(status, "conditions"),
        {kDisruptionAllowed, "False", "SyncFailed", why, IntIn(status, "observedGeneration")}, now);
    sync.changed = old_status == nullptr || status != *old_status;
    sync.status = std::move(status);
    return sync;
  }
  if (!counted->unmanaged.empty()) {
    sync.events.push_back(
        {false, "", "Warning", "UnmanagedPods",
         "Pods selected by this PodDisruptionBudget were found to be unmanaged. As a result, the "
         "status of the PDB cannot be calculated correctly, which may result in undefined "
         "behavior. To account for these pods please set \".spec.minAvailable\" field of the PDB "
         "to an integer value."});
  }

  // buildDisruptedPodMap.
  json::object disrupted;
  const json::object* recorded = old_status == nullptr ? nullptr : api::ObjectAt(*old_status,
                                                                                 "disruptedPods");
  for (const json::object* pod : selected) {
    if (recorded == nullptr || BeingDeleted(*pod)) continue;
    const std::string name = api::StringAt(MetadataOf(*pod), "name");
    const json::value* at = recorded->if_contains(name);
    if (at == nullptr || !at->is_string()) continue;
    std::optional<int64_t> when = api::ParseUnixTime(at->get_string());
    if (!when) continue;
    const int64_t expected_deletion = *when + kDisruptedPodTimeoutSeconds;
    if (expected_deletion < now_unix) {
      sync.events.push_back({true, name, "Warning", "NotDeleted",
                             fmt::format("Pod was expected by PDB {}/{} to be deleted but it "
                                         "wasn't",
                                         ns, api::StringAt(MetadataOf(budget), "name"))});
      continue;
    }
    if (!sync.recheck_unix || expected_deletion < *sync.recheck_unix) {
      sync.recheck_unix = expected_deletion;
    }
    disrupted[name] = *at;
  }

  // countHealthyPods.
  int64_t healthy = 0;
  for (const json::object* pod : selected) {
    if (BeingDeleted(*pod)) continue;
    if (disrupted.contains(api::StringAt(MetadataOf(*pod), "name"))) continue;
    if (api::IsPodReady(*pod)) ++healthy;
  }

  // updatePdbStatus.
  int64_t allowed = healthy - counted->desired_healthy;
  if (counted->expected <= 0 || allowed <= 0) allowed = 0;
  const json::object* old_disrupted =
      old_status == nullptr ? nullptr : api::ObjectAt(*old_status, "disruptedPods");
  const bool same_disrupted = old_disrupted == nullptr ? disrupted.empty()
                                                       : *old_disrupted == disrupted;
  if (old_status != nullptr && IntIn(*old_status, "currentHealthy") == healthy &&
      IntIn(*old_status, "desiredHealthy") == counted->desired_healthy &&
      IntIn(*old_status, "expectedPods") == counted->expected &&
      IntIn(*old_status, "disruptionsAllowed") == allowed && same_disrupted &&
      old_status->contains("observedGeneration") &&
      IntIn(*old_status, "observedGeneration") == generation &&
      ConditionUpToDate(*old_status, allowed, generation)) {
    sync.status = *old_status;
    return sync;
  }
  status["disruptionsAllowed"] = allowed;
  status["currentHealthy"] = healthy;
  status["desiredHealthy"] = counted->desired_healthy;
  status["expectedPods"] = counted->expected;
  status["observedGeneration"] = generation;
  if (disrupted.empty()) {
    status.erase("disruptedPods");
  } else {
    status["disruptedPods"] = std::move(disrupted);
  }
  SetAllowedCondition(status, now);
  sync.changed = true;
  sync.status = std::move(status);
  return sync;
}

}  // namespace muster::controller
