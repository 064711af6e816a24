// muster's placement policy: FGD with look-ahead. Rationale and measurements: docs/policies.md.
//
// FGD scores a placement by how much it changes the node's expected fragmentation F, where F
// asks, for each typical pod, "could it run here, and which free GPU milli would it leave
// useless?". That is one step deep: a node whose free GPUs fit the next pod but leave an
// unusable sliver after it looks as good as one that packs perfectly. muster looks `depth` pods
// further: F_d(n) = sum over typical pods t of w_t x (F_(d-1)(n + t) if t fits n, else all of
// n's free GPU milli), with F_0 = FGD's F. It follows the `branching` most frequent shapes
// (the rest count as in F) and learns from every shape in the trace, not only the 95 % FGD
// keeps. The score keeps FGD's coarse bucket, trunc(100 sigmoid(dF / 1000)), and its
// tie-breaking by node order: exact scores and packing tie-breaks were measured to lose
// (docs/policies.md).
//
// A CPU-stranding term (weight 0.25) joins F on both sides of the score: the GPU milli a node
// could not hand out if its free CPU went at the typical pods' CPU per GPU milli. It sends
// CPU-heavy pods to CPU-rich nodes where shares make CPU the scarce resource (docs/policies.md).
// For pods with GPUs it is left out on nodes whose GPUs are all free: there it rewarded CPU-light
// pods for breaking up the only nodes a pod with all of a node's GPUs fits, and 8-GPU pods
// failed; a CPU-only pod breaks no GPU and keeps it (it still takes the CPU those pods need).
// Measured and off by default: the term for CPU-only pods alone, other GPU choices among equal
// scores.
//
// F_d depends on a node's CPU only through comparisons with sums of up to d + 1 typical CPU
// requests, and not on the order of its GPUs, so values are memoised by (model, the CPU rounded
// down to such a sum, the sorted free milli); the memo lives as long as the policy object.

#include <algorithm>
#include <array>
#include <cmath>
#include <unordered_map>
#include <vector>

#include "core/plugins/gpuplacement/kss_policies.h"

namespace muster::core {
namespace {

class MusterPolicy : public GpuPlacementPolicy {
 public:
  MusterPolicy(std::shared_ptr<const TypicalPods> typical, const MusterPolicyOptions& options)
      : options_(options) {
    TypicalPodsOptions cut;
    cut.popularity_threshold = options.popularity_threshold;
    typical_ = std::make_shared<TypicalPods>(typical->Recut(cut));
    BuildCpuSums();
    double cpu = 0, gpu = 0;
    for (const auto& t : typical_->pods()) {
      cpu += t.weight * static_cast<double>(t.shape.cpu_milli);
      gpu += t.weight * static_cast<double>(t.shape.gpu_milli * t.shape.gpus);
    }
    cpu_per_milli_ = gpu > 0 ? cpu / gpu : 0;
  }

  std::string_view Name() const override { return "muster"; }

  double Score(const GpuPodRequest& pod, const GpuNodeState& node) const override {
    return static_cast<double>(Evaluate(pod, node).score);
  }

  std::vector<int> SelectGpus(const GpuPodRequest& pod, const GpuNodeState& node,
                              RandomSource&) const override {
    if (!pod.SharesGpu()) return BestGpus(pod, node);
    int g = Evaluate(pod, node).gpu;
    return g < 0 ? std::vector<int>{} : std::vector<int>{g};
  }

 private:
  struct Choice {
    int score = -1;
    int gpu = -1;
  };

  int Bucket(double before, double after) const {
    double x = (before - after) / options_.temperature;
    return static_cast<int>(1.0 / (1.0 + std::exp(-x)) * 100);
  }

  // GPU milli the node cannot hand out if its free CPU goes at the typical CPU per GPU milli.
  double Stranded(int64_t cpu, int64_t gpu_milli) const {
    if (options_.strand_weight == 0 || cpu_per_milli_ <= 0) return 0;
    double usable = static_cast<double>(std::max<int64_t>(cpu, 0)) / cpu_per_milli_;
    return options_.strand_weight * std::max(0.0, static_cast<double>(gpu_milli) - usable);
  }

