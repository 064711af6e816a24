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

using write_support::CheckWriteOptions;
using write_support::ExactInt64;
using write_support::FromStatus;
using write_support::IsDryRun;
using write_support::LiveObject;
using write_support::MetaOf;
using write_support::kMaxAttempts;

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
    const json::object& o = v->get_object();
    if (const json::value* g = o.if_contains("gracePeriodSeconds"); g && g->is_number()) {
      std::optional<int64_t> grace = ExactInt64(*g);
      if (!grace) {
        return ErrorResponse(BadRequest(fmt::format(
            "json: cannot unmarshal number {} into Go struct field "
            "DeleteOptions.gracePeriodSeconds of type int64",
            g->is_double() ? fmt::format("{}", g->get_double()) : json::serialize(*g))));
      }
      options.grace_period_seconds = *grace;
    }
    options.propagation_policy = StringAt(&o, "propagationPolicy");
    if (const json::value* orphan = o.if_contains("orphanDependents");
        orphan && orphan->is_bool() && orphan->get_bool() && options.propagation_policy.empty()) {
      options.propagation_policy = "Orphan";
    }
    if (const json::value* p = o.if_contains("preconditions"); p && p->is_object()) {
      uid_precondition = StringAt(&p->get_object(), "uid");
      std::string rv = StringAt(&p->get_object(), "resourceVersion");
      if (!rv.empty() && !int_param(rv, options.precondition_revision)) {
        return ErrorResponse(BadRequest(fmt::format("invalid resourceVersion \"{}\"", rv)));
      }
    }
    if (const json::value* d = o.if_contains("dryRun"); d && d->is_array()) {
      for (const auto& e : d->get_array()) {
        if (e.is_string() && e.get_string() == "All") options.dry_run = true;
      }
    }
  }
  if (std::string_view g = req.Param("gracePeriodSeconds"); !g.empty()) {
    if (!int_param(g, options.grace_period_seconds)) {
      return ErrorResponse(BadRequest(fmt::format("invalid gracePeriodSeconds \"{}\"", g)));
    }
  }
  if (std::string_view p = req.Param("propagationPolicy"); !p.empty()) {
    options.propagation_policy = std::string(p);
  }
  if (const std::string& p = options.propagation_policy;
      !p.empty() && p != "Foreground" && p != "Background" && p != "Orphan") {
    return ErrorResponse(Invalid(
        "DeleteOptions", "meta.k8s.io", "",
        {{"FieldValueNotSupported",
          fmt::format("Unsupported value: {}: supported values: \"Foreground\", \"Background\", "
                      "\"Orphan\", \"nil\"",
                      json::serialize(json::string(p))),
          "propagationPolicy"}}));
  }
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

// --- Binding -------------------------------------------------------------------------------------

}  // namespace muster::apiserver
