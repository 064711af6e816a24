#include "apiserver/admission/kinds.h"

// Volcano Queues: volcano-sh/volcano pkg/webhooks/admission/queues/mutate/mutate_queue.go
// (mutatequeue.volcano.sh: reclaimable, weight) and queues/validate/validate_queue.go
// (validatequeue.volcano.sh, messages verbatim): state and weight; validateResourceQuantityOfQueue
// (quantities not negative, whole for extended resources, guarantee <= deserved <= capability per
// resource); validateHierarchicalQueue (not its own parent, the parent exists, at most
// kMaxQueueDepth levels below root, a parent without children has no allocated pods); the root queue's resources are fixed once it exists
// (--enable-root-queue-protection, on by default); validateHierarchicalQueueResources (a
// capability within the nearest ancestor's that names the resource, a parent's capability at
// least its descendants' largest, the children's guarantee and deserved sums within their
// parent's); validateQueueDeleting (root and default never go, nor a queue with children). All
// behind the CRD schema's checks and weight maximum; and the queue lookups of the Job and
// PodGroup webhooks.
// Differences: Volcano finds a cycle of parents only as a depth above its maximum; here it is
// refused as a cycle. Volcano's hierarchy errors are plain text; here each is a field error naming
// the field (spec.parent, spec.capability.<resource>, ...), and the capability messages print
// quantities as quantities ("2", "4Gi") where Volcano prints GPUs in thousandths ("2000.00"), and
// name the ancestor whose capability is exceeded. Volcano stops at the first hierarchy error; here
// the errors of one kind come together.
// validateHierarchicalQueue's refusal of a parent that has allocated pods and no children reads
// status.allocated.pods, which the scheduler writes as Volcano's does (one per allocated task).
// Not ported: the kube-hierarchy annotations of the old hdrf plugin.

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "api/text.h"
#include "common/quantity.h"
#include "apiserver/admission/context.h"
#include "boost/json.hpp"
#include "fmt/format.h"

