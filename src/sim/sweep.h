#pragma once

// Many packing runs (policies x seeds) over one trace, in parallel, and their results as a
// table, JSON and CSV. Runs are independent and each is deterministic, so the results do not
// depend on the number of threads or the order runs finish in.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/packing.h"

namespace muster::sim {

struct PolicyResults {
  std::string policy;
  std::vector<PackingRun> runs;  // in seed order
  // Means over the runs (curves: per X over the runs that have a value there).
  PackingRun mean;
};

struct PackingSweep {
  std::string trace;  // as given by the user
  std::string nodes;
  int trace_pods = 0;
  int node_count = 0;
  int gpus = 0;
  std::vector<int64_t> seeds;
  std::vector<PolicyResults> results;  // in the order the policies were asked for
  double seconds = 0;  // wall time of the whole sweep
};

struct SweepOptions {
  PackingOptions packing;
  int jobs = 1;  // threads
  // Called after each finished run (from the worker thread, serialised): done, total, the run.
  std::function<void(int, int, const PackingRun&)> progress;
};

// Parses "42-51", "42,45,50" or "7" (a mix of ranges and items). InvalidArgument when malformed
// or empty, or a range is reversed.
absl::StatusOr<std::vector<int64_t>> ParseSeeds(std::string_view text);

absl::StatusOr<PackingSweep> RunPackingSweep(const PackingExperiment& experiment,
                                             const std::vector<std::string>& policies,
                                             const std::vector<int64_t>& seeds,
                                             const SweepOptions& options);

// The per-seed table with the mean of each policy (what `muster sim pack` prints).
std::string PackingTable(const PackingSweep& sweep);
// One JSON object. With one policy: {"trace", "nodes", "policy", "per_seed": [{"seed",
// "alloc_100", "alloc_130", ...}], "mean": {...}}; with several, {"trace", "nodes", "results":
// [that object without trace and nodes, per policy]}. Percentages.
std::string PackingJson(const PackingSweep& sweep);
// One row per run plus a "mean" row per policy.
std::string PackingCsv(const PackingSweep& sweep);

}  // namespace muster::sim
