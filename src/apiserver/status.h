#pragma once

// Kubernetes `Status` error objects: what every refusal of the API server looks like on the
// wire (kind Status, apiVersion v1, status Failure, message, reason, details, code), with
// constructors for the reasons and messages kube-apiserver uses (k8s.io/apimachinery
// pkg/api/errors/errors.go, NewNotFound, NewAlreadyExists, NewConflict, NewInvalid and the rest;
// the type is pkg/apis/meta/v1 Status). kubectl prints them as
// `Error from server (<reason>): <message>`.
// The types, ApiError and StatusCause, are in api_error.h, which admission returns too.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "apiserver/api_error.h"
#include "apiserver/http.h"

namespace muster::apiserver {

// The Status JSON body for `error`.
std::string StatusJson(const ApiError& error);
// A complete response carrying `error` as a Status object.
HttpResponse ErrorResponse(const ApiError& error);

// Constructors. `resource` is the plural, qualified by group for non-core groups
// ("pods", "jobs.batch.volcano.sh"), as kube-apiserver names it in messages.
ApiError BadRequest(std::string message);
ApiError Unauthorized();
ApiError Forbidden(std::string_view resource, std::string_view name, std::string message);
ApiError NotFound(std::string_view resource, std::string_view name);
// An unknown URL: "the server could not find the requested resource", with empty details (how a
// client tells it from a missing object, whose details name it).
ApiError PathNotFound();
ApiError MethodNotAllowed(std::string_view method);
// The same, saying why the resource takes no such request (ResourceInfo::refuse_writes).
ApiError MethodNotAllowed(std::string_view method, std::string_view why);
ApiError AlreadyExists(std::string_view resource, std::string_view name);
// "Operation cannot be fulfilled on <resource> "<name>": <why>"
ApiError Conflict(std::string_view resource, std::string_view name, std::string_view why);
// The optimistic-concurrency conflict: "... the object has been modified; please apply your
// changes to the latest version and try again".
ApiError ModifiedConflict(std::string_view resource, std::string_view name);
ApiError Gone(std::string message);     // 410 reason Gone
ApiError Expired(std::string message);  // 410 reason Expired
// 504 reason Timeout for a resourceVersion the store has not reached (storage
// NewTooLargeResourceVersionError): "Timeout: Too large resource version: N, current: M", cause
// ResourceVersionTooLarge, retry after 1 s.
ApiError TooLargeResourceVersion(uint64_t requested, int64_t current);
ApiError TooLarge(size_t limit_bytes);  // 413
// 431 for request headers (with the request line) over `limit_bytes`.
ApiError HeaderTooLarge(size_t limit_bytes);
// 429 with Retry-After: 1, kube-apiserver's answer past --max-requests-inflight.
ApiError TooManyRequests();
// 413 for an object the store will not hold (store::StoreOptions::max_object_bytes).
ApiError ObjectTooLarge(std::string message);
ApiError UnsupportedMediaType(std::string_view content_type, bool allow_strategic);
ApiError NotAcceptable(std::string message);
// 415 for a request body (not a patch) in a format the server does not read.
ApiError UnsupportedBodyType();
// 422: `<Kind>[.<group>] "<name>" is invalid: <field>: <message>`, several causes in brackets.
ApiError Invalid(std::string_view kind, std::string_view group, std::string_view name,
                 std::vector<StatusCause> causes);
ApiError Internal(std::string message);

}  // namespace muster::apiserver
