// The placement policies' scores and GPU choices on hand-built nodes, checked against the
// formulas of docs/fgd.md section 3 worked out by hand.

#include "core/plugins/gpuplacement/placement.h"

#include <memory>

#include "core/plugins/gpuplacement/kss_policies.h"
#include "core/plugins/gpuplacement/typical_pods.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::core {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

GpuNodeState Node(int64_t cpu, std::vector<int32_t> gpus, int model = 0) {
  GpuNodeState n;
  n.cpu_free = cpu;
  n.memory_free = 1 << 20;
  n.model = gpus.empty() ? -1 : model;
  n.gpu_free = std::move(gpus);
  return n;
}

GpuPodRequest Pod(int64_t cpu, int64_t milli, int gpus, std::vector<int> models = {}) {
  GpuPodRequest p;
  p.cpu_milli = cpu;
  p.memory = 1024;
  p.gpu_milli = milli;
  p.gpus = gpus;
  p.models = std::move(models);
  return p;
}

std::unique_ptr<GpuPlacementPolicy> Policy(std::string_view name,
                                           std::shared_ptr<const TypicalPods> typical = nullptr) {
  auto p = NewGpuPlacementPolicy(name, GpuPolicyContext{std::move(typical)});
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *std::move(p) : nullptr;
}

// Draws scripted answers, recording the bounds asked for.
class ScriptedDraws : public RandomSource {
 public:
  explicit ScriptedDraws(std::vector<int> answers) : answers_(std::move(answers)) {}
  int Intn(int n) override {
    bounds.push_back(n);
    return answers_.at(next_++);
  }
  std::vector<int> bounds;

 private:
  std::vector<int> answers_;
  size_t next_ = 0;
};

TEST(FitsTest, ChecksCpuMemoryPodsModelAndGpus) {
  GpuNodeState n = Node(8000, {300, 1000, 1000, 0}, /*model=*/2);
  EXPECT_TRUE(Fits(Pod(8000, 0, 0), n));
  EXPECT_FALSE(Fits(Pod(8001, 0, 0), n));
  GpuPodRequest big_memory = Pod(1000, 0, 0);
  big_memory.memory = n.memory_free + 1;
  EXPECT_FALSE(Fits(big_memory, n));
  EXPECT_TRUE(Fits(Pod(1000, 300, 1), n));
  EXPECT_TRUE(Fits(Pod(1000, 1000, 2), n));
  EXPECT_FALSE(Fits(Pod(1000, 1000, 3), n));  // two whole GPUs free, not three
  EXPECT_TRUE(Fits(Pod(1000, 500, 1, {2, 5}), n));
  EXPECT_FALSE(Fits(Pod(1000, 500, 1, {5}), n));  // another model
  EXPECT_FALSE(Fits(Pod(1000, 500, 1), Node(8000, {})));  // no GPUs
  n.pods = n.max_pods;
  EXPECT_FALSE(Fits(Pod(1, 0, 0), n));
}

TEST(BestGpusTest, ShareTakesTheTightestGpuWholeTakesTheFirstFree) {
  GpuNodeState n = Node(8000, {1000, 600, 400, 600, 1000});
  EXPECT_THAT(BestGpus(Pod(1000, 500, 1), n), ElementsAre(1));  // 600 < 1000; first of the 600s
  EXPECT_THAT(BestGpus(Pod(1000, 300, 1), n), ElementsAre(2));
  EXPECT_THAT(BestGpus(Pod(1000, 1000, 2), n), ElementsAre(0, 4));
  EXPECT_THAT(BestGpus(Pod(1000, 0, 0), n), IsEmpty());
}

