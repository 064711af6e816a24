// muster's placement policy. Rationale and measurements: docs/policies.md.
//
// FGD's score is kept as the primary key: its coarse sigmoid bucket (about 40 milli-GPU of
// expected fragmentation per point) is what makes it good, not a weakness to remove. Inside a
// bucket FGD leaves the choice to the random node order; muster breaks the tie by packing
// instead (BestFit's score: the node with the least left after the pod), so that nodes that
// are already used fill up first and whole nodes stay free for the pods that need them.

#include "core/plugins/gpuplacement/kss_policies.h"

namespace muster::core {
namespace {

class MusterPolicy : public GpuPlacementPolicy {
 public:
  explicit MusterPolicy(std::shared_ptr<const TypicalPods> typical) : fgd_(std::move(typical)) {}
  std::string_view Name() const override { return "muster"; }

  double Score(const GpuPodRequest& pod, const GpuNodeState& node) const override {
    int bucket = fgd_.Evaluate(pod, node).score;
    // BestFit lies in [0, 100]: a thousandth of it never reaches the next bucket.
    return bucket + static_cast<double>(BestFitScore(pod, node)) / 1000.0;
  }

  std::vector<int> SelectGpus(const GpuPodRequest& pod, const GpuNodeState& node,
                              RandomSource& rng) const override {
    return fgd_.SelectGpus(pod, node, rng);
  }

 private:
  FgdPolicy fgd_;
};

}  // namespace

std::unique_ptr<GpuPlacementPolicy> NewMusterPolicy(std::shared_ptr<const TypicalPods> typical) {
  return std::make_unique<MusterPolicy>(std::move(typical));
}

}  // namespace muster::core
