#include "core/plugins/gpuplacement/typical_pods.h"

#include <numeric>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::core {
namespace {

using ::testing::DoubleNear;
using ::testing::ElementsAre;

TypicalPods Single(PodShape shape, double weight) {
  TypicalPod t;
  t.shape = std::move(shape);
  t.weight = weight;
  return TypicalPods({t});
}

TEST(FragmentationTest, SpecUnitVectorLackCpu) {
  // KSS's unit vector (pkg/utils/frag_test.go; docs/fgd.md section 3.6): one typical pod
  // (6000 mCPU, 465 milli, 1 GPU, w = 0.0933) on a node with 1000 mCPU and GPUs 200, 1000, 1000,
  // 500 free: the GPUs fit, the CPU does not (q4_lack_cpu), so all 2700 free milli count:
  // 0.0933 * 2700 = 251.91.
  TypicalPods t = Single({6000, 465, 1, ""}, 0.0933);
  int32_t f[] = {200, 1000, 1000, 500};
  EXPECT_THAT(t.Fragmentation(1000, f, 4, 0), DoubleNear(251.91, 1e-9));
  FragBreakdown b = t.Breakdown(1000, f, 4, 0);
  EXPECT_THAT(b.amount[FragBreakdown::kQ4LackCpu], DoubleNear(251.91, 1e-9));
}

TEST(FragmentationTest, SatisfiedCountsOnlyTheGpusTooSmall) {
  TypicalPods t = Single({6000, 465, 1, ""}, 1);
  int32_t f[] = {200, 1000, 1000, 500};
  // Fits (CPU 8000 >= 6000): only GPU 0 (200 < 465) is fragment.
  EXPECT_DOUBLE_EQ(t.Fragmentation(8000, f, 4, 0), 200);
  FragBreakdown b = t.Breakdown(8000, f, 4, 0);
  EXPECT_DOUBLE_EQ(b.amount[FragBreakdown::kQ3Satisfied], 2500);
  // No GPU fits a 2-GPU whole pod with one free GPU: everything is fragment (q2).
  TypicalPods two = Single({1000, 1000, 2, ""}, 1);
  int32_t one_free[] = {1000, 300};
  EXPECT_DOUBLE_EQ(two.Fragmentation(8000, one_free, 2, 0), 1300);
  EXPECT_DOUBLE_EQ(two.Breakdown(500, one_free, 2, 0).amount[FragBreakdown::kQ1LackBoth], 1300);
  // Nothing free, nothing fragmented.
  int32_t full[] = {0, 0};
  EXPECT_DOUBLE_EQ(two.Fragmentation(8000, full, 2, 0), 0);
}

TEST(FragmentationTest, CpuPodsAndOtherModelsMakeEverythingFragment) {
  GpuModels models;
  int t4 = models.Id("T4"), v100 = models.Id("V100M16");
  TypicalPod cpu_only{{4000, 0, 0, ""}, {}, 1, 0.5};
  TypicalPod t4_only{{1000, 500, 1, "T4"}, ParseGpuSpec("T4", models), 1, 0.5};
  TypicalPods t({cpu_only, t4_only});
  int32_t f[] = {1000, 400};
  // On a T4 node: the CPU pod makes 1400 fragment (xl_satisfied), the T4 pod only the 400 GPU.
  EXPECT_DOUBLE_EQ(t.Fragmentation(8000, f, 2, t4), 0.5 * 1400 + 0.5 * 400);
  // On a V100 node the T4 pod has no access: all 1400.
  EXPECT_DOUBLE_EQ(t.Fragmentation(8000, f, 2, v100), 1400);
  EXPECT_DOUBLE_EQ(t.Breakdown(8000, f, 2, v100).amount[FragBreakdown::kNoAccess], 700);
  EXPECT_DOUBLE_EQ(t.Breakdown(2000, f, 2, v100).amount[FragBreakdown::kXrLackCpu], 700);
}

TEST(TypicalPodsTest, KeepsTheMostFrequentShapesUpToTheThreshold) {
  GpuModels models;
  std::vector<PodShape> pods;
  auto add = [&](PodShape s, int n) {
    for (int i = 0; i < n; ++i) pods.push_back(s);
  };
  add({3000, 500, 1, ""}, 50);
  add({8000, 1000, 1, ""}, 30);
  add({2000, 0, 0, ""}, 10);
  add({9000, 1000, 1, ""}, 5);  // ties with the next: the larger shape (by CPU) first
  add({1000, 1000, 8, ""}, 5);
  TypicalPods t = TypicalPods::FromPods(pods, models, {.popularity_threshold = 95});
  ASSERT_EQ(t.pods().size(), 4u);  // 50+30+10+5 = 95 reaches 95 %
  EXPECT_EQ(t.pods()[0].shape, (PodShape{3000, 500, 1, ""}));
  EXPECT_EQ(t.pods()[3].shape, (PodShape{9000, 1000, 1, ""}));
  EXPECT_DOUBLE_EQ(t.coverage(), 0.95);
  EXPECT_NEAR(t.pods()[0].weight, 50.0 / 95, 1e-12);
  double sum = 0;
  for (const auto& p : t.pods()) sum += p.weight;
  EXPECT_NEAR(sum, 1, 1e-12);
  // Weighting whole GPUs by count (gpu_res_weight) pulls the 8-GPU shape in.
  TypicalPods weighted =
      TypicalPods::FromPods(pods, models, {.popularity_threshold = 95, .gpu_res_weight = 1});
  bool has_eight = false;
  for (const auto& p : weighted.pods()) has_eight |= p.shape.gpus == 8;
  EXPECT_TRUE(has_eight);
  // Everything kept at 100 %, also when the 95 % cut is re-cut.
  EXPECT_EQ(TypicalPods::FromPods(pods, models, {.popularity_threshold = 100}).pods().size(), 5u);
  TypicalPods recut = t.Recut({.popularity_threshold = 100});
  ASSERT_EQ(recut.pods().size(), 5u);
  EXPECT_NEAR(recut.pods()[0].weight, 0.5, 1e-12);
  EXPECT_EQ(recut.Recut({.popularity_threshold = 95}).pods().size(), 4u);
}

TEST(GpuSpecTest, ParsesAndNormalises) {
  GpuModels models;
  EXPECT_EQ(NormalizeGpuSpec("|V100M16||V100M32|"), "V100M16|V100M32");
  EXPECT_THAT(ParseGpuSpec("|V100M16||V100M32|", models), ElementsAre(0, 1));
  EXPECT_THAT(ParseGpuSpec("", models), ElementsAre());
  EXPECT_EQ(models.Find("V100M32"), 1);
  EXPECT_EQ(models.Find("A100"), -1);
}

}  // namespace
}  // namespace muster::core