TEST(ApplyPlacementTest, PlacesAndRemovesExactly) {
  GpuNodeState n = Node(8000, {1000, 1000});
  GpuPodRequest p = Pod(3000, 400, 1);
  ApplyPlacement(p, {1}, +1, n);
  EXPECT_EQ(n.cpu_free, 5000);
  EXPECT_THAT(n.gpu_free, ElementsAre(1000, 600));
  EXPECT_EQ(n.pods, 1);
  EXPECT_EQ(n.TagCount(0), 1);
  ApplyPlacement(p, {1}, -1, n);
  EXPECT_EQ(n.cpu_free, 8000);
  EXPECT_THAT(n.gpu_free, ElementsAre(1000, 1000));
  EXPECT_EQ(n.TagKinds(), 0);
}

TEST(PolicyTest, DotProductPrefersTheNodeWithLessLeft) {
  auto p = Policy("dotproduct");
  // 1 - (64000/128000 * 8000/128000 + 2000/8000 * 1000/8000) / 2 = 1 - 0.0625 / 2 = 0.96875.
  EXPECT_EQ(p->Score(Pod(8000, 1000, 1), Node(64000, {1000, 1000})), 96);
  // A bigger node aligns more with the pod: lower score.
  EXPECT_EQ(p->Score(Pod(8000, 1000, 1), Node(128000, {1000, 1000, 1000, 1000, 1000, 1000, 1000,
                                                        1000})),
            90);  // 1 - (0.0625 + 0.125) / 2 = 0.90625
}

TEST(PolicyTest, GpuClusteringBands) {
  auto p = Policy("clustering");
  GpuNodeState empty = Node(8000, {1000, 1000, 1000, 1000});  // base 25*4000/8000 = 12
  EXPECT_EQ(p->Score(Pod(1000, 500, 1), empty), 12 + 25);
  GpuNodeState shared = Node(8000, {500, 1000, 1000, 1000});  // base 25*4500/8000 = 14
  shared.AddTag(0, 1);
  EXPECT_EQ(p->Score(Pod(1000, 500, 1), shared), 14 + 75);   // only shares there
  EXPECT_EQ(p->Score(Pod(1000, 1000, 1), shared), 14 + 0);   // other kind only
  shared.AddTag(1, 1);
  EXPECT_EQ(p->Score(Pod(1000, 500, 1), shared), 14 + 50);   // mixed, with the pod's kind
  EXPECT_EQ(p->Score(Pod(1000, 1000, 2), shared), 14 + 0);   // 2-GPU is its own kind
  EXPECT_EQ(p->Score(Pod(1000, 0, 0), shared), 0);
}

TEST(PolicyTest, GpuPackingPrefersUsedGpusThenUsedNodes) {
  auto p = Policy("packing");
  EXPECT_EQ(p->Score(Pod(1, 500, 1), Node(8000, std::vector<int32_t>(8, 1000))), 25);  // 33 - 8
  EXPECT_EQ(p->Score(Pod(1, 500, 1), Node(8000, {1000, 1000})), 31);                   // 33 - 2
  // The tightest GPU that fits (600: 60 / 10 = 6 off).
  EXPECT_EQ(p->Score(Pod(1, 500, 1), Node(8000, {1000, 600, 200})), 94);
  // Whole GPUs on a used node: 50 - 2.
  EXPECT_EQ(p->Score(Pod(1, 1000, 2), Node(8000, {1000, 600, 1000})), 48);
  EXPECT_EQ(p->Score(Pod(1, 0, 0), Node(8000, {1000, 600, 1000})), 0);
}

TEST(PolicyTest, BestFitScoresWhatIsLeft) {
  auto p = Policy("bestfit");
  // 100 * (1 - (0.5 * 56000/128000 + 0.5 * 1000/8000)) = 100 * (1 - 0.28125) = 71.875.
  EXPECT_EQ(p->Score(Pod(8000, 1000, 1), Node(64000, {1000, 1000})), 71);
  EXPECT_EQ(p->Score(Pod(8000, 1000, 1), Node(8000, {1000})), 100);
}

