// Writes that store a whole object: create (POST, and CreateAll for many) and update (PUT). Each
// builds the complete new state, runs admission, and stores it with one Commit guarded by the
// revision it was computed from; a concurrent change makes it recompute (requests without a
// client precondition) or answer 409 Conflict (requests with one). Patch, delete and pods/binding
// are write_patch.cc, write_delete.cc and write_bind.cc; what they share is write_support.h.

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

using write_support::AddWarnings;
using write_support::CheckFields;
using write_support::CheckNameAndNamespace;
using write_support::CheckWriteOptions;
using write_support::FieldCheck;
using write_support::FromAdmission;
using write_support::FromStatus;
using write_support::IntAt;
using write_support::IsDryRun;
using write_support::IsTerminating;
using write_support::LiveObject;
using write_support::LiveState;
using write_support::ReadLive;
using write_support::ManagerOf;
using write_support::MergeForWrite;
using write_support::Meta;
using write_support::MetaOf;
using write_support::ResetStatusOnCreate;
using write_support::ShouldDeleteDuringUpdate;
using write_support::SpecChanged;
using write_support::kMaxAttempts;

std::optional<ApiError> CheckTypeMeta(json::object& obj, const ResourceInfo& res) {
  std::string api_version = StringAt(&obj, "apiVersion");
  std::string kind = StringAt(&obj, "kind");
  if (!api_version.empty() && api_version != res.ApiVersion()) {
    return BadRequest(
        fmt::format("the API version in the data ({}) does not match the expected API version ({})",
                    api_version, res.ApiVersion()));
  }
  if (!kind.empty() && kind != res.kind) {
    return BadRequest(fmt::format("the kind in the data ({}) does not match the expected kind ({})",
                                  kind, res.kind));
  }
  if (api_version.empty()) obj["apiVersion"] = res.ApiVersion();
  if (kind.empty()) obj["kind"] = res.kind;
  return std::nullopt;
}

// --- Create --------------------------------------------------------------------------------------

ApiResult<Handlers::PreparedCreate> Handlers::PrepareCreate(const ResourceInfo& res,
                                                            const std::string& ns,
                                                            json::object obj) {
  json::object& meta = Meta(obj);
  std::string name = StringAt(&meta, "name");
  if (res.namespaced) {
    meta["namespace"] = ns;
    auto ns_obj = store_.Get({"namespaces", "", ns});
    if (!ns_obj.ok()) {
      if (absl::IsNotFound(ns_obj.status())) return NotFound("namespaces", ns);
      return Internal(std::string(ns_obj.status().message()));
    }
    if (auto parsed = LiveObject(*ns_obj); parsed && IsTerminating(*parsed)) {
      return Forbidden(res.StoreResource(), name,
                       fmt::format("unable to create new content in namespace {} because it is "
                                   "being terminated",
                                   ns));
    }
  } else {
    meta.erase("namespace");
  }
  const std::string generate = StringAt(&meta, "generateName");
  const bool generated = name.empty() && !generate.empty();
  for (std::string_view key :
       {"resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"}) {
    meta.erase(key);
  }
  meta["uid"] = NewUid();
  meta["creationTimestamp"] = api::FormatUnixTime(Now());
  meta["generation"] = 1;
  ResetStatusOnCreate(res, obj);
  if (generated) Meta(obj)["name"] = generate + RandomNameSuffix();
  name = StringAt(MetaOf(obj), "name");
  if (name.empty()) {
    return Invalid(res.kind, res.group, "",
                   {{"FieldValueRequired", "Required value: name or generateName is required",
                     "metadata.name"}});
  }

  AdmissionRequest admission;
  admission.resource = &res;
  admission.store = &store_;
  admission.now_unix = Now();
  if (auto refused = Admit(admission, obj)) return FromAdmission(*refused, res, name);
  PreparedCreate prepared;
  prepared.op.kind = store::OpKind::kCreate;
  prepared.op.key = {res.StoreResource(), res.namespaced ? ns : "", name};
  prepared.op.object = std::move(obj);
  if (generated) prepared.generate_name = generate;
  return prepared;
}

ApiResult<std::string> Handlers::CommitCreate(const ResourceInfo& res, PreparedCreate prepared) {
  for (int attempt = 0;; ++attempt) {
    std::vector<store::Op> ops(1);
    ops[0].kind = store::OpKind::kCreate;
    ops[0].key = prepared.op.key;
    // Kept for a retry under another generated name; moved when there is none.
    ops[0].object =
        prepared.generate_name.empty() ? std::move(prepared.op.object) : prepared.op.object;
    auto stored = store_.Commit(std::move(ops));
    if (stored.ok()) return *(*stored)[0].json;
    if (absl::IsAlreadyExists(stored.status()) && !prepared.generate_name.empty() && attempt < 8) {
      prepared.op.key.name = prepared.generate_name + RandomNameSuffix();
      Meta(prepared.op.object.get_object())["name"] = prepared.op.key.name;
      continue;
    }
    return FromStatus(stored.status(), res, prepared.op.key.name);
  }
}

