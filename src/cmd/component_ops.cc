#include "cmd/component_ops.h"

#include <cstdio>

#include "cmd/preflight.h"
#include "fmt/format.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"

namespace muster::cmd {

absl::StatusOr<std::unique_ptr<ops::OpsServer>> ServeOps(
    const std::string& command, const std::string& address,
    std::shared_ptr<prometheus::Registry> registry,
    const std::function<void(ops::OpsServer&)>& setup) {
  ops::OpsServerOptions options;
  options.registry = std::move(registry);
  auto server = ops::OpsServer::Start(address, options);
  if (!server.ok()) {
    return absl::Status(
        server.status().code(),
        fmt::format("--listen-address {}: {}", address, std::string(server.status().message())));
  }
  setup(**server);
  auto host = ops::ParseHostPort(address);
  std::string shown = host.ok() && !host->host.empty() ? host->host : "0.0.0.0";
  if (shown.find(':') != std::string::npos) shown = "[" + shown + "]";
  fmt::print(stderr, "{}: serving /healthz, /livez, /readyz and /metrics at http://{}:{}\n",
             command, shown, (*server)->port());
  std::fflush(stderr);
  return server;
}

absl::StatusOr<std::unique_ptr<ComponentOps>> ComponentOps::Start(const std::string& command,
                                                                  const std::string& address) {
  std::unique_ptr<ComponentOps> ops(new ComponentOps());
  ops->registry_ = std::make_shared<prometheus::Registry>();
  ops->leader_ = &prometheus::BuildGauge()
                      .Name("muster_leader")
                      .Help("1 while this replica holds its leader Lease (or runs without leader "
                            "election), 0 while it stands by")
                      .Register(*ops->registry_)
                      .Add({});
  if (address.empty()) return ops;
  ComponentOps* self = ops.get();
  auto server = ServeOps(command, address, ops->registry_, [self](ops::OpsServer& server) {
    server.AddReadyCheck("api", [self] {
      std::lock_guard<std::mutex> lock(self->mu_);
      return self->api_problem_;
    });
    server.AddReadyCheck("caches", [self]() -> std::string {
      if (!self->leading_.load() || self->synced_.load()) return "";
      return "the informers' first lists are not in yet";
    });
  });
  if (!server.ok()) return server.status();
  ops->server_ = *std::move(server);
  return ops;
}

ComponentOps::~ComponentOps() {
  if (server_) server_->Stop();
}

void ComponentOps::SetApiProblem(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  api_problem_ = reason;
}

void ComponentOps::SetLeader(bool leading) {
  leading_ = leading;
  leader_->Set(leading ? 1 : 0);
}

void ComponentOps::SetSynced(bool synced) { synced_ = synced; }

std::optional<int> WaitUntilLeading(ComponentOps& ops, const std::string& command,
                                    client::Client& api,
                                    const std::vector<client::Resource>& resources,
                                    const LeaderElectionFlags& election, const RemoteApi& remote,
                                    const sigset_t& signals,
                                    std::unique_ptr<Leadership>& leadership) {
  // Until the server is reachable, accepts us and serves (and lets us list) every resource the
  // component watches, say why once and wait: a missing CRD or permission is fixed without a
  // restart, and is no crash loop.
  if (int signal = WaitForApi(api, resources, signals, command,
                              [&ops](const std::string& reason) { ops.SetApiProblem(reason); });
      signal != 0) {
    fmt::print(stderr, "{}: {} while waiting for the API server, stopping\n", command,
               SignalName(signal));
    return 0;
  }
  // Only the leader works: a standby waits here until it leads, and exits 1 the moment it stops
  // leading (Leadership's on_stopped_leading).
  if (election.leader_elect) {
    auto started = Leadership::Start(command, election, remote);
    if (!started.ok()) {
      fmt::print(stderr, "{}: {}\n", command, std::string(started.status().message()));
      return absl::IsInvalidArgument(started.status()) ? 2 : 1;
    }
    leadership = std::move(*started);
    if (int signal = leadership->WaitToLead(signals); signal != 0) {
      fmt::print(stderr, "{}: {} while standing by, stopping\n", command, SignalName(signal));
      return 0;
    }
  }
  ops.SetLeader(true);
  return std::nullopt;
}

}  // namespace muster::cmd
