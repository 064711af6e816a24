// A custom resource's scale subresource (apiextensions-apiserver
// pkg/registry/customresource/etcd.go, ScaleREST): an autoscaling/v1 Scale read from the CRD's
// specReplicasPath, statusReplicasPath and labelSelectorPath, and written back by setting only
// specReplicasPath, through the same admission and guarded Commit as an update (the schema's
// bounds still hold). What `kubectl scale` and a HorizontalPodAutoscaler use.

#include <string>
#include <utility>

#include "api/json_parse.h"
#include "api/managed_fields.h"
#include "api/patch.h"
#include "api/time.h"
#include "apiserver/descriptors/custom_resource.h"
#include "apiserver/descriptors/tables.h"
#include "apiserver/handlers.h"
#include "apiserver/write_support.h"
#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "fmt/format.h"

namespace muster::apiserver {

namespace json = boost::json;

using write_support::CheckWriteOptions;
using write_support::FromStatus;
using write_support::IsDryRun;
using write_support::LiveState;
using write_support::ManagerOf;
using write_support::Meta;
using write_support::MetaOf;
using write_support::ReadLive;
using write_support::kMaxAttempts;

namespace {

// Sets the value at a simple JSON path (".spec.replicas"), making the objects on the way.
void SetAtScalePath(json::object& obj, std::string_view path, json::value value) {
  if (path.starts_with('.')) path.remove_prefix(1);
  json::object* at = &obj;
  while (true) {
    const size_t dot = path.find('.');
    const std::string_view key = path.substr(0, dot);
    if (dot == std::string_view::npos) {
      (*at)[key] = std::move(value);
      return;
    }
    json::value& next = (*at)[key];
    if (!next.is_object()) next.emplace_object();
    at = &next.get_object();
    path.remove_prefix(dot + 1);
  }
}

int64_t ReplicasAt(const json::value& obj, std::string_view path) {
  const json::value* v = LookupJsonPath(obj, path);
  if (v == nullptr) return 0;
  return api::ExactInt64(*v).value_or(0);
}

// The Scale of a custom resource as ScaleREST makes it.
json::object ScaleOf(const ResourceInfo& res, const json::object& obj) {
  const ScaleSubresource& paths = *res.custom->scale;
  const json::value whole(obj);
  const json::object* meta = ObjectAt(obj, "metadata");
  json::object scale_meta;
  for (std::string_view key :
       {"name", "namespace", "uid", "resourceVersion", "creationTimestamp"}) {
    if (meta != nullptr) {
      if (const json::value* v = meta->if_contains(key)) scale_meta[key] = *v;
    }
  }
  json::object status{{"replicas", ReplicasAt(whole, paths.status_replicas_path)}};
  if (!paths.label_selector_path.empty()) {
    if (const json::value* s = LookupJsonPath(whole, paths.label_selector_path);
        s != nullptr && s->is_string()) {
      status["selector"] = *s;
    }
  }
  json::object spec{{"replicas", ReplicasAt(whole, paths.spec_replicas_path)}};
  return json::object{{"kind", "Scale"},
                      {"apiVersion", "autoscaling/v1"},
                      {"metadata", std::move(scale_meta)},
                      {"spec", std::move(spec)},
                      {"status", std::move(status)}};
}

ApiError ScaleInvalid(std::string_view name, std::string field, std::string value,
                      std::string detail) {
  return Invalid("Scale", "autoscaling", std::string(name),
                 {{"FieldValueInvalid", fmt::format("Invalid value: {}: {}", value, detail),
                   std::move(field)}});
}

}  // namespace

HttpResponse Handlers::Scale(const HttpRequest& req, const Target& t) {
  const ResourceInfo& res = *t.resource;
  if (res.custom == nullptr || !res.custom->scale) return ErrorResponse(PathNotFound());
  const bool get = req.method == "GET";
  json::value patch;
  if (req.method == "PATCH") {
    const std::string_view media = MediaType(req.content_type);
    if (media != "application/merge-patch+json" && media != "application/json-patch+json" &&
        media != "application/strategic-merge-patch+json") {
      return ErrorResponse(UnsupportedMediaType(media, true));
    }
    json::error_code ec;
    patch = api::ParseJsonText(req.body, ec);
    if (ec) return ErrorResponse(BadRequest("couldn't decode the patch as JSON"));
  }
  std::optional<json::object> body;
  if (req.method == "PUT") {
    auto decoded = DecodeBodyObject(req);
    if (!decoded.ok()) return ErrorResponse(decoded.error());
    body = std::move(*decoded);
  }
  if (!get) {
    if (auto e = CheckWriteOptions(req, req.method == "PUT" ? "UpdateOptions" : "PatchOptions",
                                   false)) {
      return ErrorResponse(*e);
    }
  }
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    auto live = store_.Get({res.StoreResource(), t.ns, t.name});
    if (!live.ok()) return ErrorResponse(FromStatus(live.status(), res, t.name));
    std::optional<LiveState> state = ReadLive(*live);
    if (!state) return ErrorResponse(DamagedObjectError(res, *live));
    const json::object& live_obj = state->object();
    json::object scale = ScaleOf(res, live_obj);
    if (get) return JsonResponse(200, json::serialize(scale));

    json::object wanted;
    if (body) {
      wanted = *body;
    } else {
      absl::StatusOr<json::value> patched =
          MediaType(req.content_type) == "application/json-patch+json"
              ? api::ApplyJsonPatch(scale, patch)
              : api::ApplyMergePatch(scale, patch);
      if (!patched.ok() || !patched->is_object()) {
        return ErrorResponse(BadRequest(std::string(patched.status().message())));
      }
      wanted = std::move(patched->get_object());
    }
    const json::object* spec = ObjectAt(wanted, "spec");
    const json::value* replicas = spec != nullptr ? spec->if_contains("replicas") : nullptr;
    std::optional<int64_t> count = replicas != nullptr ? api::ExactInt64(*replicas) : 0;
    if (!count) {
      return ErrorResponse(ScaleInvalid(t.name, "spec.replicas", json::serialize(*replicas),
                                        "must be an integer"));
    }
    if (*count < 0) {
      return ErrorResponse(ScaleInvalid(t.name, "spec.replicas", std::to_string(*count),
                                        "must be greater than or equal to 0"));
    }
    const std::string rv = StringAt(MetaOf(wanted), "resourceVersion");
    if (!rv.empty() && rv != std::to_string(live->revision)) {
      return ErrorResponse(ModifiedConflict(res.StoreResource(), t.name));
    }
    json::object next = live_obj;
    SetAtScalePath(next, res.custom->scale->spec_replicas_path, *count);
    Target main = t;
    main.subresource.clear();
    const api::FieldManager who = ManagerOf(req, res, main, false);
    auto own = [&](json::object& admitted,
                   std::optional<std::string>& text) -> std::optional<ApiError> {
      write_support::RecordUpdateOwnership(*state, admitted, res.kind, who,
                                           api::FormatUnixTime(Now()), text);
      return std::nullopt;
    };
    auto result =
        CommitUpdate(main, *live, live_obj, std::move(next), IsDryRun(req), !rv.empty(), own);
    if (!result) continue;
    if (!result->ok()) return ErrorResponse(result->error());
    json::error_code ec;
    json::value stored = api::ParseJsonText(**result, ec);
    if (ec || !stored.is_object()) return ErrorResponse(Internal("the stored object is not JSON"));
    return JsonResponse(200, json::serialize(ScaleOf(res, stored.get_object())));
  }
  return ErrorResponse(ModifiedConflict(res.StoreResource(), t.name));
}

}  // namespace muster::apiserver
