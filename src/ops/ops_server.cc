// The operations endpoint (ops_server.h): health as kube-apiserver's healthz package answers it,
// metrics through prometheus-cpp's text serialiser, over apiserver::Server.

#include "ops/ops_server.h"

#include <algorithm>
#include <charconv>
#include <exception>
#include <set>

#include "apiserver/server.h"
#include "fmt/format.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"

namespace muster::ops {
namespace {

using apiserver::HttpRequest;
using apiserver::HttpResponse;

constexpr std::string_view kTextPlain = "text/plain; charset=utf-8";

HttpResponse Text(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.content_type = std::string(kTextPlain);
  r.headers.emplace_back("X-Content-Type-Options", "nosniff");
  r.body = std::move(body);
  return r;
}

// Go's http.Error: the text and a newline.
HttpResponse Error(int status, std::string_view text) {
  return Text(status, fmt::format("{}\n", text));
}

std::string Run(const ReadyCheck& check) {
  try {
    return check();
  } catch (const std::exception& e) {
    return fmt::format("check threw: {}", e.what());
  } catch (...) {
    return "check threw";
  }
}

// A reason on one line, so that the verbose list stays one check a line.
std::string OneLine(std::string reason) {
  std::replace(reason.begin(), reason.end(), '\n', ' ');
  std::replace(reason.begin(), reason.end(), '\r', ' ');
  return reason;
}

}  // namespace

absl::StatusOr<HostPort> ParseHostPort(std::string_view address) {
  auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(fmt::format("address \"{}\": {}", address, why));
  };
  HostPort out;
  std::string_view host, port;
  if (!address.empty() && address.front() == '[') {
    const size_t close = address.find(']');
    if (close == std::string_view::npos || close + 1 >= address.size() ||
        address[close + 1] != ':') {
      return bad("want [IPv6]:port");
    }
    host = address.substr(1, close - 1);
    port = address.substr(close + 2);
    if (host.empty()) return bad("empty IPv6 address");
  } else {
    const size_t colon = address.rfind(':');
    if (colon == std::string_view::npos) return bad("want host:port");
    host = address.substr(0, colon);
    port = address.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) return bad("an IPv6 address goes in brackets");
  }
  unsigned value = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || value > 65535) {
    return bad("the port is not a number from 0 to 65535");
  }
  out.port = static_cast<uint16_t>(value);
  if (host.empty()) {
    out.host = "0.0.0.0";
  } else if (host == "localhost") {
    out.host = "127.0.0.1";
  } else {
    out.host = std::string(host);  // apiserver::Server refuses what is not an IP literal
  }
  return out;
}

OpsServer::OpsServer(std::shared_ptr<prometheus::Registry> registry)
    : registry_(std::move(registry)) {}

OpsServer::~OpsServer() { Stop(); }

absl::StatusOr<std::unique_ptr<OpsServer>> OpsServer::Start(std::string_view address,
                                                            OpsServerOptions options) {
  absl::StatusOr<HostPort> hp = ParseHostPort(address);
  if (!hp.ok()) return hp.status();
  std::shared_ptr<prometheus::Registry> registry =
      options.registry ? std::move(options.registry) : std::make_shared<prometheus::Registry>();
  std::unique_ptr<OpsServer> ops(new OpsServer(std::move(registry)));
  apiserver::ServerOptions so;
  so.address = hp->host;
  so.port = hp->port;
  so.threads = std::max(1, options.threads);
  so.max_body_bytes = 64 << 10;  // nothing here takes a body
  OpsServer* self = ops.get();
  auto server = apiserver::Server::Start(
      so, [self](const HttpRequest& request) { return self->Handle(request); });
  if (!server.ok()) return server.status();
  ops->port_ = (*server)->port();
  ops->server_ = *std::move(server);
  return ops;
}

void OpsServer::Stop() {
  if (server_) server_->Stop();  // idempotent; the port refuses connections once it returns
}

