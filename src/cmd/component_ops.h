#pragma once

// What `muster scheduler` and `muster controller` serve on --listen-address (ops/ops_server.h):
// /healthz and /livez while the process runs; /readyz with two checks, "api" (the API server
// reachable, our credentials accepted, every resource served and listable: cmd/preflight.h) and
// "caches" (the leader's informers have listed; a standby passes it, so that a Deployment's
// rollout is not held up by replicas that are meant to wait); and /metrics: the component's own
// (scheduler/metrics.h, controller/metrics.h) plus muster_leader, 1 while this replica leads.

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "client/client.h"
#include "cmd/leadership.h"
#include "cmd/process.h"
#include "ops/ops_server.h"

namespace prometheus {
class Gauge;
class Registry;
}  // namespace prometheus

namespace muster::cmd {

// Serves ops::OpsServer on `address` with `registry`, lets `setup` add its checks and hooks, then
// prints "COMMAND: serving /healthz, /livez, /readyz and /metrics at http://HOST:PORT" (tests and
// scripts take the port from it, so nothing reads the endpoint before the checks are there).
// Errors name --listen-address.
absl::StatusOr<std::unique_ptr<ops::OpsServer>> ServeOps(
    const std::string& command, const std::string& address,
    std::shared_ptr<prometheus::Registry> registry,
    const std::function<void(ops::OpsServer&)>& setup);

class ComponentOps {
 public:
  // Serves on `address` with ServeOps ("" serves nothing, but the object still works).
  static absl::StatusOr<std::unique_ptr<ComponentOps>> Start(const std::string& command,
                                                             const std::string& address);
  ~ComponentOps();

  const std::shared_ptr<prometheus::Registry>& registry() const { return registry_; }
  // "" once the API checks pass, else why not.
  void SetApiProblem(const std::string& reason);
  void SetLeader(bool leading);
  void SetSynced(bool synced);

 private:
  ComponentOps() = default;

  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<ops::OpsServer> server_;
  prometheus::Gauge* leader_ = nullptr;
  std::mutex mu_;
  std::string api_problem_ = "not checked yet";
  std::atomic<bool> leading_{false};
  std::atomic<bool> synced_{false};
};

// The start-up `muster scheduler` and `muster controller` share: wait until the API server passes
// CheckApi for `resources` (cmd/preflight.h; each reason on /readyz), then, with
// --leader-elect, until this replica leads (`leadership` then holds the lease; it stays null
// without election), and mark it leading. nullopt: go on and work; otherwise the exit status to
// return (a signal while waiting: 0; an election that cannot start: 1, or 2 for a bad flag).
std::optional<int> WaitUntilLeading(ComponentOps& ops, const std::string& command,
                                    client::Client& api,
                                    const std::vector<client::Resource>& resources,
                                    const LeaderElectionFlags& election, const RemoteApi& remote,
                                    const sigset_t& signals,
                                    std::unique_ptr<Leadership>& leadership);

}  // namespace muster::cmd