TEST(PolicyTest, RandomDrawsAGpuAmongThoseThatFit) {
  auto p = Policy("random");
  EXPECT_TRUE(p->PicksNodeAtRandom());
  // Eligible GPUs 0, 2, 3 (reservoir: draw 1/1, 1/2, 1/3); answers keep 0, replace with 2, keep.
  ScriptedDraws draws({0, 0, 1});
  EXPECT_THAT(p->SelectGpus(Pod(1, 500, 1), Node(8000, {800, 100, 500, 1000}), draws),
              ElementsAre(2));
  EXPECT_THAT(draws.bounds, ElementsAre(1, 2, 3));
  ScriptedDraws none({});
  EXPECT_THAT(p->SelectGpus(Pod(1, 1000, 2), Node(8000, {800, 1000, 1000}), none),
              ElementsAre(1, 2));
}

// One typical pod (6000 mCPU, 465 milli, 1 GPU).
std::shared_ptr<const TypicalPods> OneTypical() {
  TypicalPod t;
  t.shape = {6000, 465, 1, ""};
  t.weight = 1;
  return std::make_shared<TypicalPods>(std::vector<TypicalPod>{t});
}

TEST(PolicyTest, FgdScoresTheFragmentationDelta) {
  auto p = Policy("fgd", OneTypical());
  ScriptedDraws none({});
  // Node: 10 cores, GPUs 500 and 1000 free. F(n) = 0: both GPUs fit the typical pod.
  GpuNodeState n = Node(10000, {500, 1000});
  // A 100-milli share on GPU 0 leaves 400 < 465: F' = 400, score = trunc(100 sigmoid(-0.4)) = 40.
  // On GPU 1 it leaves 900: F' = 0, score 50. GPU 1 wins.
  EXPECT_EQ(p->Score(Pod(1000, 100, 1), n), 50);
  EXPECT_THAT(p->SelectGpus(Pod(1000, 100, 1), n, none), ElementsAre(1));
  // A CPU pod that leaves 9000 mCPU changes nothing: 50. One that leaves 5000 (< 6000) makes
  // all 1500 free milli unusable: trunc(100 sigmoid(-1.5)) = 18.
  EXPECT_EQ(p->Score(Pod(1000, 0, 0), n), 50);
  EXPECT_EQ(p->Score(Pod(5000, 0, 0), n), 18);
  // A whole GPU takes GPU 1; GPU 0 (500) still fits the typical pod: 50.
  EXPECT_EQ(p->Score(Pod(1000, 1000, 1), n), 50);
  // On an unusable node (too little CPU left) a share that lowers F scores above 50:
  // F = 1500 -> 1000 after taking all of GPU 0's 500: trunc(100 sigmoid(0.5)) = 62.
  GpuNodeState starved = Node(5000, {500, 1000});
  EXPECT_EQ(p->Score(Pod(1000, 500, 1), starved), 62);
  EXPECT_THAT(p->SelectGpus(Pod(1000, 500, 1), starved, none), ElementsAre(0));
}

