// The best-connected GPU set (gpu_sets.h). muster's own; the question is the one NVIDIA's
// go-gpuallocator answers for its device plugin (a set of GPUs with the best links among them,
// must-include devices honoured), with a score that needs only NVLink counts, so that the
// scheduler can compute it from a Node's muster.dev/gpu-topology annotation.

#include "api/gpu_sets.h"

#include <algorithm>
#include <iterator>

namespace muster::api {
namespace {

// Whether (a, set_a) beats (b, set_b): the higher score, then the lower GPU numbers.
bool Better(const GpuSetScore& a, const std::vector<int>& set_a, const GpuSetScore& b,
            const std::vector<int>& set_b) {
  if (a != b) return a > b;
  return set_a < set_b;
}

// n choose k, or `cap` + 1 once it passes cap.
int64_t CappedCombinations(int64_t n, int64_t k, int64_t cap) {
  if (k < 0 || k > n) return 0;
  k = std::min(k, n - k);
  int64_t c = 1;
  for (int64_t i = 0; i < k; ++i) {
    c = c * (n - i) / (i + 1);
    if (c > cap) return cap + 1;
  }
  return c;
}

std::vector<int> Merged(const std::vector<int>& a, const std::vector<int>& b) {
  std::vector<int> out;
  out.reserve(a.size() + b.size());
  std::merge(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

std::vector<int> Exhaustive(const GpuTopology& topology, const std::vector<int>& pool, int want,
                            const std::vector<int>& must) {
  const int n = static_cast<int>(pool.size());
  std::vector<int> pick(want);
  for (int i = 0; i < want; ++i) pick[i] = i;
  std::vector<int> best;
  GpuSetScore best_score;
  std::vector<int> chosen(want);
  while (true) {
    for (int i = 0; i < want; ++i) chosen[i] = pool[pick[i]];
    std::vector<int> set = Merged(must, chosen);
    GpuSetScore score = ScoreGpuSet(topology, set);
    if (best.empty() || Better(score, set, best_score, best)) {
      best = std::move(set);
      best_score = score;
    }
    // The next combination in lexicographic order.
    int i = want - 1;
    while (i >= 0 && pick[i] == n - want + i) --i;
    if (i < 0) return best;
    ++pick[i];
    for (int j = i + 1; j < want; ++j) pick[j] = pick[j - 1] + 1;
  }
}

std::vector<int> Greedy(const GpuTopology& topology, const std::vector<int>& pool, int size,
                        const std::vector<int>& must) {
  std::vector<std::vector<int>> seeds;
  if (!must.empty()) {
    seeds.push_back(must);
  } else {
    for (int g : pool) seeds.push_back({g});
  }
  std::vector<int> best;
  GpuSetScore best_score;
  for (std::vector<int> set : seeds) {
    while (static_cast<int>(set.size()) < size) {
      int pick = -1;
      GpuSetScore pick_gain;
      for (int c : pool) {
        if (std::find(set.begin(), set.end(), c) != set.end()) continue;
        GpuSetScore gain;
        for (int g : set) {
          const int l = topology.NvLinks(c, g);
          gain.nvlinks += l;
          gain.linked_pairs += l > 0 ? 1 : 0;
        }
        if (pick < 0 || gain > pick_gain) {  // ascending pool: ties keep the lower number
          pick = c;
          pick_gain = gain;
        }
      }
      set.push_back(pick);
    }
    std::sort(set.begin(), set.end());
    GpuSetScore score = ScoreGpuSet(topology, set);
    if (best.empty() || Better(score, set, best_score, best)) {
      best = std::move(set);
      best_score = score;
    }
  }
  return best;
}

}  // namespace

GpuSetScore ScoreGpuSet(const GpuTopology& topology, const std::vector<int>& gpus) {
  GpuSetScore score;
  for (size_t i = 0; i < gpus.size(); ++i) {
    for (size_t j = i + 1; j < gpus.size(); ++j) {
      const int l = topology.NvLinks(gpus[i], gpus[j]);
      score.nvlinks += l;
      score.linked_pairs += l > 0 ? 1 : 0;
    }
  }
  return score;
}

std::vector<int> BestGpuSet(const GpuTopology& topology, const std::vector<int>& free, int size,
                            const std::vector<int>& must_include) {
  if (size < 1) return {};
  auto usable = [&](int g) { return g >= 0 && g < topology.gpus(); };
  std::vector<int> must;
  for (int g : must_include) {
    if (!usable(g) || std::find(free.begin(), free.end(), g) == free.end()) return {};
    must.push_back(g);
  }
  std::sort(must.begin(), must.end());
  must.erase(std::unique(must.begin(), must.end()), must.end());
  std::vector<int> pool;
  for (int g : free) {
    if (usable(g) && !std::binary_search(must.begin(), must.end(), g)) pool.push_back(g);
  }
  std::sort(pool.begin(), pool.end());
  pool.erase(std::unique(pool.begin(), pool.end()), pool.end());
  const int want = size - static_cast<int>(must.size());
  if (want < 0 || static_cast<int>(pool.size()) < want) return {};
  if (want == 0) return must;
  if (CappedCombinations(static_cast<int64_t>(pool.size()), want, kExhaustiveGpuSets) <=
      kExhaustiveGpuSets) {
    return Exhaustive(topology, pool, want, must);
  }
  return Greedy(topology, pool, size, must);
}

}  // namespace muster::api
