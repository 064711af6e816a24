#pragma once

// GPU placement policies: which of the nodes that fit a pod it goes to, and which GPUs it takes
// there, for clusters whose GPUs may be shared by fractions (milli-GPU, 1000 = one GPU).
//
// Rationale. The six policies are those of the FGD paper's evaluation (Weng et al., "Beware of
// Fragmentation", USENIX ATC 2023) as its simulator, KSS
// (github.com/hkust-adsl/kubernetes-scheduler-simulator), implements them, defined in
// docs/fgd.md ("the spec" below): Random, DotProduct, GpuClustering, GpuPacking, BestFit and
// FGD, plus muster's own policy. They are pure functions of a pod and a node state, so that
// one implementation serves the simulator (packing and replay, src/sim) and
// the live scheduler (the gpu-* plugins of volcano-scheduler.conf, plugin.cc). A policy never
// decides feasibility: Fits() does, the same for every policy.
//
// Ties between nodes are not broken here. Callers choose the highest score and give ties to the
// first node in their node order (the simulator's per-run random rank; the live scheduler's
// name order), as the spec's scheduler does.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"

namespace muster::core {

inline constexpr int64_t kMilliPerGpu = 1000;

// GPU model names ("V100M16", "T4") interned to small ids, so that a model check is an integer
// compare. One table per cluster view; nodes, pods and typical pods use the same one.
class GpuModels {
 public:
  // The id of `name`, added when new. Ids are dense from 0 in order of first use.
  int Id(std::string_view name);
  // The id, or -1 when `name` was never added.
  int Find(std::string_view name) const;
  const std::string& Name(int id) const { return names_[id]; }
  int size() const { return static_cast<int>(names_.size()); }

 private:
  std::unordered_map<std::string, int> ids_;
  std::vector<std::string> names_;
};

// A pod as placement sees it.
struct GpuPodRequest {
  int64_t cpu_milli = 0;  // the request as written; 0 is allowed
  int64_t memory = 0;     // any unit, the same as GpuNodeState::memory_free
  int64_t gpu_milli = 0;  // per GPU, 1..1000; 0 for a pod without GPUs
  int gpus = 0;           // GPU count; 1 for a pod that shares a GPU; 0 without GPUs
  std::vector<int> models;  // GPU models the pod accepts (GpuModels ids); empty: any

  bool UsesGpu() const { return gpu_milli > 0 && gpus > 0; }
  // One GPU, partly.
  bool SharesGpu() const { return gpus == 1 && gpu_milli > 0 && gpu_milli < kMilliPerGpu; }
  int64_t GpuDemand() const { return UsesGpu() ? gpu_milli * gpus : 0; }
  // Kubernetes scores a pod without a CPU request as if it asked for 100m (the scheduler's
  // non-zero default); filters use the request as written.
  int64_t ScoringCpu() const { return cpu_milli == 0 ? 100 : cpu_milli; }
  // GpuClustering's tag of the pod: 0 for a GPU share, k for k whole GPUs, -1 without GPUs.
  int ClusteringTag() const { return !UsesGpu() ? -1 : (SharesGpu() ? 0 : gpus); }
};

// A node as placement sees it: what is free now.
struct GpuNodeState {
  int64_t cpu_free = 0;     // milli-CPU: allocatable minus the requests of the pods on it
  int64_t memory_free = 0;  // the unit of GpuPodRequest::memory
  int pods = 0;
  int max_pods = 110;
  int model = -1;  // GpuModels id of the node's GPUs; -1 without GPUs
  std::vector<int32_t> gpu_free;  // free milli of each GPU, by device index
  // GpuClustering: the number of GPU pods on the node by ClusteringTag() (index 0: shares,
  // index k: k-GPU pods).
  std::vector<int> pods_by_tag;

