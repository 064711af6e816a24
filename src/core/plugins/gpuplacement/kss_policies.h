#pragma once

// Policy classes other policies build on (muster's policy reuses FGD's score and BestFit's).
// The rest of the KSS policies are reached through NewGpuPlacementPolicy only.

#include <memory>
#include <vector>

#include "core/plugins/gpuplacement/placement.h"
#include "core/plugins/gpuplacement/typical_pods.h"

namespace muster::core {

// BestFit's raw score: 100 * (1 - (half the CPU left / 128 cores + half the GPU left / 8 GPUs))
// after placing the pod, truncated.
int64_t BestFitScore(const GpuPodRequest& pod, const GpuNodeState& node);

// FGD (fgd_score.go): the node, and for a GPU share the GPU, where the node's fragmentation
// grows least, scored trunc(100 * sigmoid((F(n) - F(n')) / 1000)).
class FgdPolicy : public GpuPlacementPolicy {
 public:
  explicit FgdPolicy(std::shared_ptr<const TypicalPods> typical) : typical_(std::move(typical)) {}
  std::string_view Name() const override { return "fgd"; }
  double Score(const GpuPodRequest& pod, const GpuNodeState& node) const override;
  // GPU shares: the first GPU with the best score; whole GPUs: the first free ones.
  std::vector<int> SelectGpus(const GpuPodRequest& pod, const GpuNodeState& node,
                              RandomSource& rng) const override;

  struct Choice {
    int score = 0;
    int gpu = -1;  // GPU shares only
    double frag_after = 0;
  };
  Choice Evaluate(const GpuPodRequest& pod, const GpuNodeState& node) const;
  // trunc(100 * sigmoid((before - after) / 1000)).
  static int Bucket(double frag_before, double frag_after);
  const TypicalPods& typical() const { return *typical_; }

 private:
  std::shared_ptr<const TypicalPods> typical_;
};

// muster's own policy (muster_policy.cc; docs/policies.md).
std::unique_ptr<GpuPlacementPolicy> NewMusterPolicy(std::shared_ptr<const TypicalPods> typical,
                                                    const MusterPolicyOptions& options = {});

}  // namespace muster::core
