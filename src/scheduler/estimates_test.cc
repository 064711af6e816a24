// StartEstimator (estimates.h): which PodGroups get their estimated-start and wait-reason
// annotations written, how rarely, and when no estimate is computed at all.

#include "scheduler/estimates.h"

#include "api/time.h"
#include "core/testing/builders.h"
#include "gtest/gtest.h"

namespace muster::scheduler {
namespace {

using core::test::MakeNode;
using core::test::MakePod;
using core::test::MakePodGroup;

constexpr int64_t kEstimateNow = 1'800'000'000;

// One 1-GPU node held by a blocker expected to run 10 minutes from 60 s ago; a one-pod gang
// waits for it.
void Story(core::Cluster& c, const std::string& blocker_runtime) {
  c.UpsertNode(MakeNode("n0").Cpu("4").Memory("16Gi").Gpus(1).Pods(110).Obj());
  c.UpsertPod(MakePod("default", "blocker")
                  .Gpus(1)
                  .RunningOn("n0")
                  .Started(api::FormatUnixTime(kEstimateNow - 60))
                  .ExpectedRuntime(blocker_runtime)
                  .Obj());
  c.UpsertPodGroup(MakePodGroup("default", "gang").MinMember(1).Phase("Inqueue").Obj());
  c.UpsertPod(MakePod("default", "gang-0").Group("gang").Gpus(1).Obj());
}

// The estimator after the scheduling cycle `seconds` before kEstimateNow, which left the story's
// gang waiting: nothing is explained after a gang's first cycle.
void FirstCycle(StartEstimator& estimator, const core::Cluster& c, uint64_t generation,
                int64_t seconds = 1) {
  EXPECT_TRUE(
      estimator.Plan(c, core::DefaultSchedulerConf(), kEstimateNow - seconds, generation).empty());
  EXPECT_EQ(estimator.runs(), 0);
}

TEST(StartEstimatorTest, AWaitingGangGetsItsEstimateAndReasonOnce) {
  core::Cluster c;
  Story(c, "10m");
  StartEstimator estimator;
  FirstCycle(estimator, c, 1);
  ASSERT_TRUE(estimator.Due(kEstimateNow));
  auto writes = estimator.Plan(c, core::DefaultSchedulerConf(), kEstimateNow, 1);
  ASSERT_EQ(writes.size(), 1u);
  EXPECT_EQ(writes[0].name, "gang");
  ASSERT_TRUE(writes[0].start.has_value());
  EXPECT_EQ(*writes[0].start, kEstimateNow + 540);
  EXPECT_EQ(writes[0].reason,
            "waits for placement in queue default; fits when default/blocker ends");
  EXPECT_NE(writes[0].Patch().find("\"muster.dev/estimated-start\":\"" +
                                   api::FormatUnixTime(kEstimateNow + 540) + "\""),
            std::string::npos)
      << writes[0].Patch();
  estimator.Written(writes[0]);
  // Not due again for 10 s; then nothing to write while nothing moved.
  EXPECT_FALSE(estimator.Due(kEstimateNow + 5));
  ASSERT_TRUE(estimator.Due(kEstimateNow + 10));
  EXPECT_TRUE(estimator.Plan(c, core::DefaultSchedulerConf(), kEstimateNow + 10, 2).empty());
  EXPECT_EQ(estimator.runs(), 2);
}

TEST(StartEstimatorTest, AnEstimateIsRewrittenOnlyWhenItMovesByMoreThanAMinute) {
  core::Cluster c;
  Story(c, "10m");
  StartEstimator estimator;
  FirstCycle(estimator, c, 1);
  for (const EstimateWrite& w :
       estimator.Plan(c, core::DefaultSchedulerConf(), kEstimateNow, 1)) {
    estimator.Written(w);
  }
  // 30 s later: same estimate (the blocker's end does not move).
  c.UpsertPod(MakePod("default", "blocker")
                  .Gpus(1)
                  .RunningOn("n0")
                  .Started(api::FormatUnixTime(kEstimateNow - 60))
                  .ExpectedRuntime("10m30s")
                  .Obj());
  EXPECT_TRUE(estimator.Plan(c, core::DefaultSchedulerConf(), kEstimateNow + 10, 2).empty());
  EXPECT_EQ(estimator.runs(), 2);
  // Five minutes more: rewritten.
  c.UpsertPod(MakePod("default", "blocker")
                  .Gpus(1)
                  .RunningOn("n0")
                  .Started(api::FormatUnixTime(kEstimateNow - 60))
                  .ExpectedRuntime("15m")
                  .Obj());
  auto writes = estimator.Plan(c, core::DefaultSchedulerConf(), kEstimateNow + 20, 3);
  ASSERT_EQ(writes.size(), 1u);
  EXPECT_EQ(*writes[0].start, kEstimateNow + 840);
}

TEST(StartEstimatorTest, AGangThatStartedHasItsAnnotationsRemovedOnce) {
  core::Cluster c;
  Story(c, "10m");
  StartEstimator estimator;
  FirstCycle(estimator, c, 1);
  for (const EstimateWrite& w :
       estimator.Plan(c, core::DefaultSchedulerConf(), kEstimateNow, 1)) {
    estimator.Written(w);
  }
  c.RemovePod("default", "blocker");
  c.UpsertPod(MakePod("default", "gang-0").Group("gang").Gpus(1).RunningOn("n0").Obj());
  auto writes = estimator.Plan(c, core::DefaultSchedulerConf(), kEstimateNow + 10, 2);
  ASSERT_EQ(writes.size(), 1u);
  EXPECT_EQ(writes[0].reason, "");
  EXPECT_EQ(writes[0].Patch(),
            R"({"metadata":{"annotations":{"muster.dev/estimated-start":null,)"
            R"("muster.dev/wait-reason":null}}})");
  estimator.Written(writes[0]);
  EXPECT_TRUE(estimator.Plan(c, core::DefaultSchedulerConf(), kEstimateNow + 20, 3).empty());
}

TEST(StartEstimatorTest, NoExpectedEndMeansNoEstimateButAReason) {
  core::Cluster c;
  c.UpsertNode(MakeNode("n0").Cpu("4").Memory("16Gi").Gpus(1).Pods(110).Obj());
  c.UpsertPod(MakePod("default", "blocker").Gpus(1).RunningOn("n0").Obj());
  c.UpsertPodGroup(MakePodGroup("default", "gang").MinMember(1).Phase("Inqueue").Obj());
  c.UpsertPod(MakePod("default", "gang-0").Group("gang").Gpus(1).Obj());
  StartEstimator estimator;
  FirstCycle(estimator, c, 1);
  auto writes = estimator.Plan(c, core::DefaultSchedulerConf(), kEstimateNow, 1);
  ASSERT_EQ(writes.size(), 1u);
  EXPECT_FALSE(writes[0].start.has_value());
  EXPECT_NE(writes[0].Patch().find("\"muster.dev/estimated-start\":null"), std::string::npos);
  EXPECT_NE(writes[0].reason.find("default/blocker"), std::string::npos);
}

TEST(StartEstimatorTest, NothingIsComputedWhileNothingChanged) {
  core::Cluster c;
  Story(c, "10m");
  StartEstimator estimator;
  FirstCycle(estimator, c, 1);
  for (const EstimateWrite& w :
       estimator.Plan(c, core::DefaultSchedulerConf(), kEstimateNow, 1)) {
    estimator.Written(w);
  }
  ASSERT_EQ(estimator.runs(), 1);
  // Cycles go on, minutes pass, the estimate is still ahead: no simulation, no explanation.
  for (int64_t t = 10; t <= 300; t += 10) {
    ASSERT_TRUE(estimator.Due(kEstimateNow + t));
    EXPECT_TRUE(estimator.Plan(c, core::DefaultSchedulerConf(), kEstimateNow + t, 1).empty());
  }
  EXPECT_EQ(estimator.runs(), 1);
  // The blocker's expected runtime grows by five minutes: one run, and the estimate moves.
  c.UpsertPod(MakePod("default", "blocker")
                  .Gpus(1)
                  .RunningOn("n0")
                  .Started(api::FormatUnixTime(kEstimateNow - 60))
                  .ExpectedRuntime("15m")
                  .Obj());
  auto writes = estimator.Plan(c, core::DefaultSchedulerConf(), kEstimateNow + 310, 2);
  EXPECT_EQ(estimator.runs(), 2);
  ASSERT_EQ(writes.size(), 1u);
  EXPECT_EQ(*writes[0].start, kEstimateNow + 840);
  estimator.Written(writes[0]);
  // A gang's phase is part of what an answer depends on, even when the view's number stays.
  c.UpsertPodGroup(MakePodGroup("default", "gang").MinMember(1).Phase("Pending").Obj());
  estimator.Plan(c, core::DefaultSchedulerConf(), kEstimateNow + 320, 2);
  EXPECT_EQ(estimator.runs(), 3);
}

TEST(StartEstimatorTest, AnEstimateThatCameDueIsComputedAgainThoughNothingChanged) {
  core::Cluster c;
  Story(c, "10m");  // the blocker is expected to end at kEstimateNow + 540
  StartEstimator estimator;
  FirstCycle(estimator, c, 1);
  for (const EstimateWrite& w :
       estimator.Plan(c, core::DefaultSchedulerConf(), kEstimateNow, 1)) {
    estimator.Written(w);
  }
  EXPECT_TRUE(estimator.Plan(c, core::DefaultSchedulerConf(), kEstimateNow + 530, 1).empty());
  EXPECT_EQ(estimator.runs(), 1);
  // The blocker outlives its expected end: the answer moves with the clock.
  estimator.Plan(c, core::DefaultSchedulerConf(), kEstimateNow + 550, 1);
  EXPECT_EQ(estimator.runs(), 2);
}

TEST(StartEstimatorTest, AGangYoungerThanOneCycleIsNotExplained) {
  core::Cluster c;
  c.UpsertNode(MakeNode("n0").Cpu("4").Memory("16Gi").Gpus(1).Pods(110).Obj());
  c.UpsertPodGroup(MakePodGroup("default", "gang").MinMember(1).Phase("Inqueue").Obj());
  c.UpsertPod(MakePod("default", "gang-0").Group("gang").Gpus(1).Obj());
  StartEstimator estimator;
  // The cycle that first sees the gang leaves it unplaced (say its pods came after the
  // session): it is not explained yet ...
  EXPECT_TRUE(estimator.Plan(c, core::DefaultSchedulerConf(), kEstimateNow, 1).empty());
  EXPECT_EQ(estimator.runs(), 0);
  // ... and the next places it: it never was.
  c.UpsertPod(MakePod("default", "gang-0").Group("gang").Gpus(1).RunningOn("n0").Obj());
  EXPECT_TRUE(estimator.Plan(c, core::DefaultSchedulerConf(), kEstimateNow + 20, 2).empty());
  EXPECT_EQ(estimator.runs(), 0);
  // A gang that a second cycle leaves unplaced waits: it is explained then.
  c.UpsertPodGroup(MakePodGroup("default", "other").MinMember(1).Phase("Inqueue").Obj());
  c.UpsertPod(MakePod("default", "other-0").Group("other").Gpus(1).Obj());
  EXPECT_TRUE(estimator.Plan(c, core::DefaultSchedulerConf(), kEstimateNow + 40, 3).empty());
  EXPECT_EQ(estimator.runs(), 0);
  auto writes = estimator.Plan(c, core::DefaultSchedulerConf(), kEstimateNow + 41, 3);
  EXPECT_EQ(estimator.runs(), 1);
  ASSERT_EQ(writes.size(), 1u);
  EXPECT_EQ(writes[0].name, "other");
  EXPECT_NE(writes[0].reason.find("default/gang-0"), std::string::npos) << writes[0].reason;
}

}  // namespace
}  // namespace muster::scheduler
