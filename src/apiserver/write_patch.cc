// PATCH in its four types (JSON merge, JSON patch, strategic merge, server-side apply), as
// kube-apiserver's staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go: the patch is
// applied to the live object, the result goes through the same admission and guarded Commit as
// an update (write.cc), and a concurrent change makes it re-apply the patch to the new state.

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
#include "apiserver/descriptors/custom_resource.h"
#include "apiserver/handlers.h"
#include "apiserver/lifecycle.h"
#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "fmt/format.h"
#include "apiserver/write_support.h"

namespace muster::apiserver {

namespace json = boost::json;

using write_support::AddWarnings;
using write_support::ApplyConflict;
using write_support::CheckFields;
using write_support::CheckNameAndNamespace;
using write_support::CheckWriteOptions;
using write_support::FieldCheck;
using write_support::FromStatus;
using write_support::IsDryRun;
using write_support::LiveState;
using write_support::ReadLive;
using write_support::ManagerOf;
using write_support::MergeForWrite;
using write_support::MetaOf;
using write_support::PatchFailed;
using write_support::kMaxAttempts;

namespace {

enum class PatchType { kMerge, kJson, kStrategic, kApply };

// Walks a merge-style patch body for unknown fields, skipping directives ($patch, $retainKeys,
// $setElementOrder/..., $deleteFromPrimitiveList/...) which are not fields.
json::value WithoutDirectives(const json::value& v) {
  if (v.is_object()) {
    json::object out;
    for (const auto& [k, w] : v.get_object()) {
      if (!k.empty() && k[0] == '$') continue;
      if (w.is_null()) continue;
      out[k] = WithoutDirectives(w);
    }
    return out;
  }
  if (v.is_array()) {
    json::array out;
    for (const auto& w : v.get_array()) out.push_back(WithoutDirectives(w));
    return out;
  }
  return v;
}

// Whether an operation of a JSON patch reads or writes metadata.managedFields: its path or from
// is the document, metadata, or managedFields or below.
bool JsonPatchNamesManagedFields(const json::value& patch) {
  auto names = [](const json::value* pointer) {
    if (pointer == nullptr || !pointer->is_string()) return false;
    std::string_view p = pointer->get_string();
    constexpr std::string_view kManaged = "/metadata/managedFields";
    return p.empty() || p == "/metadata" ||
           (p.starts_with(kManaged) && (p.size() == kManaged.size() || p[kManaged.size()] == '/'));
  };
  if (!patch.is_array()) return false;
  const json::array& ops = patch.get_array();
  return std::any_of(ops.begin(), ops.end(), [&](const json::value& op) {
    const json::object* o = op.if_object();
    return o != nullptr && (names(o->if_contains("path")) || names(o->if_contains("from")));
  });
}

}  // namespace

HttpResponse Handlers::Patch(const HttpRequest& req, const Target& t) {
  const ResourceInfo& res = *t.resource;
  std::string_view media = MediaType(req.content_type);
  PatchType type;
  if (media == "application/merge-patch+json") {
    type = PatchType::kMerge;
  } else if (media == "application/json-patch+json") {
    type = PatchType::kJson;
  } else if (media == "application/strategic-merge-patch+json") {
    if (!res.builtin || !api::SupportsStrategicMergePatch(res.kind)) {
      return ErrorResponse(UnsupportedMediaType(media, false));
    }
    type = PatchType::kStrategic;
  } else if (media == "application/apply-patch+yaml" || media == "application/apply-patch+json") {
    type = PatchType::kApply;
  } else {
    return ErrorResponse(UnsupportedMediaType(media, res.builtin));
  }

  json::value patch;
  if (type == PatchType::kApply) {
    auto docs = api::ParseYamlDocuments(req.body);
    if (!docs.ok()) {
      return ErrorResponse(
          BadRequest(fmt::format("error decoding YAML: {}", std::string(docs.status().message()))));
    }
    if (docs->size() != 1 || !(*docs)[0].is_object()) {
      return ErrorResponse(BadRequest("the apply configuration must be one YAML or JSON object"));
    }
    patch = std::move((*docs)[0]);
  } else {
    absl::StatusOr<json::value> parsed = api::ParseJson(req.body);
    if (!parsed.ok()) {
      return ErrorResponse(BadRequest(fmt::format("couldn't decode the patch as JSON: {}",
                                                  std::string(parsed.status().message()))));
    }
    patch = *std::move(parsed);
    if (type == PatchType::kJson && !patch.is_array()) {
      return ErrorResponse(BadRequest("a JSON patch must be a JSON array of operations"));
    }
    if (type != PatchType::kJson && !patch.is_object()) {
      return ErrorResponse(BadRequest("a merge patch must be a JSON object"));
    }
  }

  if (auto e = CheckWriteOptions(req, "PatchOptions", type == PatchType::kApply)) {
    return ErrorResponse(*e);
  }
  const api::FieldManager who = ManagerOf(req, res, t, type == PatchType::kApply);
  const bool force = req.HasParam("force") && QueryBool(req.Param("force"));
  if (type == PatchType::kApply) {
    const json::object* meta = MetaOf(patch.get_object());
    const json::value* managed = meta != nullptr ? meta->if_contains("managedFields") : nullptr;
    if (managed != nullptr && !managed->is_null()) {
      return ErrorResponse(BadRequest("metadata.managedFields must be nil"));
    }
  }

  FieldCheck fields;
  if (type != PatchType::kJson && t.subresource.empty()) {
    json::value clean = WithoutDirectives(patch);
    fields = CheckFields(req, res, clean.get_object(), t.name);
    if (fields.error) return ErrorResponse(*fields.error);
  }
  const bool dry_run = IsDryRun(req);

  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    auto live = store_.Get({res.StoreResource(), t.ns, t.name});
    if (!live.ok()) {
      if (absl::IsNotFound(live.status()) && type == PatchType::kApply && t.subresource.empty()) {
        absl::StatusOr<api::OwnedApply> owned = api::ApplyWithOwnership(
            json::value(), patch, res.kind, who, force, api::FormatUnixTime(Now()));
        if (!owned.ok()) return ErrorResponse(PatchFailed(res, t.name, owned.status()));
        json::object obj = std::move(owned->object.get_object());
        if (auto e = CheckTypeMeta(obj, res)) return ErrorResponse(*e);
        if (auto e = CheckNameAndNamespace(obj, res, t)) return ErrorResponse(*e);
        auto created = CreateObject(res, t.ns, std::move(obj), dry_run);
        if (!created.ok()) {
          if (created.error().reason == "AlreadyExists") continue;  // raced with a create
          return ErrorResponse(created.error());
        }
        HttpResponse r = JsonResponse(201, std::move(*created));
        AddWarnings(r, fields.warnings);
        return r;
      }
      return ErrorResponse(FromStatus(live.status(), res, t.name));
    }
    std::optional<LiveState> state = ReadLive(*live);
    if (!state) return ErrorResponse(DamagedObjectError(res, *live));
    const json::object* live_obj = &state->object();

    // A patch applies to the state without its field ownership, as a merge or strategic patch
    // of managedFields gives the same result either way; a JSON patch that names them, and an
    // apply, which compares with them, see the whole state.
    absl::StatusOr<json::value> patched;
    switch (type) {
      case PatchType::kMerge:
        patched = api::ApplyMergePatch(*live_obj, patch);
        break;
      case PatchType::kJson:
        patched = JsonPatchNamesManagedFields(patch) ? api::ApplyJsonPatch(state->Whole(), patch)
                                                     : api::ApplyJsonPatch(*live_obj, patch);
        break;
      case PatchType::kStrategic:
        patched = api::ApplyStrategicMergePatch(*live_obj, patch, res.kind);
        break;
      case PatchType::kApply:
        patched = api::MergeApplied(json::value(state->Whole()), patch, res.kind, who);
        break;
    }
    if (!patched.ok()) return ErrorResponse(PatchFailed(res, t.name, patched.status()));
    if (!patched->is_object()) {
      return ErrorResponse(BadRequest("the patched object is not a JSON object"));
    }
    json::object& obj = patched->get_object();
    // A custom resource is stored in its CRD's storage version: patched, it is the URL's again.
    if (res.custom != nullptr &&
        StringAt(&obj, "apiVersion") == res.group + "/" + res.custom->storage_version) {
      obj["apiVersion"] = res.ApiVersion();
    }
    if (auto e = CheckTypeMeta(obj, res)) return ErrorResponse(*e);
    if (auto e = CheckNameAndNamespace(obj, res, t)) return ErrorResponse(*e);
    // A resourceVersion in the patch is a precondition.
    const std::string rv = StringAt(MetaOf(obj), "resourceVersion");
    const bool precondition = !rv.empty() && rv != StringAt(MetaOf(*live_obj), "resourceVersion");
    if (precondition && rv != std::to_string(live->revision)) {
      return ErrorResponse(ModifiedConflict(res.StoreResource(), t.name));
    }
    if (type == PatchType::kJson && t.subresource.empty()) {
      fields = CheckFields(req, res, obj, t.name);
      if (fields.error) return ErrorResponse(*fields.error);
    }
    json::object next = MergeForWrite(res, t.subresource, *live_obj, obj, live->revision);
    auto own = [&](json::object& admitted,
                   std::optional<std::string>& text) -> std::optional<ApiError> {
      if (type != PatchType::kApply) {
        write_support::RecordUpdateOwnership(*state, admitted, res.kind, who,
                                             api::FormatUnixTime(Now()), text);
        return std::nullopt;
      }
      json::value applied(std::move(admitted));
      std::vector<api::FieldConflict> conflicts =
          api::RecordApply(json::value(state->Whole()), applied, patch, res.kind, who, force,
                           api::FormatUnixTime(Now()));
      admitted = std::move(applied.get_object());
      if (!conflicts.empty() && !force) return ApplyConflict(conflicts);
      return std::nullopt;
    };
    auto result =
        CommitUpdate(t, *live, *live_obj, std::move(next), dry_run, precondition, own);
    if (!result) continue;
    if (!result->ok()) return ErrorResponse(result->error());
    HttpResponse r = JsonResponse(200, std::move(**result));
    AddWarnings(r, fields.warnings);
    return r;
  }
  return ErrorResponse(ModifiedConflict(res.StoreResource(), t.name));
}

}  // namespace muster::apiserver
