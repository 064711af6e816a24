#pragma once

// Each subcommand of `muster` lives in its own file of src/cmd: Add<Name>Command declares its
// flags on the parent app and returns what runs it once the command line has been parsed.

#include <functional>

#include "CLI/CLI.hpp"

namespace muster::apiserver {
struct ServingLimits;  // apiserver/apiserver.h
}  // namespace muster::apiserver

namespace muster::cmd {

struct Subcommand {
  CLI::App* app = nullptr;
  std::function<int()> run;  // the process's exit status
};

Subcommand AddScenarioCommand(CLI::App& parent);   // scenario.cc
Subcommand AddApiServerCommand(CLI::App& parent);  // apiserver.cc
Subcommand AddSchedulerCommand(CLI::App& parent);  // scheduler.cc
Subcommand AddControllerCommand(CLI::App& parent);  // controller.cc
Subcommand AddDevicePluginCommand(CLI::App& parent);  // device_plugin.cc
Subcommand AddSimCommand(CLI::App& parent);        // sim.cc
Subcommand AddUpCommand(CLI::App& parent);         // up.cc
Subcommand AddNodesCommand(CLI::App& parent);      // nodes.cc
Subcommand AddManifestsCommand(CLI::App& parent);  // manifests.cc
Subcommand AddFsckCommand(CLI::App& parent);       // fsck.cc
Subcommand AddExplainCommand(CLI::App& parent);    // explain.cc

// kube-apiserver's --max-requests-inflight and --max-mutating-requests-inflight, and
// --max-watches and --max-watches-per-client, for the commands that run the API server
// (apiserver.cc).
void AddServingLimitFlags(CLI::App& app, apiserver::ServingLimits& limits);
// --insecure-http: plain HTTP without credentials, loopback only (ApiServerOptions::insecure_http).
void AddInsecureHttpFlag(CLI::App& app, bool& insecure_http);

}  // namespace muster::cmd
