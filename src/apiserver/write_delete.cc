// DELETE of one object: DeleteOptions (preconditions, gracePeriodSeconds, propagationPolicy,
// dryRun) checked as kube-apiserver does, finalizers and graceful deletion marking the object
// instead of removing it (kube's rest.BeforeDelete), one guarded Commit.

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

using write_support::CheckPropagationPolicy;
using write_support::CheckWriteOptions;
using write_support::ExactInt64;
using write_support::FromStatus;
using write_support::IsDryRun;
using write_support::LiveObject;
using write_support::MetaOf;
using write_support::ReadDeleteOptions;
using write_support::ReadDeleteOptionsResult;
using write_support::kMaxAttempts;

namespace {

// encoding/json's name of a JSON value's type in an UnmarshalTypeError.
std::string_view GoKindOf(const json::value& v) {
  if (v.is_string()) return "string";
  if (v.is_bool()) return "bool";
  if (v.is_array()) return "array";
  if (v.is_object()) return "object";
  return "number";
}

ApiError UnmarshalError(const json::value& got, std::string_view field, std::string_view type) {
  return BadRequest(fmt::format("json: cannot unmarshal {} into Go struct field {} of type {}",
                                GoKindOf(got), field, type));
}

}  // namespace

ApiResult<write_support::ReadDeleteOptionsResult> write_support::ReadDeleteOptions(
    const json::object& o, std::string_view go_field_prefix) {
  ReadDeleteOptionsResult out;
  DeleteOptions& options = out.options;
  auto field = [&](std::string_view name) { return fmt::format("{}{}", go_field_prefix, name); };
  if (const json::value* g = o.if_contains("gracePeriodSeconds"); g && !g->is_null()) {
    std::optional<int64_t> grace = g->is_number() ? ExactInt64(*g) : std::nullopt;
    if (!grace && g->is_number()) {
      return BadRequest(fmt::format(
          "json: cannot unmarshal number {} into Go struct field {} of type int64",
          g->is_double() ? fmt::format("{}", g->get_double()) : json::serialize(*g),
          field("gracePeriodSeconds")));
    }
    if (!grace) return UnmarshalError(*g, field("gracePeriodSeconds"), "int64");
    options.grace_period_seconds = *grace;
  }
  if (const json::value* p = o.if_contains("propagationPolicy"); p && !p->is_null()) {
    if (!p->is_string()) {
      return UnmarshalError(*p, field("propagationPolicy"), "v1.DeletionPropagation");
    }
    options.propagation_policy = std::string(p->get_string());
  }
  if (const json::value* orphan = o.if_contains("orphanDependents");
      orphan && orphan->is_bool() && orphan->get_bool() && options.propagation_policy.empty()) {
    options.propagation_policy = "Orphan";
  }
  if (const json::value* p = o.if_contains("preconditions"); p && !p->is_null()) {
    if (!p->is_object()) return UnmarshalError(*p, field("preconditions"), "v1.Preconditions");
    for (std::string_view key : {"uid", "resourceVersion"}) {
      const json::value* v = p->get_object().if_contains(key);
      if (v != nullptr && !v->is_null() && !v->is_string()) {
        return UnmarshalError(*v, field(fmt::format("preconditions.{}", key)),
                              key == "uid" ? "types.UID" : "string");
      }
    }
    out.uid_precondition = StringAt(&p->get_object(), "uid");
    std::string rv = StringAt(&p->get_object(), "resourceVersion");
    if (!rv.empty()) {
      std::optional<int64_t> revision = ParseInt(rv);
      if (!revision) return BadRequest(fmt::format("invalid resourceVersion \"{}\"", rv));
      options.precondition_revision = *revision;
    }
  }
  if (const json::value* d = o.if_contains("dryRun"); d && !d->is_null()) {
    if (!d->is_array()) return UnmarshalError(*d, field("dryRun"), "[]string");
    for (const auto& e : d->get_array()) {
      if (e.is_string() && e.get_string() == "All") options.dry_run = true;
    }
  }
  return out;
}

std::optional<ApiError> write_support::CheckPropagationPolicy(const std::string& p) {
  if (p.empty() || p == "Foreground" || p == "Background" || p == "Orphan") return std::nullopt;
  return Invalid("DeleteOptions", "meta.k8s.io", "",
                 {{"FieldValueNotSupported",
                   fmt::format("Unsupported value: {}: supported values: \"Foreground\", "
                               "\"Background\", \"Orphan\", \"nil\"",
                               json::serialize(json::string(p))),
                   "propagationPolicy"}});
}

