// The six policies of the FGD paper's evaluation, as its reference simulator (KSS) computes them
// (docs/fgd.md section 3). Integer maths and the order of floating-point operations follow KSS so
// that scores, and therefore node choices, are the same.

#include <algorithm>
#include <cmath>

#include "absl/container/inlined_vector.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_join.h"
#include "core/plugins/gpuplacement/kss_policies.h"
#include "core/plugins/gpuplacement/typical_pods.h"

namespace muster::core {
namespace {

constexpr double kMaxNodeScore = 100;
// KSS normalises CPU by the largest node's 128 cores and GPUs by the largest node's 8 GPUs.
constexpr double kMaxCpuMilli = 128000;
constexpr double kMaxGpuMilli = 8000;

// Random (random_score.go): no score; the caller draws the node. GPU shares take a uniformly
// drawn GPU among those that fit (reservoir sampling in index order).
class RandomPolicy : public GpuPlacementPolicy {
 public:
  std::string_view Name() const override { return "random"; }
  double Score(const GpuPodRequest&, const GpuNodeState&) const override { return 0; }
  bool PicksNodeAtRandom() const override { return true; }
  std::vector<int> SelectGpus(const GpuPodRequest& pod, const GpuNodeState& node,
                              RandomSource& rng) const override {
    if (!pod.SharesGpu()) return BestGpus(pod, node);
    int seen = 0, chosen = -1;
    for (int g = 0; g < static_cast<int>(node.gpu_free.size()); ++g) {
      if (node.gpu_free[g] < pod.gpu_milli) continue;
      ++seen;
      if (rng.Intn(seen) == 0) chosen = g;
    }
    return chosen < 0 ? std::vector<int>{} : std::vector<int>{chosen};
  }
};

// DotProduct (dot_product_score.go, dimExt=merge, norm=max): Tetris' alignment of what the node
// has left with what the pod asks; a smaller product scores higher (the tighter node).
class DotProductPolicy : public GpuPlacementPolicy {
 public:
  std::string_view Name() const override { return "dotproduct"; }
  double Score(const GpuPodRequest& pod, const GpuNodeState& node) const override {
    double dot = (static_cast<double>(node.cpu_free) / kMaxCpuMilli) *
                     (static_cast<double>(pod.ScoringCpu()) / kMaxCpuMilli) +
                 (static_cast<double>(node.GpuFreeTotal()) / kMaxGpuMilli) *
                     (static_cast<double>(pod.GpuDemand()) / kMaxGpuMilli);
    double score = 1 - dot / 2;
    return static_cast<double>(static_cast<int64_t>(kMaxNodeScore * score));
  }
};

// GpuClustering (gpu_clustering_score.go): keep pods of one kind together; nodes whose GPU pods
// all share the pod's tag first, then mixed nodes with the tag, then empty nodes, then others;
// within a band, the fuller node.
class GpuClusteringPolicy : public GpuPlacementPolicy {
 public:
  std::string_view Name() const override { return "clustering"; }
  double Score(const GpuPodRequest& pod, const GpuNodeState& node) const override {
    int tag = pod.ClusteringTag();
    if (tag < 0) return 0;
    int64_t base = 25 * (static_cast<int64_t>(kMaxGpuMilli) - node.GpuFreeTotal()) /
                   static_cast<int64_t>(kMaxGpuMilli);
    base = std::max<int64_t>(base, 0);  // nodes with more than 8 GPUs (not in the traces)
    int kinds = node.TagKinds();
    if (node.TagCount(tag) > 0) return static_cast<double>(base + (kinds == 1 ? 75 : 50));
    return static_cast<double>(base + (kinds == 0 ? 25 : 0));
  }
};

// GpuPacking (gpu_packing_score.go): prefer partly used GPUs (tighter first), then free GPUs on
// a used node, then a wholly free node (fewer GPUs first).
class GpuPackingPolicy : public GpuPlacementPolicy {
 public:
  std::string_view Name() const override { return "packing"; }
  double Score(const GpuPodRequest& pod, const GpuNodeState& node) const override {
    if (!pod.UsesGpu()) return 0;
    const auto& f = node.gpu_free;
    int n = static_cast<int>(f.size());
    int fully_free = node.FullyFreeGpus();
    if (fully_free == n) return static_cast<double>(std::max(33 - fully_free, fully_free));
    absl::InlinedVector<int, 16> order(n);
    for (int g = 0; g < n; ++g) order[g] = g;
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return f[a] < f[b]; });
    int want = pod.gpus, fully_free_used = 0;
    int64_t free_ratio = 0;
    for (int g : order) {
      if (want == 0) break;
      if (f[g] >= pod.gpu_milli) {
        --want;
        if (f[g] == kMilliPerGpu) ++fully_free_used;
        free_ratio += static_cast<int64_t>(f[g]) * 100 / kMilliPerGpu;
      }
    }
    if (want != 0) return 0;
    if (fully_free_used > 0) return static_cast<double>(std::max(50 - fully_free_used, 33));
    return static_cast<double>(std::max<int64_t>(100 - free_ratio / 10, 50));
  }
};

