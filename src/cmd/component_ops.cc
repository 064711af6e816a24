#include "cmd/component_ops.h"

#include <cstdio>

#include "fmt/format.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"

namespace muster::cmd {

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
  ops::OpsServerOptions options;
  options.registry = ops->registry_;
  auto server = ops::OpsServer::Start(address, options);
  if (!server.ok()) {
    return absl::Status(server.status().code(),
                        fmt::format("--listen-address {}: {}", address,
                                    std::string(server.status().message())));
  }
  ops->server_ = *std::move(server);
  ComponentOps* self = ops.get();
  ops->server_->AddReadyCheck("api", [self] {
    std::lock_guard<std::mutex> lock(self->mu_);
    return self->api_problem_;
  });
  ops->server_->AddReadyCheck("caches", [self]() -> std::string {
    if (!self->leading_.load() || self->synced_.load()) return "";
    return "the informers' first lists are not in yet";
  });
  auto host = ops::ParseHostPort(address);
  std::string shown = host.ok() && !host->host.empty() ? host->host : "0.0.0.0";
  if (shown.find(':') != std::string::npos) shown = "[" + shown + "]";
  fmt::print(stderr, "{}: serving /healthz, /livez, /readyz and /metrics at http://{}:{}\n",
             command, shown, ops->server_->port());
  std::fflush(stderr);
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

}  // namespace muster::cmd