TEST(PolicyTest, MusterLooksAheadWhereFgdTies) {
  // Typical pods: shares of 500 milli only. A 400-milli share can go to a fresh GPU (leaving 600)
  // or to one with 900 free (leaving 500). FGD sees no fragment either way (the next 500 fits
  // both) and ties at 50. One step further, 600 leaves a useless 100 after the next 500 while
  // 500 is filled exactly: muster prefers the 900 GPU.
  TypicalPod t;
  t.shape = {1000, 500, 1, ""};
  t.weight = 1;
  auto typical = std::make_shared<TypicalPods>(std::vector<TypicalPod>{t});
  GpuPolicyContext context;
  context.typical = typical;
  context.muster.depth = 1;
  auto fgd = Policy("fgd", typical);
  auto muster = NewGpuPlacementPolicy("muster", context);
  ASSERT_TRUE(muster.ok());
  GpuNodeState fresh = Node(16000, {1000}), used = Node(16000, {900});
  GpuPodRequest share = Pod(1000, 400, 1);
  EXPECT_EQ(fgd->Score(share, fresh), 50);
  EXPECT_EQ(fgd->Score(share, used), 50);
  // F_1(1000) = 0, F_1(600) = 100: trunc(100 sigmoid(-0.1)) = 47.
  EXPECT_EQ((*muster)->Score(share, fresh), 47);
  // F_1(900) = 400, F_1(500) = 0: trunc(100 sigmoid(0.4)) = 59.
  EXPECT_EQ((*muster)->Score(share, used), 59);
  // Depth 0 is FGD.
  context.muster.depth = 0;
  auto flat = NewGpuPlacementPolicy("muster", context);
  ASSERT_TRUE(flat.ok());
  EXPECT_EQ((*flat)->Score(share, fresh), 50);
  EXPECT_EQ((*flat)->Score(share, used), 50);
  // On a node with both GPUs the share goes to the 900 one.
  ScriptedDraws none({});
  EXPECT_THAT((*muster)->SelectGpus(share, Node(16000, {1000, 900}), none), ElementsAre(1));
  EXPECT_THAT(fgd->SelectGpus(share, Node(16000, {1000, 900}), none), ElementsAre(0));
}

TEST(PolicyTest, MusterStrandingTermSteersCpuAwayFromGpusItWouldStrand) {
  // One typical pod: a whole GPU with 8000 mCPU, so k = 8 mCPU per GPU milli. Node a has 16000
  // mCPU for its 2 GPUs (exactly k), node b 64000. A CPU-only pod of 8000 leaves a 8000 mCPU,
  // room for one typical pod: 1000 of its 2000 free milli are stranded. FGD sees no fragment
  // either way (the typical pod still fits both) and ties at 50.
  TypicalPod t;
  t.shape = {8000, 1000, 1, ""};
  t.weight = 1;
  auto typical = std::make_shared<TypicalPods>(std::vector<TypicalPod>{t});
  GpuPolicyContext context;
  context.typical = typical;
  context.muster.depth = 0;
  context.muster.strand_weight = 1;
  context.muster.strand_free_nodes = 0;  // the term on all nodes, those with all GPUs free too
  auto muster = NewGpuPlacementPolicy("muster", context);
  ASSERT_TRUE(muster.ok());
  auto fgd = Policy("fgd", typical);
  GpuNodeState a = Node(16000, {1000, 1000}), b = Node(64000, {1000, 1000});
  GpuPodRequest cpu_only = Pod(8000, 0, 0);
  EXPECT_EQ(fgd->Score(cpu_only, a), 50);
  EXPECT_EQ(fgd->Score(cpu_only, b), 50);
  // Stranded 0 before, 1000 after: trunc(100 sigmoid(-1)) = 26; on b nothing is stranded.
  EXPECT_EQ((*muster)->Score(cpu_only, a), 26);
  EXPECT_EQ((*muster)->Score(cpu_only, b), 50);
  // A GPU pod of 12000 mCPU on a leaves 4000 mCPU and 1000 milli: F = 1000 (the typical pod's
  // CPU no longer fits) and 500 stranded: trunc(100 sigmoid(-1.5)) = 18; with the term for
  // CPU-only pods alone, F only: 26.
  GpuPodRequest heavy = Pod(12000, 1000, 1);
  EXPECT_EQ((*muster)->Score(heavy, a), 18);
  context.muster.strand_cpu_pods_only = true;
  auto cpu_pods_only = NewGpuPlacementPolicy("muster", context);
  ASSERT_TRUE(cpu_pods_only.ok());
  EXPECT_EQ((*cpu_pods_only)->Score(heavy, a), 26);
  EXPECT_EQ((*cpu_pods_only)->Score(cpu_only, a), 26);
  // Weight 0 is the policy without the term.
  context.muster.strand_weight = 0;
  auto off = NewGpuPlacementPolicy("muster", context);
  ASSERT_TRUE(off.ok());
  EXPECT_EQ((*off)->Score(cpu_only, a), 50);
}

