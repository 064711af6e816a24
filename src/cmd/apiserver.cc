// `muster apiserver`: the embedded Kubernetes API server alone.

#include <signal.h>

#include <cstdio>
#include <memory>
#include <string>

#include "apiserver/apiserver.h"
#include "cmd/commands.h"
#include "cmd/process.h"
#include "fmt/format.h"

namespace muster::cmd {
namespace {

struct ApiServerFlags {
  muster::apiserver::ApiServerOptions options;
  bool reset = false;
};

// Runs the API server until SIGINT or SIGTERM. The signals are blocked in every thread (the
// mask is inherited) and taken here with sigwait, so shutdown runs in ordinary code.
int RunApiServer(const ApiServerFlags& flags) {
  const sigset_t signals = BlockSignals();
  const muster::apiserver::ApiServerOptions& options = flags.options;
  if (flags.reset) {
    if (absl::Status s = ResetDataDir(options.data_dir); !s.ok()) {
      fmt::print(stderr, "muster apiserver: {}\n", std::string(s.message()));
      return 1;
    }
  }

  auto server = muster::apiserver::ApiServer::Start(options);
  if (!server.ok()) {
    fmt::print(stderr, "muster apiserver: {}\n", std::string(server.status().message()));
    return 1;
  }
  fmt::print("listening on {}\n", (*server)->listen_address());
  fmt::print("export KUBECONFIG={}\n", (*server)->kubeconfig_path());
  std::fflush(stdout);

  fmt::print(stderr, "muster apiserver: {}, stopping\n", SignalName(WaitForSignal(signals)));
  (*server)->Stop();
  server->reset();
  return 0;
}

}  // namespace

void AddServingLimitFlags(CLI::App& app, apiserver::ServingLimits& limits) {
  app.add_option("--max-requests-inflight", limits.max_requests_inflight,
                 "the most read-only requests served at once over HTTP; past it, 429 with "
                 "Retry-After: 1 (watches and log streams are not counted; 0: no limit)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--max-mutating-requests-inflight", limits.max_mutating_requests_inflight,
                 "the most mutating requests (POST, PUT, PATCH, DELETE) served at once over "
                 "HTTP; past it, 429 with Retry-After: 1 (0: no limit)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--max-watches", limits.max_watches,
                 "the most watches and log streams open at once over HTTP (served without a "
                 "thread each); past it, 429 with Retry-After: 1 (0: no limit)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--max-watches-per-client", limits.max_watches_per_client,
                 "the most of those from one client address (0: no limit)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
}

void AddInsecureHttpFlag(CLI::App& app, bool& insecure_http) {
  app.add_flag("--insecure-http", insecure_http,
               "serve plain HTTP without credentials (loopback addresses only); by default the "
               "server serves HTTPS with a certificate from its own CA, kept in the data "
               "directory, and requires the bearer token, both written into the kubeconfig");
}

Subcommand AddApiServerCommand(CLI::App& parent) {
  auto flags = std::make_shared<ApiServerFlags>();
  auto* options = &flags->options;
  auto* app = parent.add_subcommand(
      "apiserver",
      "Run the embedded Kubernetes API server alone (store, REST, watch) for kubectl. Prints the "
      "address and the kubeconfig to use; SIGINT or SIGTERM stop it.");
  app->add_option("--data-dir", options->data_dir,
                  "directory for the store, the kubeconfig and container logs")
      ->required();
  app->add_option("--listen", options->listen,
                  "ADDR:PORT to listen on; port 0 picks a free port")
      ->capture_default_str();
  app->add_option("--watch-history", options->watch_history,
                  "events kept for watches; a watch from before them gets 410 Expired "
                  "(0: the store's default, 100000)");
  app->add_flag("--reset", flags->reset,
                "start from an empty cluster: remove the store, the kubeconfig and credentials, "
                "logs and pod directories of the data directory first");
  AddServingLimitFlags(*app, options->limits);
  AddInsecureHttpFlag(*app, options->insecure_http);
  return {app, [flags] { return RunApiServer(*flags); }};
}

}  // namespace muster::cmd
