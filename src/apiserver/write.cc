// Writes: create, update (PUT), patch (four types), delete, and pods/binding. Each builds the
// complete new state, runs admission, and stores it with one Commit guarded by the revision it
// was computed from; a concurrent change makes it recompute (requests without a client
// precondition) or answer 409 Conflict (requests with one).

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

namespace muster::apiserver {

namespace json = boost::json;

namespace {

// Optimistic-concurrency retries for requests that carry no precondition of their own.
constexpr int kMaxAttempts = 16;

json::object& Meta(json::object& obj) {
  json::value& m = obj["metadata"];
  if (!m.is_object()) m.emplace_object();
  return m.get_object();
}

const json::object* MetaOf(const json::object& obj) {
  const json::value* m = obj.if_contains("metadata");
  return m != nullptr && m->is_object() ? &m->get_object() : nullptr;
}

std::string Str(const json::object* obj, std::string_view key) {
  if (obj == nullptr) return "";
  const json::value* v = obj->if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->get_string()) : "";
}

std::string_view MediaType(std::string_view content_type) {
  auto semi = content_type.find(';');
  std::string_view t = content_type.substr(0, semi);
  while (!t.empty() && t.back() == ' ') t.remove_suffix(1);
  return t;
}

bool IsDryRun(const HttpRequest& req) {
  for (const auto& [k, v] : req.query) {
    if (k == "dryRun" && v == "All") return true;
  }
  return false;
}

}  // namespace

