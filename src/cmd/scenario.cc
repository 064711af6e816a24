// `muster scenario FILE...`: run scheduling scenario files through the core.

#include <memory>
#include <string>
#include <vector>

#include "cmd/commands.h"
#include "fmt/format.h"
#include "scenario/scenario.h"

namespace muster::cmd {
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

struct ScenarioFlags {
  std::vector<std::string> files;
  bool explain = false;
};

}  // namespace

Subcommand AddScenarioCommand(CLI::App& parent) {
  auto flags = std::make_shared<ScenarioFlags>();
  auto* app = parent.add_subcommand(
      "scenario",
      "Run scheduling scenario files: a described cluster, scheduling cycles and expectations. "
      "Prints PASS or FAIL per file; exits non-zero on any failure or malformed file.");
  app->add_option("files", flags->files, "scenario files (YAML, see tests/conformance/FORMAT.md)")
      ->required()
      ->check(CLI::ExistingFile);
  app->add_flag("--explain", flags->explain, "describe what each cycle decided, in plain words");
  return {app, [flags] { return RunScenarios(flags->files, flags->explain); }};
}

}  // namespace muster::cmd