HttpResponse Handlers::Delete(const HttpRequest& req, const Target& t) {
  const ResourceInfo& res = *t.resource;
  if (auto e = CheckWriteOptions(req, "DeleteOptions", false)) return ErrorResponse(*e);
  DeleteOptions options;
  options.dry_run = IsDryRun(req);
  std::string uid_precondition;
  auto int_param = [](std::string_view text, std::optional<int64_t>& out) {
    auto v = ParseInt(text);
    if (!v) return false;
    out = *v;
    return true;
  };
  if (!req.body.empty()) {
    absl::StatusOr<json::value> v;
    if (req.content_type.starts_with("application/vnd.kubernetes.protobuf")) {
      // client-go's typed clients send their DeleteOptions in kube's protobuf envelope.
      auto decoded = DecodeBodyObject(req);
      if (!decoded.ok()) return ErrorResponse(decoded.error());
      v = json::value(std::move(*decoded));
    } else {
      v = api::ParseJson(req.body);
    }
    if (!v.ok()) {
      return ErrorResponse(BadRequest(fmt::format("couldn't decode the DeleteOptions body: {}",
                                                  std::string(v.status().message()))));
    }
    if (!v->is_object()) {
      return ErrorResponse(BadRequest("the DeleteOptions body is not a JSON object"));
    }
    auto read = ReadDeleteOptions(v->get_object(), "DeleteOptions.");
    if (!read.ok()) return ErrorResponse(read.error());
    const bool dry_run = options.dry_run;
    options = read->options;
    options.dry_run = options.dry_run || dry_run;
    uid_precondition = read->uid_precondition;
  }
  if (std::string_view g = req.Param("gracePeriodSeconds"); !g.empty()) {
    if (!int_param(g, options.grace_period_seconds)) {
      return ErrorResponse(BadRequest(fmt::format("invalid gracePeriodSeconds \"{}\"", g)));
    }
  }
  if (std::string_view p = req.Param("propagationPolicy"); !p.empty()) {
    options.propagation_policy = std::string(p);
  }
  if (auto e = CheckPropagationPolicy(options.propagation_policy)) return ErrorResponse(*e);
  if (options.propagation_policy.empty()) options.propagation_policy = "Background";

  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    auto live = store_.Get({res.StoreResource(), t.ns, t.name});
    if (!live.ok()) return ErrorResponse(FromStatus(live.status(), res, t.name));
    if (!uid_precondition.empty()) {
      auto live_obj = LiveObject(*live);
      std::string uid = live_obj ? StringAt(MetaOf(*live_obj), "uid") : "";
      if (uid != uid_precondition) {
        return ErrorResponse(Conflict(
            res.StoreResource(), t.name,
            fmt::format("Precondition failed: UID in precondition: {}, UID in object meta: {}",
                        uid_precondition, uid)));
      }
    }
    if (options.precondition_revision && *options.precondition_revision != live->revision) {
      return ErrorResponse(
          Conflict(res.StoreResource(), t.name,
                   fmt::format("Precondition failed: ResourceVersion in precondition: {}, "
                               "ResourceVersion in meta: {}",
                               *options.precondition_revision, live->revision)));
    }
    if (res.group == "scheduling.volcano.sh" && res.resource == "queues") {
      // validatequeue.volcano.sh sees the DELETE before it is carried out.
      if (auto refused = AdmitQueueDelete(&store_, t.name)) return ErrorResponse(*refused);
    }
    auto plan = PlanDelete(res, *live, options, Now());
    if (!plan.ok()) return ErrorResponse(FromStatus(plan.status(), res, t.name));
    if (options.dry_run || plan->ops.empty()) {
      return JsonResponse(200, json::serialize(plan->result));
    }
    auto stored = store_.Commit(plan->ops);
    if (!stored.ok()) {
      if (absl::IsAborted(stored.status()) || absl::IsNotFound(stored.status())) {
        if (options.precondition_revision) {
          return ErrorResponse(ModifiedConflict(res.StoreResource(), t.name));
        }
        continue;
      }
      return ErrorResponse(FromStatus(stored.status(), res, t.name));
    }
    for (size_t i = 0; i < plan->ops.size(); ++i) {
      if (plan->ops[i].key == live->key) return JsonResponse(200, *(*stored)[i].json);
    }
    return JsonResponse(200, json::serialize(plan->result));
  }
  return ErrorResponse(ModifiedConflict(res.StoreResource(), t.name));
}

// DELETE of a collection (kube's registry Store.DeleteCollection): the objects the label and field
// selectors pick, each deleted as its own DELETE with the same options; the reply lists what
// was deleted or marked. An object gone meanwhile is skipped; any other refusal ends it there.
HttpResponse Handlers::DeleteCollection(const HttpRequest& req, const Target& t) {
  const ResourceInfo& res = *t.resource;
  if (res.namespaced && t.ns.empty()) return ErrorResponse(MethodNotAllowed(req.method));
  if (std::find(res.verbs.begin(), res.verbs.end(), "deletecollection") == res.verbs.end()) {
    return ErrorResponse(MethodNotAllowed(req.method));
  }
  auto filter = CompileFilter(req, res);
  if (!filter.ok()) return ErrorResponse(filter.error());
  store::ListResult list = store_.List(res.StoreResource(), t.ns);
  std::string items;
  for (const store::Object& item : list.items) {
    if (!FilterIsEmpty(**filter)) {
      std::optional<json::object> obj = item.damaged ? std::nullopt : LiveObject(item);
      if (!obj || !FilterMatches(**filter, res, *obj)) continue;
    }
    Target one = t;
    one.ns = item.key.ns;
    one.name = item.key.name;
    HttpResponse deleted = Delete(req, one);
    if (deleted.status == 404) continue;
    if (deleted.status >= 300) return deleted;
    if (!items.empty()) items += ',';
    items += deleted.body;
  }
  return JsonResponse(200, fmt::format(R"({{"kind":"{}","apiVersion":"{}","metadata":{{}},)"
                                       R"("items":[{}]}})",
                                       res.list_kind, res.ApiVersion(), items));
}

}  // namespace muster::apiserver