std::optional<ApiError> CheckTypeMeta(json::object& obj, const ResourceInfo& res) {
  std::string api_version = Str(&obj, "apiVersion");
  std::string kind = Str(&obj, "kind");
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

namespace {

// The name and namespace in a body must be the URL's (filled in when missing).
std::optional<ApiError> CheckNameAndNamespace(json::object& obj, const ResourceInfo& res,
                                              const Target& t) {
  json::object& meta = Meta(obj);
  std::string name = Str(&meta, "name");
  if (!t.name.empty()) {
    if (name.empty()) {
      meta["name"] = t.name;
    } else if (name != t.name) {
      return BadRequest(fmt::format(
          "the name of the object ({}) does not match the name on the URL ({})", name, t.name));
    }
  }
  if (res.namespaced) {
    std::string ns = Str(&meta, "namespace");
    if (!ns.empty() && ns != t.ns) {
      return BadRequest(
          "the namespace of the provided object does not match the namespace sent on the request");
    }
    meta["namespace"] = t.ns;
  } else {
    meta.erase("namespace");
  }
  return std::nullopt;
}

// fieldValidation: Strict refuses unknown fields with 422; Warn (the default) and Ignore store
// the object, Warn adding a Warning header per unknown field.
struct FieldCheck {
  std::optional<ApiError> error;
  std::vector<std::string> warnings;
};

FieldCheck CheckFields(const HttpRequest& req, const ResourceInfo& res, const json::object& obj,
                       std::string_view name) {
  FieldCheck check;
  std::string_view mode = req.Param("fieldValidation");
  if (mode == "Ignore") return check;
  std::vector<std::string> unknown = UnknownFields(res, obj);
  if (unknown.empty()) return check;
  if (mode == "Strict") {
    std::vector<StatusCause> causes;
    for (const auto& f : unknown) {
      causes.push_back({"FieldValueInvalid", fmt::format("unknown field \"{}\"", f), f});
    }
    ApiError e = Invalid(res.kind, res.group, name, std::move(causes));
    std::string message = "strict decoding error: ";
    for (size_t i = 0; i < unknown.size(); ++i) {
      if (i > 0) message += ", ";
      message += fmt::format("unknown field \"{}\"", unknown[i]);
    }
    e.message =
        fmt::format("{} \"{}\" is invalid: {}",
                    res.group.empty() ? res.kind : res.kind + "." + res.group, name, message);
    check.error = std::move(e);
    return check;
  }
  for (const auto& f : unknown) check.warnings.push_back(fmt::format("unknown field \"{}\"", f));
  return check;
}

void AddWarnings(HttpResponse& r, const std::vector<std::string>& warnings) {
  for (const auto& w : warnings) {
    std::string escaped;
    for (char c : w) {
      if (c == '"' || c == '\\') escaped.push_back('\\');
      escaped.push_back(c);
    }
    r.headers.emplace_back("Warning", fmt::format("299 - \"{}\"", escaped));
  }
}

// An admission refusal with the details admission leaves to the handler.
ApiError FromAdmission(ApiError e, const ResourceInfo& res, std::string_view name) {
  e.name = std::string(name);
  e.kind = e.code == 422 ? res.kind : res.resource;
  e.group = res.group;
  return e;
}

ApiError FromStatus(const absl::Status& s, const ResourceInfo& res, std::string_view name) {
  switch (s.code()) {
    case absl::StatusCode::kNotFound:
      return NotFound(res.StoreResource(), name);
    case absl::StatusCode::kAlreadyExists:
      return AlreadyExists(res.StoreResource(), name);
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kFailedPrecondition:
      return Conflict(res.StoreResource(), name, std::string(s.message()));
    case absl::StatusCode::kInvalidArgument:
      return BadRequest(std::string(s.message()));
    case absl::StatusCode::kPermissionDenied:
      return Forbidden(res.StoreResource(), name, std::string(s.message()));
    case absl::StatusCode::kResourceExhausted:
      return ObjectTooLarge(std::string(s.message()));
    default:
      return Internal(std::string(s.message()));
  }
}

bool HasSubresource(const ResourceInfo& res, std::string_view sub) {
  return std::find(res.subresources.begin(), res.subresources.end(), sub) != res.subresources.end();
}

// Whether the main resource leaves .status alone (not for a PodGroup: status_with_object).
bool StatusOnlyThroughSubresource(const ResourceInfo& res) {
  return HasSubresource(res, "status") && !res.status_with_object;
}

void CopyOrErase(json::object& to, const json::object& from, std::string_view key) {
  if (const json::value* v = from.if_contains(key)) {
    to[key] = *v;
  } else {
    to.erase(key);
  }
}

// The state a PUT or PATCH of `t` stores, from the live object and the client's version:
// /status changes only .status, /finalize only spec.finalizers; the main resource leaves
// .status alone where a status subresource exists; fields the server owns keep their values.
json::object MergeForWrite(const ResourceInfo& res, std::string_view sub, const json::object& live,
                           const json::object& incoming, int64_t live_revision) {
  json::object out;
  if (sub == "status") {
    out = live;
    CopyOrErase(out, incoming, "status");
  } else if (sub == "finalize") {
    out = live;
    json::object spec;
    if (const json::value* s = live.if_contains("spec"); s && s->is_object())
      spec = s->get_object();
    const json::value* in_spec = incoming.if_contains("spec");
    if (in_spec != nullptr && in_spec->is_object()) {
      CopyOrErase(spec, in_spec->get_object(), "finalizers");
    } else {
      spec.erase("finalizers");
    }
    out["spec"] = std::move(spec);
  } else {
    out = incoming;
    if (StatusOnlyThroughSubresource(res)) CopyOrErase(out, live, "status");
    if (res.group.empty() && res.resource == "namespaces") {
      // Namespace finalizers change only through /finalize.
      json::object spec;
      if (const json::value* s = out.if_contains("spec"); s && s->is_object()) {
        spec = s->get_object();
      }
      if (const json::value* s = live.if_contains("spec"); s && s->is_object()) {
        CopyOrErase(spec, s->get_object(), "finalizers");
      }
      if (spec.empty()) {
        out.erase("spec");
      } else {
        out["spec"] = std::move(spec);
      }
    }
    json::object& meta = Meta(out);
    const json::object* live_meta = MetaOf(live);
    json::object empty;
    for (std::string_view key : {"uid", "creationTimestamp", "deletionTimestamp",
                                 "deletionGracePeriodSeconds", "generation", "name", "namespace"}) {
      CopyOrErase(meta, live_meta != nullptr ? *live_meta : empty, key);
    }
  }
  Meta(out)["resourceVersion"] = std::to_string(live_revision);
  return out;
}

// Whether anything outside metadata and status differs (metadata.generation counts it).
bool SpecChanged(const json::object& a, const json::object& b) {
  for (const auto& [k, v] : a) {
    if (k == "metadata" || k == "status") continue;
    const json::value* w = b.if_contains(k);
    if (w == nullptr || *w != v) return true;
  }
  for (const auto& [k, v] : b) {
    if (k == "metadata" || k == "status") continue;
    if (!a.contains(k)) return true;
  }
  return false;
}

int64_t IntAt(const json::object* obj, std::string_view key) {
  if (obj == nullptr) return 0;
  const json::value* v = obj->if_contains(key);
  if (v == nullptr) return 0;
  if (v->is_int64()) return v->get_int64();
  if (v->is_uint64()) return static_cast<int64_t>(v->get_uint64());
  if (v->is_double()) return static_cast<int64_t>(v->get_double());
  return 0;
}

// A JSON number that is an int64 exactly (2, 2.0); nullopt for 2.5, or beyond int64.
std::optional<int64_t> ExactInt64(const json::value& v) {
  if (const int64_t* i = v.if_int64()) return *i;
  if (const uint64_t* u = v.if_uint64()) {
    if (*u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(*u);
  }
  const double* d = v.if_double();
  if (d == nullptr || std::trunc(*d) != *d || *d < -0x1p63 || *d >= 0x1p63) return std::nullopt;
  return static_cast<int64_t>(*d);
}

bool HasFinalizers(const json::object* meta) {
  if (meta == nullptr) return false;
  const json::value* f = meta->if_contains("finalizers");
  return f != nullptr && f->is_array() && !f->get_array().empty();
}

// kube's ShouldDeleteDuringUpdate: an update that leaves an object marked for deletion with a
// zero grace period and no finalizers deletes it.
bool ShouldDeleteDuringUpdate(const json::object& next) {
  const json::object* meta = MetaOf(next);
  if (meta == nullptr || !meta->contains("deletionTimestamp") || HasFinalizers(meta)) return false;
  const json::value* grace = meta->if_contains("deletionGracePeriodSeconds");
  return grace != nullptr && IntAt(meta, "deletionGracePeriodSeconds") == 0;
}

bool IsTerminating(const json::object& ns) {
  const json::object* meta = MetaOf(ns);
  if (meta != nullptr && meta->contains("deletionTimestamp")) return true;
  const json::value* status = ns.if_contains("status");
  if (status == nullptr || !status->is_object()) return false;
  return Str(&status->get_object(), "phase") == "Terminating";
}

// What create does to .status (kube's PrepareForCreate): pods start Pending, namespaces Active,
// custom resources with a status subresource start without one (queues: Open).
void ResetStatusOnCreate(const ResourceInfo& res, json::object& obj) {
  if (res.group.empty() && res.resource == "pods") {
    json::object status;
    status["phase"] = "Pending";
    obj["status"] = std::move(status);
  } else if (res.group.empty() && res.resource == "namespaces") {
    json::object status;
    status["phase"] = "Active";
    obj["status"] = std::move(status);
  } else if (!res.builtin && StatusOnlyThroughSubresource(res)) {
    obj.erase("status");
    if (res.kind == "Queue") {
      // Volcano's queue controller opens a new queue on its first sync; muster has no separate
      // queue controller, so a queue is created Open.
      json::object status;
      status["state"] = "Open";
      obj["status"] = std::move(status);
    }
  }
}

// A stored state as an object to change: a copy of the store's parsed state where it has one
// (cheaper than parsing the text), else the text parsed.
std::optional<json::object> LiveObject(const store::Object& live) {
  if (live.parsed != nullptr && live.parsed->is_object()) return live.parsed->get_object();
  json::error_code ec;
  json::value v = json::parse(*live.json, ec);
  if (ec || !v.is_object()) return std::nullopt;
  return std::move(v.get_object());
}

// The field manager of a write (api/managed_fields.h): the fieldManager parameter, else the
// User-Agent's product token, as kube-apiserver defaults it.
api::FieldManager ManagerOf(const HttpRequest& req, const ResourceInfo& res, const Target& t,
                            bool apply) {
  api::FieldManager who;
  who.manager = req.HasParam("fieldManager") ? std::string(req.Param("fieldManager"))
                                             : api::ManagerFromUserAgent(req.user_agent);
  who.apply = apply;
  who.api_version = res.ApiVersion();
  who.subresource = t.subresource == "status" ? "status" : "";
  who.status_is_subresource = StatusOnlyThroughSubresource(res);
  return who;
}

// kube's Validate{Create,Update,Patch,Delete}Options for the write's query parameters: 422
// naming the parameter. A dryRun other than All must never pass as a real write, nor an unknown
// fieldValidation as no validation.
std::optional<ApiError> CheckWriteOptions(const HttpRequest& req, std::string_view options,
                                          bool apply) {
  std::vector<StatusCause> causes;
  std::vector<std::string> dry_run;
  for (const auto& [k, v] : req.query) {
    if (k == "dryRun") dry_run.push_back(json::serialize(json::string(v)));
  }
  if (std::any_of(dry_run.begin(), dry_run.end(),
                  [](const std::string& v) { return v != "\"All\""; })) {
    causes.push_back({"FieldValueNotSupported",
                      fmt::format("Unsupported value: []string{{{}}}: supported values: \"All\"",
                                  fmt::join(dry_run, ", ")),
                      "dryRun"});
  }
  if (options != "DeleteOptions") {
    const std::string_view validation = req.Param("fieldValidation");
    if (validation != "" && validation != "Ignore" && validation != "Strict" &&
        validation != "Warn") {
      causes.push_back(
          {"FieldValueNotSupported",
           fmt::format("Unsupported value: {}: supported values: \"\", \"Ignore\", \"Strict\", "
                       "\"Warn\"",
                       json::serialize(json::string(validation))),
           "fieldValidation"});
    }
  }
  if (options == "DeleteOptions") {
    if (causes.empty()) return std::nullopt;
    return Invalid(options, "meta.k8s.io", "", std::move(causes));
  }
  const std::string_view manager = req.Param("fieldManager");
  if (apply && manager.empty()) {
    causes.push_back({"FieldValueRequired", "Required value: is required for apply patch",
                      "fieldManager"});
  }
  if (!apply && req.HasParam("force")) {
    causes.push_back({"FieldValueForbidden",
                      "Forbidden: may not be specified for non-apply patch", "force"});
  }
  if (manager.size() > 128) {
    causes.push_back(
        {"FieldValueTooLong", "Too long: may not be more than 128 bytes", "fieldManager"});
  } else if (std::any_of(manager.begin(), manager.end(), [](char c) {
               return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
             })) {
    causes.push_back({"FieldValueInvalid",
                      fmt::format("Invalid value: {}: must only contain printable characters",
                                  json::serialize(json::string(manager))),
                      "fieldManager"});
  }
  if (causes.empty()) return std::nullopt;
  return Invalid(options, "meta.k8s.io", "", std::move(causes));
}

// 409 for an apply that would change fields other managers own, as kube's NewApplyConflict:
// details carry one FieldManagerConflict cause per field.
ApiError ApplyConflict(const std::vector<api::FieldConflict>& conflicts) {
  ApiError e;
  e.code = 409;
  e.reason = "Conflict";
  e.message = api::ConflictMessage(conflicts);
  for (const api::FieldConflict& c : conflicts) {
    e.causes.push_back(
        {"FieldManagerConflict", fmt::format("conflict with {}", c.manager), c.field});
  }
  e.always_details = true;
  return e;
}

// 422 for a patch that does not apply to the object (the patch engines' message).
ApiError PatchFailed(const ResourceInfo& res, std::string_view name, const absl::Status& status) {
  ApiError e;
  e.code = 422;
  e.reason = "Invalid";
  e.message = std::string(status.message());
  e.name = std::string(name);
  e.kind = res.kind;
  e.group = res.group;
  return e;
}

}  // namespace

// --- Create --------------------------------------------------------------------------------------

ApiResult<Handlers::PreparedCreate> Handlers::PrepareCreate(const ResourceInfo& res,
                                                            const std::string& ns,
                                                            json::object obj) {
  json::object& meta = Meta(obj);
  std::string name = Str(&meta, "name");
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
  const std::string generate = Str(&meta, "generateName");
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
  name = Str(MetaOf(obj), "name");
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
  return CommitCreate(res, std::move(*prepared));
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
    Target t{.resource = &res, .ns = res.namespaced ? ns : "", .name = "", .subresource = ""};
    if (auto e = CheckTypeMeta(obj, res)) {
      out[i] = std::move(*e);
      continue;
    }
    if (auto e = CheckNameAndNamespace(obj, res, t)) {
      out[i] = std::move(*e);
      continue;
    }
    FieldCheck fields = CheckFields(post, res, obj, Str(MetaOf(obj), "name"));
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
  std::string name = Str(MetaOf(*body), "name");
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
  if (auto refused = own(next)) return ApiResult<std::string>(*refused);
  if (SpecChanged(live_obj, next)) {
    Meta(next)["generation"] = std::max<int64_t>(IntAt(MetaOf(live_obj), "generation"), 0) + 1;
  }
  Meta(next)["resourceVersion"] = std::to_string(live.revision);
  if (next == live_obj) return ApiResult<std::string>(*live.json);  // no-op: no new revision
  if (dry_run) return ApiResult<std::string>(json::serialize(next));

  std::vector<store::Op> ops(1);
  ops[0].kind = ShouldDeleteDuringUpdate(next) ? store::OpKind::kDelete : store::OpKind::kUpdate;
  ops[0].key = live.key;
  ops[0].object = std::move(next);
  ops[0].expected_revision = live.revision;
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
  const std::string rv = Str(MetaOf(*body), "resourceVersion");
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
    auto live_obj = LiveObject(*live);
    if (!live_obj) return ErrorResponse(DamagedObjectError(res, *live));
    json::object next = MergeForWrite(res, t.subresource, *live_obj, *body, live->revision);
    auto own = [&](json::object& admitted) -> std::optional<ApiError> {
      api::RecordUpdate(*live_obj, admitted, res.kind, who, api::FormatUnixTime(Now()));
      return std::nullopt;
    };
    auto result = CommitUpdate(t, *live, *live_obj, std::move(next), dry_run, !rv.empty(), own);
    if (!result) continue;
    if (!result->ok()) return ErrorResponse(result->error());
    HttpResponse r = JsonResponse(200, std::move(**result));
    AddWarnings(r, fields.warnings);
    return r;
  }
  return ErrorResponse(ModifiedConflict(res.StoreResource(), t.name));
}

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
    auto live_obj = LiveObject(*live);
    if (!live_obj) return ErrorResponse(DamagedObjectError(res, *live));

    absl::StatusOr<json::value> patched;
    switch (type) {
      case PatchType::kMerge:
        patched = api::ApplyMergePatch(*live_obj, patch);
        break;
      case PatchType::kJson:
        patched = api::ApplyJsonPatch(*live_obj, patch);
        break;
      case PatchType::kStrategic:
        patched = api::ApplyStrategicMergePatch(*live_obj, patch, res.kind);
        break;
      case PatchType::kApply:
        patched = api::MergeApplied(json::value(*live_obj), patch, res.kind, who);
        break;
    }
    if (!patched.ok()) return ErrorResponse(PatchFailed(res, t.name, patched.status()));
    if (!patched->is_object()) {
      return ErrorResponse(BadRequest("the patched object is not a JSON object"));
    }
    json::object& obj = patched->get_object();
    if (auto e = CheckTypeMeta(obj, res)) return ErrorResponse(*e);
    if (auto e = CheckNameAndNamespace(obj, res, t)) return ErrorResponse(*e);
    // A resourceVersion in the patch is a precondition.
    const std::string rv = Str(MetaOf(obj), "resourceVersion");
    const bool precondition = !rv.empty() && rv != Str(MetaOf(*live_obj), "resourceVersion");
    if (precondition && rv != std::to_string(live->revision)) {
      return ErrorResponse(ModifiedConflict(res.StoreResource(), t.name));
    }
    if (type == PatchType::kJson && t.subresource.empty()) {
      fields = CheckFields(req, res, obj, t.name);
      if (fields.error) return ErrorResponse(*fields.error);
    }
    json::object next = MergeForWrite(res, t.subresource, *live_obj, obj, live->revision);
    auto own = [&](json::object& admitted) -> std::optional<ApiError> {
      if (type != PatchType::kApply) {
        api::RecordUpdate(*live_obj, admitted, res.kind, who, api::FormatUnixTime(Now()));
        return std::nullopt;
      }
      json::value state(std::move(admitted));
      std::vector<api::FieldConflict> conflicts = api::RecordApply(
          json::value(*live_obj), state, patch, res.kind, who, force, api::FormatUnixTime(Now()));
      admitted = std::move(state.get_object());
      if (!conflicts.empty() && !force) return ApplyConflict(conflicts);
      return std::nullopt;
    };
    auto result = CommitUpdate(t, *live, *live_obj, std::move(next), dry_run, precondition, own);
    if (!result) continue;
    if (!result->ok()) return ErrorResponse(result->error());
    HttpResponse r = JsonResponse(200, std::move(**result));
    AddWarnings(r, fields.warnings);
    return r;
  }
  return ErrorResponse(ModifiedConflict(res.StoreResource(), t.name));
}