// BestFit (best_fit_score.go): the node with the least CPU and GPU left after placing the pod.
// KSS min-max normalises the scores afterwards, which never changes which node wins, so the
// raw score is returned.
class BestFitPolicy : public GpuPlacementPolicy {
 public:
  std::string_view Name() const override { return "bestfit"; }
  double Score(const GpuPodRequest& pod, const GpuNodeState& node) const override {
    return static_cast<double>(BestFitScore(pod, node));
  }
};

}  // namespace

int64_t BestFitScore(const GpuPodRequest& pod, const GpuNodeState& node) {
  double cpu_left = static_cast<double>(node.cpu_free - pod.ScoringCpu());
  double gpu_left = static_cast<double>(node.GpuFreeTotal() - pod.GpuDemand());
  double score = kMaxNodeScore * (1 - (0.5 * cpu_left / kMaxCpuMilli + 0.5 * gpu_left / kMaxGpuMilli));
  return static_cast<int64_t>(score);
}

int FgdPolicy::Bucket(double frag_before, double frag_after) {
  double x = (frag_before - frag_after) / 1000;
  return static_cast<int>(1.0 / (1.0 + std::exp(-x)) * kMaxNodeScore);
}

FgdPolicy::Choice FgdPolicy::Evaluate(const GpuPodRequest& pod, const GpuNodeState& node) const {
  const TypicalPods& t = *typical_;
  const int n = static_cast<int>(node.gpu_free.size());
  const double before = t.Fragmentation(node.cpu_free, node.gpu_free.data(), n, node.model);
  const int64_t cpu_after = node.cpu_free - pod.ScoringCpu();
  absl::InlinedVector<int32_t, 16> after(node.gpu_free.begin(), node.gpu_free.end());
  Choice best;
  if (pod.SharesGpu()) {
    // GPUs with the same free milli leave the same node behind: evaluate each value once.
    absl::InlinedVector<std::pair<int32_t, int>, 16> seen;
    for (int g = 0; g < n; ++g) {
      int32_t f = node.gpu_free[g];
      if (f < pod.gpu_milli) continue;
      int score = -1;
      for (const auto& [value, s] : seen) {
        if (value == f) score = s;
      }
      if (score < 0) {
        after[g] = static_cast<int32_t>(f - pod.gpu_milli);
        double frag_after = t.Fragmentation(cpu_after, after.data(), n, node.model);
        after[g] = f;
        score = Bucket(before, frag_after);
        seen.emplace_back(f, score);
      }
      if (best.gpu < 0 || score > best.score) {
        best.score = score;
        best.gpu = g;
        best.frag_after = 0;
      }
    }
    return best;
  }
  int want = pod.UsesGpu() ? pod.gpus : 0;
  for (int g = 0; g < n && want > 0; ++g) {
    if (after[g] == kMilliPerGpu) {
      after[g] = 0;
      --want;
    }
  }
  double frag_after = t.Fragmentation(cpu_after, after.data(), n, node.model);
  best.score = Bucket(before, frag_after);
  return best;
}

double FgdPolicy::Score(const GpuPodRequest& pod, const GpuNodeState& node) const {
  return static_cast<double>(Evaluate(pod, node).score);
}

std::vector<int> FgdPolicy::SelectGpus(const GpuPodRequest& pod, const GpuNodeState& node,
                                       RandomSource&) const {
  if (!pod.SharesGpu()) return BestGpus(pod, node);
  Choice c = Evaluate(pod, node);
  return c.gpu < 0 ? std::vector<int>{} : std::vector<int>{c.gpu};
}

const std::vector<std::string>& GpuPolicyNames() {
  static const std::vector<std::string> kNames = {"random",  "dotproduct", "clustering", "packing",
                                                  "bestfit", "fgd",        "muster"};
  return kNames;
}

absl::StatusOr<std::unique_ptr<GpuPlacementPolicy>> NewGpuPlacementPolicy(
    std::string_view name, const GpuPolicyContext& context) {
  std::string n = absl::AsciiStrToLower(std::string(name));
  if (n.rfind("gpu-", 0) == 0) n = n.substr(4);
  if (n == "random") return std::make_unique<RandomPolicy>();
  if (n == "dotproduct" || n == "dotprod") return std::make_unique<DotProductPolicy>();
  if (n == "clustering" || n == "gpuclustering") return std::make_unique<GpuClusteringPolicy>();
  if (n == "packing" || n == "gpupacking") return std::make_unique<GpuPackingPolicy>();
  if (n == "bestfit") return std::make_unique<BestFitPolicy>();
  if (n == "fgd" || n == "muster") {
    if (!context.typical || context.typical->empty()) {
      return absl::InvalidArgumentError("GPU placement policy \"" + std::string(name) +
                                        "\" needs a typical pod distribution (no pods to learn "
                                        "it from)");
    }
    if (n == "fgd") return std::make_unique<FgdPolicy>(context.typical);
    return NewMusterPolicy(context.typical, context.muster);
  }
  return absl::InvalidArgumentError("unknown GPU placement policy \"" + std::string(name) +
                                    "\"; known: " + absl::StrJoin(GpuPolicyNames(), ", "));
}

}  // namespace muster::core
