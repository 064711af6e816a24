#include "apiserver/handlers.h"

#include <array>
#include <charconv>
#include <cstdio>
#include <mutex>
#include <random>
#include <utility>

#include "absl/strings/escaping.h"
#include "api/selector.h"
#include "api/yaml.h"
#include "apiserver/discovery.h"
#include "apiserver/openapi.h"
#include "apiserver/tables.h"
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

std::string_view MediaType(std::string_view content_type) {
  auto semi = content_type.find(';');
  std::string_view t = content_type.substr(0, semi);
  while (!t.empty() && t.back() == ' ') t.remove_suffix(1);
  return t;
}

HttpResponse TextResponse(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.content_type = "text/plain; charset=utf-8";
  r.body = std::move(body);
  return r;
}

// The opaque `continue` token: the list's revision and the last key returned.
std::string EncodeContinue(int64_t revision, std::string_view ns, std::string_view name) {
  json::object token;
  token["v"] = "meta.k8s.io/v1";
  token["rv"] = revision;
  token["start"] = fmt::format("{}/{}", ns, name);
  return absl::WebSafeBase64Escape(json::serialize(token));
}

struct ContinueToken {
  int64_t revision = 0;
  std::string ns;
  std::string name;
};

std::optional<ContinueToken> DecodeContinue(std::string_view text) {
  std::string raw;
  if (!absl::WebSafeBase64Unescape(absl::string_view(text.data(), text.size()), &raw)) {
    return std::nullopt;
  }
  json::error_code ec;
  json::value v = json::parse(raw, ec);
  if (ec || !v.is_object()) return std::nullopt;
  const auto& o = v.get_object();
  const json::value* rv = o.if_contains("rv");
  const json::value* start = o.if_contains("start");
  if (rv == nullptr || !rv->is_int64() || start == nullptr || !start->is_string()) {
    return std::nullopt;
  }
  std::string_view s = start->get_string();
  auto slash = s.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  return ContinueToken{rv->get_int64(), std::string(s.substr(0, slash)),
                       std::string(s.substr(slash + 1))};
}

}  // namespace

