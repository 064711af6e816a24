#include "apiserver/admission/field_errors.h"

// Field errors and refusals (field_errors.h): apimachinery's field.Error texts, NewAggregate's
// deduplication, and the Status bodies of NewInvalid, admission.NewForbidden, the typed decoder
// and webhookerrors.ToStatusErr.

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "api/text.h"
#include "fmt/format.h"

namespace muster::apiserver::admission {

// Go's %v of a []string: "[a b c]".
std::string GoList(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ' ';
    out += items[i];
  }
  return out + "]";
}

// Go's %#v of a []string: `[]string{"a", "b"}`.
std::string GoStringSlice(const std::vector<std::string>& items) {
  std::string out = "[]string{";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ", ";
    out += api::GoQuote(items[i]);
  }
  return out + "}";
}

// utilerrors.NewAggregate(...).Error(): one message as is, several deduplicated in brackets.
std::string Aggregate(const std::vector<std::string>& messages) {
  std::vector<std::string> seen;
  for (const std::string& m : messages) {
    if (std::find(seen.begin(), seen.end(), m) == seen.end()) seen.push_back(m);
  }
  if (seen.size() == 1) return seen[0];
  std::string out = "[";
  for (size_t i = 0; i < seen.size(); ++i) {
    if (i > 0) out += ", ";
    out += seen[i];
  }
  return out + "]";
}

std::string AggregateFieldErrors(const std::vector<FieldError>& errors) {
  std::vector<std::string> messages;
  messages.reserve(errors.size());
  for (const FieldError& e : errors) messages.push_back(e.Error());
  return Aggregate(messages);
}

std::string QualifiedKind(const ResourceInfo& res) {
  return res.group.empty() ? res.kind : res.kind + "." + res.group;
}

ApiError InvalidError(const ResourceInfo& res, std::string_view name,
                      const std::vector<FieldError>& errors) {
  ApiError err;
  err.code = 422;
  err.reason = "Invalid";
  err.message = fmt::format("{} {} is invalid: {}", QualifiedKind(res), api::GoQuote(name),
                            AggregateFieldErrors(errors));
  for (const FieldError& e : errors) {
    err.causes.push_back({std::string(e.Reason()), e.Body(), e.field});
  }
  return err;
}

// admission.NewForbidden: `<resource>[.<group>] "<name>" is forbidden: <why>`.
ApiError ForbiddenError(const ResourceInfo& res, std::string_view name, std::string_view why) {
  ApiError err;
  err.code = 403;
  err.reason = "Forbidden";
  err.message = fmt::format("{} {} is forbidden: {}", res.StoreResource(), api::GoQuote(name), why);
  return err;
}

// A validating webhook's refusal as kube-apiserver passes it on: 400 with no reason.
ApiError WebhookDenied(std::string_view webhook, std::string_view message) {
  ApiError err;
  err.code = 400;
  err.reason = "";
  err.message =
      fmt::format("admission webhook {} denied the request: {}", api::GoQuote(webhook), message);
  return err;
}

// A body the typed decoder refuses: `Pod in version "v1" cannot be handled as a Pod: <why>`.
ApiError DecodeError(const ResourceInfo& res, std::string_view why) {
  ApiError err;
  err.code = 400;
  err.reason = "BadRequest";
  err.message = fmt::format("{} in version {} cannot be handled as a {}: {}", res.kind,
                            api::GoQuote(res.version), res.kind, why);
  return err;
}

}  // namespace muster::apiserver::admission
