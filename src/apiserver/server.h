#pragma once

// The API server's HTTP/1.1 front end: Boost.Beast over an io_context run by a small thread pool,
// keep-alive, optional bearer-token auth and TLS, chunked streaming responses (watches, log
// follow) that run on threads of their own, and kube-apiserver's connection handling: its header
// size limit and timeouts (k8s.io/apiserver pkg/server/secure_serving.go), its in-flight request
// limits (pkg/server/filters/maxinflight.go), a request body limit and a cap on connections. It
// knows nothing of Kubernetes beyond rendering its own refusals (400, 401, 413, 429, 431) as
// Status objects; everything else goes to the handler.
//
// This is the only translation unit that includes Beast (each one costs ~25 s to compile).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "apiserver/http.h"

namespace muster::apiserver {

struct ServerOptions {
  std::string address = "127.0.0.1";  // IPv4 or IPv6 literal
  uint16_t port = 6443;               // 0 picks a free port; see Server::port()
  int threads = 4;
  size_t max_body_bytes = size_t{3} << 20;  // larger request bodies get 413
  // Larger request headers (with the request line) get 431 and the connection is closed
  // (kube-apiserver's MaxHeaderBytes).
  size_t max_header_bytes = size_t{1} << 20;
  // From a connection's start or a request's first byte to the end of its headers; a client
  // slower than that (one byte at a time) is cut off. Also bounds the TLS handshake.
  // kube-apiserver's ReadHeaderTimeout.
  std::chrono::milliseconds header_timeout = std::chrono::seconds(32);
  // A keep-alive connection is closed after this long without the next request
  // (kube-apiserver's IdleTimeout).
  std::chrono::milliseconds idle_timeout = std::chrono::seconds(90);
  // From the end of the headers to the end of the body; slower clients are cut off.
  // kube-apiserver sets no ReadTimeout; this is its --request-timeout default, which bounds
  // every request that is not long-running.
  std::chrono::milliseconds body_timeout = std::chrono::minutes(1);
  // Requests in flight (from their headers to their answer) at once, apart for mutating ones
  // (POST, PUT, PATCH, DELETE) and the rest; past a limit, 429 with Retry-After: 1. 0: no
  // limit. kube-apiserver's --max-requests-inflight and --max-mutating-requests-inflight and
  // their defaults. Requests that `long_running` picks (watches, log streams) are not counted,
  // nor a streaming response once the handler has returned it.
  int max_requests_inflight = 400;
  int max_mutating_requests_inflight = 200;
  // Sees method, path and query; called from the pool's threads. Unset: none is long-running.
  std::function<bool(const HttpRequest&)> long_running;
  // Open connections; a connection past the cap is accepted and closed at once. 0: no cap.
  int max_connections = 30000;
  // Streaming responses (watches, followed logs) at once, in all and from one client address;
  // past either, 429 with Retry-After: 1. 0: no limit. Watches (HttpResponse::source) need no
  // thread each; a stream that does and cannot get one is refused the same way.
  int max_streams = 20000;
  int max_streams_per_client = 10000;
  // When not empty, every request must carry `Authorization: Bearer <token>`, else 401 and the
  // connection is closed. A GET of /version, /healthz, /livez or /readyz (or below them) without
  // an Authorization header is served, as kube-apiserver serves them to system:anonymous
  // (the system:public-info-viewer role); a wrong token is refused there too.
  std::string bearer_token;
  // Further paths whose GET without an Authorization header is served as the ones above are
  // (muster up's dashboard, /ui/: static files that carry no cluster data). Unset: none.
  std::function<bool(std::string_view path)> public_path;
  // When both are set (PEM), the server speaks TLS only.
  std::string tls_cert_pem;
  std::string tls_key_pem;
};

// Called for every request on a pool thread; may block briefly (store writes). Must not throw,
// but an exception is caught and answered with a 500 Status.
using RequestHandler = std::function<HttpResponse(const HttpRequest&)>;

class Server {
 public:
  // Raises the soft open-file limit to the hard one (as Go programs such as kube-apiserver do
  // since Go 1.19), binds, listens and starts the thread pool. Errors: the address does not
  // parse or the port cannot be bound (InvalidArgument / Unavailable), a bad certificate or key
  // (InvalidArgument).
  static absl::StatusOr<std::unique_ptr<Server>> Start(const ServerOptions& options,
                                                       RequestHandler handler);
  ~Server();  // calls Stop()

  // The bound port (the chosen one when options.port was 0).
  uint16_t port() const;

  // Closes the listening socket before anything else (a connection attempt from then on is
  // refused), ends every streaming response (the client sees the chunked body end),
  // closes connections and joins the threads. Idempotent; thread-safe.
  void Stop();

  struct Impl;  // public so that the connection code in server.cc can name it

 private:
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace muster::apiserver
