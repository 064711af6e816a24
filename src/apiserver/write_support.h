#pragma once

// What the write handlers (write.cc, write_patch.cc, write_delete.cc, write_bind.cc) share:
// reading metadata, the state a PUT or PATCH stores (MergeForWrite), kube's write-option checks,
// status errors from store statuses, and the Warning headers of fieldValidation. Internal to
// those files; nothing else includes it.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "api/json_access.h"
#include "api/managed_fields.h"
#include "apiserver/handlers.h"
#include "apiserver/lifecycle.h"
#include "boost/json/object.hpp"
#include "boost/json/value.hpp"
#include "store/store.h"

namespace muster::apiserver::write_support {

namespace json = boost::json;

// Optimistic-concurrency retries for requests that carry no precondition of their own.
inline constexpr int kMaxAttempts = 16;

json::object& Meta(json::object& obj);

const json::object* MetaOf(const json::object& obj);

bool IsDryRun(const HttpRequest& req);

// The name and namespace in a body must be the URL's (filled in when missing).
std::optional<ApiError> CheckNameAndNamespace(json::object& obj, const ResourceInfo& res,
                                              const Target& t);

// fieldValidation: Strict refuses unknown fields with 422; Warn (the default) and Ignore store
// the object, Warn adding a Warning header per unknown field.
struct FieldCheck {
  std::optional<ApiError> error;
  std::vector<std::string> warnings;
};

FieldCheck CheckFields(const HttpRequest& req, const ResourceInfo& res, const json::object& obj,
                       std::string_view name);

void AddWarnings(HttpResponse& r, const std::vector<std::string>& warnings);

// An admission refusal with the details admission leaves to the handler.
ApiError FromAdmission(ApiError e, const ResourceInfo& res, std::string_view name);

ApiError FromStatus(const absl::Status& s, const ResourceInfo& res, std::string_view name);

bool HasSubresource(const ResourceInfo& res, std::string_view sub);

// Whether the main resource leaves .status alone (not for a PodGroup: status_with_object).
bool StatusOnlyThroughSubresource(const ResourceInfo& res);

void CopyOrErase(json::object& to, const json::object& from, std::string_view key);

// The state a PUT or PATCH of `t` stores, from the live object and the client's version:
// /status changes only .status, /finalize only spec.finalizers; the main resource leaves
// .status alone where a status subresource exists; fields the server owns keep their values.
json::object MergeForWrite(const ResourceInfo& res, std::string_view sub, const json::object& live,
                           const json::object& incoming, int64_t live_revision);

// Whether anything outside metadata and status differs (metadata.generation counts it).
bool SpecChanged(const json::object& a, const json::object& b);

// obj[key] as api::TruncatedIntAt reads it, 0 when missing or for a null obj.
int64_t IntAt(const json::object* obj, std::string_view key);

using api::ExactInt64;

bool HasFinalizers(const json::object* meta);

// kube's ShouldDeleteDuringUpdate: an update that leaves an object marked for deletion with a
// zero grace period and no finalizers deletes it.
bool ShouldDeleteDuringUpdate(const json::object& next);

bool IsTerminating(const json::object& ns);

// What create does to .status (kube's PrepareForCreate): pods start Pending, namespaces Active,
// PodDisruptionBudgets with zero counters, custom resources with a status subresource start
// without one (queues: Open).
void ResetStatusOnCreate(const ResourceInfo& res, json::object& obj);

// A stored state as an object to change: a copy of the store's parsed state where it has one
// (cheaper than parsing the text), else the text parsed.
std::optional<json::object> LiveObject(const store::Object& live);

// A stored state as the update paths read it: the store's parsed state itself where it has one,
// shared and not copied (an update builds its next state beside it), else the text parsed. Its
// field ownership, which the parsed state leaves out, is the text `managed_text` (empty when it
// has none), parsed only when a write must read it (`stored_managed`); `object()` never holds it.
struct LiveState {
  std::shared_ptr<const json::value> value;  // a JSON object
  std::shared_ptr<const std::string> text;   // the stored text, which holds managed_text
  std::string_view managed_text;

  const json::object& object() const { return value->get_object(); }
  // managed_text parsed; null when the state has none.
  const json::value* stored_managed() const;
  // The whole stored state, managedFields included (what an apply compares with).
  json::object Whole() const;

 private:
  mutable std::optional<json::value> managed_;
  mutable bool managed_read_ = false;
  friend std::optional<LiveState> ReadLive(const store::Object& live);
};
std::optional<LiveState> ReadLive(const store::Object& live);

// Records in the state an update by `who` turns `state` into (`next`, admitted) its field
// ownership (api/managed_fields.h): as the text to store with it (`text`, which the store splices
// in: api::RecordUpdateText) when `next` holds no managedFields of its own, as every write built on
// the stored state does; else in `next` itself (api::RecordUpdate, on the stored ones parsed).
void RecordUpdateOwnership(const LiveState& state, json::object& next, std::string_view kind,
                           const api::FieldManager& who, std::string_view now,
                           std::optional<std::string>& text);

// The field manager of a write (api/managed_fields.h): the fieldManager parameter, else the
// User-Agent's product token, as kube-apiserver defaults it.
api::FieldManager ManagerOf(const HttpRequest& req, const ResourceInfo& res, const Target& t,
                            bool apply);

// kube's Validate{Create,Update,Patch,Delete}Options for the write's query parameters: 422
// naming the parameter. A dryRun other than All must never pass as a real write, nor an unknown
// fieldValidation as no validation.
std::optional<ApiError> CheckWriteOptions(const HttpRequest& req, std::string_view options,
                                          bool apply);

// DeleteOptions from a JSON object: a DELETE's body, an Eviction's deleteOptions. A field of the
// wrong type is 400 with encoding/json's words, the Go field named `go_field_prefix` + its JSON
// name ("DeleteOptions.gracePeriodSeconds"); a resourceVersion precondition that is no integer is
// 400 `invalid resourceVersion "x"`. propagationPolicy is read, not checked.
struct ReadDeleteOptionsResult {
  DeleteOptions options;
  std::string uid_precondition;
};
ApiResult<ReadDeleteOptionsResult> ReadDeleteOptions(const json::object& o,
                                                     std::string_view go_field_prefix);

// DeleteOptions.propagationPolicy: "" or Foreground, Background, Orphan; else kube's 422
// `DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: ...`.
std::optional<ApiError> CheckPropagationPolicy(const std::string& policy);

// 409 for an apply that would change fields other managers own, as kube's NewApplyConflict:
// details carry one FieldManagerConflict cause per field.
ApiError ApplyConflict(const std::vector<api::FieldConflict>& conflicts);

// 422 for a patch that does not apply to the object (the patch engines' message).
ApiError PatchFailed(const ResourceInfo& res, std::string_view name, const absl::Status& status);

}  // namespace muster::apiserver::write_support
