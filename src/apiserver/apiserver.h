#pragma once

// The embedded API server, assembled: the store in a data directory, the REST handlers, the
// lifecycle controller (GC, namespace termination, finalizers, graceful expiry) and the HTTP
// front end, plus the kubeconfig kubectl uses. `muster apiserver` runs it alone; `muster up`
// embeds it.
//
// Data directory layout:
//   store.db         the SQLite store (WAL)
//   kubeconfig       for kubectl (0600)
//   token            the bearer token clients send (0600); not made with insecure_http
//   ca.crt ca.key server.crt server.key   TLS material (keys 0600), kept across restarts
//   logs/<ns>/<pod>/<container>.log       container output written by node agents

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "store/store.h"

namespace muster::apiserver {

class Handlers;

// How much the API server serves at once over HTTP, past which a client gets 429 with
// Retry-After: 1 (ServerOptions). The flags of `muster apiserver` and `muster up` set it.
struct ServingLimits {
  // kube-apiserver's --max-requests-inflight and --max-mutating-requests-inflight: requests
  // served at once (watches and log streams not counted); 0: no limit.
  int max_requests_inflight = 400;
  int max_mutating_requests_inflight = 200;
  // Watches and log streams open at once, in all and from one client address
  // (ServerOptions::max_streams); 0: no limit.
  int max_watches = 20000;
  int max_watches_per_client = 10000;
};

struct ApiServerOptions {
  std::string data_dir;
  // "ADDR:PORT" ("127.0.0.1:6443", "0.0.0.0:0", "[::1]:6443"); port 0 picks a free one.
  std::string listen = "127.0.0.1:6443";
  int threads = 4;
  // Events kept for watches (a watch from before them gets 410 Expired); 0: the store's default.
  size_t watch_history = 0;
  // Warnings, one line each: every damaged object the store holds (store::Object::damaged), at
  // start, and those a list or watch leaves out; stderr, prefixed "muster apiserver: ", when
  // unset.
  std::function<void(std::string_view)> log;
  ServingLimits limits;
  // Plain HTTP without credentials (`--insecure-http`), for loopback addresses only. Otherwise
  // the server serves TLS with a certificate its own CA signs and requires the bearer token;
  // the kubeconfig carries both, as kind's and minikube's do.
  bool insecure_http = false;
};

class ApiServer {
 public:
  // Opens the store, creates the default namespaces and queues, starts the lifecycle controller
  // and the HTTP server, and writes the kubeconfig. It serves TLS and requires the bearer token
  // unless `insecure_http` (refused beyond loopback).
  static absl::StatusOr<std::unique_ptr<ApiServer>> Start(const ApiServerOptions& options);
  ~ApiServer();  // Stop()

  uint16_t port() const;
  // The bound address, "127.0.0.1:6443" or "0.0.0.0:40123" (IPv6 in brackets).
  std::string listen_address() const;
  // What clients dial, "https://HOST:PORT" ("http://127.0.0.1:PORT" with insecure_http).
  const std::string& url() const;
  // The dashboard (dashboard.h): url() + "/ui/", with "#token=TOKEN" when the server requires
  // the token (a secret, as the kubeconfig is: printed to the terminal of the one who started it).
  const std::string& dashboard_url() const;
  // What GET /ui/status answers (dashboard.h): a JSON object made by `status` on a server thread
  // at each request, one call at a time; "{}" until set. Thread-safe; returns once no call of
  // the previous function is under way, so that setting {} before what it reads goes is enough.
  void SetDashboardStatus(std::function<std::string()> status);
  const std::string& kubeconfig_path() const;
  store::Store& store();
  // The REST handlers HTTP requests reach; an in-process client calls them directly
  // (local_transport.h).
  Handlers& handlers();

  // Ends watches and log streams, stops the lifecycle controller and closes the store's users.
  // Idempotent.
  void Stop();

  struct State;

 private:
  explicit ApiServer(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

struct ListenAddress {
  std::string address;  // an IP literal
  uint16_t port = 0;
};
// Splits "ADDR:PORT" ("[v6]:PORT" for IPv6; ":PORT" and "localhost:PORT" mean 127.0.0.1).
// InvalidArgument when it does not parse.
absl::StatusOr<ListenAddress> ParseListenAddress(const std::string& listen);

}  // namespace muster::apiserver