namespace muster::apiserver::admission {
namespace {

constexpr char kQueuesResource[] = "queues.scheduling.volcano.sh";
constexpr char kQueueWebhook[] = "validatequeue.volcano.sh";
constexpr char kRootQueue[] = "root";
constexpr int kMaxQueueDepth = 5;  // the webhook manager's --max-queue-depth default

using ResourceSum = std::map<std::string, int64_t>;  // milli units by resource name

// spec.<a>[.<b>] as quantities; entries that do not parse count as zero.
ResourceSum ResourcesAt(const json::object& spec, std::string_view a, std::string_view b = "") {
  ResourceSum out;
  const json::object* list = FindObject(spec, a);
  if (list != nullptr && !b.empty()) list = FindObject(*list, b);
  if (list == nullptr) return out;
  for (const auto& [name, value] : *list) {
    // A quantity is a string, or a number as YAML's `nvidia.com/gpu: 8` gives it.
    std::string text = value.is_string() ? std::string(value.get_string())
                       : value.is_number() ? json::serialize(value)
                                           : std::string();
    absl::StatusOr<common::Quantity> q = common::Quantity::Parse(text);
    if (q.ok()) out[std::string(name)] += q->MilliValue();
  }
  return out;
}

// Some resource where `sum` is above `limit` (absent counts as zero; Volcano's LessPartly).
bool Exceeds(const ResourceSum& sum, const ResourceSum& limit) {
  for (const auto& [name, milli] : sum) {
    auto it = limit.find(name);
    if (milli > (it == limit.end() ? 0 : it->second)) return true;
  }
  return false;
}

std::string Describe(const ResourceSum& r) {
  std::string out;
  for (const auto& [name, milli] : r) {
    if (!out.empty()) out += ", ";
    out += name + ": " + common::Quantity::FromMilli(milli).ToString();
  }
  return "{" + out + "}";
}

std::string QuantityText(int64_t milli) { return common::Quantity::FromMilli(milli).ToString(); }

// validateResourceQuantityOfQueue: each quantity as ValidateResourceQuantityValue checks it, and
// guarantee <= deserved <= capability per resource (a guaranteed resource must be deserved too).
std::vector<FieldError> QuantityErrors(const json::object& spec) {
  std::vector<FieldError> errors;
  const ResourceSum capability = ResourcesAt(spec, "capability");
  const ResourceSum deserved = ResourcesAt(spec, "deserved");
  const ResourceSum guarantee = ResourcesAt(spec, "guarantee", "resource");
  auto check_value = [&](const std::string& field, const std::string& name, int64_t milli) {
    if (milli < 0) {
      errors.push_back({ErrorType::kInvalid, field, api::GoQuote(QuantityText(milli)),
                        "must be greater than or equal to 0"});
    }
    if (IsIntegerResource(name) && milli % 1000 != 0) {
      errors.push_back({ErrorType::kInvalid, field, api::GoQuote(QuantityText(milli)),
                        "must be an integer"});
    }
  };
  for (const auto& [name, milli] : capability) {
    check_value("requestBody.spec.capability." + name, name, milli);
  }
  for (const auto& [name, milli] : deserved) {
    check_value("requestBody.spec.deserved." + name, name, milli);
  }
  for (const auto& [name, milli] : guarantee) {
    check_value("requestBody.spec.guarantee.resource." + name, name, milli);
    auto des = deserved.find(name);
    if (des == deserved.end()) {
      errors.push_back({ErrorType::kInvalid, "requestBody.spec.deserved." + name,
                        api::GoQuote("<nil>"),
                        fmt::format("deserved[{}] must be >= guarantee[{}]={}", name, name,
                                    QuantityText(milli))});
    } else if (des->second < milli) {
      errors.push_back({ErrorType::kInvalid, "requestBody.spec.deserved." + name,
                        api::GoQuote(QuantityText(des->second)),
                        fmt::format("deserved[{}]={} must be >= guarantee[{}]={}", name,
                                    QuantityText(des->second), name, QuantityText(milli))});
    }
  }
  for (const auto& [name, milli] : deserved) {
    auto cap = capability.find(name);
    if (cap == capability.end() || milli <= cap->second) continue;  // no capability: unbounded
    errors.push_back({ErrorType::kInvalid, "requestBody.spec.deserved." + name,
                      api::GoQuote(QuantityText(milli)),
                      fmt::format("deserved[{}]={} must be <= capability[{}]={}", name,
                                  QuantityText(milli), name, QuantityText(cap->second))});
  }
  return errors;
}

// The queues as they will be once this write is stored: name -> spec.
std::map<std::string, json::object> QueuesAfter(const Context& c, const json::object& spec) {
  std::map<std::string, json::object> out;
  for (const json::object& q : ListObjects(c.req.store, kQueuesResource)) {
    const json::object* meta = FindObject(q, "metadata");
    const json::object* qspec = FindObject(q, "spec");
    if (meta == nullptr) continue;
    out[StringAt(*meta, "name")] = qspec == nullptr ? json::object() : *qspec;
  }
  out[c.name] = spec;
  return out;
}

std::string ParentOf(const json::object& spec) {
  std::string parent = StringAt(spec, "parent");
  return parent.empty() ? kRootQueue : parent;
}

// The children's sum of spec.<a>[.<b>] against their parent's, as validateSiblingsSum.
std::optional<FieldError> ChildrenWithin(const std::map<std::string, json::object>& queues,
                                         const std::string& parent, std::string_view what,
                                         std::string_view field, std::string_view a,
                                         std::string_view b) {
  ResourceSum total;
  for (const auto& [name, spec] : queues) {
    if (name == kRootQueue || ParentOf(spec) != parent) continue;
    for (const auto& [r, milli] : ResourcesAt(spec, a, b)) total[r] += milli;
  }
  ResourceSum limit = ResourcesAt(queues.at(parent), a, b);
  if (!Exceeds(total, limit)) return std::nullopt;
  return FieldError{ErrorType::kInvalid, std::string(field), api::GoQuote(Describe(total)),
                    fmt::format("parent queue {} validation failed: sum of children's {} ({}) "
                                "exceeds parent's {} limit ({})",
                                parent, what, Describe(total), what, Describe(limit))};
}

// findNearestAncestorCapability: the capability of `name`'s nearest ancestor below root that
// sets `resource` above zero, and that ancestor's name.
std::optional<std::pair<std::string, int64_t>> AncestorCapability(
    const std::map<std::string, json::object>& queues, const std::string& name,
    const std::string& resource) {
  std::set<std::string> seen{name};
  for (std::string at = StringAt(queues.at(name), "parent");
       !at.empty() && at != kRootQueue && queues.count(at) && seen.insert(at).second;
       at = StringAt(queues.at(at), "parent")) {
    ResourceSum cap = ResourcesAt(queues.at(at), "capability");
    if (auto it = cap.find(resource); it != cap.end() && it->second > 0) {
      return std::make_pair(at, it->second);
    }
  }
  return std::nullopt;
}

// findSubtreeMaxCapability: `name`'s own capability of `resource` where it sets one above zero,
// else the largest among its children's subtrees (0 when none sets it).
int64_t SubtreeMaxCapability(const std::map<std::string, json::object>& queues,
                             const std::string& name, const std::string& resource,
                             std::set<std::string>& seen) {
  ResourceSum cap = ResourcesAt(queues.at(name), "capability");
  if (auto it = cap.find(resource); it != cap.end() && it->second > 0) return it->second;
  int64_t most = 0;
  if (!seen.insert(name).second) return most;  // a cycle written before these checks
  for (const auto& [child, spec] : queues) {
    if (child == kRootQueue || StringAt(spec, "parent") != name) continue;
    most = std::max(most, SubtreeMaxCapability(queues, child, resource, seen));
  }
  return most;
}

// validateChildAgainstAncestor and the capability half of validateChildrenConstraints.
std::vector<FieldError> CapabilityErrors(const std::map<std::string, json::object>& queues,
                                         const std::string& name) {
  std::vector<FieldError> errors;
  const ResourceSum own = ResourcesAt(queues.at(name), "capability");
  for (const auto& [resource, milli] : own) {
    auto ancestor = AncestorCapability(queues, name, resource);
    if (!ancestor || milli <= ancestor->second) continue;
    errors.push_back({ErrorType::kInvalid, "requestBody.spec.capability." + resource,
                      api::GoQuote(QuantityText(milli)),
                      fmt::format("queue {} capability[{}]={} exceeds its ancestor's "
                                  "capability={} (queue {})",
                                  name, resource, QuantityText(milli),
                                  QuantityText(ancestor->second), ancestor->first)});
  }
  for (const auto& [resource, milli] : own) {
    int64_t most = 0;
    for (const auto& [child, spec] : queues) {
      if (child == kRootQueue || StringAt(spec, "parent") != name) continue;
      std::set<std::string> seen{name};
      most = std::max(most, SubtreeMaxCapability(queues, child, resource, seen));
    }
    if (milli >= most) continue;
    errors.push_back({ErrorType::kInvalid, "requestBody.spec.capability." + resource,
                      api::GoQuote(QuantityText(milli)),
                      fmt::format("queue {} capability[{}]={} is smaller than its descendants' "
                                  "max capability={}",
                                  name, resource, QuantityText(milli), QuantityText(most))});
  }
  return errors;
}

// validatequeue.volcano.sh's hierarchical checks on a queue whose parent, capability, guarantee
// or deserved is written.
std::vector<FieldError> HierarchyErrors(const Context& c, const json::object& spec,
                                        bool parent_written) {
  std::vector<FieldError> errors;
  if (c.name == kRootQueue) return errors;
  std::string parent = StringAt(spec, "parent");
  if (parent == c.name) {
    errors.push_back({ErrorType::kInvalid, "requestBody.spec.parent", api::GoQuote(parent),
                      fmt::format("queue {} cannot use itself as parent", c.name)});
    return errors;
  }
  std::map<std::string, json::object> queues = QueuesAfter(c, spec);
  if (!parent.empty() && parent != kRootQueue && !queues.count(parent)) {
    errors.push_back({ErrorType::kInvalid, "requestBody.spec.parent", api::GoQuote(parent),
                      fmt::format("failed to get parent queue of queue {}: {}", c.name,
                                  QueueNotFound(parent))});
    return errors;
  }
  // Up from the parent: reaching this queue again is a cycle.
  std::string path = c.name;
  std::set<std::string> seen{c.name};
  for (std::string at = parent; !at.empty() && at != kRootQueue && queues.count(at);
       at = StringAt(queues.at(at), "parent")) {
    path += " -> " + at;
    if (at == c.name) {
      errors.push_back({ErrorType::kInvalid, "requestBody.spec.parent", api::GoQuote(parent),
                        fmt::format("queue {} cannot have parent {}: the parents form a cycle "
                                    "({})",
                                    c.name, parent, path)});
      return errors;
    }
    if (!seen.insert(at).second) break;  // a cycle above, written before these checks
  }
  // validateQueueDepth: this queue is level 1, each ancestor below root one more.
  int depth = 1;
  for (std::string at = parent; !at.empty() && at != kRootQueue && queues.count(at);
       at = StringAt(queues.at(at), "parent")) {
    if (++depth > kMaxQueueDepth) {
      errors.push_back({ErrorType::kInvalid, "requestBody.spec.parent", api::GoQuote(parent),
                        fmt::format("queue {} exceeds the maximum allowed depth of {}", c.name,
                                    kMaxQueueDepth)});
      return errors;
    }
  }
  // validateHierarchicalQueue: a leaf whose jobs hold pods does not become a parent (its jobs
  // would sit in an inner queue).
  if (parent_written && !parent.empty() && parent != kRootQueue) {
    bool has_children = false;
    for (const auto& [name, other] : queues) {
      has_children = has_children || (name != c.name && StringAt(other, "parent") == parent);
    }
    std::optional<json::object> stored = GetObject(c.req.store, kQueuesResource, "", parent);
    const json::object* status = stored ? FindObject(*stored, "status") : nullptr;
    ResourceSum allocated = status == nullptr ? ResourceSum() : ResourcesAt(*status, "allocated");
    if (!has_children && allocated["pods"] > 0) {
      errors.push_back({ErrorType::kInvalid, "requestBody.spec.parent", api::GoQuote(parent),
                        fmt::format("queue {} cannot be the parent queue of queue {} because it "
                                    "has allocated Pods: {}",
                                    parent, c.name, allocated["pods"] / 1000)});
      return errors;
    }
  }
  errors = CapabilityErrors(queues, c.name);
  if (!errors.empty()) return errors;
  // As a child among its siblings, and as a parent over its children.
  for (const std::string& p : {ParentOf(spec), c.name}) {
    if (p == kRootQueue || !queues.count(p)) continue;
    if (auto e = ChildrenWithin(queues, p, "guarantee", "requestBody.spec.guarantee.resource",
                                "guarantee", "resource")) {
      errors.push_back(*std::move(e));
    }
    if (auto e = ChildrenWithin(queues, p, "deserved", "requestBody.spec.deserved", "deserved",
                                "")) {
      errors.push_back(*std::move(e));
    }
  }
  return errors;
}

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
  std::vector<FieldError> errors = QuantityErrors(*spec);
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

