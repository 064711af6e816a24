// `muster controller`: the Volcano Job controller, the PodGroup controller (one-member
// PodGroups for plain pods of the scheduler, controller/podgroup_controller.h) and the queue
// controller (the default and root queues, new queues opened under root, OpenQueue and
// CloseQueue Commands down a queue tree, controller/queue_controller.h), against any API
// server a kubeconfig names (muster's own, or a real cluster with Volcano's CRDs) or, in a pod,
// the cluster's own. As vc-controller-manager it elects a leader among its replicas
// (cmd/leadership.h) and limits its request rate (--kube-api-qps, --kube-api-burst:
// vc-controller-manager's flags and defaults).

#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "client/client.h"
#include "client/http_transport.h"
#include "cmd/commands.h"
#include "cmd/component_ops.h"
#include "cmd/leadership.h"
#include "cmd/process.h"
#include "controller/hypernode_controller.h"
#include "controller/job_controller.h"
#include "controller/podgroup_controller.h"
#include "controller/queue_controller.h"
#include "fmt/format.h"

namespace muster::cmd {
namespace {

struct ControllerFlags {
  std::string kubeconfig;
  std::string context;
  int workers = 4;
  // The scheduler's --scheduler-name: whose plain pods get a PodGroup.
  std::vector<std::string> scheduler_names = {"volcano", "muster"};
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
  std::unique_ptr<Leadership> leadership;
  const std::vector<client::Resource> watched = {
      client::VolcanoJobs(),     client::Pods(),   client::PodGroups(),
      client::PriorityClasses(), client::Queues(), client::Commands()};
  if (std::optional<int> exit = WaitUntilLeading(**ops, "muster controller", api, watched,
                                                 flags.election, *remote, signals, leadership)) {
    return *exit;
  }
  controller::JobControllerOptions options;
  options.workers = flags.workers;
  options.metrics = (*ops)->registry();
  controller::PodGroupControllerOptions podgroup_options;
  podgroup_options.scheduler_names = flags.scheduler_names;
  std::vector<std::unique_ptr<controller::Controller>> controllers;
  controllers.push_back(controller::NewJobController(api, options));
  controllers.push_back(controller::NewPodGroupController(api, podgroup_options));
  controller::QueueControllerOptions queue_options;
  queue_options.metrics = (*ops)->registry();
  controllers.push_back(controller::NewQueueController(api, queue_options));
  // HyperNodes' status.nodeCount, where the API serves HyperNodes and lets this identity list
  // them (as the scheduler decides whether to watch them; Volcano's CRDs before 1.11 have none).
  if (absl::Status probe =
          client::ListableWithin(api, client::HyperNodes(), std::chrono::seconds(30));
      probe.ok()) {
    controllers.push_back(controller::NewHyperNodeController(api));
  } else {
    fmt::print(stderr, "muster controller: not counting HyperNodes' nodes: {}\n",
               std::string(probe.message()));
  }
  auto stop_all = [&controllers] {
    for (auto it = controllers.rbegin(); it != controllers.rend(); ++it) (*it)->Stop();
  };
  for (const std::unique_ptr<controller::Controller>& c : controllers) {
    if (absl::Status started = c->Start(std::chrono::seconds(flags.sync_timeout_seconds));
        !started.ok()) {
      fmt::print(stderr, "muster controller: {} ({})\n", std::string(started.message()),
                 remote->server);
      stop_all();
      return 1;
    }
  }
  (*ops)->SetSynced(true);
  fmt::print("job controller running against {}\n", remote->server);
  std::fflush(stdout);

  fmt::print(stderr, "muster controller: {}, stopping\n", SignalName(WaitForSignal(signals)));
  stop_all();
  if (leadership) leadership->Stop();  // releases the lease once nothing reconciles any more
  return 0;
}

}  // namespace

Subcommand AddControllerCommand(CLI::App& parent) {
  auto flags = std::make_shared<ControllerFlags>();
  auto* app = parent.add_subcommand(
      "controller",
      "Run the Volcano Job controller against an API server: Jobs get their PodGroup, "
      "then their pods once the PodGroup is admitted, phases, policies, retries, plugins and "
      "Commands (vcctl job suspend, resume); the PodGroup controller: a pending pod of the "
      "scheduler that names no PodGroup gets a one-member one; and the queue controller: "
      "the default and root queues, new queues opened under root, OpenQueue and CloseQueue "
      "Commands. SIGINT or SIGTERM stop it.");
  app->add_option("--kubeconfig", flags->kubeconfig,
                  "kubeconfig of the API server (default: $KUBECONFIG, else the cluster this pod "
                  "runs in)");
  app->add_option("--context", flags->context, "kubeconfig context (default: current-context)");
  app->add_option("--workers", flags->workers,
                  "worker threads; one Job's requests always run on the same one")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app->add_option("--scheduler-name", flags->scheduler_names,
                  "schedulerName of the scheduler's pods, as `muster scheduler --scheduler-name` "
                  "(repeat for several): those naming no PodGroup get one")
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
