#include "apiserver/request_target.h"

#include <cstddef>

namespace muster::apiserver {

namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

// Go's url.PathUnescape / QueryUnescape: %XX escapes, and in queries '+' is a space.
std::optional<std::string> Unescape(std::string_view in, bool plus_is_space) {
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '%') {
      if (i + 2 >= in.size()) return std::nullopt;
      int hi = HexValue(in[i + 1]);
      int lo = HexValue(in[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  return out;
}

// The paths kube-apiserver's system:public-info-viewer role lets anyone GET.
bool PublicInfoPath(std::string_view path) {
  for (std::string_view p : {"/version", "/healthz", "/livez", "/readyz"}) {
    if (path == p || (path.starts_with(p) && path.size() > p.size() && path[p.size()] == '/')) {
      return true;
    }
  }
  return false;
}

// Splits an origin-form target into a decoded path and decoded query parameters.
bool ParseTarget(std::string_view target, HttpRequest& req) {
  auto q = target.find('?');
  auto path = Unescape(target.substr(0, q), /*plus_is_space=*/false);
  if (!path || path->empty() || (*path)[0] != '/') return false;
  req.path = std::move(*path);
  if (q == std::string_view::npos) return true;
  std::string_view query = target.substr(q + 1);
  while (!query.empty()) {
    auto amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    auto eq = pair.find('=');
    auto key = Unescape(pair.substr(0, eq), true);
    auto value =
        Unescape(eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1), true);
    if (!key || !value) return false;
    req.query.emplace_back(std::move(*key), std::move(*value));
  }
  return true;
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

// Go raises the soft RLIMIT_NOFILE to the hard one when a program starts (Go 1.19), so

}  // namespace muster::apiserver
