#pragma once

// Leader election for `muster scheduler` and `muster controller`, as kube-scheduler runs it
// (cmd/kube-scheduler/app/server.go over client-go's leaderelection; the flags are
// component-base's BindLeaderElectionFlags): the process campaigns for a Lease, starts its work
// once it leads, and exits with status 1 ("leaderelection lost") the moment it stops leading, so
// that its Deployment restarts it as a standby and it never writes again. SIGINT or SIGTERM
// release the lease after the work has stopped, so that a standby takes over at once.

#include <signal.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "client/client.h"
#include "client/leader_election.h"
#include "cmd/process.h"

namespace muster::cmd {

struct LeaderElectionFlags {
  bool leader_elect = true;
  std::string lease_duration = "15s";
  std::string renew_deadline = "10s";
  std::string retry_period = "2s";
  std::string resource_name;  // the command's: "muster-scheduler", "muster-controller"
  std::string resource_namespace = "kube-system";
};

// --leader-elect, --leader-elect-lease-duration, --leader-elect-renew-deadline,
// --leader-elect-retry-period, --leader-elect-resource-name (default `lease_name`),
// --leader-elect-resource-namespace.
void AddLeaderElectionFlags(CLI::App& app, LeaderElectionFlags& flags,
                            const std::string& lease_name);

// One process's candidacy. Not thread-safe: one thread (the command's main) calls it.
class Leadership {
 public:
  // Parses the flags (InvalidArgument naming the flag at fault) and starts campaigning, with its
  // own transport to `remote` whose requests time out after half the renew deadline (at least
  // 1 s), as client-go's leader-election client. `command` prefixes every line printed
  // ("muster scheduler").
  static absl::StatusOr<std::unique_ptr<Leadership>> Start(const std::string& command,
                                                           const LeaderElectionFlags& flags,
                                                           const RemoteApi& remote);
  ~Leadership();  // Stop()

  // Waits until this process leads (0) or one of `signals` comes first (that signal; the
  // campaign is then stopped).
  int WaitToLead(const sigset_t& signals);
  // Stops campaigning and, when leading, releases the lease. Call once the work has stopped.
  void Stop();

 private:
  Leadership() = default;

  std::string command_;
  std::string lease_;  // "namespace/name"
  std::unique_ptr<client::Client> client_;
  std::unique_ptr<client::LeaderElector> elector_;
  std::atomic<bool> leading_{false};
  std::atomic<bool> stopping_{false};  // on_stopped_leading from Stop itself: no exit
};

}  // namespace muster::cmd
