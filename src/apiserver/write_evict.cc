// pods/eviction: a pod deleted unless its PodDisruptionBudget forbids it, as kube's EvictionREST
// (k8s.io/kubernetes pkg/registry/core/pod/storage/eviction.go) does it for `kubectl drain`:
//   - a pod that is Pending, Succeeded or Failed, or already being deleted, is deleted at once;
//   - otherwise the budgets of its namespace whose selector matches it are looked up: none, and
//     it is deleted; more than one is 500; with one, a pod that is not Ready is deleted when the
//     budget is AlwaysAllow or has its desired healthy pods; else the budget must be current
//     (observedGeneration) and allow a disruption (429 TooManyRequests with a DisruptionBudget
//     cause when it does not), and the eviction takes one: disruptionsAllowed goes down by one
//     and the pod is recorded in status.disruptedPods;
//   - the pod gets the DisruptionTarget condition (EvictionByEvictionAPI) and is deleted with the
//     Eviction's deleteOptions (grace period, preconditions, dryRun).
// Kube updates the budget and then deletes the pod; here the budget's update and the pod's delete
// are one store commit guarded by both revisions, so two evictions racing for a budget of one
// cannot both pass and a budget is never spent on a pod that was not deleted.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/conditions.h"
#include "api/json_codec.h"
#include "api/selector.h"
#include "api/time.h"
#include "apiserver/handlers.h"
#include "apiserver/lifecycle.h"
#include "apiserver/write_support.h"
#include "boost/json/serialize.hpp"
#include "fmt/format.h"

