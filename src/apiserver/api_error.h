#pragma once

// The API server's error value: one refusal, rendered on the wire as a Kubernetes `Status`
// (k8s.io/apimachinery pkg/apis/meta/v1 Status and StatusCause; pkg/api/errors/errors.go
// StatusError). Types only, so that every library of the API server can return it: admission
// (apiserver/admission/admission.h) builds it without linking the REST server, and status.h
// holds its constructors and renders it.

#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace muster::apiserver {

struct StatusCause {
  std::string reason;   // FieldValueRequired, FieldValueInvalid, ...
  std::string message;  // "Required value"
  std::string field;    // "spec.containers"
};

struct ApiError {
  int code = 500;
  std::string reason = "InternalError";
  std::string message;
  // details: the object's name, its resource's group and plural ("pods"), causes.
  std::string name;
  std::string group;
  std::string kind;
  std::vector<StatusCause> causes;
  // details.retryAfterSeconds and the Retry-After header, when not 0.
  int retry_after_seconds = 0;
  // Whether the Status carries `details` even when all of the above are empty: kube's generic
  // server responses (an unknown path's 404) have `"details":{}`, and clients read
  // details.name of a 404 without checking for nil (`kubectl debug`).
  bool always_details = false;
};

// A value or the Status error that replaces it.
template <class T>
class ApiResult {
 public:
  ApiResult(T value) : v_(std::move(value)) {}         // NOLINT(google-explicit-constructor)
  ApiResult(ApiError error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)
  [[nodiscard]] bool ok() const { return v_.index() == 0; }
  T& operator*() { return std::get<0>(v_); }
  const T& operator*() const { return std::get<0>(v_); }
  T* operator->() { return &std::get<0>(v_); }
  const T* operator->() const { return &std::get<0>(v_); }
  [[nodiscard]] const ApiError& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, ApiError> v_;
};

}  // namespace muster::apiserver
