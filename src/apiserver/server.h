#pragma once

// The API server's HTTP/1.1 front end: Boost.Beast over an io_context run by a small thread pool,
// keep-alive, a request body limit, optional bearer-token auth and TLS, and chunked streaming
// responses (watches, log follow) that run on threads of their own. It knows nothing of
// Kubernetes beyond rendering its own refusals (401, 413, 400) as Status objects; everything
// else goes to the handler.
//
// This is the only translation unit that includes Beast (each one costs ~25 s to compile).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "apiserver/http.h"

namespace muster::apiserver {

struct ServerOptions {
  std::string address = "127.0.0.1";  // IPv4 or IPv6 literal
  uint16_t port = 6443;               // 0 picks a free port; see Server::port()
  int threads = 4;
  size_t max_body_bytes = size_t{3} << 20;  // larger request bodies get 413
  // When not empty, every request must carry `Authorization: Bearer <token>`, else 401.
  std::string bearer_token;
  // When both are set (PEM), the server speaks TLS only.
  std::string tls_cert_pem;
  std::string tls_key_pem;
};

// Called for every request on a pool thread; may block briefly (store writes). Must not throw,
// but an exception is caught and answered with a 500 Status.
using RequestHandler = std::function<HttpResponse(const HttpRequest&)>;

class Server {
 public:
  // Binds, listens and starts the thread pool. Errors: the address does not parse or the port
  // cannot be bound (InvalidArgument / Unavailable), a bad certificate or key (InvalidArgument).
  static absl::StatusOr<std::unique_ptr<Server>> Start(const ServerOptions& options,
                                                       RequestHandler handler);
  ~Server();  // calls Stop()

  // The bound port (the chosen one when options.port was 0).
  uint16_t port() const;

  // Stops accepting, ends every streaming response (the client sees the chunked body end),
  // closes connections and joins the threads. Idempotent; thread-safe.
  void Stop();

  struct Impl;  // public so that the connection code in server.cc can name it

 private:
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace muster::apiserver
