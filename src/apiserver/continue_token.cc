// The list `continue` token (continue_token.h).

#include "apiserver/continue_token.h"

#include "apiserver/status.h"
#include "absl/strings/escaping.h"
#include "boost/json/array.hpp"
#include "boost/json/object.hpp"
#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "boost/json/string.hpp"
#include "fmt/format.h"
#include "openssl/crypto.h"
#include "openssl/evp.h"
#include "openssl/hmac.h"

namespace muster::apiserver {

namespace json = boost::json;

constexpr std::string_view kContinueVersion = "meta.k8s.io/v1";

namespace {

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

}  // namespace

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



// storage.DecodeContinue's checks and messages.
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

bool ContinueSignedFor(const ContinueToken& token, std::string_view key, std::string_view resource,
                       std::string_view list_ns) {
  const std::string want = ContinueSignature(key, token.revision, resource, list_ns, token.start);
  return !want.empty() && token.signature.size() == want.size() &&
         CRYPTO_memcmp(token.signature.data(), want.data(), want.size()) == 0;
}

}  // namespace muster::apiserver
