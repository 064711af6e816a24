#include "apiserver/admission/kinds.h"

// Volcano Queues: volcano-sh/volcano pkg/webhooks/admission/queues/mutate/mutate_queue.go
// (mutatequeue.volcano.sh: reclaimable, weight) and queues/validate/validate_queue.go
// (validatequeue.volcano.sh: state and weight; messages verbatim), behind the CRD schema's
// checks and weight maximum; and the queue lookups of the Job and PodGroup webhooks.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/text.h"
#include "apiserver/admission/context.h"
#include "boost/json.hpp"
#include "fmt/format.h"

namespace muster::apiserver::admission {
namespace {

constexpr char kQueuesResource[] = "queues.scheduling.volcano.sh";
constexpr char kQueueWebhook[] = "validatequeue.volcano.sh";

}  // namespace

// State of a queue for the webhooks' checks; nullopt when it does not exist.
std::optional<std::string> QueueState(const store::Store* st, const std::string& name) {
  std::optional<json::object> queue = GetObject(st, kQueuesResource, "", name);
  if (!queue) return std::nullopt;
  std::string state = NestedString(*queue, "status", "state");
  // muster has no queue controller to fill in the state: a queue that was never given one was
  // never closed either.
  return state.empty() ? "Open" : state;
}

std::string QueueNotFound(const std::string& name) {
  return fmt::format("queues.scheduling.volcano.sh {} not found", api::GoQuote(name));
}

std::optional<ApiError> AdmitQueue(Context& c) {
  if (!c.main_resource()) return std::nullopt;  // the webhook does not watch queues/status
  json::object* spec = c.reader.Obj(c.obj, "spec", "spec", "v1beta1.QueueSpec");
  if (spec == nullptr) {
    if (!c.problems.empty()) return TypeProblemsError(c);
    c.obj["spec"] = json::object();
    spec = &c.obj["spec"].as_object();
  }
  std::optional<int64_t> weight = c.reader.Int(*spec, "weight", "spec.weight");
  c.reader.Bool(*spec, "reclaimable", "spec.reclaimable");
  c.reader.Str(*spec, "parent", "spec.parent");
  if (std::optional<ApiError> err = TypeProblemsError(c)) return err;

  if (c.create()) {
    // mutatequeue.volcano.sh
    DefaultValue(*spec, "reclaimable", true);
    if (weight.value_or(0) == 0) (*spec)["weight"] = 1;
    // The queue controller opens new queues; the status subresource owns the rest.
    c.obj["status"] = json::object{{"state", "Open"}};
    spec = &c.obj["spec"].as_object();  // the insert may have moved it
  } else if (!weight) {
    (*spec)["weight"] = 1;  // the CRD's structural default
  }
  weight = AsInt((*spec)["weight"]);
  if (weight && *weight > 65535) {
    // unverified: the CRD's `maximum: 65535` as apiextensions words it.
    c.errs.InvalidInt("spec.weight", *weight,
                      "spec.weight in body should be less than or equal to 65535");
  }
  if (!c.errs.empty()) return std::nullopt;

  // validatequeue.volcano.sh (create and update).
  std::vector<FieldError> errors;
  std::string state;
  if (const json::object* status = FindObject(c.obj, "status")) state = StringAt(*status, "state");
  if (!state.empty() && state != "Open" && state != "Closed") {
    errors.push_back({ErrorType::kInvalid, "requestBody.spec.state", api::GoQuote(state),
                      "queue state must be in [Open Closed]"});
  }
  if (weight.value_or(0) <= 0) {
    errors.push_back({ErrorType::kInvalid, "requestBody.spec.weight",
                      std::to_string(weight.value_or(0)),
                      "queue weight must be a positive integer"});
  }
  if (!errors.empty()) return WebhookDenied(kQueueWebhook, AggregateFieldErrors(errors));
  return std::nullopt;
}

}  // namespace muster::apiserver::admission
