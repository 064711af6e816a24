// `muster scheduler`: the scheduler alone, against any API server a kubeconfig names (muster's
// own, or a real cluster with Volcano's CRDs) or, in a pod, the cluster's own, over HTTP(S). As
// vc-scheduler and kube-scheduler it elects a leader among its replicas (cmd/leadership.h) and
// limits its request rate (--kube-api-qps, --kube-api-burst: vc-scheduler's flags and defaults).
// With --dashboard-address it also serves muster up's dashboard (cmd/dashboard_server.h).

#include "scheduler/scheduler.h"

#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "client/client.h"
#include "client/http_transport.h"
#include "cmd/commands.h"
#include "cmd/component_ops.h"
#include "cmd/dashboard_server.h"
#include "cmd/leadership.h"
#include "cmd/preflight.h"
#include "cmd/process.h"
#include "common/go_duration.h"
#include "controller/default_queues.h"
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
  double kube_api_qps = 2000;  // vc-scheduler's defaults
  int kube_api_burst = 2000;
  LeaderElectionFlags election;
  std::string listen_address = ":8080";
  std::string dashboard_address;  // "": no dashboard
  bool repair_gangs = true;
  uint64_t fault_kill_after_binds = 0;
};

// The scheduler whose statistics the dashboard's /ui/status shows: none until this replica
// leads, and none again once it is being destroyed (Published's lifetime).
class DashboardScheduler {
 public:
  std::string Status() {
    std::lock_guard lock(mu_);
    return current_ == nullptr ? std::string("{}") : DashboardStatusJson(current_->Stats());
  }
  class Published {
   public:
    Published(DashboardScheduler& to, scheduler::Scheduler& sched) : to_(to) { to_.Set(&sched); }
    ~Published() { to_.Set(nullptr); }
    Published(const Published&) = delete;
    Published& operator=(const Published&) = delete;

   private:
    DashboardScheduler& to_;
  };

 private:
  void Set(scheduler::Scheduler* sched) {
    std::lock_guard lock(mu_);
    current_ = sched;
  }
  std::mutex mu_;
  scheduler::Scheduler* current_ = nullptr;  // guarded by mu_
};

// Runs the scheduler until SIGINT or SIGTERM (taken with sigwait, as `muster apiserver` does).
int RunScheduler(const SchedulerFlags& flags) {
  const sigset_t signals = BlockSignals();

  auto period = common::ParseGoDurationSeconds(flags.schedule_period);
  if (!period.ok() || *period <= 0) {
    fmt::print(stderr,
               "muster scheduler: --schedule-period {:?}: want a positive duration such as 1s "
               "or 500ms\n",
               flags.schedule_period);
    return 2;
  }
  auto remote = Connect(flags.kubeconfig, flags.context,
                        {.qps = flags.kube_api_qps, .burst = flags.kube_api_burst});
  if (!remote.ok()) {
    fmt::print(stderr, "muster scheduler: {}\n", std::string(remote.status().message()));
    return absl::IsNotFound(remote.status()) ? 2 : 1;
  }
  auto ops = ComponentOps::Start("muster scheduler", flags.listen_address);
  if (!ops.ok()) {
    fmt::print(stderr, "muster scheduler: {}\n", std::string(ops.status().message()));
    return 2;
  }
  // Every replica serves the dashboard (a port-forward may reach a standby); its cycle latency
  // shows once this one leads.
  DashboardScheduler dashboard_scheduler;
  std::unique_ptr<DashboardServer> dashboard;
  if (!flags.dashboard_address.empty()) {
    DashboardServerOptions options;
    options.status = [&dashboard_scheduler] { return dashboard_scheduler.Status(); };
    auto started =
        DashboardServer::Start(flags.dashboard_address, remote->transport, std::move(options));
    if (!started.ok()) {
      fmt::print(stderr, "muster scheduler: --dashboard-address: {}\n",
                 std::string(started.status().message()));
      return 2;
    }
    dashboard = *std::move(started);
    fmt::print("dashboard: {}\n", dashboard->url());
    std::fflush(stdout);
  }
  client::Client api(remote->transport);
  std::unique_ptr<Leadership> leadership;
  const std::vector<client::Resource> watched = {client::Nodes(), client::Pods(),
                                                 client::PodGroups(), client::Queues(),
                                                 client::PriorityClasses()};
  if (std::optional<int> exit = WaitUntilLeading(**ops, "muster scheduler", api, watched,
                                                 flags.election, *remote, signals, leadership)) {
    return *exit;
  }
  // Jobs that name no queue go to `default`, as on a Volcano cluster, whose scheduler makes it.
  if (absl::Status queues = controller::EnsureDefaultQueues(api); !queues.ok()) {
    fmt::print(stderr, "muster scheduler: {}\n", std::string(queues.message()));
  }

  scheduler::SchedulerOptions options;
  options.scheduler_names = flags.scheduler_names;
  options.repair_gangs = flags.repair_gangs;
  options.fault_kill_after_binds = flags.fault_kill_after_binds;
  options.serve_default_scheduler = flags.serve_default_scheduler;
  options.conf_path = flags.scheduler_conf;
  options.period = std::chrono::milliseconds(static_cast<int64_t>(*period * 1000));
  options.metrics = (*ops)->registry();
  scheduler::Scheduler sched(api, options);
  const DashboardScheduler::Published published(dashboard_scheduler, sched);
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
  (*ops)->SetSynced(true);
  fmt::print("scheduler running against {}\n", remote->server);
  std::fflush(stdout);

  fmt::print(stderr, "muster scheduler: {}, stopping\n", SignalName(WaitForSignal(signals)));
  sched.Stop();
  if (leadership) leadership->Stop();  // releases the lease once nothing schedules any more
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
                  "kubeconfig naming the API server and credentials (default: $KUBECONFIG, else "
                  "the cluster this pod runs in)");
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
  app->add_flag("!--no-gang-repair", flags->repair_gangs,
                "do not complete or undo gangs left bound below minAvailable (for tests that show "
                "what the repair prevents)");
  app->add_option("--fault-kill-after-binds", flags->fault_kill_after_binds,
                  "fault injection for failover tests: SIGKILL this process right after its Nth "
                  "successful bind, binding pod by pod (0: never)")
      ->group("");
  app->add_option("--listen-address", flags->listen_address,
                  "where /healthz, /livez, /readyz and /metrics are served (host:port, port 0 "
                  "picks one; \"\" serves nothing); Volcano's scheduler flag")
      ->capture_default_str();
  app->add_option("--sync-timeout", flags->sync_timeout_seconds,
                  "seconds to wait for the first list of every watched resource")
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
  app->add_option("--dashboard-address", flags->dashboard_address,
                  "serve the dashboard (the page muster up serves at /ui/) at host:port, port 0 "
                  "picks one: the page, and the cluster's nodes, pods, events, PodGroups and "
                  "Queues read through this scheduler's client, behind a token printed once as "
                  "'dashboard: http://HOST:PORT/ui/#token=...' (default: off)");
  AddLeaderElectionFlags(*app, flags->election, "muster-scheduler");
  return {app, [flags] { return RunScheduler(*flags); }};
}

}  // namespace muster::cmd