ApiResult<json::object> DecodeBodyObject(const HttpRequest& req) {
  std::string_view type = MediaType(req.content_type);
  if (type == "application/vnd.kubernetes.protobuf") {
    auto ns = DecodeProtobufNamespace(req.body);
    if (!ns) return UnsupportedBodyType();
    return std::move(*ns);
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
    json::error_code ec;
    value = json::parse(req.body, ec);
    if (ec) {
      return BadRequest(fmt::format("couldn't decode the request body as JSON: {}", ec.message()));
    }
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

HttpResponse JsonResponse(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  return r;
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
  std::string_view watch = req.Param("watch");
  return r.size() == 1 && req.method == "GET" && (watch == "true" || watch == "1");
}

// --- Handlers ------------------------------------------------------------------------------------

Handlers::Handlers(store::Store& store, HandlerOptions options)
    : store_(store), options_(std::move(options)) {}

Handlers::~Handlers() = default;

int64_t Handlers::Now() const {
  if (options_.now_unix) return options_.now_unix();
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

HttpResponse Handlers::Handle(const HttpRequest& req) {
  const std::string& path = req.path;
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
      HttpResponse r = JsonResponse(200, json::serialize(AggregatedDiscovery(core)));
      r.content_type = std::string(kAggregatedDiscoveryContentType);
      return r;
    }
    return JsonResponse(200, json::serialize(core ? LegacyApiVersions(options_.server_address)
                                                  : LegacyApiGroupList()));
  }
  if (path == "/openapi/v3" || path == "/openapi/v3/") {
    if (!get) return ErrorResponse(MethodNotAllowed(req.method));
    return JsonResponse(200, json::serialize(OpenApiIndex()));
  }
  if (path.rfind("/openapi/v3/", 0) == 0) {
    if (!get) return ErrorResponse(MethodNotAllowed(req.method));
    const OpenApiDocument* doc = FindOpenApiDocument(std::string_view(path).substr(12));
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
      auto g = LegacyApiGroup(group);
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
    auto list = ApiResourceList(group, version);
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
      FindResource(group, version, resource) == nullptr) {
    if (!get) return ErrorResponse(MethodNotAllowed(req.method));
    return JsonResponse(200, fmt::format(R"({{"kind":"ServiceList","apiVersion":"v1","metadata":)"
                                         R"({{"resourceVersion":"{}"}},"items":[]}})",
                                         store_.Revision()));
  }

  Target target;
  target.resource = FindResource(group, version, resource);
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
  const std::string& m = req.method;
  if (t.name.empty()) {
    if (m == "GET") {
      std::string_view watch = req.Param("watch");
      if (watch == "true" || watch == "1") return Watch(req, t);
      return List(req, t);
    }
    if (m == "POST") {
      if (t.resource->namespaced && t.ns.empty()) return ErrorResponse(MethodNotAllowed(m));
      return Create(req, t);
    }
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
  if (t.subresource == "log") {
    if (m == "GET") return Logs(req, t);
    return ErrorResponse(MethodNotAllowed(m));
  }
  return ErrorResponse(PathNotFound());
}

// --- Reads ---------------------------------------------------------------------------------------

namespace {

TableOptions TableOptionsFor(const HttpRequest& req) {
  TableOptions options;
  options.include_object = ParseIncludeObject(req.Param("includeObject"));
  return options;
}

}  // namespace

HttpResponse Handlers::Get(const HttpRequest& req, const Target& t) {
  const ResourceInfo& res = *t.resource;
  auto obj = store_.Get({res.StoreResource(), t.ns, t.name});
  if (!obj.ok()) {
    if (absl::IsNotFound(obj.status())) return ErrorResponse(NotFound(res.StoreResource(), t.name));
    return ErrorResponse(Internal(std::string(obj.status().message())));
  }
  if (WantsTable(req.accept)) {
    std::vector<json::value> items;
    items.push_back(json::parse(*obj->json));
    json::value table =
        ToTable(res, items, std::to_string(obj->revision), Now(), TableOptionsFor(req));
    return JsonResponse(200, json::serialize(table));
  }
  return JsonResponse(200, *obj->json);
}

HttpResponse Handlers::List(const HttpRequest& req, const Target& t) {
  const ResourceInfo& res = *t.resource;
  auto filter = CompileFilter(req, res);
  if (!filter.ok()) return ErrorResponse(filter.error());
  const bool filtered = !FilterIsEmpty(**filter);

  int64_t limit = 0;
  if (std::string_view l = req.Param("limit"); !l.empty()) {
    auto parsed = ParseInt(l);
    if (parsed) limit = *parsed;
    if (!parsed || limit < 0) {
      return ErrorResponse(BadRequest(fmt::format("invalid limit: \"{}\"", l)));
    }
  }

  store::ListResult list = store_.List(res.StoreResource(), t.ns);
  int64_t revision = list.revision;
  std::optional<ContinueToken> from;
  if (std::string_view c = req.Param("continue"); !c.empty()) {
    from = DecodeContinue(c);
    if (!from) return ErrorResponse(BadRequest("continue key is not valid: incorrect encoding"));
    // A token whose revision left the retained history can no longer give a consistent list.
    auto probe = store_.WatchFrom(res.StoreResource(), t.ns, from->revision);
    if (!probe.ok()) {
      return ErrorResponse(Expired(
          "The provided continue parameter is too old to display a consistent list result. You "
          "can start a new list without the continue parameter, or use the continue token in "
          "this response to retrieve the remainder of the results. Continuing with the provided "
          "token results in an inconsistent list - objects that were created, modified, or "
          "deleted between the time the first chunk was returned and now may show up in the "
          "list."));
    }
    (*probe)->Close();
    revision = from->revision;
  }

  const bool table = WantsTable(req.accept);
  std::vector<const store::Object*> selected;
  std::vector<json::value> parsed;
  std::string next_continue;
  for (const store::Object& item : list.items) {
    if (from && std::tie(item.key.ns, item.key.name) <= std::tie(from->ns, from->name)) continue;
    std::optional<json::object> obj;
    if (filtered || table) {
      json::value v = json::parse(*item.json);
      if (!v.is_object()) continue;
      obj = std::move(v.get_object());
      if (filtered && !FilterMatches(**filter, res, *obj)) continue;
    }
    if (limit > 0 && static_cast<int64_t>(selected.size()) == limit) {
      const store::Object& last = *selected.back();
      next_continue = EncodeContinue(revision, last.key.ns, last.key.name);
      break;
    }
    selected.push_back(&item);
    if (table) parsed.emplace_back(std::move(*obj));
  }

  if (table) {
    TableOptions options = TableOptionsFor(req);
    options.continue_token = next_continue;
    json::value out = ToTable(res, parsed, std::to_string(revision), Now(), options);
    return JsonResponse(200, json::serialize(out));
  }

  std::string body;
  size_t total = 0;
  for (const auto* item : selected) total += item->json->size() + 1;
  body.reserve(total + 200);
  body += fmt::format(R"({{"kind":"{}","apiVersion":"{}","metadata":{{"resourceVersion":"{}")",
                      res.list_kind, res.ApiVersion(), revision);
  if (!next_continue.empty()) body += fmt::format(R"(,"continue":"{}")", next_continue);
  body += R"(},"items":[)";
  for (size_t i = 0; i < selected.size(); ++i) {
    if (i > 0) body += ',';
    body += *selected[i]->json;
  }
  body += "]}";
  return JsonResponse(200, std::move(body));
}

// --- Selectors -----------------------------------------------------------------------------------

struct ObjectFilter {
  bool has_labels = false;
  api::LabelSelectorMatcher labels;
  std::vector<api::FieldRequirement> fields;
};

ApiResult<std::shared_ptr<const ObjectFilter>> CompileFilter(const HttpRequest& req,
                                                             const ResourceInfo& resource) {
  auto filter = std::make_shared<ObjectFilter>();
  if (std::string_view text = req.Param("labelSelector"); !text.empty()) {
    auto selector = api::ParseLabelSelector(text);
    if (!selector.ok()) {
      return BadRequest(
          fmt::format("unable to parse requirement: {}", std::string(selector.status().message())));
    }
    auto matcher = api::LabelSelectorMatcher::Compile(*selector);
    if (!matcher.ok()) {
      return BadRequest(
          fmt::format("unable to parse requirement: {}", std::string(matcher.status().message())));
    }
    filter->labels = std::move(*matcher);
    filter->has_labels = !filter->labels.MatchesEverything();
  }
  if (std::string_view text = req.Param("fieldSelector"); !text.empty()) {
    auto fields = api::ParseFieldSelector(text);
    if (!fields.ok()) return BadRequest(std::string(fields.status().message()));
    for (const auto& f : *fields) {
      if (!FieldSelectable(resource, f.field)) {
        return BadRequest(fmt::format("field label not supported: {}", f.field));
      }
    }
    filter->fields = std::move(*fields);
  }
  return std::shared_ptr<const ObjectFilter>(std::move(filter));
}

bool FilterIsEmpty(const ObjectFilter& filter) {
  return !filter.has_labels && filter.fields.empty();
}

bool FilterMatches(const ObjectFilter& filter, const ResourceInfo& resource,
                   const json::object& obj) {
  if (filter.has_labels) {
    api::StringMap labels;
    if (const json::value* meta = obj.if_contains("metadata"); meta && meta->is_object()) {
      if (const json::value* l = meta->get_object().if_contains("labels"); l && l->is_object()) {
        for (const auto& [k, v] : l->get_object()) {
          if (v.is_string()) labels.emplace(std::string(k), std::string(v.get_string()));
        }
      }
    }
    if (!filter.labels.Matches(labels)) return false;
  }
  if (!filter.fields.empty()) {
    api::StringMap fields;
    for (auto& [k, v] : SelectableFields(resource, obj)) fields.emplace(std::move(k), std::move(v));
    if (!api::MatchesFieldSelector(filter.fields, fields)) return false;
  }
  return true;
}

}  // namespace muster::apiserver
