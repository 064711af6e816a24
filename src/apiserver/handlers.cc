#include "apiserver/handlers.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <mutex>
#include <random>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "api/json_parse.h"
#include "api/selector.h"
#include "api/text.h"
#include "api/yaml.h"
#include "apiserver/discovery.h"
#include "apiserver/openapi.h"
#include "apiserver/protobuf.h"
#include "apiserver/tables.h"
#include "boost/json/array.hpp"
#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "boost/json/string.hpp"
#include "fmt/format.h"
#include "openssl/crypto.h"
#include "openssl/evp.h"
#include "openssl/hmac.h"

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

// The `continue` token: kube's (storage.EncodeContinue: base64url of {"v","rv","start"}, the
// list's revision and the last key returned) plus "sig", an HMAC-SHA256 under this server's key
// of the revision, the resource, the list's namespace and the start key. A token is only good
// for the list it came from, and one made up by a client is refused rather than read.
constexpr std::string_view kContinueVersion = "meta.k8s.io/v1";

std::string ContinueSignature(std::string_view key, int64_t revision, std::string_view resource,
                              std::string_view ns, std::string_view start) {
  auto text = [](std::string_view v) { return json::string(v.data(), v.size()); };
  const std::string signed_text =
      json::serialize(json::array{revision, text(resource), text(ns), text(start)});
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(signed_text.data()), signed_text.size(), mac,
       &length);
  return absl::WebSafeBase64Escape(
      absl::string_view(reinterpret_cast<const char*>(mac), static_cast<size_t>(length)));
}

std::string EncodeContinue(std::string_view key, int64_t revision, std::string_view resource,
                           std::string_view list_ns, std::string_view ns, std::string_view name) {
  json::object token;
  token["v"] = std::string(kContinueVersion);
  token["rv"] = revision;
  const std::string start = fmt::format("{}/{}", ns, name);
  token["start"] = start;
  token["sig"] = ContinueSignature(key, revision, resource, list_ns, start);
  return absl::WebSafeBase64Escape(json::serialize(token));
}

struct ContinueToken {
  int64_t revision = 0;
  std::string ns;
  std::string name;
  std::string start;
  std::string signature;
};

// storage.DecodeContinue's checks and messages (400 "invalid continue token: ...").
ApiResult<ContinueToken> DecodeContinue(std::string_view text) {
  auto invalid = [](std::string_view why) {
    return BadRequest(fmt::format("invalid continue token: continue key is not valid: {}", why));
  };
  // base64.RawURLEncoding: the URL-safe alphabet, no padding.
  static constexpr std::string_view kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  size_t bad = text.find_first_not_of(kAlphabet);
  if (bad == std::string_view::npos && text.size() % 4 == 1) bad = text.size() - 1;
  std::string raw;
  if (bad != std::string_view::npos ||
      !absl::WebSafeBase64Unescape(absl::string_view(text.data(), text.size()), &raw)) {
    return invalid(fmt::format("illegal base64 data at input byte {}",
                               bad != std::string_view::npos ? bad : 0));
  }
  json::error_code ec;
  json::value v = json::parse(raw, ec);
  if (ec || !v.is_object()) return invalid("the token is not a JSON object");
  const auto& o = v.get_object();
  const json::value* version = o.if_contains("v");
  const json::value* rv = o.if_contains("rv");
  const json::value* start = o.if_contains("start");
  const json::value* sig = o.if_contains("sig");
  if ((version != nullptr && !version->is_string()) || (rv != nullptr && !rv->is_int64()) ||
      (start != nullptr && !start->is_string()) || (sig != nullptr && !sig->is_string())) {
    return invalid("a field of the token has the wrong type");
  }
  std::string_view v_text = version != nullptr ? std::string_view(version->get_string()) : "";
  if (v_text != kContinueVersion) {
    return invalid(fmt::format("server does not recognize this encoded version {}", v_text));
  }
  if (rv == nullptr || rv->get_int64() == 0) {
    return invalid("incorrect encoded start resourceVersion (version meta.k8s.io/v1)");
  }
  std::string_view s = start != nullptr ? std::string_view(start->get_string()) : "";
  if (s.empty()) return invalid("encoded start key empty (version meta.k8s.io/v1)");
  // kube refuses a start key that path.Clean would change ("..", "//"); muster's are ns/name.
  auto slash = s.find('/');
  if (slash == std::string_view::npos || s.find('/', slash + 1) != std::string_view::npos ||
      s.substr(slash + 1).empty() || s.substr(slash + 1) == "." || s.substr(slash + 1) == ".." ||
      s.substr(0, slash) == "." || s.substr(0, slash) == "..") {
    return invalid(s);
  }
  ContinueToken token;
  token.revision = rv->get_int64();
  token.ns = std::string(s.substr(0, slash));
  token.name = std::string(s.substr(slash + 1));
  token.start = std::string(s);
  if (sig != nullptr) token.signature = std::string(sig->get_string());
  return token;
}

