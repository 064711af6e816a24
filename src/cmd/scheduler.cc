// `muster scheduler`: the scheduler alone, against any API server a kubeconfig names (muster's
// own, or a real cluster with Volcano's CRDs), over HTTP(S).

#include "scheduler/scheduler.h"

#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "client/client.h"
#include "client/http_transport.h"
#include "cmd/commands.h"
#include "cmd/process.h"
#include "core/framework/conf.h"
#include "fmt/format.h"

namespace muster::cmd {
namespace {

struct SchedulerFlags {
  std::string kubeconfig;
  std::string context;
  std::string scheduler_conf;
  std::vector<std::string> scheduler_names = {"volcano", "muster"};
  std::string schedule_period = "1s";
  bool serve_default_scheduler = false;
  int sync_timeout_seconds = 60;
};

// Runs the scheduler until SIGINT or SIGTERM (taken with sigwait, as `muster apiserver` does).
int RunScheduler(const SchedulerFlags& flags) {
  const sigset_t signals = BlockSignals();

  auto period = core::ParseGoDurationSeconds(flags.schedule_period);
  if (!period.ok() || *period <= 0) {
    fmt::print(stderr,
               "muster scheduler: --schedule-period {:?}: want a positive duration such as 1s "
               "or 500ms\n",
               flags.schedule_period);
    return 2;
  }
  const std::string kubeconfig = KubeconfigPath(flags.kubeconfig);
  if (kubeconfig.empty()) {
    fmt::print(stderr,
               "muster scheduler: no kubeconfig: pass --kubeconfig FILE or set KUBECONFIG\n");
    return 2;
  }
  auto remote = ConnectWithKubeconfig(kubeconfig, flags.context);
  if (!remote.ok()) {
    fmt::print(stderr, "muster scheduler: {}\n", std::string(remote.status().message()));
    return 1;
  }
  client::Client api(remote->transport);
  // Fail early, with the server's own words, when it cannot be reached or refuses us.
  if (auto nodes = api.List(client::Nodes(), ""); !nodes.ok()) {
    fmt::print(stderr, "muster scheduler: cannot list nodes at {}: {}\n", remote->server,
               std::string(nodes.status().message()));
    return 1;
  }

  scheduler::SchedulerOptions options;
  options.scheduler_names = flags.scheduler_names;
  options.serve_default_scheduler = flags.serve_default_scheduler;
  options.conf_path = flags.scheduler_conf;
  options.period = std::chrono::milliseconds(static_cast<int64_t>(*period * 1000));
  scheduler::Scheduler sched(api, options);
  if (absl::Status started = sched.Start(); !started.ok()) {
    fmt::print(stderr, "muster scheduler: {}\n", std::string(started.message()));
    return 1;
  }
  if (!sched.WaitForSync(std::chrono::seconds(flags.sync_timeout_seconds))) {
    fmt::print(stderr, "muster scheduler: the caches of {} did not fill within {}s\n",
               remote->server, flags.sync_timeout_seconds);
    sched.Stop();
    return 1;
  }
  fmt::print("scheduler running against {}\n", remote->server);
  std::fflush(stdout);

  fmt::print(stderr, "muster scheduler: {}, stopping\n", SignalName(WaitForSignal(signals)));
  sched.Stop();
  scheduler::SchedulerStats stats = sched.Stats();
  fmt::print(stderr, "muster scheduler: {} cycles, {} pods bound, {} gangs waiting\n", stats.cycles,
             stats.pods_bound, stats.gangs_waiting);
  return 0;
}

}  // namespace

Subcommand AddSchedulerCommand(CLI::App& parent) {
  auto flags = std::make_shared<SchedulerFlags>();
  auto* app = parent.add_subcommand(
      "scheduler",
      "Run the gang scheduler alone against an API server (muster's own or a Kubernetes cluster "
      "with Volcano's CRDs): it places pods whose schedulerName is one of --scheduler-name as "
      "Volcano's vc-scheduler does. SIGINT or SIGTERM stop it.");
  app->add_option("--kubeconfig", flags->kubeconfig,
                  "kubeconfig naming the API server and credentials (default: $KUBECONFIG)");
  app->add_option("--context", flags->context,
                  "the kubeconfig context to use (default: its current-context)");
  app->add_option("--scheduler-conf", flags->scheduler_conf,
                  "volcano-scheduler.conf (actions, tiers, plugins); re-read when it changes. "
                  "Without it, or while the file does not exist, Volcano's built-in default");
  app->add_option("--scheduler-name", flags->scheduler_names,
                  "schedulerName of the pods to place (repeat for several)")
      ->capture_default_str();
  app->add_option("--schedule-period", flags->schedule_period,
                  "longest time between two scheduling cycles (they also run on every change)")
      ->capture_default_str();
  app->add_flag("--serve-default-scheduler", flags->serve_default_scheduler,
                "also place pods with no schedulerName (or default-scheduler), as kube-scheduler "
                "would; only where no kube-scheduler runs");
  app->add_option("--sync-timeout", flags->sync_timeout_seconds,
                  "seconds to wait for the first list of every watched resource")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  return {app, [flags] { return RunScheduler(*flags); }};
}

}  // namespace muster::cmd
