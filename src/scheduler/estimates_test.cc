// StartEstimator (estimates.h): which PodGroups get their estimated-start and wait-reason
// annotations written, and how rarely.

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

TEST(StartEstimatorTest, AWaitingGangGetsItsEstimateAndReasonOnce) {
  core::Cluster c;
  Story(c, "10m");
  StartEstimator estimator;
  ASSERT_TRUE(estimator.Due(kEstimateNow));
  auto writes = estimator.Plan(c, core::DefaultSchedulerConf(), kEstimateNow);
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
  EXPECT_TRUE(estimator.Plan(c, core::DefaultSchedulerConf(), kEstimateNow + 10).empty());
}

TEST(StartEstimatorTest, AnEstimateIsRewrittenOnlyWhenItMovesByMoreThanAMinute) {
  core::Cluster c;
  Story(c, "10m");
  StartEstimator estimator;
  for (const EstimateWrite& w : estimator.Plan(c, core::DefaultSchedulerConf(), kEstimateNow)) {
    estimator.Written(w);
  }
  // 30 s later: same estimate (the blocker's end does not move).
  c.UpsertPod(MakePod("default", "blocker")
                  .Gpus(1)
                  .RunningOn("n0")
                  .Started(api::FormatUnixTime(kEstimateNow - 60))
                  .ExpectedRuntime("10m30s")
                  .Obj());
  EXPECT_TRUE(estimator.Plan(c, core::DefaultSchedulerConf(), kEstimateNow + 10).empty());
  // Five minutes more: rewritten.
  c.UpsertPod(MakePod("default", "blocker")
                  .Gpus(1)
                  .RunningOn("n0")
                  .Started(api::FormatUnixTime(kEstimateNow - 60))
                  .ExpectedRuntime("15m")
                  .Obj());
  auto writes = estimator.Plan(c, core::DefaultSchedulerConf(), kEstimateNow + 20);
  ASSERT_EQ(writes.size(), 1u);
  EXPECT_EQ(*writes[0].start, kEstimateNow + 840);
}

TEST(StartEstimatorTest, AGangThatStartedHasItsAnnotationsRemovedOnce) {
  core::Cluster c;
  Story(c, "10m");
  StartEstimator estimator;
  for (const EstimateWrite& w : estimator.Plan(c, core::DefaultSchedulerConf(), kEstimateNow)) {
    estimator.Written(w);
  }
  c.RemovePod("default", "blocker");
  c.UpsertPod(MakePod("default", "gang-0").Group("gang").Gpus(1).RunningOn("n0").Obj());
  auto writes = estimator.Plan(c, core::DefaultSchedulerConf(), kEstimateNow + 10);
  ASSERT_EQ(writes.size(), 1u);
  EXPECT_EQ(writes[0].reason, "");
  EXPECT_EQ(writes[0].Patch(),
            R"({"metadata":{"annotations":{"muster.dev/estimated-start":null,)"
            R"("muster.dev/wait-reason":null}}})");
  estimator.Written(writes[0]);
  EXPECT_TRUE(estimator.Plan(c, core::DefaultSchedulerConf(), kEstimateNow + 20).empty());
}

TEST(StartEstimatorTest, NoExpectedEndMeansNoEstimateButAReason) {
  core::Cluster c;
  c.UpsertNode(MakeNode("n0").Cpu("4").Memory("16Gi").Gpus(1).Pods(110).Obj());
  c.UpsertPod(MakePod("default", "blocker").Gpus(1).RunningOn("n0").Obj());
  c.UpsertPodGroup(MakePodGroup("default", "gang").MinMember(1).Phase("Inqueue").Obj());
  c.UpsertPod(MakePod("default", "gang-0").Group("gang").Gpus(1).Obj());
  StartEstimator estimator;
  auto writes = estimator.Plan(c, core::DefaultSchedulerConf(), kEstimateNow);
  ASSERT_EQ(writes.size(), 1u);
  EXPECT_FALSE(writes[0].start.has_value());
  EXPECT_NE(writes[0].Patch().find("\"muster.dev/estimated-start\":null"), std::string::npos);
  EXPECT_NE(writes[0].reason.find("default/blocker"), std::string::npos);
}

}  // namespace
}  // namespace muster::scheduler