ApiResult<std::string> Handlers::CreateObject(const ResourceInfo& res, const std::string& ns,
                                              json::object obj, bool dry_run) {
  ApiResult<PreparedCreate> prepared = PrepareCreate(res, ns, std::move(obj));
  if (!prepared.ok()) return prepared.error();
  if (dry_run) return json::serialize(prepared->op.object);
  const std::string name = prepared->op.key.name;
  ApiResult<std::string> stored = CommitCreate(res, std::move(*prepared));
  if (stored.ok() && res.group.empty() && res.resource == "namespaces") {
    EnsureDefaultServiceAccount(name);
  }
  return stored;
}

std::vector<std::optional<ApiError>> Handlers::CreateAll(
    const ResourceInfo& res, std::vector<std::pair<std::string, json::object>> objects) {
  std::vector<std::optional<ApiError>> out(objects.size());
  std::vector<std::pair<size_t, PreparedCreate>> valid;
  valid.reserve(objects.size());
  HttpRequest post;
  post.method = "POST";
  post.user_agent = "muster";  // in-process controllers (apiserver/local_transport.h)
  const std::string now = api::FormatUnixTime(Now());
  for (size_t i = 0; i < objects.size(); ++i) {
    auto& [ns, obj] = objects[i];
    Target t{.resource = Builtin(res),
             .ns = res.namespaced ? ns : "",
             .name = "",
             .subresource = ""};
    if (auto e = CheckTypeMeta(obj, res)) {
      out[i] = std::move(*e);
      continue;
    }
    if (auto e = CheckNameAndNamespace(obj, res, t)) {
      out[i] = std::move(*e);
      continue;
    }
    FieldCheck fields = CheckFields(post, res, obj, StringAt(MetaOf(obj), "name"));
    if (fields.error) {
      out[i] = std::move(*fields.error);
      continue;
    }
    api::RecordUpdate(json::object(), obj, res.kind, ManagerOf(post, res, t, false), now);
    ApiResult<PreparedCreate> prepared = PrepareCreate(res, t.ns, std::move(obj));
    if (!prepared.ok()) {
      out[i] = prepared.error();
      continue;
    }
    valid.emplace_back(i, std::move(*prepared));
  }
  if (valid.empty()) return out;
  std::vector<store::Op> ops;
  ops.reserve(valid.size());
  for (const auto& [i, prepared] : valid) ops.push_back(prepared.op);
  if (store_.Commit(std::move(ops)).ok()) return out;
  // One of them could not be stored (a name taken meanwhile): store them one by one, so that
  // only that one fails.
  for (auto& [i, prepared] : valid) {
    ApiResult<std::string> stored = CommitCreate(res, std::move(prepared));
    if (!stored.ok()) out[i] = stored.error();
  }
  return out;
}

HttpResponse Handlers::Create(const HttpRequest& req, const Target& t) {
  const ResourceInfo& res = *t.resource;
  auto body = DecodeBodyObject(req);
  if (!body.ok()) return ErrorResponse(body.error());
  if (auto e = CheckTypeMeta(*body, res)) return ErrorResponse(*e);
  if (auto e = CheckNameAndNamespace(*body, res, t)) return ErrorResponse(*e);
  std::string name = StringAt(MetaOf(*body), "name");
  FieldCheck fields = CheckFields(req, res, *body, name);
  if (fields.error) return ErrorResponse(*fields.error);
  if (auto e = CheckWriteOptions(req, "CreateOptions", false)) return ErrorResponse(*e);
  api::RecordUpdate(json::object(), *body, res.kind, ManagerOf(req, res, t, false),
                    api::FormatUnixTime(Now()));
  auto created = CreateObject(res, t.ns, std::move(*body), IsDryRun(req));
  if (!created.ok()) return ErrorResponse(created.error());
  HttpResponse r = JsonResponse(201, std::move(*created));
  AddWarnings(r, fields.warnings);
  return r;
}

// --- Update and patch ----------------------------------------------------------------------------

namespace {

// The ownership text an update records (store::Op::managed_fields) moved into `next` itself, as
// metadata.managedFields after its other members, where api::RecordUpdate puts it.
void HoldOwnership(json::object& next, std::optional<std::string>& text) {
  if (!text) return;
  if (std::optional<json::value> managed = api::ParseManagedFieldsText(*text)) {
    Meta(next)["managedFields"] = std::move(*managed);
  }
  text.reset();
}

}  // namespace