  int64_t GpuFreeTotal() const;
  int FullyFreeGpus() const;
  void AddTag(int tag, int delta);
  // Distinct tags with at least one pod.
  int TagKinds() const;
  int TagCount(int tag) const {
    return tag >= 0 && tag < static_cast<int>(pods_by_tag.size()) ? pods_by_tag[tag] : 0;
  }
};

// Whether the pod fits the node: CPU, memory, pod count, the GPU model and enough GPUs with
// enough free milli (for k GPUs, k devices each with gpu_milli free). The same check for every
// policy (the spec's section 1.4).
bool Fits(const GpuPodRequest& pod, const GpuNodeState& node);

// Applies a placement to the node state: CPU, memory, pod count, the GPUs' free milli and the
// clustering tags. `gpus` as returned by SelectGpus. sign = +1 places, -1 removes.
void ApplyPlacement(const GpuPodRequest& pod, const std::vector<int>& gpus, int sign,
                    GpuNodeState& node);

// Uniform integers for the policies that draw (Random). Implementations decide the stream: the
// simulator uses Go's math/rand so that runs match the reference simulator draw for draw.
class RandomSource {
 public:
  virtual ~RandomSource() = default;
  // Uniform in [0, n); n > 0.
  virtual int Intn(int n) = 0;
};

// The spec's default GPU binding ("best"): a GPU share takes the GPU with the least free milli
// that still fits it (lowest index on ties); k whole GPUs are the first k fully free GPUs by
// index. Empty for a pod without GPUs. Precondition: Fits(pod, node).
std::vector<int> BestGpus(const GpuPodRequest& pod, const GpuNodeState& node);

class GpuPlacementPolicy {
 public:
  virtual ~GpuPlacementPolicy() = default;
  virtual std::string_view Name() const = 0;
  // How good placing `pod` on `node` is; higher is better. Every policy returns integers in
  // [0, 100]; the KSS ones exactly as the spec defines them. Pure: depends only on the
  // arguments (and on what the policy was built with), so callers may cache it per node state
  // and pod shape (cpu_milli, gpu_milli, gpus, models); memory never enters a score.
  // Precondition: Fits(pod, node). Thread-safety: a policy object may keep caches; use one
  // object per thread.
  virtual double Score(const GpuPodRequest& pod, const GpuNodeState& node) const = 0;
  // The GPUs the pod takes on the chosen node. Precondition: Fits(pod, node).
  virtual std::vector<int> SelectGpus(const GpuPodRequest& pod, const GpuNodeState& node,
                                      RandomSource& rng) const {
    return BestGpus(pod, node);
  }
  // Random does not score: when more than one node fits, it draws one uniformly from the
  // feasible nodes in the caller's order (rng.Intn(count)) and that node wins.
  virtual bool PicksNodeAtRandom() const { return false; }
};

class TypicalPods;

// muster's policy (docs/policies.md): FGD's score over a fragmentation measure that looks
// `depth` pods ahead.
struct MusterPolicyOptions {
  int depth = 2;               // look-ahead steps (0: FGD's F)
  int branching = 12;          // most frequent typical shapes followed at each step
  double temperature = 1000;   // milli-GPU per unit of the sigmoid (FGD's 1000)
  double popularity_threshold = 100;  // share of pods the typical shapes cover (FGD: 95)
  // Weight of the CPU-stranded GPU milli, max(0, free milli - free CPU / k) with k the typical
  // pods' CPU per GPU milli, added to the fragmentation on both sides of the score (0: off;
  // 0.25 measured best of 0.25, 0.5 and 1 on the tuning traces, docs/policies.md).
  double strand_weight = 0.25;
  // Apply the stranding term to pods without GPUs only.
  bool strand_cpu_pods_only = false;
  // The stranding term on a node whose GPUs are all free (the only nodes its largest pods fit):
  // 0 as on any node, 1 left out there, 2 counted only where it rises (a penalty, never a
  // reward), 3 left out there for pods with GPUs (CPU-only pods keep it). 3 measured best on
  // multi-GPU variants drawn from the default trace without losing the CPU-heavy traces
  // (docs/policies.md).
  int strand_free_nodes = 3;
  // A GPU share's GPU among those with the node's best score: 0 the first (FGD), 1 the one
  // leaving the least exact fragmentation, 2 the one with the least free milli.
  int gpu_ties = 0;
};

// What a policy may be built with.
struct GpuPolicyContext {
  // FGD and muster: the typical pod distribution. Required by those policies.
  std::shared_ptr<const TypicalPods> typical;
  MusterPolicyOptions muster = {};
};

// The policy names: random, dotproduct, clustering, packing, bestfit, fgd, muster.
const std::vector<std::string>& GpuPolicyNames();
// The policy by name (case-insensitive; "gpu-" prefix accepted). InvalidArgument for an unknown
// name (listing the known ones) or a policy whose context is missing.
absl::StatusOr<std::unique_ptr<GpuPlacementPolicy>> NewGpuPlacementPolicy(
    std::string_view name, const GpuPolicyContext& context);

}  // namespace muster::core
