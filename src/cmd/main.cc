// muster: one binary, subcommands. main() parses flags and wires the layers; each subcommand's
// flags and wiring live in their own file (commands.h). Run as kubectl-muster (the link the build
// puts beside it), it is kubectl's plugin: `kubectl muster explain ...` runs `muster explain ...`.

#include <string_view>
#include <vector>

#include "CLI/CLI.hpp"
#include "cmd/commands.h"

int main(int argc, char** argv) {
  std::string_view invoked = argc > 0 ? argv[0] : "muster";
  invoked.remove_prefix(invoked.find_last_of('/') == std::string_view::npos
                            ? 0
                            : invoked.find_last_of('/') + 1);
  CLI::App app{"muster: a Volcano-compatible GPU gang scheduler for Kubernetes",
               invoked == "kubectl-muster" ? "kubectl muster" : "muster"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "muster 0.1.0");

  std::vector<muster::cmd::Subcommand> subcommands = {
      muster::cmd::AddUpCommand(app),
      muster::cmd::AddScenarioCommand(app),
      muster::cmd::AddApiServerCommand(app),
      muster::cmd::AddSchedulerCommand(app),
      muster::cmd::AddControllerCommand(app),
      muster::cmd::AddNodesCommand(app),
      muster::cmd::AddManifestsCommand(app),
      muster::cmd::AddFsckCommand(app),
      muster::cmd::AddDevicePluginCommand(app),
      muster::cmd::AddSimCommand(app),
      muster::cmd::AddExplainCommand(app),
  };

  CLI11_PARSE(app, argc, argv);
  for (const auto& sub : subcommands) {
    if (sub.app->parsed()) return sub.run();
  }
  return 0;
}
