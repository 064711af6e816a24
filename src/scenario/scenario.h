#pragma once

// Scheduling scenario files (tests/conformance/FORMAT.md): a cluster as it stands, a number of
// cycles, and what must have happened. Used by the conformance suite and by users as a what-if
// check of manifests against a described cluster.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "api/json_codec.h"
#include "core/framework/session.h"

namespace muster::scenario {

struct Expectations {
  std::optional<std::map<std::string, std::string>> binds;  // pod -> node or "*"
  std::optional<std::vector<std::string>> evictions;
  std::map<std::string, std::string> pipelined;
  std::map<std::string, std::string> pod_group_phases;
  std::map<std::string, std::string> unschedulable_messages;
  // pod -> the muster.dev/gpu-indices its bind carried ("4,5,6,7"); checked where given.
  std::map<std::string, std::string> gpu_indices;
};

struct Scenario {
  std::string file;
  std::string name;
  std::string source;
  std::string description;
  std::string scheduler_conf;  // empty = built-in default
  int cycles = 1;
  std::vector<api::Object> objects;
  Expectations expect;
};

// Reads and validates a scenario file. Errors read "<file>:<line>: <what is wrong>".
absl::StatusOr<Scenario> LoadScenario(const std::string& path);
absl::StatusOr<Scenario> ParseScenario(const std::string& text, const std::string& file);

// What the cycles did, cumulated over all cycles.
struct Outcome {
  std::map<std::string, std::string> binds;
  std::map<std::string, std::string> gpu_indices;  // of each bind that named GPUs ("0,3")
  std::vector<std::string> evictions;
  std::map<std::string, std::string> pipelined;
  std::map<std::string, std::string> pod_group_phases;
  std::map<std::string, std::string> pod_group_conditions;  // last condition message
  std::map<std::string, std::string> unschedulable_messages;  // from the last cycle
  std::vector<core::CycleResult> cycles;
};

absl::StatusOr<Outcome> RunScenario(const Scenario& scenario);

// Differences between expectations and outcome, one line each; empty means PASS.
std::vector<std::string> Compare(const Expectations& expect, const Outcome& outcome);

// Plain-words account of each cycle (for `muster scenario --explain`).
std::string Explain(const Scenario& scenario, const Outcome& outcome);

}  // namespace muster::scenario