  const json::object* old_spec = c.create() ? nullptr : FindObject(*c.req.old, "spec");
  auto changed = [&](std::string_view key) {
    if (old_spec == nullptr) return true;
    const json::value* was = old_spec->if_contains(key);
    const json::value* now = spec->if_contains(key);
    return (was == nullptr) != (now == nullptr) || (was != nullptr && *was != *now);
  };
  if (c.name == kRootQueue && old_spec != nullptr &&
      (changed("capability") || changed("deserved") || changed("guarantee"))) {
    // --enable-root-queue-protection (on by default): root's shares are the cluster's.
    for (const char* key : {"capability", "deserved", "guarantee"}) {
      if (!changed(key)) continue;
      errors.push_back({ErrorType::kForbidden, fmt::format("requestBody.spec.{}", key),
                        std::nullopt,
                        "root queue's resource attributes (capability, deserved, guarantee) "
                        "cannot be modified"});
    }
    return WebhookDenied(kQueueWebhook, AggregateFieldErrors(errors));
  }
  if (changed("parent") || changed("capability") || changed("guarantee") || changed("deserved")) {
    errors = HierarchyErrors(c, *spec, changed("parent"));
    if (!errors.empty()) return WebhookDenied(kQueueWebhook, AggregateFieldErrors(errors));
  }
  return std::nullopt;
}

namespace {

// The queues whose spec.parent names `name`, sorted.
std::vector<std::string> ChildQueues(const store::Store* st, const std::string& name) {
  std::vector<std::string> children;
  for (const json::object& q : ListObjects(st, kQueuesResource)) {
    const json::object* meta = FindObject(q, "metadata");
    const json::object* spec = FindObject(q, "spec");
    if (meta != nullptr && spec != nullptr && StringAt(*spec, "parent") == name) {
      children.push_back(StringAt(*meta, "name"));
    }
  }
  std::sort(children.begin(), children.end());
  return children;
}

}  // namespace

std::optional<ApiError> RefuseQueueDelete(const store::Store* st, const std::string& name) {
  if (name == "default" || name == kRootQueue) {
    return WebhookDenied(kQueueWebhook, fmt::format("`{}` queue can not be deleted", name));
  }
  std::vector<std::string> children = ChildQueues(st, name);
  if (children.empty()) return std::nullopt;
  std::string names;
  for (const std::string& child : children) names += (names.empty() ? "" : ", ") + child;
  return WebhookDenied(kQueueWebhook,
                       fmt::format("queue {} can not be deleted because it has {} child queues: {}",
                                   name, children.size(), names));
}

int ChildQueueCount(const store::Store* st, const std::string& name) {
  int count = 0;
  for (const json::object& q : ListObjects(st, kQueuesResource)) {
    const json::object* spec = FindObject(q, "spec");
    if (spec != nullptr && StringAt(*spec, "parent") == name) ++count;
  }
  return count;
}

}  // namespace muster::apiserver::admission

namespace muster::apiserver {

std::optional<ApiError> AdmitQueueDelete(const store::Store* store, const std::string& name) {
  return admission::RefuseQueueDelete(store, name);
}

}  // namespace muster::apiserver
