// `muster controller`: the Volcano Job controller alone, against any API server a kubeconfig
// names (muster's own, or a real cluster with Volcano's CRDs).

#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "client/client.h"
#include "client/http_transport.h"
#include "cmd/commands.h"
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
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  std::string kubeconfig = flags.kubeconfig;
  if (kubeconfig.empty()) {
    const char* env = std::getenv("KUBECONFIG");
    if (env != nullptr) kubeconfig = env;
  }
  if (kubeconfig.empty()) {
    fmt::print(stderr,
               "muster controller: no kubeconfig: pass --kubeconfig FILE or set KUBECONFIG\n");
    return 2;
  }
  auto config = client::LoadKubeconfig(kubeconfig, flags.context);
  if (!config.ok()) {
    fmt::print(stderr, "muster controller: {}\n", std::string(config.status().message()));
    return 1;
  }
  auto transport = client::MakeHttpTransport(*config);
  if (!transport.ok()) {
    fmt::print(stderr, "muster controller: {}\n", std::string(transport.status().message()));
    return 1;
  }
  client::Client api(*transport);
  controller::JobControllerOptions options;
  options.workers = flags.workers;
  controller::JobController job_controller(api, options);
  if (absl::Status started = job_controller.Start(std::chrono::seconds(flags.sync_timeout_seconds));
      !started.ok()) {
    fmt::print(stderr, "muster controller: {} ({})\n", std::string(started.message()),
               config->server);
    return 1;
  }
  fmt::print("job controller running against {}\n", config->server);
  std::fflush(stdout);

  int received = 0;
  sigwait(&signals, &received);
  fmt::print(stderr, "muster controller: {}, stopping\n",
             received == SIGINT ? "SIGINT" : "SIGTERM");
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
