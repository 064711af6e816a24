// The reviews (ResourceInfo::review) behind `kubectl auth`: SelfSubjectAccessReview (`can-i VERB
// RESOURCE`), SelfSubjectRulesReview (`can-i --list`) and SelfSubjectReview (`whoami`). Never
// stored: a POST answers 201 with the object and its status, as kube-apiserver's
// registry/authorization/selfsubject{access,rules}review and registry/authentication/
// selfsubjectreview do.
//
// Who asks: the server authenticates one credential, the bearer token of the kubeconfig it writes
// (server.h), and authorizes every request that gets here. That caller is muster's admin, and the
// reviews say so as kube does for a member of system:masters, the group kube-apiserver allows
// everything before RBAC is asked: every access review is allowed and the rules are `*` for every
// verb, resource and non-resource URL.

#include <string>
#include <string_view>

#include "api/time.h"
#include "apiserver/handlers.h"
#include "boost/json/array.hpp"
#include "boost/json/serialize.hpp"
#include "fmt/format.h"

namespace muster::apiserver {

namespace json = boost::json;

namespace {

constexpr std::string_view kAdminUser = "muster-admin";
constexpr std::string_view kAdminGroups[] = {"system:masters", "system:authenticated"};
constexpr std::string_view kAllowedReason =
    "muster: the admin (group system:masters) may do everything";

// Whether a decoded ObjectMeta is the zero value kube's validation wants here: members holding a
// zero value (null, "", 0, false, empty; a protobuf body spells out some) or managedFields (which
// validation ignores) do not count.
bool MetadataEmpty(const json::object& obj) {
  const json::value* meta = obj.if_contains("metadata");
  if (meta == nullptr || meta->is_null()) return true;
  if (!meta->is_object()) return false;
  for (const auto& [key, value] : meta->get_object()) {
    if (key == "managedFields" || value.is_null()) continue;
    if (value.is_string() && value.get_string().empty()) continue;
    if (value.is_bool() && !value.get_bool()) continue;
    if (value.is_number() && value.to_number<double>() == 0) continue;
    if (value.is_object() && value.get_object().empty()) continue;
    if (value.is_array() && value.get_array().empty()) continue;
    return false;
  }
  return true;
}

// The string members of `from` named in `keys`, where not empty (what the Go struct keeps and
// writes back with omitempty).
json::object Strings(const json::object* from, std::initializer_list<std::string_view> keys) {
  json::object out;
  for (std::string_view key : keys) {
    std::string value = StringAt(from, key);
    if (!value.empty()) out[key] = value;
  }
  return out;
}

// The reply's ObjectMeta: empty, which kube 1.32 writes with a null creationTimestamp.
json::object NullCreationTimestamp() { return json::object{{"creationTimestamp", nullptr}}; }

ApiError InvalidReview(const ResourceInfo& res, std::string field, std::string message) {
  return Invalid(res.kind, res.group, "", {{"FieldValueInvalid", std::move(message), field}});
}

// ValidateSelfSubjectAccessReview (pkg/apis/authorization/validation, v1.32).
ApiResult<json::object> AccessReview(const ResourceInfo& res, const json::object& body) {
  const json::object* spec = ObjectAt(body, "spec");
  const json::object* resource = spec == nullptr ? nullptr : ObjectAt(*spec, "resourceAttributes");
  const json::object* non_resource =
      spec == nullptr ? nullptr : ObjectAt(*spec, "nonResourceAttributes");
  if (resource != nullptr && non_resource != nullptr) {
    return InvalidReview(
        res, "spec.nonResourceAttributes",
        fmt::format(
            "Invalid value: authorization.NonResourceAttributes{{Path:\"{}\", Verb:\"{}\"}}: "
            "cannot be specified in combination with resourceAttributes",
            StringAt(non_resource, "path"), StringAt(non_resource, "verb")));
  }
  if (resource == nullptr && non_resource == nullptr) {
    return InvalidReview(res, "spec.resourceAttributes",
                         "Invalid value: \"null\": exactly one of nonResourceAttributes or "
                         "resourceAttributes must be specified");
  }
  if (!MetadataEmpty(body)) {
    return InvalidReview(
        res, "metadata",
        fmt::format("Invalid value: {}: must be empty", json::serialize(body.at("metadata"))));
  }
  json::object reply_spec;
  if (resource != nullptr) {
    json::object attributes = Strings(
        resource, {"namespace", "verb", "group", "version", "resource", "subresource", "name"});
    for (std::string_view selector : {"fieldSelector", "labelSelector"}) {
      if (const json::object* s = ObjectAt(*resource, selector)) attributes[selector] = *s;
    }
    reply_spec["resourceAttributes"] = std::move(attributes);
  } else {
    reply_spec["nonResourceAttributes"] = Strings(non_resource, {"path", "verb"});
  }
  return json::object{{"kind", res.kind},
                      {"apiVersion", res.ApiVersion()},
                      {"metadata", NullCreationTimestamp()},
                      {"spec", std::move(reply_spec)},
                      {"status", json::object{{"allowed", true}, {"reason", kAllowedReason}}}};
}

// Upstream answers with the status alone: the spec comes back empty.
ApiResult<json::object> RulesReview(const ResourceInfo& res, const json::object& body) {
  if (StringAt(ObjectAt(body, "spec"), "namespace").empty()) {
    return BadRequest("no namespace on request");
  }
  json::object status{
      {"resourceRules", json::array{json::object{{"verbs", json::array{"*"}},
                                                 {"apiGroups", json::array{"*"}},
                                                 {"resources", json::array{"*"}}}}},
      {"nonResourceRules", json::array{json::object{{"verbs", json::array{"*"}},
                                                    {"nonResourceURLs", json::array{"*"}}}}},
      {"incomplete", false}};
  return json::object{{"kind", res.kind},
                      {"apiVersion", res.ApiVersion()},
                      {"metadata", NullCreationTimestamp()},
                      {"spec", json::object{}},
                      {"status", std::move(status)}};
}

json::object SubjectReview(const ResourceInfo& res, int64_t now_unix) {
  json::array groups;
  for (std::string_view group : kAdminGroups) groups.emplace_back(group);
  return json::object{
      {"kind", res.kind},
      {"apiVersion", res.ApiVersion()},
      {"metadata", json::object{{"creationTimestamp", api::FormatUnixTime(now_unix)}}},
      {"status", json::object{{"userInfo", json::object{{"username", kAdminUser},
                                                        {"groups", std::move(groups)}}}}}};
}

}  // namespace

HttpResponse Handlers::Review(const HttpRequest& req, const Target& t) {
  const ResourceInfo& res = *t.resource;
  auto body = DecodeBodyObject(req);
  if (!body.ok()) return ErrorResponse(body.error());
  if (auto e = CheckTypeMeta(*body, res)) return ErrorResponse(*e);
  ApiResult<json::object> reply = json::object();
  if (res.kind == "SelfSubjectAccessReview") {
    reply = AccessReview(res, *body);
  } else if (res.kind == "SelfSubjectRulesReview") {
    reply = RulesReview(res, *body);
  } else {
    reply = SubjectReview(res, Now());
  }
  if (!reply.ok()) return ErrorResponse(reply.error());
  return JsonResponse(201, json::serialize(*reply));
}

}  // namespace muster::apiserver
