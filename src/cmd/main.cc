// muster: one binary, subcommands. main() parses flags and wires the layers; nothing else.

#include <cstdio>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
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

  CLI11_PARSE(app, argc, argv);
  if (scenario->parsed()) return RunScenarios(files, explain);
  return 0;
}
