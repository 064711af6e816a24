// The dashboard's server on a cluster (dashboard_server.h): the embedded page, /ui/status, and
// the page's lists and watches forwarded through a client::Transport, over apiserver::Server.

#include "cmd/dashboard_server.h"

#include <openssl/rand.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <utility>

#include "apiserver/dashboard.h"
#include "apiserver/server.h"
#include "apiserver/status.h"
#include "boost/json/parse.hpp"
#include "client/client.h"
#include "fmt/format.h"
#include "ops/ops_server.h"
#include "scheduler/scheduler.h"

namespace muster::cmd {
namespace {

using apiserver::HttpRequest;
using apiserver::HttpResponse;

constexpr std::array<std::string_view, 5> kForwardedDashboardPaths = {
    "/api/v1/nodes",
    "/api/v1/pods",
    "/api/v1/events",
    "/apis/scheduling.volcano.sh/v1beta1/podgroups",
    "/apis/scheduling.volcano.sh/v1beta1/queues",
};

// Lines of a relayed watch held for a browser that reads slower than the cluster writes; past
// this the upstream read waits.
constexpr size_t kRelayBacklogBytes = size_t{8} << 20;
constexpr auto kRelayPoll = std::chrono::milliseconds(250);

absl::StatusOr<std::string> RandomDashboardToken() {
  unsigned char raw[32];
  if (RAND_bytes(raw, sizeof(raw)) != 1) {
    return absl::InternalError("cannot generate the dashboard's token: RAND_bytes failed");
  }
  std::string hex;
  hex.reserve(2 * sizeof(raw));
  for (unsigned char c : raw) hex += fmt::format("{:02x}", c);
  return hex;
}

// kube-apiserver reads ?watch with Go's strconv.ParseBool.
bool IsWatchRequest(const HttpRequest& request) {
  if (!request.HasParam("watch")) return false;
  const std::string_view v = request.Param("watch");
  return v == "1" || v == "t" || v == "T" || v == "true" || v == "TRUE" || v == "True";
}

// The cluster's API server could not be reached (or, for a watch, refused without a Status).
apiserver::ApiError DashboardUpstreamFailure(std::string_view why) {
  apiserver::ApiError e;
  e.code = 503;
  e.reason = "ServiceUnavailable";
  e.message = fmt::format("the cluster's API server: {}", why);
  return e;
}

// One watch relayed: the upstream read runs on a thread of its own and queues its lines; the
// server's stream thread, the only user of the browser's sink, writes them and watches for the
// browser going away.
class WatchRelay {
 public:
  // From the upstream reader: false once the relay is ending.
  bool Push(std::string_view line) {
    std::unique_lock lock(mu_);
    while (pending_.size() > kRelayBacklogBytes && !stop_) cv_.wait_for(lock, kRelayPoll);
    if (stop_) return false;
    pending_.append(line);
    pending_ += '\n';
    cv_.notify_all();
    return true;
  }

  // The upstream's end: its status or answer (a non-2xx answer's body is a Status).
  void Finish(absl::StatusOr<client::Response> result) {
    std::lock_guard lock(mu_);
    if (!result.ok()) {
      end_ = apiserver::StatusJson(
          DashboardUpstreamFailure(std::string(result.status().message())));
    } else if (result->status < 200 || result->status > 299) {
      // The cluster's Status as it is; anything else (a proxy's page) described in one.
      boost::system::error_code ec;
      const boost::json::value body = boost::json::parse(result->body, ec);
      end_ = !ec && body.is_object()
                 ? result->body
                 : apiserver::StatusJson(DashboardUpstreamFailure(
                       fmt::format("HTTP {}: {}", result->status, result->body.substr(0, 200))));
    }
    finished_ = true;
    cv_.notify_all();
  }

  // Runs on the server's stream thread until the upstream ends or the browser goes.
  void Relay(apiserver::StreamSink& sink) {
    for (;;) {
      std::string ready;  // whole lines, written as one chunk
      bool finished = false;
      std::string end;
      {
        std::unique_lock lock(mu_);
        cv_.wait_for(lock, kRelayPoll, [&] { return !pending_.empty() || finished_; });
        ready.swap(pending_);
        finished = finished_;
        end = end_;
        cv_.notify_all();
      }
      if (!ready.empty() && !sink.Write(ready)) return;
      if (finished) {
        // A watch that could not start, as kube-apiserver reports one that fails: an ERROR
        // event carrying the Status, which the page shows in its banner.
        if (!end.empty()) sink.Write(fmt::format(R"({{"type":"ERROR","object":{}}})"
                                                 "\n",
                                                 end));
        return;
      }
      if (sink.Cancelled()) return;
    }
  }

