// `muster controller`: the Volcano Job controller alone, against any API server a kubeconfig
// names (muster's own, or a real cluster with Volcano's CRDs).

#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "client/client.h"
#include "client/http_transport.h"
#include "cmd/commands.h"
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
};

// Runs the controller until SIGINT or SIGTERM (taken with sigwait, as `muster apiserver` does).
int RunController(const ControllerFlags& flags) {
  const sigset_t signals = BlockSignals();

  const std::string kubeconfig = KubeconfigPath(flags.kubeconfig);
  if (kubeconfig.empty()) {
    fmt::print(stderr,
               "muster controller: no kubeconfig: pass --kubeconfig FILE or set KUBECONFIG\n");
    return 2;
  }
  auto remote = ConnectWithKubeconfig(kubeconfig, flags.context);
  if (!remote.ok()) {
    fmt::print(stderr, "muster controller: {}\n", std::string(remote.status().message()));
    return 1;
  }
  client::Client api(remote->transport);
  controller::JobControllerOptions options;
  options.workers = flags.workers;
  controller::JobController job_controller(api, options);
  if (absl::Status started = job_controller.Start(std::chrono::seconds(flags.sync_timeout_seconds));
      !started.ok()) {
    fmt::print(stderr, "muster controller: {} ({})\n", std::string(started.message()),
               remote->server);
    return 1;
  }
  fmt::print("job controller running against {}\n", remote->server);
  std::fflush(stdout);

  fmt::print(stderr, "muster controller: {}, stopping\n", SignalName(WaitForSignal(signals)));
  job_controller.Stop();
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
                  "kubeconfig of the API server (default: $KUBECONFIG)");
  app->add_option("--context", flags->context, "kubeconfig context (default: current-context)");
  app->add_option("--workers", flags->workers,
                  "worker threads; one Job's requests always run on the same one")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app->add_option("--sync-timeout", flags->sync_timeout_seconds,
                  "seconds to wait for the first lists of Jobs, pods and PodGroups")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  return {app, [flags] { return RunController(*flags); }};
}

}  // namespace muster::cmd
