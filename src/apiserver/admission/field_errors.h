#pragma once

// Field errors and the refusals admission builds from them, with the Go formatting their
// messages use: k8s.io/apimachinery pkg/util/validation/field (ErrorType, Error, ErrorBody,
// ErrorList), pkg/util/errors (NewAggregate), pkg/api/errors (NewInvalid), apiserver
// pkg/admission (NewForbidden), and webhookerrors.ToStatusErr for a webhook's refusal.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/text.h"
#include "apiserver/api_error.h"
#include "apiserver/descriptors/resources.h"
#include "fmt/format.h"

namespace muster::apiserver::admission {

// --- Go text -------------------------------------------------------------------------------------

// Go's %v of a []string: "[a b c]".
std::string GoList(const std::vector<std::string>& items);

// Go's %#v of a []string: `[]string{"a", "b"}`.
std::string GoStringSlice(const std::vector<std::string>& items);

// --- Field errors --------------------------------------------------------------------------------

enum class ErrorType {
  kRequired,
  kInvalid,
  kNotSupported,
  kForbidden,
  kDuplicate,
  kTooLong,
  kNotFound,
  kTooMany
};

struct FieldError {
  ErrorType type = ErrorType::kInvalid;
  std::string field;
  std::optional<std::string> value;  // already rendered as Go prints it
  std::string detail;

  // field.ErrorType's text and the StatusCause reason it maps to.
  struct TypeNames {
    std::string_view text, reason;
  };
  TypeNames Names() const {
    switch (type) {
      case ErrorType::kRequired:
        return {"Required value", "FieldValueRequired"};
      case ErrorType::kInvalid:
        return {"Invalid value", "FieldValueInvalid"};
      case ErrorType::kNotSupported:
        return {"Unsupported value", "FieldValueNotSupported"};
      case ErrorType::kForbidden:
        return {"Forbidden", "FieldValueForbidden"};
      case ErrorType::kDuplicate:
        return {"Duplicate value", "FieldValueDuplicate"};
      case ErrorType::kTooLong:
        return {"Too long", "FieldValueTooLong"};
      case ErrorType::kNotFound:
        return {"Not found", "FieldValueNotFound"};
      case ErrorType::kTooMany:
        return {"Too many", "FieldValueTooMany"};
    }
    return {"Invalid value", "FieldValueInvalid"};
  }
  std::string_view TypeText() const { return Names().text; }
  std::string_view Reason() const { return Names().reason; }
  // field.Error.ErrorBody: required, forbidden and too-long errors do not print the value.
  std::string Body() const {
    std::string s(TypeText());
    bool show_value = value.has_value() && type != ErrorType::kRequired &&
                      type != ErrorType::kForbidden && type != ErrorType::kTooLong;
    if (show_value) s += ": " + *value;
    if (!detail.empty()) s += ": " + detail;
    return s;
  }
  std::string Error() const { return field + ": " + Body(); }
};

class Errors {
 public:
  void Required(std::string field, std::string detail = "") {
    list_.push_back({ErrorType::kRequired, std::move(field), std::nullopt, std::move(detail)});
  }
  void Invalid(std::string field, std::string rendered_value, std::string detail) {
    list_.push_back(
        {ErrorType::kInvalid, std::move(field), std::move(rendered_value), std::move(detail)});
  }
  void InvalidString(std::string field, std::string_view value, std::string detail) {
    Invalid(std::move(field), api::GoQuote(value), std::move(detail));
  }
  void InvalidInt(std::string field, int64_t value, std::string detail) {
    Invalid(std::move(field), std::to_string(value), std::move(detail));
  }
  void NotSupported(std::string field, std::string_view value,
                    const std::vector<std::string_view>& supported) {
    std::string detail;
    if (!supported.empty()) {
      detail = "supported values: ";
      for (size_t i = 0; i < supported.size(); ++i) {
        if (i > 0) detail += ", ";
        detail += api::GoQuote(supported[i]);
      }
    }
    list_.push_back(
        {ErrorType::kNotSupported, std::move(field), api::GoQuote(value), std::move(detail)});
  }
  void Forbidden(std::string field, std::string detail) {
    list_.push_back({ErrorType::kForbidden, std::move(field), std::nullopt, std::move(detail)});
  }
  // field.NotFound: the value names something that does not exist.
  void NotFound(std::string field, std::string_view value) {
    list_.push_back({ErrorType::kNotFound, std::move(field), api::GoQuote(value), ""});
  }
  void Duplicate(std::string field, std::string_view value) {
    list_.push_back({ErrorType::kDuplicate, std::move(field), api::GoQuote(value), ""});
  }
  void TooLong(std::string field, size_t max_bytes) {
    list_.push_back({ErrorType::kTooLong, std::move(field), std::nullopt,
                     fmt::format("may not be more than {} bytes", max_bytes)});
  }
  void Append(std::vector<FieldError> more) {
    for (FieldError& e : more) list_.push_back(std::move(e));
  }

  bool empty() const { return list_.empty(); }
  const std::vector<FieldError>& list() const { return list_; }
  std::vector<FieldError>& mutable_list() { return list_; }

 private:
  std::vector<FieldError> list_;
};

// utilerrors.NewAggregate(...).Error(): one message as is, several deduplicated in brackets.
std::string Aggregate(const std::vector<std::string>& messages);

// The field errors' Error() texts, aggregated.
std::string AggregateFieldErrors(const std::vector<FieldError>& errors);

// "<Kind>" or "<Kind>.<group>", as NewInvalid names a kind.
std::string QualifiedKind(const ResourceInfo& res);

// apierrors.NewInvalid: 422 `<Kind>[.<group>] "<name>" is invalid: <errors>`, one cause each.
ApiError InvalidError(const ResourceInfo& res, std::string_view name,
                      const std::vector<FieldError>& errors);

// admission.NewForbidden: `<resource>[.<group>] "<name>" is forbidden: <why>`.
ApiError ForbiddenError(const ResourceInfo& res, std::string_view name, std::string_view why);

// A validating webhook's refusal as kube-apiserver passes it on: 400 with no reason.
ApiError WebhookDenied(std::string_view webhook, std::string_view message);

// A body the typed decoder refuses: `Pod in version "v1" cannot be handled as a Pod: <why>`.
ApiError DecodeError(const ResourceInfo& res, std::string_view why);

}  // namespace muster::apiserver::admission