  void Stop() {
    std::lock_guard lock(mu_);
    stop_ = true;
    stop_flag_.store(true);
    cv_.notify_all();
  }
  const std::atomic<bool>& stop_flag() const { return stop_flag_; }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::string pending_;  // lines not yet written; guarded by mu_, as are the fields below
  bool finished_ = false;
  std::string end_;  // the Status of an upstream that failed or refused
  bool stop_ = false;
  std::atomic<bool> stop_flag_{false};  // what the transport polls
};

}  // namespace

std::string DashboardStatusJson(const scheduler::SchedulerStats& stats) {
  auto ms = [](std::chrono::microseconds d) { return static_cast<double>(d.count()) / 1000.0; };
  return fmt::format(R"({{"scheduler":{{"cycles":{},"lastCycleMs":{:.3f},)"
                     R"("cycleP50Ms":{:.3f},"cycleP99Ms":{:.3f}}}}})",
                     stats.cycles, ms(stats.last_cycle), ms(stats.cycle_p50),
                     ms(stats.cycle_p99));
}

bool IsForwardedDashboardPath(std::string_view path) {
  return std::find(kForwardedDashboardPaths.begin(), kForwardedDashboardPaths.end(), path) !=
         kForwardedDashboardPaths.end();
}

DashboardServer::DashboardServer(std::shared_ptr<client::Transport> upstream,
                                 DashboardServerOptions options)
    : upstream_(std::move(upstream)), options_(std::move(options)) {}

DashboardServer::~DashboardServer() { Stop(); }

absl::StatusOr<std::unique_ptr<DashboardServer>> DashboardServer::Start(
    std::string_view address, std::shared_ptr<client::Transport> upstream,
    DashboardServerOptions options) {
  absl::StatusOr<ops::HostPort> hp = ops::ParseHostPort(address);
  if (!hp.ok()) return hp.status();
  if (!upstream) return absl::InvalidArgumentError("the dashboard needs a client transport");
  std::string token = options.token;
  if (token.empty()) {
    absl::StatusOr<std::string> made = RandomDashboardToken();
    if (!made.ok()) return made.status();
    token = *std::move(made);
  }
  const int threads = std::max(1, options.threads);
  std::unique_ptr<DashboardServer> dashboard(
      new DashboardServer(std::move(upstream), std::move(options)));
  dashboard->token_ = token;

  apiserver::ServerOptions so;
  so.address = hp->host;
  so.port = hp->port;
  so.threads = threads;
  so.max_body_bytes = 64 << 10;  // nothing here takes a body
  so.bearer_token = token;
  so.public_path = apiserver::IsDashboardFilePath;
  so.long_running = IsWatchRequest;
  // A page holds five watches; a few tabs are plenty.
  so.max_streams = 100;
  so.max_streams_per_client = 50;
  so.max_requests_inflight = 50;
  so.max_mutating_requests_inflight = 1;
  DashboardServer* self = dashboard.get();
  auto server = apiserver::Server::Start(
      so, [self](const HttpRequest& request) { return self->Handle(request); });
  if (!server.ok()) return server.status();
  dashboard->port_ = (*server)->port();
  dashboard->server_ = *std::move(server);
  std::string host = hp->host == "0.0.0.0" || hp->host == "::" ? "127.0.0.1" : hp->host;
  if (host.find(':') != std::string::npos) host = fmt::format("[{}]", host);
  dashboard->url_ = fmt::format("http://{}:{}/ui/#token={}", host, dashboard->port_, token);
  return dashboard;
}

void DashboardServer::Stop() {
  if (server_) server_->Stop();  // ends every relayed watch and joins their threads
}

HttpResponse DashboardServer::Handle(const HttpRequest& request) {
  if (request.path == apiserver::kDashboardStatusPath) {
    if (request.method != "GET") {
      HttpResponse r = apiserver::ErrorResponse(apiserver::MethodNotAllowed(request.method));
      r.headers.emplace_back("Allow", "GET");
      return r;
    }
    HttpResponse r;
    r.headers.emplace_back("Cache-Control", "no-store");
    r.body = options_.status ? options_.status() : "{}";
    return r;
  }
  if (apiserver::IsDashboardPath(request.path)) return apiserver::ServeDashboard(request);
  if (!IsForwardedDashboardPath(request.path)) {
    return apiserver::ErrorResponse(apiserver::PathNotFound());
  }
  if (request.method != "GET") {
    HttpResponse r = apiserver::ErrorResponse(apiserver::MethodNotAllowed(
        request.method, "the dashboard forwards only lists and watches"));
    r.headers.emplace_back("Allow", "GET");
    return r;
  }
  return Forward(request);
}

HttpResponse DashboardServer::Forward(const HttpRequest& request) {
  client::Request upstream_request;
  upstream_request.method = "GET";
  upstream_request.path = request.path;
  upstream_request.query = request.query;
  HttpResponse r;
  r.headers.emplace_back("Cache-Control", "no-store");
  if (!IsWatchRequest(request)) {
    absl::StatusOr<client::Response> answer = upstream_->Do(upstream_request);
    if (!answer.ok()) {
      return apiserver::ErrorResponse(
          DashboardUpstreamFailure(std::string(answer.status().message())));
    }
    r.status = answer->status;
    r.body = std::move(answer->body);
    return r;
  }
  std::shared_ptr<client::Transport> upstream = upstream_;
  r.stream = [upstream, upstream_request = std::move(upstream_request)](
                 apiserver::StreamSink& sink) {
    WatchRelay relay;
    std::thread reader([&] {
      relay.Finish(upstream->Stream(
          upstream_request, [&](std::string_view line) { return relay.Push(line); },
          relay.stop_flag()));
    });
    relay.Relay(sink);
    relay.Stop();
    reader.join();
  };
  return r;
}

}  // namespace muster::cmd
