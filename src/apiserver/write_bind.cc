// pods/binding: the scheduler's write of a pod's node (kube's pkg/registry/core/pod/storage
// BindingREST), one pod (Bind) or a gang's pods in one store transaction (BindAll), so that a
// gang is bound all or not at all.

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <utility>

#include "api/json_parse.h"
#include "api/managed_fields.h"
#include "api/patch.h"
#include "api/time.h"
#include "api/yaml.h"
#include "apiserver/admission/admission.h"
#include "apiserver/handlers.h"
#include "apiserver/lifecycle.h"
#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "fmt/format.h"
#include "apiserver/write_support.h"

namespace muster::apiserver {

namespace json = boost::json;

using write_support::FromStatus;
using write_support::IsDryRun;
using write_support::LiveObject;
using write_support::Meta;
using write_support::MetaOf;
using write_support::kMaxAttempts;

namespace {

const char kBindingResource[] = "pods/binding";

// What a binding must name whatever the pod's state.
std::optional<ApiError> ValidateBinding(const PodBinding& b) {
  if (b.node.empty()) {
    return Invalid("Binding", "", b.pod, {{"FieldValueRequired", "Required value", "target.name"}});
  }
  return std::nullopt;
}

}  // namespace

ApiResult<json::object> Handlers::BoundPod(const store::Object& live, const PodBinding& b,
                                           std::optional<std::string>& managed_text) {
  // The pod's own ownership, unchanged, goes to the store as the text it is; where the binding
  // adds the pod's first annotations the pod holds it, so that it stays before them as before.
  const json::object* parsed = live.parsed != nullptr ? live.parsed->if_object() : nullptr;
  const bool first_annotations =
      parsed != nullptr && !b.annotations.empty() &&
      (MetaOf(*parsed) == nullptr || !MetaOf(*parsed)->contains("annotations"));
  std::optional<json::object> pod;
  if (parsed != nullptr && !first_annotations) {
    pod = *parsed;
    // A stored managedFields that is no list counts as none (api/managed_fields.h).
    const std::string_view stored = live.ManagedFieldsText();
    managed_text = stored.starts_with('[') ? std::string(stored) : std::string();
  } else {
    pod = LiveObject(live);
    managed_text.reset();
  }
  if (!pod) return DamagedObjectError(*FindResource("", "v1", "pods"), live);
  const json::object* meta = MetaOf(*pod);
  if (!b.pod_uid.empty() && b.pod_uid != StringAt(meta, "uid")) {
    return Conflict(
        kBindingResource, b.pod,
        fmt::format("Precondition failed: UID in precondition: {}, UID in object meta: {}",
                    b.pod_uid, StringAt(meta, "uid")));
  }
  if (meta != nullptr && meta->contains("deletionTimestamp")) {
    return Conflict(kBindingResource, b.pod,
                    fmt::format("pod {} is being deleted, cannot be assigned to a host", b.pod));
  }
  json::object spec;
  if (const json::value* s = pod->if_contains("spec"); s && s->is_object()) spec = s->get_object();
  if (std::string bound = StringAt(&spec, "nodeName"); !bound.empty()) {
    return Conflict(kBindingResource, b.pod,
                    fmt::format("pod {} is already assigned to node \"{}\"", b.pod, bound));
  }
  json::object next = std::move(*pod);
  spec["nodeName"] = b.node;
  next["spec"] = std::move(spec);
  if (!b.annotations.empty()) {
    json::value& annotations = Meta(next)["annotations"];
    if (!annotations.is_object()) annotations.emplace_object();
    for (const auto& [k, v] : b.annotations) annotations.get_object()[k] = v;
  }
  // PodScheduled=True, replacing any earlier PodScheduled condition.
  json::value& status_v = next["status"];
  if (!status_v.is_object()) status_v.emplace_object();
  json::value& conditions_v = status_v.get_object()["conditions"];
  if (!conditions_v.is_array()) conditions_v.emplace_array();
  json::array& conditions = conditions_v.get_array();
  json::object scheduled;
  scheduled["type"] = "PodScheduled";
  scheduled["status"] = "True";
  scheduled["lastProbeTime"] = nullptr;
  scheduled["lastTransitionTime"] = api::FormatUnixTime(Now());
  bool replaced = false;
  for (auto& c : conditions) {
    if (c.is_object() && StringAt(&c.get_object(), "type") == "PodScheduled") {
      c = scheduled;
      replaced = true;
    }
  }
  if (!replaced) conditions.push_back(std::move(scheduled));
  return next;
}

HttpResponse Handlers::Bind(const HttpRequest& req, const Target& t) {
  const ResourceInfo& res = *t.resource;
  auto body = DecodeBodyObject(req);
  if (!body.ok()) return ErrorResponse(body.error());
  const json::value* target = body->if_contains("target");
  PodBinding b;
  b.ns = t.ns;
  b.pod = t.name;
  b.node = target != nullptr && target->is_object() ? StringAt(&target->get_object(), "name") : "";
  std::string target_kind =
      target != nullptr && target->is_object() ? StringAt(&target->get_object(), "kind") : "";
  if (auto e = ValidateBinding(b)) return ErrorResponse(*e);
  if (!target_kind.empty() && target_kind != "Node") {
    return ErrorResponse(
        Invalid("Binding", "", t.name,
                {{"FieldValueNotSupported",
                  "Unsupported value: \"" + target_kind + "\": supported values: \"Node\"",
                  "target.kind"}}));
  }
  const json::object* binding_meta = MetaOf(*body);
  b.pod_uid = StringAt(binding_meta, "uid");
  if (binding_meta != nullptr) {
    if (const json::value* a = binding_meta->if_contains("annotations"); a && a->is_object()) {
      b.annotations = a->get_object();
    }
  }

  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    auto live = store_.Get({res.StoreResource(), t.ns, t.name});
    if (!live.ok()) return ErrorResponse(FromStatus(live.status(), res, t.name));
    std::optional<std::string> managed_text;
    auto next = BoundPod(*live, b, managed_text);
    if (!next.ok()) return ErrorResponse(next.error());
    if (!IsDryRun(req)) {
      std::vector<store::Op> ops(1);
      ops[0].kind = store::OpKind::kUpdate;
      ops[0].key = live->key;
      ops[0].object = std::move(*next);
      ops[0].expected_revision = live->revision;
      ops[0].managed_fields = std::move(managed_text);
      auto stored = store_.Commit(std::move(ops));
      if (!stored.ok()) {
        if (absl::IsAborted(stored.status())) continue;
        return ErrorResponse(FromStatus(stored.status(), res, t.name));
      }
    }
    return JsonResponse(
        201, R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":201})");
  }
  return ErrorResponse(ModifiedConflict(res.StoreResource(), t.name));
}

