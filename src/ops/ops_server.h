#pragma once

// The operations endpoint of a muster component (scheduler, controller, device plugin): a small
// HTTP server, apart from any API server, that a kubelet's probes and Prometheus read.
//
//   /healthz, /livez  200 "ok" while the process serves at all (one check, "ping");
//   /readyz           200 "ok" when every registered readiness check passes, else 500;
//   /metrics          the registry in Prometheus' text format 0.0.4.
//
// The health endpoints answer as kube-apiserver's do (k8s.io/apiserver/pkg/server/healthz,
// handleRootHealth and adaptCheckToHandler): `?verbose` lists each check as "[+]name ok" or
// "[-]name failed: <reason>" and ends "readyz check passed"; a failure is always verbose and
// ends "readyz check failed"; `?exclude=name` (repeatable) skips a check ("[+]name excluded:
// ok"); /readyz/<name> runs one check ("ok", or 500 "internal server error: <reason>"). Unlike
// kube-apiserver, which withholds failure reasons from the public list, the reason is shown: the
// endpoint carries no secrets and the reason is what an operator needs.
//
// /metrics calls the collect hooks first (each scrape, one scrape at a time), so that gauges
// mirroring a component's stats are current, then serialises prometheus::Registry::Collect().
//
// Thread-safety: every method may be called from any thread; checks and hooks run on the server's
// threads and must be thread-safe against the component they read. Checks should be quick (a
// probe times out after a second by default).

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "apiserver/http.h"

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace muster::apiserver {
class Server;
}  // namespace muster::apiserver

namespace muster::ops {

// Prometheus' text exposition format, as /metrics declares it.
inline constexpr std::string_view kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";

// A readiness check: "" when it passes, else why not (one line).
using ReadyCheck = std::function<std::string()>;

struct OpsServerOptions {
  // The metrics to serve; null: a registry of the server's own (see OpsServer::registry()).
  std::shared_ptr<prometheus::Registry> registry;
  int threads = 2;
};

// "host:port" as a component's --metrics-address / --healthz-address take it: an IPv4 literal,
// "[IPv6]", "localhost" (127.0.0.1) or nothing (":8080", every IPv4 interface); port 0 picks a
// free one. InvalidArgument for anything else.
struct HostPort {
  std::string host;  // an IP literal, without brackets
  uint16_t port = 0;
};
absl::StatusOr<HostPort> ParseHostPort(std::string_view address);

class OpsServer {
 public:
  // Binds and serves. InvalidArgument for an address ParseHostPort refuses, Unavailable when it
  // cannot be bound.
  static absl::StatusOr<std::unique_ptr<OpsServer>> Start(std::string_view address,
                                                          OpsServerOptions options = {});
  ~OpsServer();  // Stop()
  OpsServer(const OpsServer&) = delete;
  OpsServer& operator=(const OpsServer&) = delete;

  // The bound port (the chosen one when the address said 0).
  uint16_t port() const { return port_; }
  const std::shared_ptr<prometheus::Registry>& registry() const { return registry_; }

  // Adds a readiness check named `name` (checks run and list in the order added; a second check
  // of the same name replaces the first).
  void AddReadyCheck(std::string name, ReadyCheck check);
  // Adds a function called before each /metrics serialisation.
  void AddCollectHook(std::function<void()> hook);

  // Stops serving (the port refuses connections from then on) and joins the server's threads.
  // Idempotent.
  void Stop();

  // What a request gets, without the network (the server calls this for each request).
  apiserver::HttpResponse Handle(const apiserver::HttpRequest& request);

 private:
  explicit OpsServer(std::shared_ptr<prometheus::Registry> registry);
  apiserver::HttpResponse Health(const apiserver::HttpRequest& request, std::string_view name,
                                 const std::vector<std::pair<std::string, ReadyCheck>>& checks);
  apiserver::HttpResponse Metrics();

  std::shared_ptr<prometheus::Registry> registry_;
  std::mutex mu_;  // guards the two lists below
  std::vector<std::pair<std::string, ReadyCheck>> ready_checks_;
  std::vector<std::function<void()>> collect_hooks_;
  std::mutex scrape_mu_;  // one /metrics at a time, so hooks never race each other
  uint16_t port_ = 0;
  std::unique_ptr<apiserver::Server> server_;
};

}  // namespace muster::ops
