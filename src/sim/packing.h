#pragma once

// Packing mode: the FGD paper's experiment (docs/fgd.md, "the spec" below, section 1.3). The GPU
// nodes of an openb node list; the trace's pods shuffled with the seed and inflated (or thinned)
// to 130 % of the cluster's GPU capacity; placed one by one, each on the best-scoring feasible
// node (ties to the node's random rank), failures dropped for good; the GPU allocation ratio
// logged after every pod and read off at 100 % and 130 % of arrived GPU demand (section 2).
//
// Randomness is Go's math/rand seeded with the seed, consumed in the reference simulator's
// order (one discarded Int, the shuffle, the inflation draws, the node permutation, then
// Random's draws), so a seed means the same run here as there.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/plugins/gpuplacement/placement.h"
#include "core/plugins/gpuplacement/typical_pods.h"
#include "sim/trace.h"

namespace muster::sim {

struct PackingOptions {
  // Arrived GPU demand the workload is tuned to, as a multiple of the cluster's GPU capacity.
  double tune_ratio = 1.3;
  // Int63 draws discarded between the inflation and the node permutation. The reference
  // simulator starts informers there that may draw from the same global generator; 0 matches
  // its published per-seed results (docs/sim.md).
  int draws_before_permutation = 10;
  // Keep the per-X curves (allocation and fragmentation for X = 0..max arrived %).
  bool curves = true;
  // The knobs of the muster policy (docs/policies.md); the defaults are the policy as documented.
  core::MusterPolicyOptions muster = {};
};

// One run's KPIs; percentages of the cluster's GPU capacity.
struct PackingRun {
  std::string policy;
  int64_t seed = 0;
  double alloc_100 = 0;  // GPU allocation ratio at 100 % arrived demand
  double alloc_130 = 0;
  double frag_100 = 0;   // fragmentation amount (FGD's F summed over nodes)
  double frag_130 = 0;
  double frag_ratio_100 = 0;  // fragmentation as % of the idle GPU milli
  double frag_ratio_130 = 0;
  int pods = 0;         // after tuning
  int failed_pods = 0;  // no feasible node
  // Failed pods by kind ("cpu", "share", "1-gpu", "2-gpu", ...): count and GPU demand (milli),
  // over the pods that arrived while arrived demand was at most 100 % of capacity.
  std::map<std::string, std::pair<int, int64_t>> failed_by_kind_100;
  double seconds = 0;      // wall time of the run
  double cpu_seconds = 0;  // CPU time of the run's thread (steadier on a shared machine)
  // Index X = arrived demand in whole percent; NaN where the run has no event at X.
  std::vector<double> alloc_curve;
  std::vector<double> frag_curve;
};

class PackingExperiment {
 public:
  // The nodes (all of them are used) and the trace's pods in any order; typical pods (FGD's
  // distribution) come from the pods. InvalidArgument when the nodes have no GPU.
  static absl::StatusOr<std::shared_ptr<const PackingExperiment>> Create(
      std::vector<TraceNode> nodes, std::vector<TracePod> pods);

  // One seed of one policy (a name NewGpuPlacementPolicy knows). Thread-safe: runs share only
  // immutable state.
  absl::StatusOr<PackingRun> Run(std::string_view policy, int64_t seed,
                                 const PackingOptions& options = {}) const;

  int gpus() const { return gpus_; }
  const core::TypicalPods& typical() const { return *typical_; }
  size_t pod_count() const { return pods_.size(); }

  // The pod as placement sees it (the spec's section 1.2 mapping).
  static core::GpuPodRequest Request(const TracePod& p, core::GpuModels& models);

 private:
  struct Pod {
    std::string name;
    core::GpuPodRequest request;
    int shape = 0;  // id of (cpu, gpu_milli, gpus, models): the score cache key
  };
  PackingExperiment() = default;

  std::vector<TraceNode> nodes_;  // by name
  std::vector<int> node_models_;
  std::vector<Pod> pods_;  // by name (KSS sorts the workload by name)
  int shapes_ = 0;
  int gpus_ = 0;
  core::GpuModels models_;
  std::shared_ptr<const core::TypicalPods> typical_;
};

// CPU time of the calling thread, seconds.
double ThreadCpuSeconds();

// Python's round(x, digits) for the KPI read-off: the nearest decimal, ties to even.
double RoundHalfEven(double x, int digits);

}  // namespace muster::sim