void OpsServer::AddReadyCheck(std::string name, ReadyCheck check) {
  std::lock_guard lock(mu_);
  for (auto& [n, c] : ready_checks_) {
    if (n == name) {
      c = std::move(check);
      return;
    }
  }
  ready_checks_.emplace_back(std::move(name), std::move(check));
}

void OpsServer::AddCollectHook(std::function<void()> hook) {
  std::lock_guard lock(mu_);
  collect_hooks_.push_back(std::move(hook));
}

HttpResponse OpsServer::Handle(const HttpRequest& request) {
  if (request.method != "GET") {
    HttpResponse r = Error(405, "method not allowed");
    r.headers.emplace_back("Allow", "GET");
    return r;
  }
  const std::string& path = request.path;
  static const std::vector<std::pair<std::string, ReadyCheck>> kPing = {
      {"ping", [] { return std::string(); }}};
  if (path == "/metrics") return Metrics();
  if (path == "/healthz") return Health(request, "healthz", kPing);
  if (path == "/livez") return Health(request, "livez", kPing);

  std::vector<std::pair<std::string, ReadyCheck>> checks;
  {
    std::lock_guard lock(mu_);
    checks = ready_checks_;
  }
  if (path == "/readyz") return Health(request, "readyz", checks);
  // One check alone: /readyz/<name> (and /healthz/ping, /livez/ping).
  for (std::string_view root : {"/readyz/", "/healthz/", "/livez/"}) {
    if (!path.starts_with(root)) continue;
    const std::string_view name = std::string_view(path).substr(root.size());
    const auto& list = root == "/readyz/" ? checks : kPing;
    for (const auto& [n, check] : list) {
      if (n != name) continue;
      std::string reason = Run(check);
      if (reason.empty()) return Text(200, "ok");
      return Error(500, fmt::format("internal server error: {}", OneLine(std::move(reason))));
    }
  }
  return Error(404, "404 page not found");
}

HttpResponse OpsServer::Health(const HttpRequest& request, std::string_view name,
                               const std::vector<std::pair<std::string, ReadyCheck>>& checks) {
  std::set<std::string, std::less<>> excluded;
  for (const auto& [k, v] : request.query) {
    if (k == "exclude") excluded.insert(v);
  }
  std::string list;
  bool failed = false;
  for (const auto& [check_name, check] : checks) {
    if (auto it = excluded.find(check_name); it != excluded.end()) {
      excluded.erase(it);
      list += fmt::format("[+]{} excluded: ok\n", check_name);
      continue;
    }
    std::string reason = Run(check);
    if (reason.empty()) {
      list += fmt::format("[+]{} ok\n", check_name);
    } else {
      failed = true;
      list += fmt::format("[-]{} failed: {}\n", check_name, OneLine(std::move(reason)));
    }
  }
  if (!excluded.empty()) {
    std::vector<std::string> quoted;
    for (const std::string& e : excluded) quoted.push_back(fmt::format("\"{}\"", e));
    list += fmt::format("warn: some health checks cannot be excluded: no matches for {}\n",
                        fmt::join(quoted, ","));
  }
  if (failed) return Error(500, fmt::format("{}{} check failed", list, name));
  if (!request.HasParam("verbose")) return Text(200, "ok");
  return Text(200, fmt::format("{}{} check passed\n", list, name));
}

HttpResponse OpsServer::Metrics() {
  std::lock_guard scrape(scrape_mu_);
  std::vector<std::function<void()>> hooks;
  {
    std::lock_guard lock(mu_);
    hooks = collect_hooks_;
  }
  for (const auto& hook : hooks) {
    try {
      hook();
    } catch (...) {
      // A hook that fails leaves its gauges as they were; the scrape goes on.
    }
  }
  HttpResponse r;
  r.status = 200;
  r.content_type = std::string(kMetricsContentType);
  r.body = prometheus::TextSerializer().Serialize(registry_->Collect());
  return r;
}

}  // namespace muster::ops
