// The best-connected GPU set (gpu_sets.h): the quads and pairs of a DGX-1 a user expects, the
// must-include GPUs the kubelet names, and a brute-force cross-check over every subset of 8 GPUs.

#include "api/gpu_sets.h"

#include <algorithm>
#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::api {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

GpuTopology CubeMesh() {
  GpuTopology t(8);
  const int links[][3] = {{0, 1, 1}, {0, 2, 1}, {0, 3, 2}, {0, 4, 2}, {1, 2, 2}, {1, 3, 1},
                          {1, 5, 2}, {2, 3, 2}, {2, 6, 1}, {3, 7, 1}, {4, 5, 1}, {4, 6, 1},
                          {4, 7, 2}, {5, 6, 2}, {5, 7, 1}, {6, 7, 2}};
  for (const auto& l : links) t.SetNvLinks(l[0], l[1], l[2]);
  return t;
}

std::vector<int> AllBut(int gpus, std::vector<int> taken) {
  std::vector<int> free;
  for (int g = 0; g < gpus; ++g) {
    if (std::find(taken.begin(), taken.end(), g) == taken.end()) free.push_back(g);
  }
  return free;
}

TEST(GpuSetsTest, ADgx1GivesFullyLinkedQuads) {
  const GpuTopology t = CubeMesh();
  EXPECT_THAT(BestGpuSet(t, AllBut(8, {}), 4), ElementsAre(0, 1, 2, 3));
  EXPECT_EQ(ScoreGpuSet(t, {0, 1, 2, 3}), (GpuSetScore{9, 6}));
  // With GPU 0 taken the lowest four (1-4, three links into GPU 4 missing) lose to 4-7.
  EXPECT_THAT(BestGpuSet(t, AllBut(8, {0}), 4), ElementsAre(4, 5, 6, 7));
  EXPECT_EQ(ScoreGpuSet(t, {1, 2, 3, 4}), (GpuSetScore{5, 3}));
  // GPUs 0 and 1 taken: a pair with two NVLinks, and the other quad stays whole.
  EXPECT_THAT(BestGpuSet(t, AllBut(8, {0, 1}), 2), ElementsAre(2, 3));
  EXPECT_THAT(BestGpuSet(t, AllBut(8, {0, 1, 2, 3}), 4), ElementsAre(4, 5, 6, 7));
  // Three: two NV2 pairs and an NV1 in one quad.
  EXPECT_THAT(BestGpuSet(t, AllBut(8, {}), 3), ElementsAre(0, 2, 3));
  EXPECT_THAT(BestGpuSet(t, AllBut(8, {}), 8), ElementsAre(0, 1, 2, 3, 4, 5, 6, 7));
  EXPECT_THAT(BestGpuSet(t, AllBut(8, {}), 1), ElementsAre(0));
}

TEST(GpuSetsTest, MustIncludeGpusAreKeptAndTheRestChosenAroundThem) {
  const GpuTopology t = CubeMesh();
  EXPECT_THAT(BestGpuSet(t, AllBut(8, {}), 4, {5}), ElementsAre(4, 5, 6, 7));
  EXPECT_THAT(BestGpuSet(t, AllBut(8, {}), 2, {0}), ElementsAre(0, 3));
  EXPECT_THAT(BestGpuSet(t, AllBut(8, {}), 2, {0, 5}), ElementsAre(0, 5));
  // Impossible asks: nothing.
  EXPECT_THAT(BestGpuSet(t, AllBut(8, {}), 1, {0, 5}), IsEmpty());
  EXPECT_THAT(BestGpuSet(t, AllBut(8, {5}), 2, {5}), IsEmpty());  // 5 is not free
  EXPECT_THAT(BestGpuSet(t, {0, 1, 9}, 3), IsEmpty());             // 9 is not on the node
  EXPECT_THAT(BestGpuSet(t, AllBut(8, {}), 0), IsEmpty());
}

TEST(GpuSetsTest, WithoutNvLinksTheLowestFreeGpusWin) {
  EXPECT_THAT(BestGpuSet(GpuTopology(8), {7, 5, 3, 1}, 2), ElementsAre(1, 3));
}

// Every subset of `free` of `size` holding `must`, the best by score then lowest numbers.
std::vector<int> BruteForce(const GpuTopology& t, const std::vector<int>& free, int size,
                            const std::vector<int>& must) {
  unsigned free_mask = 0, must_mask = 0;
  for (int g : free) free_mask |= 1u << g;
  for (int g : must) must_mask |= 1u << g;
  std::vector<int> best;
  GpuSetScore best_score;
  for (unsigned mask = 0; mask < (1u << t.gpus()); ++mask) {
    if ((mask & ~free_mask) != 0 || (mask & must_mask) != must_mask) continue;
    if (__builtin_popcount(mask) != size) continue;
    std::vector<int> set;
    for (int g = 0; g < t.gpus(); ++g) {
      if ((mask >> g) & 1u) set.push_back(g);
    }
    GpuSetScore score = ScoreGpuSet(t, set);
    if (best.empty() || score > best_score || (score == best_score && set < best)) {
      best = set;
      best_score = score;
    }
  }
  return best;
}

TEST(GpuSetsTest, AgreesWithBruteForceOnEightGpus) {
  std::mt19937 draws(20261207);
  int checked = 0;
  for (int round = 0; round < 300; ++round) {
    GpuTopology t(8);
    for (int a = 0; a < 8; ++a) {
      for (int b = a + 1; b < 8; ++b) {
        // About half the pairs linked, by 1 to 4 NVLinks; the cube-mesh every tenth round.
        if (draws() % 2 == 0) t.SetNvLinks(a, b, static_cast<int>(draws() % 4) + 1);
      }
    }
    if (round % 10 == 0) t = CubeMesh();
    std::vector<int> free, must;
    for (int g = 0; g < 8; ++g) {
      if (draws() % 4 != 0) free.push_back(g);
    }
    for (int g : free) {
      if (draws() % 6 == 0) must.push_back(g);
    }
    for (int size = 1; size <= 8; ++size) {
      std::vector<int> want = BruteForce(t, free, size, must);
      EXPECT_EQ(BestGpuSet(t, free, size, must), want)
          << FormatGpuTopology(t) << " size " << size << " free " << free.size();
      checked += want.empty() ? 0 : 1;
    }
  }
  EXPECT_GT(checked, 1000);  // most asks had an answer to compare
}

TEST(GpuSetsTest, PastTheExhaustiveLimitTheGreedySearchFindsAWholeIsland) {
  // 24 GPUs as three NVSwitch islands of 8 (every pair of an island linked by 18): choosing 8
  // of 23 free GPUs is too many sets to weigh one by one.
  GpuTopology t(24);
  for (int a = 0; a < 24; ++a) {
    for (int b = a + 1; b < 24; ++b) {
      if (a / 8 == b / 8) t.SetNvLinks(a, b, 18);
    }
  }
  EXPECT_THAT(BestGpuSet(t, AllBut(24, {0}), 8), ElementsAre(8, 9, 10, 11, 12, 13, 14, 15));
  EXPECT_THAT(BestGpuSet(t, AllBut(24, {0}), 8, {20}),
              ElementsAre(16, 17, 18, 19, 20, 21, 22, 23));
}

}  // namespace
}  // namespace muster::api
