// Leader election for the long-running commands (leadership.h), following kube-scheduler's
// server.go: OnStartedLeading starts the work, OnStoppedLeading exits 1 unless the process was
// asked to stop.

#include "cmd/leadership.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "client/http_transport.h"
#include "common/go_duration.h"
#include "fmt/format.h"

namespace muster::cmd {
namespace {

absl::StatusOr<std::chrono::milliseconds> Duration(const std::string& flag,
                                                   const std::string& text) {
  auto seconds = common::ParseGoDurationSeconds(text);
  if (!seconds.ok() || *seconds <= 0) {
    return absl::InvalidArgumentError(
        fmt::format("{} {:?}: want a positive duration such as 15s or 500ms", flag, text));
  }
  return std::chrono::milliseconds(static_cast<int64_t>(*seconds * 1000 + 0.5));
}

}  // namespace

void AddLeaderElectionFlags(CLI::App& app, LeaderElectionFlags& flags,
                            const std::string& lease_name) {
  flags.resource_name = lease_name;
  app.add_flag("--leader-elect", flags.leader_elect,
               "run only while holding a Lease, so that of several replicas one is active "
               "(default true; --leader-elect=false: run at once, alone)")
      ->capture_default_str();
  app.add_option("--leader-elect-lease-duration", flags.lease_duration,
                 "how long a standby waits, after the leader last renewed, before taking the "
                 "lease")
      ->capture_default_str();
  app.add_option("--leader-elect-renew-deadline", flags.renew_deadline,
                 "how long the leader keeps trying to renew before it stops leading (and the "
                 "process exits); shorter than the lease duration")
      ->capture_default_str();
  app.add_option("--leader-elect-retry-period", flags.retry_period,
                 "time between two tries to acquire or renew the lease")
      ->capture_default_str();
  app.add_option("--leader-elect-resource-name", flags.resource_name,
                 "name of the Lease (coordination.k8s.io/v1)")
      ->capture_default_str();
  app.add_option("--leader-elect-resource-namespace", flags.resource_namespace,
                 "namespace of the Lease")
      ->capture_default_str();
}

absl::StatusOr<std::unique_ptr<Leadership>> Leadership::Start(const std::string& command,
                                                              const LeaderElectionFlags& flags,
                                                              const RemoteApi& remote) {
  auto lease = Duration("--leader-elect-lease-duration", flags.lease_duration);
  if (!lease.ok()) return lease.status();
  auto renew = Duration("--leader-elect-renew-deadline", flags.renew_deadline);
  if (!renew.ok()) return renew.status();
  auto retry = Duration("--leader-elect-retry-period", flags.retry_period);
  if (!retry.ok()) return retry.status();

  std::unique_ptr<Leadership> self(new Leadership());
  self->command_ = command;
  self->lease_ = flags.resource_namespace + "/" + flags.resource_name;

  // resourcelock.NewFromKubeconfig: the election's own client, timing out after half the renew
  // deadline, so that one hung request cannot use up the whole deadline.
  client::HttpTransportConfig config = remote.config;
  config.request_timeout = std::max<std::chrono::milliseconds>(*renew / 2, std::chrono::seconds(1));
  auto transport = client::MakeHttpTransport(config);
  if (!transport.ok()) return transport.status();
  self->client_ = std::make_unique<client::Client>(*transport);

  Leadership* raw = self.get();
  client::LeaderElectionConfig election;
  election.lease_namespace = flags.resource_namespace;
  election.lease_name = flags.resource_name;
  election.identity = client::DefaultLeaderIdentity();
  election.lease_duration = *lease;
  election.renew_deadline = *renew;
  election.retry_period = *retry;
  const std::string identity = election.identity;
  election.on_started_leading = [raw, identity] {
    fmt::print(stderr, "{}: became leader (lease {}, identity {})\n", raw->command_, raw->lease_,
               identity);
    std::fflush(stderr);
    raw->leading_ = true;
  };
  election.on_stopped_leading = [raw, identity] {
    if (raw->stopping_) return;
    // kube-scheduler's "Leaderelection lost" and exit 1: another replica may lead from now on,
    // so nothing of this process may write again; no orderly shutdown.
    fmt::print(stderr, "{}: leaderelection lost (lease {}, identity {}), exiting\n",
               raw->command_, raw->lease_, identity);
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(1);
  };
  election.on_new_leader = [raw, identity](const std::string& leader) {
    if (leader == identity) return;
    fmt::print(stderr, "{}: lease {} is held by {}; standing by\n", raw->command_, raw->lease_,
               leader);
    std::fflush(stderr);
  };
  election.log = [raw](const std::string& line) {
    fmt::print(stderr, "{}: leader election: {}\n", raw->command_, line);
    std::fflush(stderr);
  };
  auto elector = client::LeaderElector::Create(*self->client_, std::move(election));
  if (!elector.ok()) return elector.status();
  self->elector_ = std::move(*elector);
  fmt::print(stderr, "{}: campaigning for lease {} against {} as {}\n", command, self->lease_,
             remote.server, identity);
  std::fflush(stderr);
  if (absl::Status s = self->elector_->Start(); !s.ok()) return s;
  return self;
}

Leadership::~Leadership() { Stop(); }

int Leadership::WaitToLead(const sigset_t& signals) {
  while (!leading_) {
    if (int signal = WaitForSignal(signals, std::chrono::milliseconds(200)); signal != 0) {
      Stop();
      return signal;
    }
  }
  return 0;
}

void Leadership::Stop() {
  if (!elector_ || stopping_.exchange(true)) return;
  elector_->Stop(/*release=*/true);
}

}  // namespace muster::cmd
