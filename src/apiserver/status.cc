#include "apiserver/status.h"

#include <string>
#include <utility>

#include "api/text.h"
#include "boost/json/array.hpp"
#include "boost/json/object.hpp"
#include "boost/json/serialize.hpp"
#include "boost/json/string.hpp"
#include "fmt/format.h"

namespace muster::apiserver {

namespace json = boost::json;

std::string StatusJson(const ApiError& error) {
  // Names and values from the URL or headers may be any bytes; JSON must be UTF-8, so invalid
  // bytes become U+FFFD here, where every Status is built, as kube-apiserver's encoder does.
  auto text = [](std::string_view s) { return json::string(api::ToValidUtf8(s)); };
  json::object status;
  status["kind"] = "Status";
  status["apiVersion"] = "v1";
  status["metadata"] = json::object();
  status["status"] = "Failure";
  status["message"] = text(error.message);
  status["reason"] = text(error.reason);
  if (error.always_details || !error.name.empty() || !error.kind.empty() || !error.causes.empty() ||
      error.retry_after_seconds > 0) {
    json::object details;
    if (!error.name.empty()) details["name"] = text(error.name);
    if (!error.group.empty()) details["group"] = text(error.group);
    if (!error.kind.empty()) details["kind"] = text(error.kind);
    if (!error.causes.empty()) {
      json::array causes;
      for (const auto& c : error.causes) {
        json::object cause;
        cause["reason"] = text(c.reason);
        cause["message"] = text(c.message);
        if (!c.field.empty()) cause["field"] = text(c.field);
        causes.push_back(std::move(cause));
      }
      details["causes"] = std::move(causes);
    }
    if (error.retry_after_seconds > 0) details["retryAfterSeconds"] = error.retry_after_seconds;
    status["details"] = std::move(details);
  }
  status["code"] = error.code;
  return json::serialize(status);
}

HttpResponse ErrorResponse(const ApiError& error) {
  HttpResponse response;
  response.status = error.code;
  response.body = StatusJson(error);
  if (error.retry_after_seconds > 0) {
    response.headers.emplace_back("Retry-After", std::to_string(error.retry_after_seconds));
  }
  return response;
}

namespace {

ApiError Make(int code, std::string reason, std::string message) {
  ApiError e;
  e.code = code;
  e.reason = std::move(reason);
  e.message = std::move(message);
  return e;
}

// "jobs.batch.volcano.sh" -> kind "jobs", group "batch.volcano.sh" (Status details split them).
void SetResource(ApiError& e, std::string_view resource, std::string_view name) {
  auto dot = resource.find('.');
  e.kind = std::string(resource.substr(0, dot));
  if (dot != std::string_view::npos) e.group = std::string(resource.substr(dot + 1));
  e.name = std::string(name);
}

}  // namespace

ApiError BadRequest(std::string message) { return Make(400, "BadRequest", std::move(message)); }

ApiError Unauthorized() { return Make(401, "Unauthorized", "Unauthorized"); }

ApiError Forbidden(std::string_view resource, std::string_view name, std::string message) {
  ApiError e =
      Make(403, "Forbidden", fmt::format("{} \"{}\" is forbidden: {}", resource, name, message));
  SetResource(e, resource, name);
  return e;
}

ApiError NotFound(std::string_view resource, std::string_view name) {
  ApiError e = Make(404, "NotFound", fmt::format("{} \"{}\" not found", resource, name));
  SetResource(e, resource, name);
  return e;
}

ApiError PathNotFound() {
  // apiserver's serviceErrorHandler: NewGenericServerResponse with no resource and no name.
  ApiError e = Make(404, "NotFound", "the server could not find the requested resource");
  e.always_details = true;
  return e;
}

ApiError MethodNotAllowed(std::string_view method) {
  return Make(405, "MethodNotAllowed",
              fmt::format("the server does not allow this method on the requested resource "
                          "({})",
                          method));
}

ApiError MethodNotAllowed(std::string_view method, std::string_view why) {
  return Make(405, "MethodNotAllowed",
              fmt::format("the server does not allow this method on the requested resource "
                          "({}): {}",
                          method, why));
}

ApiError AlreadyExists(std::string_view resource, std::string_view name) {
  ApiError e = Make(409, "AlreadyExists", fmt::format("{} \"{}\" already exists", resource, name));
  SetResource(e, resource, name);
  return e;
}

ApiError Conflict(std::string_view resource, std::string_view name, std::string_view why) {
  ApiError e =
      Make(409, "Conflict",
           fmt::format("Operation cannot be fulfilled on {} \"{}\": {}", resource, name, why));
  SetResource(e, resource, name);
  return e;
}

ApiError ModifiedConflict(std::string_view resource, std::string_view name) {
  return Conflict(resource, name,
                  "the object has been modified; please apply your changes to the latest "
                  "version and try again");
}

ApiError Gone(std::string message) { return Make(410, "Gone", std::move(message)); }

ApiError Expired(std::string message) { return Make(410, "Expired", std::move(message)); }

ApiError TooLargeResourceVersion(uint64_t requested, int64_t current) {
  ApiError e =
      Make(504, "Timeout",
           fmt::format("Timeout: Too large resource version: {}, current: {}", requested, current));
  e.causes.push_back({"ResourceVersionTooLarge", "Too large resource version", ""});
  e.retry_after_seconds = 1;
  return e;
}

ApiError TooLarge(size_t limit_bytes) {
  return Make(413, "RequestEntityTooLarge",
              fmt::format("Request entity too large: limit is {}", limit_bytes));
}

ApiError HeaderTooLarge(size_t limit_bytes) {
  return Make(431, "RequestHeaderFieldsTooLarge",
              fmt::format("Request header fields too large: limit is {}", limit_bytes));
}

ApiError TooManyRequests() {
  ApiError e = Make(429, "TooManyRequests", "Too many requests, please try again later.");
  e.retry_after_seconds = 1;
  return e;
}

ApiError ObjectTooLarge(std::string message) {
  return Make(413, "RequestEntityTooLarge", "Request entity too large: " + message);
}

ApiError UnsupportedMediaType(std::string_view content_type, bool allow_strategic) {
  std::string accepted =
      allow_strategic ? "application/json-patch+json, application/merge-patch+json, "
                        "application/apply-patch+yaml, application/strategic-merge-patch+json"
                      : "application/json-patch+json, application/merge-patch+json, "
                        "application/apply-patch+yaml";
  return Make(415, "UnsupportedMediaType",
              fmt::format("the body of the request was in an unknown format - accepted media "
                          "types include: {}",
                          accepted));
}

ApiError UnsupportedBodyType() {
  return Make(415, "UnsupportedMediaType",
              "the body of the request was in an unknown format - accepted media types include: "
              "application/json, application/yaml");
}

ApiError NotAcceptable(std::string message) {
  return Make(406, "NotAcceptable", std::move(message));
}

ApiError Invalid(std::string_view kind, std::string_view group, std::string_view name,
                 std::vector<StatusCause> causes) {
  std::string qualified = group.empty() ? std::string(kind) : fmt::format("{}.{}", kind, group);
  std::string what;
  if (causes.size() == 1) {
    what = causes[0].field.empty() ? causes[0].message
                                   : fmt::format("{}: {}", causes[0].field, causes[0].message);
  } else {
    what = "[";
    for (size_t i = 0; i < causes.size(); ++i) {
      if (i > 0) what += ", ";
      what += causes[i].field.empty() ? causes[i].message
                                      : fmt::format("{}: {}", causes[i].field, causes[i].message);
    }
    what += "]";
  }
  ApiError e = Make(422, "Invalid", fmt::format("{} \"{}\" is invalid: {}", qualified, name, what));
  e.kind = std::string(kind);
  e.group = std::string(group);
  e.name = std::string(name);
  e.causes = std::move(causes);
  return e;
}

ApiError Internal(std::string message) {
  return Make(500, "InternalError", fmt::format("Internal error occurred: {}", message));
}

}  // namespace muster::apiserver