  Choice Evaluate(const GpuPodRequest& pod, const GpuNodeState& node) const {
    const int n = static_cast<int>(node.gpu_free.size());
    const int64_t cpu_after = node.cpu_free - pod.ScoringCpu();
    const int64_t free_before = node.GpuFreeTotal();
    const bool all_free = n > 0 && free_before == int64_t{n} * kMilliPerGpu;
    const bool strand = (!options_.strand_cpu_pods_only || !pod.UsesGpu()) &&
                        !(all_free && (options_.strand_free_nodes == 1 ||
                                       (options_.strand_free_nodes == 3 && pod.UsesGpu())));
    const double strand_before = strand ? Stranded(node.cpu_free, free_before) : 0;
    double strand_after = strand ? Stranded(cpu_after, free_before - pod.GpuDemand()) : 0;
    if (all_free && options_.strand_free_nodes == 2) {
      strand_after = std::max(strand_after, strand_before);
    }
    const double before =
        Frag(node.cpu_free, node.gpu_free.data(), n, node.model, options_.depth) + strand_before;
    std::vector<int32_t> after(node.gpu_free);
    Choice best;
    if (pod.SharesGpu()) {
      double best_tie = 0;
      for (int g = 0; g < n; ++g) {
        int32_t f = node.gpu_free[g];
        if (f < pod.gpu_milli) continue;
        after[g] = static_cast<int32_t>(f - pod.gpu_milli);
        double frag_after =
            Frag(cpu_after, after.data(), n, node.model, options_.depth) + strand_after;
        int s = Bucket(before, frag_after);
        after[g] = f;
        double tie = options_.gpu_ties == 1 ? frag_after : options_.gpu_ties == 2 ? f : 0;
        if (s > best.score || (s == best.score && tie < best_tie)) {
          best = {s, g};
          best_tie = tie;
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
    best.score = Bucket(before, Frag(cpu_after, after.data(), n, node.model, options_.depth) +
                                    strand_after);
    return best;
  }

  // sums_[d]: the sorted distinct sums of 1 .. d + 1 typical CPU requests.
  void BuildCpuSums() {
    std::vector<int64_t> c;
    for (const auto& t : typical_->pods()) c.push_back(t.shape.cpu_milli);
    std::sort(c.begin(), c.end());
    c.erase(std::unique(c.begin(), c.end()), c.end());
    sums_.assign(1, c);
    for (int d = 1; d <= options_.depth; ++d) {
      std::vector<int64_t> next = c;
      for (int64_t a : c) {
        for (int64_t b : sums_[d - 1]) next.push_back(a + b);
      }
      std::sort(next.begin(), next.end());
      next.erase(std::unique(next.begin(), next.end()), next.end());
      sums_.push_back(std::move(next));
    }
  }

  // The largest sum <= cpu (-1 below all): every CPU value between two sums compares alike.
  int64_t CanonicalCpu(int64_t cpu, int depth) const {
    const auto& v = sums_[depth];
    auto it = std::upper_bound(v.begin(), v.end(), cpu);
    return it == v.begin() ? -1 : *(it - 1);
  }

  struct Key {
    uint64_t a, b;
    bool operator==(const Key& o) const { return a == o.a && b == o.b; }
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      uint64_t h = k.a * 0x9e3779b97f4a7c15ULL ^ (k.b + 0x632be59bd9b4e019ULL + (k.a << 6));
      h ^= h >> 31;
      h *= 0xbf58476d1ce4e5b9ULL;
      return static_cast<size_t>(h ^ (h >> 29));
    }
  };

  double Frag(int64_t cpu, const int32_t* f, int n, int model, int depth) const {
    // F_0 is FGD's F; nodes the compact memo key cannot describe (more than 8 GPUs) get it too.
    if (depth == 0 || n > 8 || model < -1 || model > 254) {
      return typical_->Fragmentation(cpu, f, n, model);
    }
    cpu = CanonicalCpu(cpu, depth);
    std::array<int32_t, 8> sorted{};
    for (int g = 0; g < n; ++g) {  // insertion sort of at most 8 values
      int32_t v = f[g];
      int i = g;
      for (; i > 0 && sorted[i - 1] > v; --i) sorted[i] = sorted[i - 1];
      sorted[i] = v;
    }
    int64_t free_milli = 0;
    for (int g = 0; g < n; ++g) free_milli += sorted[g];
    if (free_milli == 0) return 0;
    if (cpu + 1 >= (int64_t{1} << 24) || sorted[0] < 0 || sorted[n - 1] > 1023) {
      return typical_->Fragmentation(cpu, f, n, model);  // beyond the key's fields
    }
    Key key{static_cast<uint64_t>(cpu + 1) | (static_cast<uint64_t>(model + 1) << 24) |
                (static_cast<uint64_t>(depth) << 32) | (static_cast<uint64_t>(n) << 36) |
                (static_cast<uint64_t>(sorted[0]) << 40) | (static_cast<uint64_t>(sorted[1]) << 50),
            0};
    for (int g = 2; g < 8; ++g) key.b |= static_cast<uint64_t>(sorted[g]) << (10 * (g - 2));
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;

    const double all = static_cast<double>(free_milli);
    const auto& pods = typical_->pods();
    const size_t branching = std::min<size_t>(pods.size(), options_.branching);
    double out = 0;
    std::array<int32_t, 8> next;
    for (size_t i = 0; i < pods.size(); ++i) {
      const TypicalPod& t = pods[i];
      const PodShape& s = t.shape;
      bool access = t.models.empty() ||
                    std::find(t.models.begin(), t.models.end(), model) != t.models.end();
      if (s.gpus == 0 || !access || cpu < s.cpu_milli) {
        out += t.weight * all;  // as in F: a pod without GPUs or that cannot run here
        continue;
      }
      if (i >= branching) {  // F's term: the GPUs too small for t, or all when t does not fit
        int fit = 0;
        int64_t small = 0;
        for (int g = 0; g < n; ++g) {
          if (sorted[g] >= s.gpu_milli) {
            ++fit;
          } else {
            small += sorted[g];
          }
        }
        out += t.weight * (fit >= s.gpus ? static_cast<double>(small) : all);
        continue;
      }
      // Place t (a share on the tightest GPU that fits, whole GPUs on free ones) and look on.
      next = sorted;
      int want = s.gpus;
      for (int g = 0; g < n && want > 0; ++g) {
        if (next[g] >= s.gpu_milli) {
          next[g] -= static_cast<int32_t>(s.gpu_milli);
          --want;
        }
      }
      out += t.weight * (want == 0 ? Frag(cpu - s.cpu_milli, next.data(), n, model, depth - 1)
                                   : all);
    }
    memo_.emplace(key, out);
    return out;
  }

  MusterPolicyOptions options_;
  std::shared_ptr<const TypicalPods> typical_;
  std::vector<std::vector<int64_t>> sums_;
  double cpu_per_milli_ = 0;  // the typical pods' CPU per GPU milli (CPU-only pods included)
  mutable std::unordered_map<Key, double, KeyHash> memo_;
};

}  // namespace

std::unique_ptr<GpuPlacementPolicy> NewMusterPolicy(std::shared_ptr<const TypicalPods> typical,
                                                    const MusterPolicyOptions& options) {
  return std::make_unique<MusterPolicy>(std::move(typical), options);
}

}  // namespace muster::core
