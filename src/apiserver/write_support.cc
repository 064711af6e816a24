// What the write handlers (write.cc, write_patch.cc, write_delete.cc, write_bind.cc) share:
// reading metadata, the state a PUT or PATCH stores (MergeForWrite), kube's write-option checks,
// status errors from store statuses, and the Warning headers of fieldValidation. Internal to
// those files; nothing else includes it.

#include "apiserver/write_support.h"

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "api/json_parse.h"
#include "api/managed_fields.h"
#include "api/patch.h"
#include "api/text.h"
#include "api/time.h"
#include "api/yaml.h"
#include "apiserver/admission/admission.h"
#include "apiserver/handlers.h"
#include "apiserver/lifecycle.h"
#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "fmt/format.h"

namespace muster::apiserver::write_support {

namespace json = boost::json;

json::object& Meta(json::object& obj) {
  json::value& m = obj["metadata"];
  if (!m.is_object()) m.emplace_object();
  return m.get_object();
}

const json::object* MetaOf(const json::object& obj) { return ObjectAt(obj, "metadata"); }

bool IsDryRun(const HttpRequest& req) {
  for (const auto& [k, v] : req.query) {
    if (k == "dryRun" && v == "All") return true;
  }
  return false;
}

// The name and namespace in a body must be the URL's (filled in when missing).
std::optional<ApiError> CheckNameAndNamespace(json::object& obj, const ResourceInfo& res,
                                              const Target& t) {
  json::object& meta = Meta(obj);
  std::string name = StringAt(&meta, "name");
  if (!t.name.empty()) {
    if (name.empty()) {
      meta["name"] = t.name;
    } else if (name != t.name) {
      return BadRequest(fmt::format(
          "the name of the object ({}) does not match the name on the URL ({})", name, t.name));
    }
  }
  if (res.namespaced) {
    std::string ns = StringAt(&meta, "namespace");
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
  return obj == nullptr ? 0 : api::TruncatedIntAt(*obj, key).value_or(0);
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
  return StringAt(&status->get_object(), "phase") == "Terminating";
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
  } else if (res.group == "policy" && res.resource == "poddisruptionbudgets") {
    // An empty PodDisruptionBudgetStatus, whose four counters have no omitempty.
    obj["status"] = json::object{{"disruptionsAllowed", 0},
                                 {"currentHealthy", 0},
                                 {"desiredHealthy", 0},
                                 {"expectedPods", 0}};
  } else if (res.group == "apiextensions.k8s.io" && res.resource == "customresourcedefinitions") {
    // Admission sets the whole status (customresourcedefinition_status.cc).
    obj.erase("status");
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
// (cheaper than parsing the text) with the field ownership it leaves out read back from the text
// (last in metadata, where kube writes it), else the text parsed.
std::optional<json::object> LiveObject(const store::Object& live) {
  if (live.parsed != nullptr && live.parsed->is_object()) {
    json::object object = live.parsed->get_object();
    if (std::optional<json::value> managed = api::ParseManagedFieldsText(live.ManagedFieldsText())) {
      if (json::value* meta = object.if_contains("metadata"); meta != nullptr && meta->is_object()) {
        meta->get_object()["managedFields"] = std::move(*managed);
      }
    }
    return object;
  }
  json::error_code ec;
  json::value v = api::ParseJsonText(*live.json, ec);
  if (ec || !v.is_object()) return std::nullopt;
  return std::move(v.get_object());
}

std::optional<LiveState> ReadLive(const store::Object& live) {
  LiveState state;
  state.text = live.json;
  state.managed_text = live.ManagedFieldsText();
  if (live.parsed != nullptr && live.parsed->is_object()) {
    state.value = live.parsed;
    return state;
  }
  json::error_code ec;
  json::value v = api::ParseJsonText(*live.json, ec);
  if (ec || !v.is_object()) return std::nullopt;
  if (json::value* meta = v.get_object().if_contains("metadata"); meta && meta->is_object()) {
    if (json::value* managed = meta->get_object().if_contains("managedFields")) {
      state.managed_ = std::move(*managed);
      state.managed_read_ = true;
      meta->get_object().erase("managedFields");
    }
  }
  state.value = std::make_shared<const json::value>(std::move(v));
  return state;
}

const json::value* LiveState::stored_managed() const {
  if (!managed_read_) {
    managed_ = api::ParseManagedFieldsText(managed_text);
    managed_read_ = true;
  }
  return managed_ && !managed_->is_null() ? &*managed_ : nullptr;
}

json::object LiveState::Whole() const {
  json::object whole = object();
  if (const json::value* managed = stored_managed()) Meta(whole)["managedFields"] = *managed;
  return whole;
}

void RecordUpdateOwnership(const LiveState& state, json::object& next, std::string_view kind,
                           const api::FieldManager& who, std::string_view now,
                           std::optional<std::string>& text) {
  const json::object* meta = MetaOf(next);
  if (meta == nullptr || !meta->contains("managedFields")) {
    text = api::RecordUpdateText(state.object(), state.managed_text, next, kind, who, now);
    return;
  }
  text.reset();
  api::RecordUpdate(state.object(), state.stored_managed(), next, kind, who, now);
}

// The field manager of a write (api/managed_fields.h): the fieldManager parameter, else the
// User-Agent's product token, as kube-apiserver defaults it.
api::FieldManager ManagerOf(const HttpRequest& req, const ResourceInfo& res, const Target& t,
                            bool apply) {
  api::FieldManager who;
  // Recorded in metadata.managedFields, so valid UTF-8 whatever the client sent: each byte that
  // starts no valid sequence becomes U+FFFD, as kube-apiserver's JSON encoding stores it (Go
  // reads the bytes as RuneError, which is printable, so kube accepts such a manager).
  who.manager = api::ToValidUtf8(req.HasParam("fieldManager")
                                     ? req.Param("fieldManager")
                                     : std::string_view(api::ManagerFromUserAgent(req.user_agent)));
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

}  // namespace muster::apiserver::write_support