// --- Delete --------------------------------------------------------------------------------------

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
    options.propagation_policy = Str(&o, "propagationPolicy");
    if (const json::value* orphan = o.if_contains("orphanDependents");
        orphan && orphan->is_bool() && orphan->get_bool() && options.propagation_policy.empty()) {
      options.propagation_policy = "Orphan";
    }
    if (const json::value* p = o.if_contains("preconditions"); p && p->is_object()) {
      uid_precondition = Str(&p->get_object(), "uid");
      std::string rv = Str(&p->get_object(), "resourceVersion");
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
      std::string uid = live_obj ? Str(MetaOf(*live_obj), "uid") : "";
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

ApiResult<json::object> Handlers::BoundPod(const store::Object& live, const PodBinding& b) {
  auto pod = LiveObject(live);
  if (!pod) return DamagedObjectError(*FindResource("", "v1", "pods"), live);
  const json::object* meta = MetaOf(*pod);
  if (!b.pod_uid.empty() && b.pod_uid != Str(meta, "uid")) {
    return Conflict(
        kBindingResource, b.pod,
        fmt::format("Precondition failed: UID in precondition: {}, UID in object meta: {}",
                    b.pod_uid, Str(meta, "uid")));
  }
  if (meta != nullptr && meta->contains("deletionTimestamp")) {
    return Conflict(kBindingResource, b.pod,
                    fmt::format("pod {} is being deleted, cannot be assigned to a host", b.pod));
  }
  json::object spec;
  if (const json::value* s = pod->if_contains("spec"); s && s->is_object()) spec = s->get_object();
  if (std::string bound = Str(&spec, "nodeName"); !bound.empty()) {
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
    if (c.is_object() && Str(&c.get_object(), "type") == "PodScheduled") {
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
  b.node = target != nullptr && target->is_object() ? Str(&target->get_object(), "name") : "";
  std::string target_kind =
      target != nullptr && target->is_object() ? Str(&target->get_object(), "kind") : "";
  if (auto e = ValidateBinding(b)) return ErrorResponse(*e);
  if (!target_kind.empty() && target_kind != "Node") {
    return ErrorResponse(
        Invalid("Binding", "", t.name,
                {{"FieldValueNotSupported",
                  "Unsupported value: \"" + target_kind + "\": supported values: \"Node\"",
                  "target.kind"}}));
  }
  const json::object* binding_meta = MetaOf(*body);
  b.pod_uid = Str(binding_meta, "uid");
  if (binding_meta != nullptr) {
    if (const json::value* a = binding_meta->if_contains("annotations"); a && a->is_object()) {
      b.annotations = a->get_object();
    }
  }

  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    auto live = store_.Get({res.StoreResource(), t.ns, t.name});
    if (!live.ok()) return ErrorResponse(FromStatus(live.status(), res, t.name));
    auto next = BoundPod(*live, b);
    if (!next.ok()) return ErrorResponse(next.error());
    if (!IsDryRun(req)) {
      std::vector<store::Op> ops(1);
      ops[0].kind = store::OpKind::kUpdate;
      ops[0].key = live->key;
      ops[0].object = std::move(*next);
      ops[0].expected_revision = live->revision;
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
      auto next = BoundPod(*live, b);
      if (!next.ok()) {
        out[i] = next.error();
        return refuse_rest(i);
      }
      store::Op& op = ops.emplace_back();
      op.kind = store::OpKind::kUpdate;
      op.key = live->key;
      op.object = std::move(*next);
      op.expected_revision = live->revision;
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