std::optional<ApiResult<std::string>> Handlers::CommitUpdate(const Target& t,
                                                             const store::Object& live,
                                                             const json::object& live_obj,
                                                             json::object next, bool dry_run,
                                                             bool user_precondition,
                                                             const OwnFields& own) {
  const ResourceInfo& res = *t.resource;
  AdmissionRequest admission;
  admission.resource = &res;
  admission.subresource = t.subresource == "finalize" ? "" : t.subresource;
  admission.old = &live_obj;
  admission.store = &store_;
  admission.now_unix = Now();
  if (auto refused = Admit(admission, next)) return FromAdmission(*refused, res, t.name);
  // After admission, whose defaults the stored object has already: an unchanged apply is no
  // change of spec nor of anyone's fields, and then (below) no write at all.
  std::optional<std::string> managed_text;
  if (auto refused = own(next, managed_text)) return ApiResult<std::string>(*refused);
  if (SpecChanged(live_obj, next)) {
    // A generation new to metadata comes after the ownership, as it always has.
    if (!Meta(next).contains("generation")) HoldOwnership(next, managed_text);
    Meta(next)["generation"] = std::max<int64_t>(IntAt(MetaOf(live_obj), "generation"), 0) + 1;
  }
  Meta(next)["resourceVersion"] = std::to_string(live.revision);
  if (api::SameBesideManagedFields(next, live_obj)) {
    const std::string_view stored = live.ManagedFieldsText();
    bool same_owners = false;
    if (managed_text) {
      // The text of unchanged ownership is the stored text itself (api::RecordUpdateText).
      same_owners = managed_text->empty()
                        ? stored.empty() || !api::ParseManagedFieldsText(stored).has_value()
                        : *managed_text == stored;
    } else {
      const json::object* meta = MetaOf(next);
      const json::value* managed = meta != nullptr ? meta->if_contains("managedFields") : nullptr;
      const std::optional<json::value> live_managed = api::ParseManagedFieldsText(stored);
      same_owners = managed == nullptr || managed->is_null()
                        ? !live_managed.has_value()
                        : live_managed.has_value() && *managed == *live_managed;
    }
    if (same_owners) return ApiResult<std::string>(*live.json);  // no-op: no new revision
  }
  if (dry_run) {
    HoldOwnership(next, managed_text);
    return ApiResult<std::string>(json::serialize(next));
  }

  std::vector<store::Op> ops(1);
  ops[0].kind = ShouldDeleteDuringUpdate(next) ? store::OpKind::kDelete : store::OpKind::kUpdate;
  ops[0].key = live.key;
  ops[0].object = std::move(next);
  ops[0].expected_revision = live.revision;
  ops[0].managed_fields = std::move(managed_text);
  auto stored = store_.Commit(std::move(ops));
  if (stored.ok()) return ApiResult<std::string>(*(*stored)[0].json);
  if (absl::IsAborted(stored.status()) || absl::IsNotFound(stored.status())) {
    if (user_precondition)
      return ApiResult<std::string>(ModifiedConflict(res.StoreResource(), t.name));
    return std::nullopt;
  }
  return ApiResult<std::string>(FromStatus(stored.status(), res, t.name));
}

HttpResponse Handlers::Update(const HttpRequest& req, const Target& t) {
  const ResourceInfo& res = *t.resource;
  auto body = DecodeBodyObject(req);
  if (!body.ok()) return ErrorResponse(body.error());
  if (auto e = CheckTypeMeta(*body, res)) return ErrorResponse(*e);
  if (auto e = CheckNameAndNamespace(*body, res, t)) return ErrorResponse(*e);
  FieldCheck fields = CheckFields(req, res, *body, t.name);
  if (fields.error) return ErrorResponse(*fields.error);
  if (auto e = CheckWriteOptions(req, "UpdateOptions", false)) return ErrorResponse(*e);
  const api::FieldManager who = ManagerOf(req, res, t, false);
  const std::string rv = StringAt(MetaOf(*body), "resourceVersion");
  if (rv.empty() && !res.builtin) {
    return ErrorResponse(
        Invalid(res.kind, res.group, t.name,
                {{"FieldValueInvalid", "Invalid value: 0x0: must be specified for an update",
                  "metadata.resourceVersion"}}));
  }
  const bool dry_run = IsDryRun(req);
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    auto live = store_.Get({res.StoreResource(), t.ns, t.name});
    if (!live.ok()) return ErrorResponse(FromStatus(live.status(), res, t.name));
    if (!rv.empty() && rv != std::to_string(live->revision)) {
      return ErrorResponse(ModifiedConflict(res.StoreResource(), t.name));
    }
    std::optional<LiveState> state = ReadLive(*live);
    if (!state) return ErrorResponse(DamagedObjectError(res, *live));
    const json::object& live_obj = state->object();
    json::object next = MergeForWrite(res, t.subresource, live_obj, *body, live->revision);
    auto own = [&](json::object& admitted,
                   std::optional<std::string>& text) -> std::optional<ApiError> {
      write_support::RecordUpdateOwnership(*state, admitted, res.kind, who,
                                           api::FormatUnixTime(Now()), text);
      return std::nullopt;
    };
    auto result =
        CommitUpdate(t, *live, live_obj, std::move(next), dry_run, !rv.empty(), own);
    if (!result) continue;
    if (!result->ok()) return ErrorResponse(result->error());
    HttpResponse r = JsonResponse(200, std::move(**result));
    AddWarnings(r, fields.warnings);
    return r;
  }
  return ErrorResponse(ModifiedConflict(res.StoreResource(), t.name));
}

}  // namespace muster::apiserver
