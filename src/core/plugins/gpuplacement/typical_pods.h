#pragma once

// FGD's typical pod distribution and the fragmentation of a node measured against it.
//
// A node's fragmentation F(n) is the GPU milli it has free that a pod drawn from the typical
// distribution could not use, in expectation: for each typical pod t (weight w_t), all of the
// node's free GPU milli when t cannot run there (wrong model, too few GPUs, too little CPU, or t
// needs no GPU at all), and otherwise only the free milli of the GPUs too small for t. FGD places
// a pod where F grows least. Definitions and category names follow docs/fgd.md section 3.6 and
// the reference simulator (KSS pkg/utils/frag.go); amounts are summed per category in typical
// pod order and the categories then in their fixed order, as KSS does, so that scores computed
// from F agree with it to the last bit.

#include <cstdint>
#include <string>
#include <vector>

#include "core/plugins/gpuplacement/placement.h"

namespace muster::core {

// The resource shape of a pod as FGD counts it: CPU in its non-zero scoring form, milli per GPU,
// GPU count and the model constraint as text ('|'-separated, "" for any).
struct PodShape {
  int64_t cpu_milli = 0;
  int64_t gpu_milli = 0;
  int gpus = 0;
  std::string spec;

  friend bool operator==(const PodShape&, const PodShape&) = default;
  friend auto operator<=>(const PodShape&, const PodShape&) = default;
};

struct TypicalPod {
  PodShape shape;
  std::vector<int> models;  // GpuModels ids of shape.spec; empty: any model
  double count = 0;         // pods of this shape (weighted, see gpu_res_weight)
  double weight = 0;        // share of the distribution; the weights sum to 1
};

// Fragmentation of one node split by the reason the free milli is unusable (KSS categories).
struct FragBreakdown {
  enum Category { kQ1LackBoth, kQ2LackGpu, kQ3Satisfied, kQ4LackCpu, kXlSatisfied, kXrLackCpu,
                  kNoAccess, kCount };
  double amount[kCount] = {};
  // Everything but q3_satisfied: the node's F(n).
  double Fragment() const;
  static const char* Name(int category);
};

struct TypicalPodsOptions {
  // The shortest prefix of shapes (most frequent first) covering this percentage of the pods.
  double popularity_threshold = 95;
  // Count a whole-GPU pod as 1 + gpus * weight pods (KSS gpuResWeight; 0 counts every pod once).
  double gpu_res_weight = 0;
  // Count pods without GPUs (KSS isInvolvedCpuPods).
  bool include_cpu_pods = true;
};

class TypicalPods {
 public:
  TypicalPods() = default;
  // A distribution given directly (weights as given).
  explicit TypicalPods(std::vector<TypicalPod> pods) : pods_(std::move(pods)), all_(pods_) {
    for (auto& t : all_) {
      if (t.count <= 0) t.count = t.weight;  // Recut treats the weights as counts
    }
  }

  // KSS GetTypicalPods: count the pods per shape, sort by count (ties: the larger shape first),
  // keep the shortest prefix that covers the threshold and renormalise its weights. `models`
  // resolves the shapes' model constraints (ids are added for models not seen yet).
  static TypicalPods FromPods(const std::vector<PodShape>& pods, GpuModels& models,
                              const TypicalPodsOptions& options = {});
  // The same from pod counts per shape.
  static TypicalPods FromCounts(const std::vector<std::pair<PodShape, int64_t>>& counts,
                                GpuModels& models, const TypicalPodsOptions& options = {});
  // The distribution of the same pods with other options (another threshold, say).
  TypicalPods Recut(const TypicalPodsOptions& options) const;

  const std::vector<TypicalPod>& pods() const { return pods_; }
  bool empty() const { return pods_.empty(); }
  // Share of all counted pods that the kept shapes cover (1 when all are kept).
  double coverage() const { return coverage_; }

  // F(n) in milli-GPU for a node with `cpu_free` milli-CPU, GPUs with the given free milli, and
  // GPU model `model`. 0 when no GPU milli is free.
  double Fragmentation(int64_t cpu_free, const int32_t* gpu_free, int gpus, int model) const;
  double Fragmentation(const GpuNodeState& node) const {
    return Fragmentation(node.cpu_free, node.gpu_free.data(), static_cast<int>(node.gpu_free.size()),
                         node.model);
  }
  FragBreakdown Breakdown(int64_t cpu_free, const int32_t* gpu_free, int gpus, int model) const;

 private:
  static TypicalPods Cut(std::vector<TypicalPod> all, const TypicalPodsOptions& options);

  std::vector<TypicalPod> pods_;
  std::vector<TypicalPod> all_;  // every shape with its unweighted count, models resolved
  double coverage_ = 1;
};

// Splits a model constraint on '|', drops empty items and interns the rest.
std::vector<int> ParseGpuSpec(std::string_view spec, GpuModels& models);
// The constraint text normalised: empty items dropped, joined by '|'.
std::string NormalizeGpuSpec(std::string_view spec);

}  // namespace muster::core