// Whether `token` was issued by this server (its `key`) for the list of `resource` in `list_ns`.
bool ContinueSignedFor(const ContinueToken& token, std::string_view key, std::string_view resource,
                       std::string_view list_ns) {
  const std::string want = ContinueSignature(key, token.revision, resource, list_ns, token.start);
  return !want.empty() && token.signature.size() == want.size() &&
         CRYPTO_memcmp(token.signature.data(), want.data(), want.size()) == 0;
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
    : store_(store), options_(std::move(options)) {
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
  if (t.resource->review) {
    // Only the collection's POST is routed upstream: any other method there is 405, and there
    // are no item paths.
    if (!t.name.empty()) return ErrorResponse(PathNotFound());
    if (m != "POST") return ErrorResponse(MethodNotAllowed(m));
    return Review(req, t);
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

// Whether no event of `resource` in `ns` (all namespaces when empty) came after revision `since`
// up to `upto`, as far as the store's history tells (false once it no longer does).
bool UnchangedSince(store::Store& store, const std::string& resource, const std::string& ns,
                    int64_t since, int64_t upto) {
  auto watch = store.WatchFrom(resource, ns, since);
  if (!watch.ok()) return false;  // events since were dropped from the history
  auto event = (*watch)->Next(std::chrono::milliseconds(0));
  (*watch)->Close();
  return event.ok() && (!event->has_value() || (*event)->revision > upto);
}

TableOptions TableOptionsFor(const HttpRequest& req) {
  TableOptions options;
  options.include_object = ParseIncludeObject(req.Param("includeObject"));
  return options;
}

}  // namespace

HttpResponse Handlers::Get(const HttpRequest& req, const Target& t) {
  const ResourceInfo& res = *t.resource;
  // resourceVersion N asks for a state at least as new as N: the store's latest always is, unless
  // N is ahead of the store. kube waits up to 3 s for its watch cache to catch up; this store has
  // no lag behind its writes to wait out.
  auto min_revision = ParseResourceVersion(req.Param("resourceVersion"));
  if (!min_revision.ok()) return ErrorResponse(min_revision.error());
  if (const int64_t current = store_.Revision(); *min_revision > static_cast<uint64_t>(current)) {
    return ErrorResponse(TooLargeResourceVersion(*min_revision, current));
  }
  auto obj = store_.Get({res.StoreResource(), t.ns, t.name});
  if (!obj.ok()) {
    if (absl::IsNotFound(obj.status())) return ErrorResponse(NotFound(res.StoreResource(), t.name));
    return ErrorResponse(Internal(std::string(obj.status().message())));
  }
  // kube-apiserver also answers 500 for an object it cannot decode from etcd.
  if (obj->damaged) return ErrorResponse(DamagedObjectError(res, *obj));
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
  if (auto invalid = CheckListOptions(req, /*watch=*/false)) return ErrorResponse(*invalid);

  int64_t limit = 0;
  if (std::string_view l = req.Param("limit"); !l.empty()) {
    auto parsed = ParseInt(l);
    if (parsed) limit = *parsed;
    if (!parsed || limit < 0) {
      return ErrorResponse(BadRequest(fmt::format("invalid limit: \"{}\"", l)));
    }
  }

  const std::string_view rv = req.Param("resourceVersion");
  store::ListResult list = store_.List(res.StoreResource(), t.ns);
  int64_t revision = list.revision;
  std::optional<ContinueToken> from;
  if (std::string_view c = req.Param("continue"); !c.empty()) {
    // storage.ValidateListOptions: the token first, then the resourceVersion beside it.
    auto token = DecodeContinue(c);
    if (!token.ok()) return ErrorResponse(token.error());
    if (!rv.empty() && rv != "0") {
      return ErrorResponse(
          BadRequest("specifying resource version is not allowed when using continue"));
    }
    // A token whose revision left the retained history can no longer give a consistent list.
    // That comes before the signature: a token from before a restart, signed with the key of
    // then, is as expired as kube's compacted ones. (A negative "rv", kube's "the latest", muster
    // never issues: such a token fails its signature.)
    if (token->revision > 0) {
      auto probe = store_.WatchFrom(res.StoreResource(), t.ns, token->revision);
      if (!probe.ok()) {
        return ErrorResponse(Expired(
            "The provided continue parameter is too old to display a consistent list result. "
            "You can start a new list without the continue parameter."));
      }
      (*probe)->Close();
    }
    if (!ContinueSignedFor(*token, continue_key_, res.StoreResource(), t.ns)) {
      return ErrorResponse(
          BadRequest("invalid continue token: continue key is not valid: it was not issued by "
                     "this server for this list"));
    }
    revision = token->revision;
    from = std::move(*token);
  } else if (!rv.empty()) {
    auto min_revision = ParseResourceVersion(rv);
    if (!min_revision.ok()) return ErrorResponse(min_revision.error());
    // NotOlderThan (and the legacy default): the latest state is never older, unless N is ahead
    // of the store (see Get).
    if (*min_revision > static_cast<uint64_t>(list.revision)) {
      return ErrorResponse(TooLargeResourceVersion(*min_revision, list.revision));
    }
    // Exact: the store keeps no older states, but the latest is the state at N when nothing of
    // this list changed since.
    if (req.Param("resourceVersionMatch") == "Exact" &&
        static_cast<int64_t>(*min_revision) != list.revision) {
      const auto at = static_cast<int64_t>(*min_revision);
      if (!UnchangedSince(store_, res.StoreResource(), t.ns, at, list.revision)) {
        return ErrorResponse(Expired("The resourceVersion for the provided list is too old."));
      }
      revision = at;
    }
  }

  const bool table = WantsTable(req.accept);
  std::vector<const store::Object*> selected;
  std::vector<json::value> parsed;
  std::string next_continue;
  for (const store::Object& item : list.items) {
    if (from && std::tie(item.key.ns, item.key.name) <= std::tie(from->ns, from->name)) continue;
    // kube-apiserver fails the whole list (500) on an object it cannot decode from etcd. The
    // store is local and the damage already logged at start: a usable list serves better, and
    // the log says what it left out.
    if (item.damaged) {
      LogSkippedDamaged("a list", item);
      continue;
    }
    std::optional<json::object> obj;
    if (filtered || table) {
      json::value v = json::parse(*item.json);
      if (!v.is_object()) continue;
      obj = std::move(v.get_object());
      if (filtered && !FilterMatches(**filter, res, *obj)) continue;
    }
    if (limit > 0 && static_cast<int64_t>(selected.size()) == limit) {
      const store::Object& last = *selected.back();
      next_continue = EncodeContinue(continue_key_, revision, res.StoreResource(), t.ns,
                                     last.key.ns, last.key.name);
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
  // Both parsers refuse with kube's own messages, which kube-apiserver answers as they are.
  if (std::string_view text = req.Param("labelSelector"); !text.empty()) {
    auto matcher = api::LabelSelectorMatcher::Parse(text);
    if (!matcher.ok()) return BadRequest(std::string(matcher.status().message()));
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
