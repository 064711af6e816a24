// muster: one binary, subcommands. main() parses flags and wires the layers; nothing else.

#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "apiserver/apiserver.h"
#include "fmt/format.h"
#include "scenario/scenario.h"

namespace {

int RunScenarios(const std::vector<std::string>& files, bool explain) {
  int failed = 0, passed = 0;
  for (const auto& file : files) {
    auto s = muster::scenario::LoadScenario(file);
    if (!s.ok()) {
      fmt::print(stderr, "ERROR {}\n", std::string(s.status().message()));
      ++failed;
      continue;
    }
    auto outcome = muster::scenario::RunScenario(*s);
    if (!outcome.ok()) {
      fmt::print(stderr, "ERROR {}: {}\n", file, std::string(outcome.status().message()));
      ++failed;
      continue;
    }
    auto diffs = muster::scenario::Compare(s->expect, *outcome);
    fmt::print("{} {} ({})\n", diffs.empty() ? "PASS" : "FAIL", s->name, file);
    if (explain) fmt::print("{}", muster::scenario::Explain(*s, *outcome));
    for (const auto& d : diffs) fmt::print("    - {}\n", d);
    (diffs.empty() ? passed : failed)++;
  }
  fmt::print("{} passed, {} failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}

// Runs the API server until SIGINT or SIGTERM. The signals are blocked in every thread (the
// mask is inherited) and taken here with sigwait, so shutdown runs in ordinary code.
int RunApiServer(const muster::apiserver::ApiServerOptions& options) {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  auto server = muster::apiserver::ApiServer::Start(options);
  if (!server.ok()) {
    fmt::print(stderr, "muster apiserver: {}\n", std::string(server.status().message()));
    return 1;
  }
  fmt::print("listening on {}\n", (*server)->listen_address());
  fmt::print("export KUBECONFIG={}\n", (*server)->kubeconfig_path());
  std::fflush(stdout);

  int received = 0;
  sigwait(&signals, &received);
  fmt::print(stderr, "muster apiserver: {}, stopping\n", received == SIGINT ? "SIGINT" : "SIGTERM");
  (*server)->Stop();
  server->reset();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"muster: a Volcano-compatible GPU gang scheduler for Kubernetes"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "muster 0.1.0");

  std::vector<std::string> files;
  bool explain = false;
  auto* scenario = app.add_subcommand(
      "scenario",
      "Run scheduling scenario files: a described cluster, scheduling cycles and expectations. "
      "Prints PASS or FAIL per file; exits non-zero on any failure or malformed file.");
  scenario->add_option("files", files, "scenario files (YAML, see tests/conformance/FORMAT.md)")
      ->required()
      ->check(CLI::ExistingFile);
  scenario->add_flag("--explain", explain, "describe what each cycle decided, in plain words");

  muster::apiserver::ApiServerOptions apiserver_options;
  auto* apiserver = app.add_subcommand(
      "apiserver",
      "Run the embedded Kubernetes API server alone (store, REST, watch) for kubectl. Prints the "
      "address and the kubeconfig to use; SIGINT or SIGTERM stop it.");
  apiserver
      ->add_option("--data-dir", apiserver_options.data_dir,
                   "directory for the store, the kubeconfig and container logs")
      ->required();
  apiserver
      ->add_option("--listen", apiserver_options.listen,
                   "ADDR:PORT to listen on; port 0 picks a free port. Beyond loopback the "
                   "server requires a bearer token and serves TLS only")
      ->capture_default_str();
  apiserver->add_option("--watch-history", apiserver_options.watch_history,
                        "events kept for watches; a watch from before them gets 410 Expired "
                        "(0: the store's default, 100000)");

  CLI11_PARSE(app, argc, argv);
  if (scenario->parsed()) return RunScenarios(files, explain);
  if (apiserver->parsed()) return RunApiServer(apiserver_options);
  return 0;
}