std::vector<std::optional<ApiError>> Handlers::BindAll(const std::vector<PodBinding>& bindings) {
  const ResourceInfo& res = *FindResource("", "v1", "pods");
  std::vector<std::optional<ApiError>> out(bindings.size());
  // When one binding fails, the others are refused with a Conflict that names it.
  auto refuse_rest = [&](size_t failed) {
    for (size_t i = 0; i < bindings.size(); ++i) {
      if (out[i]) continue;
      out[i] = Conflict(
          kBindingResource, bindings[i].pod,
          fmt::format("not bound: pod {}/{} of the same request could not be bound: {}",
                      bindings[failed].ns, bindings[failed].pod, out[failed]->message));
    }
    return out;
  };
  std::set<std::pair<std::string, std::string>> seen;
  for (size_t i = 0; i < bindings.size(); ++i) {
    if (auto e = ValidateBinding(bindings[i])) {
      out[i] = std::move(*e);
      return refuse_rest(i);
    }
    if (!seen.emplace(bindings[i].ns, bindings[i].pod).second) {
      out[i] = BadRequest(fmt::format("pod {}/{} appears more than once in one request",
                                      bindings[i].ns, bindings[i].pod));
      return refuse_rest(i);
    }
  }
  if (bindings.empty()) return out;

  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    std::vector<store::Op> ops;
    ops.reserve(bindings.size());
    for (size_t i = 0; i < bindings.size(); ++i) {
      const PodBinding& b = bindings[i];
      auto live = store_.Get({res.StoreResource(), b.ns, b.pod});
      if (!live.ok()) {
        out[i] = FromStatus(live.status(), res, b.pod);
        return refuse_rest(i);
      }
      std::optional<std::string> managed_text;
      auto next = BoundPod(*live, b, managed_text);
      if (!next.ok()) {
        out[i] = next.error();
        return refuse_rest(i);
      }
      store::Op& op = ops.emplace_back();
      op.kind = store::OpKind::kUpdate;
      op.key = live->key;
      op.object = std::move(*next);
      op.expected_revision = live->revision;
      op.managed_fields = std::move(managed_text);
    }
    auto stored = store_.Commit(std::move(ops));
    if (stored.ok()) return out;
    // A pod changed or went away since it was read: read them all again.
    if (absl::IsAborted(stored.status()) || absl::IsNotFound(stored.status())) continue;
    for (size_t i = 0; i < bindings.size(); ++i) {
      out[i] = FromStatus(stored.status(), res, bindings[i].pod);
    }
    return out;
  }
  for (size_t i = 0; i < bindings.size(); ++i) {
    out[i] = ModifiedConflict(res.StoreResource(), bindings[i].pod);
  }
  return out;
}

}  // namespace muster::apiserver