namespace muster::apiserver {

namespace json = boost::json;

using write_support::CheckWriteOptions;
using write_support::FromStatus;
using write_support::IntAt;
using write_support::IsDryRun;
using write_support::LiveObject;
using write_support::MetaOf;
using write_support::ReadDeleteOptions;
using write_support::kMaxAttempts;

namespace {

constexpr char kBudgetsResource[] = "poddisruptionbudgets.policy";
// eviction.go MaxDisruptedPodSize: past it evictions wait for the disruption controller.
constexpr size_t kMaxDisruptedPods = 2000;
constexpr char kEvictionRefused[] =
    "Cannot evict pod as it would violate the pod's disruption budget.";

struct EvictionBudget {
  store::Object stored;
  json::object object;
  std::string name;
};

ApiError BudgetTooManyRequests(std::string cause, int retry_after_seconds) {
  ApiError e;
  e.code = 429;
  e.reason = "TooManyRequests";
  e.message = kEvictionRefused;
  e.causes.push_back({"DisruptionBudget", std::move(cause), ""});
  e.retry_after_seconds = retry_after_seconds;
  return e;
}

// createTooManyRequestsError: the budget has not caught up with its spec (or with the pod).
ApiError BudgetBeingProcessed(std::string_view name) {
  return BudgetTooManyRequests(
      fmt::format("The disruption budget {} is still being processed by the server.", name), 10);
}

ApiError BudgetForbidden(std::string_view name, std::string_view why) {
  return Forbidden("poddisruptionbudgets.policy", name, std::string(why));
}

// An Eviction body kube's decoder could not read into a policy Eviction.
ApiError EvictionDecodeError(std::string_view version, std::string_view why) {
  return BadRequest(fmt::format("Eviction in version \"{}\" cannot be handled as a Eviction: {}",
                                version, why));
}

// getPodDisruptionBudgets: the budgets of the namespace whose selector matches the pod's labels.
// A budget with no selector, an empty one or one that does not parse matches nothing here.
std::vector<EvictionBudget> BudgetsSelecting(const store::Store& store, const std::string& ns,
                                     const json::object& pod) {
  api::StringMap labels;
  if (const json::object* l = api::ObjectAt(MetaOf(pod), "labels")) {
    for (const auto& [k, v] : *l) {
      if (v.is_string()) labels[std::string(k)] = std::string(v.get_string());
    }
  }
  std::vector<EvictionBudget> out;
  for (store::Object& stored : store.List(kBudgetsResource, ns).items) {
    if (stored.damaged) continue;
    std::optional<json::object> budget = LiveObject(stored);
    if (!budget) continue;
    const json::object* spec = api::ObjectAt(*budget, "spec");
    const json::value* selector = spec == nullptr ? nullptr : spec->if_contains("selector");
    if (selector == nullptr || selector->is_null()) continue;
    absl::StatusOr<api::LabelSelector> decoded = api::DecodeLabelSelector(*selector);
    if (!decoded.ok() || !api::ValidateLabelSelector(*decoded).ok()) continue;
    if (decoded->match_labels.empty() && decoded->match_expressions.empty()) continue;
    if (!api::MatchesLabelSelector(*decoded, labels)) continue;
    std::string name = api::StringAt(MetaOf(*budget), "name");
    out.push_back({std::move(stored), std::move(*budget), std::move(name)});
  }
  return out;
}

}  // namespace

HttpResponse Handlers::Evict(const HttpRequest& req, const Target& t) {
  const ResourceInfo& pods = *t.resource;
  if (auto e = CheckWriteOptions(req, "CreateOptions", false)) return ErrorResponse(*e);
  auto body = DecodeBodyObject(req);
  if (!body.ok()) return ErrorResponse(body.error());

  // policy/v1 and policy/v1beta1 Evictions are both accepted (AcceptsGroupVersion).
  std::string api_version = api::StringAt(*body, "apiVersion");
  std::string kind = api::StringAt(*body, "kind");
  if (api_version.empty()) api_version = "policy/v1";
  if (kind.empty()) kind = "Eviction";
  if (kind != "Eviction" || (api_version != "policy/v1" && api_version != "policy/v1beta1")) {
    return ErrorResponse(BadRequest(fmt::format(
        "no kind \"{}\" is registered for version \"{}\" in scheme "
        "\"pkg/api/legacyscheme/scheme.go:30\"",
        kind, api_version)));
  }
  const std::string_view version = std::string_view(api_version).substr(7);
  const json::value* meta_value = body->if_contains("metadata");
  if (meta_value != nullptr && !meta_value->is_null() && !meta_value->is_object()) {
    return ErrorResponse(EvictionDecodeError(
        version, "json: cannot unmarshal into Go struct field Eviction.metadata of type "
                 "v1.ObjectMeta"));
  }
  const json::object* meta = MetaOf(*body);
  if (api::StringAt(meta, "name") != t.name) {
    return ErrorResponse(BadRequest("name in URL does not match name in Eviction object"));
  }
  if (std::string ns = api::StringAt(meta, "namespace"); !ns.empty() && ns != t.ns) {
    return ErrorResponse(BadRequest(
        "the namespace of the provided object does not match the namespace sent on the request"));
  }
  write_support::ReadDeleteOptionsResult delete_options;
  if (const json::value* d = body->if_contains("deleteOptions"); d != nullptr && !d->is_null()) {
    if (!d->is_object()) {
      return ErrorResponse(EvictionDecodeError(
          version, "json: cannot unmarshal into Go struct field Eviction.deleteOptions of type "
                   "v1.DeleteOptions"));
    }
    auto read = ReadDeleteOptions(d->get_object(), "DeleteOptions.deleteOptions.");
    if (!read.ok()) {
      if (read.error().message.starts_with("json: ")) {
        return ErrorResponse(EvictionDecodeError(version, read.error().message));
      }
      return ErrorResponse(read.error());
    }
    delete_options = std::move(*read);
  }
  DeleteOptions& options = delete_options.options;
  options.dry_run = options.dry_run || IsDryRun(req);
  if (auto e = write_support::CheckPropagationPolicy(options.propagation_policy)) {
    return ErrorResponse(*e);
  }
  if (options.propagation_policy.empty()) options.propagation_policy = "Background";

  std::string last_budget;
  bool done = false;
  for (int attempt = 0; attempt < kMaxAttempts && !done; ++attempt) {
    auto live = store_.Get({pods.StoreResource(), t.ns, t.name});
    if (!live.ok()) return ErrorResponse(FromStatus(live.status(), pods, t.name));
    std::optional<json::object> pod = LiveObject(*live);
    if (!pod) return ErrorResponse(DamagedObjectError(pods, *live));
    const json::object* pod_meta = MetaOf(*pod);
    if (const std::string& uid = delete_options.uid_precondition;
        !uid.empty() && uid != api::StringAt(pod_meta, "uid")) {
      return ErrorResponse(Conflict(
          pods.StoreResource(), t.name,
          fmt::format("Precondition failed: UID in precondition: {}, UID in object meta: {}", uid,
                      api::StringAt(pod_meta, "uid"))));
    }
    const std::string phase = api::StringAt(api::ObjectAt(*pod, "status"), "phase");
    // canIgnorePDB: the pod disrupts nothing more by going.
    const bool ignore_budgets = phase == "Pending" || phase == "Succeeded" || phase == "Failed" ||
                                (pod_meta != nullptr && pod_meta->contains("deletionTimestamp") &&
                                 !pod_meta->at("deletionTimestamp").is_null());

    std::vector<store::Op> ops;
    if (!ignore_budgets) {
      std::vector<EvictionBudget> budgets = BudgetsSelecting(store_, t.ns, *pod);
      if (budgets.size() > 1) {
        return ErrorResponse(Internal(
            "This pod has more than one PodDisruptionBudget, which the eviction subresource does "
            "not support."));
      }
      if (budgets.size() == 1) {
        EvictionBudget& budget = budgets[0];
        last_budget = budget.name;
        json::object& status = api::EnsureObject(budget.object, "status");
        const int64_t current = IntAt(&status, "currentHealthy");
        const int64_t desired = IntAt(&status, "desiredHealthy");
        const bool always_allow =
            api::StringAt(api::ObjectAt(budget.object, "spec"), "unhealthyPodEvictionPolicy") ==
            "AlwaysAllow";
        // An unready pod counts for no healthy pod: it may go, without spending the budget,
        // while the budget is whole (IfHealthyBudget) or always (AlwaysAllow). The delete below
        // carries the pod's revision, so a pod that became ready meanwhile is looked at again.
        const bool unready_goes =
            !api::IsPodReady(*pod) && (always_allow || (current >= desired && desired > 0));
        if (!unready_goes) {
          // checkAndDecrement.
          if (IntAt(&status, "observedGeneration") < IntAt(MetaOf(budget.object), "generation")) {
            return ErrorResponse(BudgetBeingProcessed(budget.name));
          }
          const int64_t allowed = IntAt(&status, "disruptionsAllowed");
          if (allowed < 0) {
            return ErrorResponse(
                BudgetForbidden(budget.name, "pdb disruptions allowed is negative"));
          }
          const json::object* disrupted = api::ObjectAt(status, "disruptedPods");
          if (disrupted != nullptr && disrupted->size() > kMaxDisruptedPods) {
            return ErrorResponse(BudgetForbidden(
                budget.name,
                "DisruptedPods map too big - too many evictions not confirmed by PDB controller"));
          }
          if (allowed == 0) {
            return ErrorResponse(BudgetTooManyRequests(
                fmt::format("The disruption budget {} needs {} healthy pods and has {} currently",
                            budget.name, desired, current),
                0));
          }
          status["disruptionsAllowed"] = allowed - 1;
          const std::string now = api::FormatUnixTime(Now());
          if (allowed - 1 == 0) {
            json::array& conditions = api::EnsureArray(status, "conditions");
            api::SetStatusCondition(conditions,
                                    {"DisruptionAllowed", "False", "InsufficientPods", "",
                                     IntAt(&status, "observedGeneration")},
                                    now);
          }
          api::EnsureObject(status, "disruptedPods")[t.name] = now;
          store::Op& op = ops.emplace_back();
          op.kind = store::OpKind::kUpdate;
          op.key = budget.stored.key;
          op.object = std::move(budget.object);
          op.expected_revision = budget.stored.revision;
        }
      }
    }

    // addConditionAndDeletePod: DisruptionTarget, then the delete as DELETE plans it.
    json::object marked = *pod;
    if (!options.dry_run) {
      api::SetPodCondition(api::EnsureObject(marked, "status"), "DisruptionTarget", "True",
                           "EvictionByEvictionAPI", "Eviction API: evicting",
                           api::FormatUnixTime(Now()));
    }
    store::Object with_condition = *live;
    with_condition.json = std::make_shared<const std::string>(json::serialize(marked));
    with_condition.parsed = nullptr;
    // PlanDelete reads the text alone; the old text's ownership span says nothing of this one.
    with_condition.managed_offset = 0;
    with_condition.managed_size = 0;
    auto plan = PlanDelete(pods, with_condition, options, Now());
    if (!plan.ok()) return ErrorResponse(FromStatus(plan.status(), pods, t.name));
    for (store::Op& op : plan->ops) ops.push_back(std::move(op));
    if (options.dry_run || ops.empty()) {
      done = true;
      break;
    }
    auto stored = store_.Commit(std::move(ops));
    if (stored.ok()) {
      done = true;
    } else if (absl::IsAborted(stored.status()) || absl::IsNotFound(stored.status())) {
      // The pod or its budget changed since they were read: look again, unless the client
      // named the revision it meant.
      if (options.precondition_revision) {
        return ErrorResponse(ModifiedConflict(pods.StoreResource(), t.name));
      }
    } else {
      return ErrorResponse(FromStatus(stored.status(), pods, t.name));
    }
  }
  if (!done) {
    if (last_budget.empty()) return ErrorResponse(ModifiedConflict(pods.StoreResource(), t.name));
    // NewTimeoutError, as eviction.go gives up on a budget it keeps conflicting on.
    ApiError e;
    e.code = 504;
    e.reason = "Timeout";
    e.message = fmt::format(
        "Timeout: couldn't update PodDisruptionBudget \"{}\" due to conflicts", last_budget);
    e.retry_after_seconds = 10;
    return ErrorResponse(e);
  }
  return JsonResponse(
      201, R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":201})");
}

}  // namespace muster::apiserver
