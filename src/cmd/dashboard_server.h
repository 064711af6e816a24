#pragma once

// The dashboard on a cluster: `muster scheduler --dashboard-address=HOST:PORT` serves the same
// page as `muster up` (apiserver/dashboard.h) from a small HTTP server of its own, since a
// scheduler has no API server to serve it from. The page reads the cluster as it does on `muster
// up`, from its own origin, and this server forwards exactly those reads to the cluster's API
// server through the scheduler's own client transport:
//
//   /ui/, /ui/<file>   the embedded files, without a token (they carry no cluster data);
//   /ui/status         the scheduler's cycle latency (DashboardStatusJson), with the token;
//   GET /api/v1/nodes, /api/v1/pods, /api/v1/events,
//       /apis/scheduling.volcano.sh/v1beta1/podgroups, .../queues
//                      lists and watches (?watch=1) of those five cluster-wide collections, with
//                      their query strings, with the token; a watch's lines are relayed as they
//                      come, and it ends when the browser goes or the upstream watch ends;
//   anything else      404, or 405 for another method on the paths above.
//
// The token is random, made at start, and reaches the browser in the URL's fragment (url()),
// which no browser sends to a server. The scheduler's credentials never leave the process: the
// browser gets only what the forwarded lists and watches return, and cannot write.
//
// Thread-safety: Handle may be called from any thread; Stop from any thread but a request's.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "apiserver/http.h"

namespace muster::apiserver {
class Server;
}  // namespace muster::apiserver

namespace muster::client {
class Transport;
}  // namespace muster::client

namespace muster::scheduler {
struct SchedulerStats;
}  // namespace muster::scheduler

namespace muster::cmd {

// The JSON object /ui/status answers, as the page reads it: {"scheduler":{"cycles":N,
// "lastCycleMs":x,"cycleP50Ms":x,"cycleP99Ms":x}} (milliseconds with three decimals). Shared by
// `muster up` (ApiServer::SetDashboardStatus) and DashboardServer.
std::string DashboardStatusJson(const scheduler::SchedulerStats& stats);

// Whether `path` is one of the five collections the page lists and watches.
bool IsForwardedDashboardPath(std::string_view path);

struct DashboardServerOptions {
  // The body of /ui/status; unset: "{}".
  std::function<std::string()> status;
  // The bearer token; empty: 32 random bytes, hex.
  std::string token;
  int threads = 2;
};

class DashboardServer {
 public:
  // Binds `address` (HOST:PORT as ops::ParseHostPort reads it; port 0 picks one) and serves,
  // forwarding to `upstream`. InvalidArgument for an address that does not parse, Unavailable
  // when it cannot be bound.
  static absl::StatusOr<std::unique_ptr<DashboardServer>> Start(
      std::string_view address, std::shared_ptr<client::Transport> upstream,
      DashboardServerOptions options = {});
  ~DashboardServer();  // Stop()
  DashboardServer(const DashboardServer&) = delete;
  DashboardServer& operator=(const DashboardServer&) = delete;

  uint16_t port() const { return port_; }
  const std::string& token() const { return token_; }
  // "http://HOST:PORT/ui/#token=TOKEN" (HOST 127.0.0.1 when bound to every interface).
  const std::string& url() const { return url_; }

  // Ends every watch being relayed and stops serving. Idempotent.
  void Stop();

  // What a request that passed the token check gets (the server calls this).
  apiserver::HttpResponse Handle(const apiserver::HttpRequest& request);

 private:
  DashboardServer(std::shared_ptr<client::Transport> upstream, DashboardServerOptions options);
  apiserver::HttpResponse Forward(const apiserver::HttpRequest& request);

  std::shared_ptr<client::Transport> upstream_;
  DashboardServerOptions options_;
  std::string token_;
  std::string url_;
  uint16_t port_ = 0;
  std::unique_ptr<apiserver::Server> server_;
};

}  // namespace muster::cmd
