#include "apiserver/handlers.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <mutex>
#include <random>
#include <utility>

#include "absl/strings/match.h"
#include "api/json_parse.h"
#include "api/text.h"
#include "api/yaml.h"
#include "apiserver/descriptors/custom_resource.h"
#include "apiserver/descriptors/discovery.h"
#include "apiserver/descriptors/openapi.h"
#include "apiserver/descriptors/tables.h"
#include "apiserver/protobuf/protobuf.h"
#include "apiserver/resource_registry.h"
#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "fmt/format.h"

namespace muster::apiserver {

namespace json = boost::json;

// --- Helpers -------------------------------------------------------------------------------------

namespace {

std::mt19937_64& Rng() {
  thread_local std::mt19937_64 rng([] {
    std::random_device rd;
    return (static_cast<uint64_t>(rd()) << 32) ^ rd();
  }());
  return rng;
}

std::vector<std::string_view> SplitPath(std::string_view path) {
  std::vector<std::string_view> parts;
  while (!path.empty()) {
    auto slash = path.find('/');
    std::string_view part = path.substr(0, slash);
    if (!part.empty()) parts.push_back(part);
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return parts;
}


HttpResponse TextResponse(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.content_type = "text/plain; charset=utf-8";
  r.body = std::move(body);
  return r;
}

// /openapi/v2's content negotiation as kube-openapi's handler does it: the first Accept range
// that matches JSON or either spelling of the protobuf type picks it ("*/*" and an empty header
// pick JSON). nullopt when none matches (406).
std::optional<bool> OpenApiV2WantsProtobuf(std::string_view accept) {
  if (accept.empty()) return false;
  while (!accept.empty()) {
    const size_t comma = accept.find(',');
    std::string_view range = MediaType(accept.substr(0, comma));
    accept = comma == std::string_view::npos ? std::string_view{} : accept.substr(comma + 1);
    while (!range.empty() && range.front() == ' ') range.remove_prefix(1);
    if (range == "*/*" || range == "application/*" || range == "application/json") return false;
    if (range == "application/com.github.proto-openapi.spec.v2@v1.0+protobuf" ||
        range == "application/com.github.proto-openapi.spec.v2.v1.0+protobuf") {
      return true;
    }
  }
  return std::nullopt;
}

}  // namespace

std::string_view MediaType(std::string_view content_type) {
  auto semi = content_type.find(';');
  std::string_view t = content_type.substr(0, semi);
  while (!t.empty() && t.back() == ' ') t.remove_suffix(1);
  return t;
}

ApiResult<json::object> DecodeBodyObject(const HttpRequest& req) {
  std::string_view type = MediaType(req.content_type);
  if (type == kProtobufContentType) {
    absl::StatusOr<json::object> object = DecodeProtobufObject(req.body);
    if (object.ok()) return *std::move(object);
    const std::string why(object.status().message());
    if (absl::IsInvalidArgument(object.status())) {
      return BadRequest(fmt::format("couldn't decode the request body as protobuf: {}", why));
    }
    if (absl::IsUnimplemented(object.status())) {
      ApiError unsupported = UnsupportedBodyType();
      unsupported.message += "; " + why;
      return unsupported;
    }
    return Internal(why);
  }
  bool yaml = type == "application/yaml" || type == "application/apply-patch+yaml" ||
              type == "application/x-yaml" || type == "text/yaml";
  if (!yaml && !type.empty() && type != "application/json" && type != "*/*") {
    return UnsupportedBodyType();
  }
  json::value value;
  if (yaml) {
    auto docs = api::ParseYamlDocuments(req.body);
    if (!docs.ok()) {
      return BadRequest(
          fmt::format("error decoding YAML: {}", std::string(docs.status().message())));
    }
    if (docs->size() != 1) {
      return BadRequest(
          fmt::format("the request body must hold one YAML document, got {}", docs->size()));
    }
    value = std::move((*docs)[0]);
  } else {
    absl::StatusOr<json::value> parsed = api::ParseJson(req.body);
    if (!parsed.ok()) {
      return BadRequest(fmt::format("couldn't decode the request body as JSON: {}",
                                    std::string(parsed.status().message())));
    }
    value = *std::move(parsed);
  }
  if (!value.is_object()) {
    return BadRequest("the request body must be a JSON object");
  }
  return std::move(value.get_object());
}

std::string NewUid() {
  std::uniform_int_distribution<uint64_t> dist;
  uint64_t hi = dist(Rng()), lo = dist(Rng());
  hi = (hi & 0xffffffffffff0fffULL) | 0x0000000000004000ULL;  // version 4
  lo = (lo & 0x3fffffffffffffffULL) | 0x8000000000000000ULL;  // variant 10
  return fmt::format("{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", hi >> 32, (hi >> 16) & 0xffff,
                     hi & 0xffff, lo >> 48, lo & 0xffffffffffffULL);
}

std::string RandomNameSuffix() {
  // kube's utilrand.String alphabet: no vowels (no words), no look-alikes.
  static constexpr std::string_view kAlphabet = "bcdfghjklmnpqrstvwxz2456789";
  std::uniform_int_distribution<size_t> dist(0, kAlphabet.size() - 1);
  std::string out;
  for (int i = 0; i < 5; ++i) out.push_back(kAlphabet[dist(Rng())]);
  return out;
}

bool WantsTable(std::string_view accept) { return AcceptsTable(accept); }

std::optional<int64_t> ParseInt(std::string_view text) {
  if (!text.empty() && text[0] == '+') text.remove_prefix(1);
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return v;
}

ApiResult<uint64_t> ParseResourceVersion(std::string_view text) {
  if (text.empty() || text == "0") return uint64_t{0};
  const bool digits =
      std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (digits && ec == std::errc() && end == text.data() + text.size()) return v;
  return BadRequest(fmt::format(
      "invalid resource version: resourceVersion: Invalid value: {0}: strconv.ParseUint: parsing "
      "{0}: {1}",
      api::GoQuote(text), digits ? "value out of range" : "invalid syntax"));
}

bool QueryBool(std::string_view value) {
  return !(value == "0" ||
           absl::EqualsIgnoreCase(absl::string_view(value.data(), value.size()), "false"));
}

bool IsWatch(const HttpRequest& req) {
  return req.HasParam("watch") && QueryBool(req.Param("watch"));
}

std::optional<ApiError> CheckListOptions(const HttpRequest& req, bool watch) {
  const std::string_view rv = req.Param("resourceVersion");
  const std::string_view match = req.Param("resourceVersionMatch");
  const bool has_continue = !req.Param("continue").empty();
  const bool initial_events = req.HasParam("sendInitialEvents");
  std::vector<StatusCause> causes;
  auto forbid = [&](std::string field, std::string_view detail) {
    causes.push_back(
        {"FieldValueForbidden", fmt::format("Forbidden: {}", detail), std::move(field)});
  };
  auto unsupported = [&](std::string_view supported) {
    causes.push_back(
        {"FieldValueNotSupported",
         fmt::format("Unsupported value: {}: supported values: {}", api::GoQuote(match), supported),
         "resourceVersionMatch"});
  };
  if (!watch) {
    if (!match.empty()) {
      if (rv.empty()) {
        forbid("resourceVersionMatch",
               "resourceVersionMatch is forbidden unless resourceVersion is provided");
      }
      if (has_continue) {
        forbid("resourceVersionMatch",
               "resourceVersionMatch is forbidden when continue is provided");
      }
      if (match != "Exact" && match != "NotOlderThan") {
        unsupported(R"("Exact", "NotOlderThan", "")");
      }
      if (match == "Exact" && rv == "0") {
        forbid("resourceVersionMatch",
               R"(resourceVersionMatch "exact" is forbidden for resourceVersion "0")");
      }
    }
    if (initial_events) forbid("sendInitialEvents", "sendInitialEvents is forbidden for list");
  } else {
    // Without sendInitialEvents and resourceVersionMatch, SetListOptionsDefaults sets both (for
    // an unset or "0" resourceVersion) or leaves a legacy watch: valid either way.
    if (initial_events && match != "NotOlderThan") {
      forbid("resourceVersionMatch",
             "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan");
    }
    if (!match.empty()) {
      if (!initial_events) {
        forbid("resourceVersionMatch",
               "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided");
      }
      if (match != "NotOlderThan") unsupported(R"("NotOlderThan")");
      if (has_continue) {
        forbid("resourceVersionMatch",
               "resourceVersionMatch is forbidden when continue is provided");
      }
    }
  }
  if (causes.empty()) return std::nullopt;
  return Invalid("ListOptions", "meta.k8s.io", "", std::move(causes));
}

HttpResponse JsonResponse(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

std::shared_ptr<const ResourceInfo> Builtin(const ResourceInfo& resource) {
  return std::shared_ptr<const ResourceInfo>(std::shared_ptr<const ResourceInfo>(), &resource);
}

std::string ServedVersionOf(const ResourceInfo& resource, std::string body) {
  if (resource.custom == nullptr || resource.custom->storage_version == resource.version) {
    return body;
  }
  json::error_code ec;
  json::value v = api::ParseJsonText(body, ec);
  if (ec || !v.is_object()) return body;
  json::object& o = v.get_object();
  const std::string kind = StringAt(&o, "kind");
  if (kind == resource.kind) {
    ConvertToServedVersion(resource, o);
  } else if (kind == resource.list_kind) {
    if (json::value* items = o.if_contains("items"); items != nullptr && items->is_array()) {
      for (json::value& item : items->get_array()) {
        if (item.is_object()) ConvertToServedVersion(resource, item.get_object());
      }
    }
  } else if (kind == "Table") {
    if (json::value* rows = o.if_contains("rows"); rows != nullptr && rows->is_array()) {
      for (json::value& row : rows->get_array()) {
        json::value* object = row.is_object() ? row.get_object().if_contains("object") : nullptr;
        if (object != nullptr && object->is_object() &&
            StringAt(&object->get_object(), "kind") == resource.kind) {
          ConvertToServedVersion(resource, object->get_object());
        }
      }
    }
  } else {
    return body;
  }
  return json::serialize(v);
}

ApiError DamagedObjectError(const ResourceInfo& resource, const store::Object& object) {
  return Internal(fmt::format(
      "{} \"{}\" cannot be read: the stored object is damaged ({}); deleting it removes it "
      "outright, and `muster fsck` lists every damaged object",
      resource.StoreResource(), object.key.name,
      store::StoredObjectProblem(*object.json).value_or("unknown")));
}

bool IsLongRunning(const HttpRequest& req) {
  auto parts = SplitPath(req.path);
  size_t rest = 0;
  if (parts.size() > 2 && parts[0] == "api") {
    rest = 2;
  } else if (parts.size() > 3 && parts[0] == "apis") {
    rest = 3;
  } else {
    return false;
  }
  std::vector<std::string_view> r(parts.begin() + static_cast<long>(rest), parts.end());
  if (r[0] == "watch" || r[0] == "proxy") return true;  // the legacy /watch/ and /proxy/ paths
  // namespaces/{ns}/{resource}/...; namespaces/{name}/status and /finalize are the namespace's.
  if (r[0] == "namespaces" && r.size() > 2 && r[2] != "status" && r[2] != "finalize") {
    r.erase(r.begin(), r.begin() + 2);
  }
  if (r.size() >= 3) {
    return r[2] == "attach" || r[2] == "exec" || r[2] == "log" || r[2] == "portforward" ||
           r[2] == "proxy";
  }
  // A GET of a collection with watch is the verb watch (what Handlers serve as a watch).
  return r.size() == 1 && req.method == "GET" && IsWatch(req);
}

// --- Handlers ------------------------------------------------------------------------------------

Handlers::Handlers(store::Store& store, HandlerOptions options)
    : store_(store),
      options_(std::move(options)),
      registry_(std::make_unique<ResourceRegistry>(store)) {
  std::random_device random;
  for (int i = 0; i < 8; ++i) {
    const uint32_t word = random();
    continue_key_.append(reinterpret_cast<const char*>(&word), sizeof(word));
  }
}

Handlers::~Handlers() = default;

int64_t Handlers::Now() const {
  if (options_.now_unix) return options_.now_unix();
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void Handlers::Log(std::string_view message) const {
  if (options_.log) {
    options_.log(message);
  } else {
    fmt::print(stderr, "muster apiserver: {}\n", message);
  }
}

void Handlers::LogSkippedDamaged(std::string_view what, const store::Object& object) const {
  const store::Key& key = object.key;
  const std::string problem = store::StoredObjectProblem(*object.json).value_or("unknown");
  Log(fmt::format(
      "{} skips {} {}{}{} (revision {}): the stored object is damaged ({}); delete it, or run "
      "`muster fsck`",
      what, key.resource, key.ns, key.ns.empty() ? "" : "/", key.name, object.revision, problem));
}

HttpResponse Handlers::Handle(const HttpRequest& req) {
  const std::string& path = req.path;
  const std::shared_ptr<const ServedResources> served = registry_->Current();
  const ResourceSet& resources = *served->resources;
  const bool get = req.method == "GET" || req.method == "HEAD";

  if (path == "/version" || path == "/version/") {
    if (!get) return ErrorResponse(MethodNotAllowed(req.method));
    return JsonResponse(200, json::serialize(VersionInfo()));
  }
  if (path == "/healthz" || path == "/livez" || path == "/readyz") return TextResponse(200, "ok");
  if (path == "/api" || path == "/api/" || path == "/apis" || path == "/apis/") {
    if (!get) return ErrorResponse(MethodNotAllowed(req.method));
    bool core = path.rfind("/api", 0) == 0 && path.rfind("/apis", 0) != 0;
    if (AcceptsAggregatedDiscovery(req.accept)) {
      HttpResponse r = JsonResponse(200, json::serialize(AggregatedDiscovery(resources, core)));
      r.content_type = std::string(kAggregatedDiscoveryContentType);
      return r;
    }
    return JsonResponse(200, json::serialize(core ? LegacyApiVersions(options_.server_address)
                                                  : LegacyApiGroupList(resources)));
  }
  if (path == "/openapi/v2" || path == "/openapi/v2/") {
    if (!get) return ErrorResponse(MethodNotAllowed(req.method));
    auto protobuf = OpenApiV2WantsProtobuf(req.accept);
    if (!protobuf) {
      return ErrorResponse(
          NotAcceptable("/openapi/v2 is served as application/json or "
                        "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"));
    }
    HttpResponse r = JsonResponse(200, OpenApiV2Document(*protobuf));
    if (*protobuf) r.content_type = std::string(kOpenApiV2ProtobufType);
    r.headers.emplace_back("Vary", "Accept");
    return r;
  }
  if (path == "/openapi/v3" || path == "/openapi/v3/") {
    if (!get) return ErrorResponse(MethodNotAllowed(req.method));
    return JsonResponse(200, json::serialize(served->openapi->Index()));
  }
  if (path.rfind("/openapi/v3/", 0) == 0) {
    if (!get) return ErrorResponse(MethodNotAllowed(req.method));
    const OpenApiDocument* doc = served->openapi->Find(std::string_view(path).substr(12));
    if (doc == nullptr) return ErrorResponse(PathNotFound());
    HttpResponse r = JsonResponse(200, doc->json);
    if (req.Param("hash") == doc->hash) {
      r.headers.emplace_back("Cache-Control", std::string(kOpenApiCacheControl));
      r.headers.emplace_back("Expires", "Fri, 01 Jan 2100 00:00:00 GMT");
    }
    r.headers.emplace_back("Etag", fmt::format("\"{}\"", doc->hash));
    return r;
  }

  auto parts = SplitPath(path);
  std::string_view group, version;
  size_t rest = 0;
  if (parts.size() >= 2 && parts[0] == "api") {
    version = parts[1];
    rest = 2;
  } else if (parts.size() >= 2 && parts[0] == "apis") {
    group = parts[1];
    if (parts.size() == 2) {
      if (!get) return ErrorResponse(MethodNotAllowed(req.method));
      auto g = LegacyApiGroup(resources, group);
      if (!g) return ErrorResponse(PathNotFound());
      return JsonResponse(200, json::serialize(*g));
    }
    version = parts[2];
    rest = 3;
  } else {
    return ErrorResponse(PathNotFound());
  }
  if (parts.size() == rest) {
    if (!get) return ErrorResponse(MethodNotAllowed(req.method));
    auto list = ApiResourceList(resources, group, version);
    if (!list) return ErrorResponse(PathNotFound());
    return JsonResponse(200, json::serialize(*list));
  }

  // /namespaces/{ns}/{resource}[/{name}[/{sub}]] or /{resource}[/{name}[/{sub}]]; but
  // /namespaces/{name}/status and /namespaces/{name}/finalize are the namespace's own.
  std::vector<std::string_view> r(parts.begin() + static_cast<long>(rest), parts.end());
  std::string_view ns, resource, name, sub;
  if (r[0] == "namespaces" && r.size() >= 3 &&
      !(r.size() == 3 && (r[2] == "status" || r[2] == "finalize"))) {
    if (r.size() > 5) return ErrorResponse(PathNotFound());
    ns = r[1];
    resource = r[2];
    if (r.size() > 3) name = r[3];
    if (r.size() > 4) sub = r[4];
  } else {
    if (r.size() > 3) return ErrorResponse(PathNotFound());
    resource = r[0];
    if (r.size() > 1) name = r[1];
    if (r.size() > 2) sub = r[2];
  }

  // cluster-info lists kube-system services: the list must exist even where the registry does
  // not serve services.
  if (group.empty() && version == "v1" && resource == "services" && name.empty() &&
      resources.Find(group, version, resource) == nullptr) {
    if (!get) return ErrorResponse(MethodNotAllowed(req.method));
    return JsonResponse(200, fmt::format(R"({{"kind":"ServiceList","apiVersion":"v1","metadata":)"
                                         R"({{"resourceVersion":"{}"}},"items":[]}})",
                                         store_.Revision()));
  }

  Target target;
  target.resource = resources.Find(group, version, resource);
  if (target.resource == nullptr) return ErrorResponse(PathNotFound());
  if (!ns.empty() && !target.resource->namespaced) return ErrorResponse(PathNotFound());
  if (ns.empty() && target.resource->namespaced && !name.empty()) {
    return ErrorResponse(PathNotFound());
  }
  if (!sub.empty()) {
    const auto& subs = target.resource->subresources;
    if (std::find(subs.begin(), subs.end(), sub) == subs.end()) {
      return ErrorResponse(PathNotFound());
    }
  }
  target.ns = std::string(ns);
  target.name = std::string(name);
  target.subresource = std::string(sub);
  return HandleResource(req, target);
}

HttpResponse Handlers::HandleResource(const HttpRequest& req, const Target& t) {
  const CustomResourceSpec* custom = t.resource->custom.get();
  // kube's crdHandler: nothing new while the CRD is being deleted.
  if (custom != nullptr && custom->terminating && t.name.empty() && req.method == "POST") {
    ApiError e = MethodNotAllowed(req.method);
    e.message = "create not allowed while custom resource definition is terminating";
    return ErrorResponse(e);
  }
  HttpResponse r = HandleResourceVerb(req, t);
  if (custom != nullptr && custom->storage_version != t.resource->version && !r.stream &&
      r.status < 300) {
    r.body = ServedVersionOf(*t.resource, std::move(r.body));
  }
  return r;
}

HttpResponse Handlers::HandleResourceVerb(const HttpRequest& req, const Target& t) {
  const std::string& m = req.method;
  if (t.resource->review) {
    // Only the collection's POST is routed upstream: any other method there is 405, and there
    // are no item paths.
    if (!t.name.empty()) return ErrorResponse(PathNotFound());
    if (m != "POST") return ErrorResponse(MethodNotAllowed(m));
    return Review(req, t);
  }
  if (!t.resource->refuse_writes.empty() && (m == "POST" || m == "PUT" || m == "PATCH")) {
    return ErrorResponse(MethodNotAllowed(m, t.resource->refuse_writes));
  }
  if (t.name.empty()) {
    if (m == "GET") {
      if (IsWatch(req)) return Watch(req, t);
      return List(req, t);
    }
    if (m == "POST") {
      if (t.resource->namespaced && t.ns.empty()) return ErrorResponse(MethodNotAllowed(m));
      return Create(req, t);
    }
    if (m == "DELETE") return DeleteCollection(req, t);
    return ErrorResponse(MethodNotAllowed(m));
  }
  if (t.subresource == "scale") {
    if (m == "GET" || m == "PUT" || m == "PATCH") return Scale(req, t);
    return ErrorResponse(MethodNotAllowed(m));
  }
  if (t.subresource.empty() || t.subresource == "status" || t.subresource == "finalize") {
    if (m == "GET" && t.subresource != "finalize") return Get(req, t);
    if (m == "PUT") return Update(req, t);
    if (m == "PATCH" && t.subresource != "finalize") return Patch(req, t);
    if (m == "DELETE" && t.subresource.empty()) return Delete(req, t);
    return ErrorResponse(MethodNotAllowed(m));
  }
  if (t.subresource == "binding") {
    if (m == "POST") return Bind(req, t);
    return ErrorResponse(MethodNotAllowed(m));
  }
  if (t.subresource == "eviction") {
    if (m == "POST") return Evict(req, t);
    return ErrorResponse(MethodNotAllowed(m));
  }
  if (t.subresource == "log") {
    if (m == "GET") return Logs(req, t);
    return ErrorResponse(MethodNotAllowed(m));
  }
  if (t.subresource == "exec" || t.subresource == "attach" || t.subresource == "portforward") {
    if (m == "GET" || m == "POST") return PodStream(req, t);
    return ErrorResponse(MethodNotAllowed(m));
  }
  return ErrorResponse(PathNotFound());
}

}  // namespace muster::apiserver
