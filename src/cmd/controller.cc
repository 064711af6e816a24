// `muster controller`: the Volcano Job controller alone, against any API server a kubeconfig
// names (muster's own, or a real cluster with Volcano's CRDs) or, in a pod, the cluster's own. As
// vc-controller-manager it elects a leader among its replicas (cmd/leadership.h) and limits its
// request rate (--kube-api-qps, --kube-api-burst: vc-controller-manager's flags and defaults).

#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "client/client.h"
#include "client/http_transport.h"
#include "cmd/commands.h"
#include "cmd/component_ops.h"
#include "cmd/leadership.h"
#include "cmd/preflight.h"
#include "cmd/process.h"
#include "controller/job_controller.h"
#include "fmt/format.h"

namespace muster::cmd {
namespace {

struct ControllerFlags {
  std::string kubeconfig;
  std::string context;
  int workers = 4;
  int sync_timeout_seconds = 60;
  double kube_api_qps = 50;  // vc-controller-manager's defaults
  int kube_api_burst = 100;
  LeaderElectionFlags election;
  std::string listen_address = ":8081";
};

// Runs the controller until SIGINT or SIGTERM (taken with sigwait, as `muster apiserver` does).
int RunController(const ControllerFlags& flags) {
  const sigset_t signals = BlockSignals();

  auto remote = Connect(flags.kubeconfig, flags.context,
                        {.qps = flags.kube_api_qps, .burst = flags.kube_api_burst});
  if (!remote.ok()) {
    fmt::print(stderr, "muster controller: {}\n", std::string(remote.status().message()));
    return absl::IsNotFound(remote.status()) ? 2 : 1;
  }
  auto ops = ComponentOps::Start("muster controller", flags.listen_address);
  if (!ops.ok()) {
    fmt::print(stderr, "muster controller: {}\n", std::string(ops.status().message()));
    return 2;
  }
  client::Client api(remote->transport);
  // Until the server is reachable, accepts us and serves every resource the controller watches,
  // say why once and wait (cmd/preflight.h).
  if (int signal = WaitForApi(api,
                              {client::VolcanoJobs(), client::Pods(), client::PodGroups(),
                               client::PriorityClasses()},
                              signals, "muster controller",
                              [&ops](const std::string& reason) { (*ops)->SetApiProblem(reason); });
      signal != 0) {
    fmt::print(stderr, "muster controller: {} while waiting for the API server, stopping\n",
               SignalName(signal));
    return 0;
  }
  // Only the leader reconciles: a standby waits here until it leads, and exits 1 the moment it
  // stops leading (Leadership's on_stopped_leading).
  std::unique_ptr<Leadership> leadership;
  if (flags.election.leader_elect) {
    auto started = Leadership::Start("muster controller", flags.election, *remote);
    if (!started.ok()) {
      fmt::print(stderr, "muster controller: {}\n", std::string(started.status().message()));
      return absl::IsInvalidArgument(started.status()) ? 2 : 1;
    }
    leadership = std::move(*started);
    if (int signal = leadership->WaitToLead(signals); signal != 0) {
      fmt::print(stderr, "muster controller: {} while standing by, stopping\n",
                 SignalName(signal));
      return 0;
    }
  }
  (*ops)->SetLeader(true);
  controller::JobControllerOptions options;
  options.workers = flags.workers;
  options.metrics = (*ops)->registry();
  controller::JobController job_controller(api, options);
  if (absl::Status started = job_controller.Start(std::chrono::seconds(flags.sync_timeout_seconds));
      !started.ok()) {
    fmt::print(stderr, "muster controller: {} ({})\n", std::string(started.message()),
               remote->server);
    return 1;
  }
  (*ops)->SetSynced(true);
  fmt::print("job controller running against {}\n", remote->server);
  std::fflush(stdout);

  fmt::print(stderr, "muster controller: {}, stopping\n", SignalName(WaitForSignal(signals)));
  job_controller.Stop();
  if (leadership) leadership->Stop();  // releases the lease once nothing reconciles any more
  return 0;
}

}  // namespace

Subcommand AddControllerCommand(CLI::App& parent) {
  auto flags = std::make_shared<ControllerFlags>();
  auto* app = parent.add_subcommand(
      "controller",
      "Run the Volcano Job controller alone against an API server: Jobs get their PodGroup, "
      "then their pods once the PodGroup is admitted, phases, policies, retries and plugins. "
      "SIGINT or SIGTERM stop it.");
  app->add_option("--kubeconfig", flags->kubeconfig,
                  "kubeconfig of the API server (default: $KUBECONFIG, else the cluster this pod "
                  "runs in)");
  app->add_option("--context", flags->context, "kubeconfig context (default: current-context)");
  app->add_option("--workers", flags->workers,
                  "worker threads; one Job's requests always run on the same one")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app->add_option("--listen-address", flags->listen_address,
                  "where /healthz, /livez, /readyz and /metrics are served (host:port, port 0 "
                  "picks one; \"\" serves nothing)")
      ->capture_default_str();
  app->add_option("--sync-timeout", flags->sync_timeout_seconds,
                  "seconds to wait for the first lists of Jobs, pods and PodGroups")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  app->add_option("--kube-api-qps", flags->kube_api_qps,
                  "requests a second to the API server, on average (0: unlimited)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app->add_option("--kube-api-burst", flags->kube_api_burst,
                  "requests sent at once after a quiet spell")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  AddLeaderElectionFlags(*app, flags->election, "muster-controller");
  return {app, [flags] { return RunController(*flags); }};
}

}  // namespace muster::cmd