TEST(PolicyTest, MusterStrandingTermLeavesNodesWithAllGpusFreeToGpuPods) {
  // The typical pod and nodes of the test above. Node a has both GPUs free: by default (3) the
  // term is left out there for pods with GPUs, so the GPU pod scores by F alone (26, not 18),
  // while the CPU-only pod, which takes CPU and no GPU, keeps it (26). A node like a with a
  // third GPU in use (c) keeps the term for every pod. With 1 the term is left out on a for
  // every pod: the CPU-only pod scores as in FGD (50).
  TypicalPod t;
  t.shape = {8000, 1000, 1, ""};
  t.weight = 1;
  auto typical = std::make_shared<TypicalPods>(std::vector<TypicalPod>{t});
  GpuPolicyContext context;
  context.typical = typical;
  context.muster.depth = 0;
  context.muster.strand_weight = 1;
  EXPECT_EQ(context.muster.strand_free_nodes, 3);  // the default
  auto muster = NewGpuPlacementPolicy("muster", context);
  ASSERT_TRUE(muster.ok());
  GpuNodeState a = Node(16000, {1000, 1000}), c = Node(16000, {1000, 1000, 0});
  GpuPodRequest cpu_only = Pod(8000, 0, 0), heavy = Pod(12000, 1000, 1);
  EXPECT_EQ((*muster)->Score(heavy, a), 26);
  EXPECT_EQ((*muster)->Score(cpu_only, a), 26);
  EXPECT_EQ((*muster)->Score(cpu_only, c), 26);
  // A CPU-light GPU pod on a node short of CPU: 32000 mCPU for 8 GPUs strands 4000 milli; one
  // GPU with 1000 mCPU leaves 31000 mCPU for 7000 milli, 3125 stranded. The term everywhere
  // (0) rewards breaking the free node up (70); by default, and with 2 (penalties only), the
  // score is F's (50).
  GpuNodeState short_free = Node(32000, std::vector<int32_t>(8, 1000));
  GpuPodRequest light = Pod(1000, 1000, 1);
  EXPECT_EQ((*muster)->Score(light, short_free), 50);
  context.muster.strand_free_nodes = 0;
  auto everywhere = NewGpuPlacementPolicy("muster", context);
  ASSERT_TRUE(everywhere.ok());
  EXPECT_EQ((*everywhere)->Score(light, short_free), 70);
  context.muster.strand_free_nodes = 2;
  auto penalties = NewGpuPlacementPolicy("muster", context);
  ASSERT_TRUE(penalties.ok());
  EXPECT_EQ((*penalties)->Score(light, short_free), 50);
  EXPECT_EQ((*penalties)->Score(cpu_only, a), 26);
  context.muster.strand_free_nodes = 1;
  auto off = NewGpuPlacementPolicy("muster", context);
  ASSERT_TRUE(off.ok());
  EXPECT_EQ((*off)->Score(cpu_only, a), 50);
  EXPECT_EQ((*off)->Score(cpu_only, c), 26);
}

TEST(PolicyFactoryTest, NamesAndErrors) {
  for (const std::string& name : GpuPolicyNames()) {
    auto p = NewGpuPlacementPolicy(name, GpuPolicyContext{OneTypical()});
    ASSERT_TRUE(p.ok()) << name << ": " << p.status();
    EXPECT_EQ((*p)->Name(), name);
  }
  EXPECT_TRUE(NewGpuPlacementPolicy("gpu-BestFit", {}).ok());
  auto unknown = NewGpuPlacementPolicy("tetris", {});
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(std::string(unknown.status().message()),
              HasSubstr("unknown GPU placement policy \"tetris\"; known: random, dotproduct"));
  auto no_typical = NewGpuPlacementPolicy("fgd", {});
  ASSERT_FALSE(no_typical.ok());
  EXPECT_THAT(std::string(no_typical.status().message()), HasSubstr("typical pod distribution"));
}

}  // namespace
}  // namespace muster::core
