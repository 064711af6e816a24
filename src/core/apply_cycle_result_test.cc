#include "core/apply_cycle_result.h"

#include <string>
#include <vector>

#include "api/gpu_indices.h"
#include "core/testing/builders.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::core {
namespace {

using test::MakeNode;
using test::MakePod;
using ::testing::ElementsAre;

// A cluster with one 4-GPU node and two pending 2-GPU pods, ns/a and ns/b.
Cluster TwoPendingPods() {
  Cluster c;
  c.UpsertNode(MakeNode("n1").Cpu("8").Memory("16Gi").Gpus(4).Obj());
  c.UpsertPod(MakePod("ns", "a").Req("cpu", "1").Gpus(2).Obj());
  c.UpsertPod(MakePod("ns", "b").Req("cpu", "1").Gpus(2).Obj());
  return c;
}

CycleResult BindBoth() {
  CycleResult r;
  r.binds.push_back({"ns/a", "n1", {2, 3}});
  r.binds.push_back({"ns/b", "n1", {0, 1}});
  return r;
}

TEST(ApplyCycleResultTest, ABoundPodGetsItsNodeAndTheDevicesTheEngineChose) {
  Cluster c = TwoPendingPods();
  ApplyCycleResult(c, BindBoth());
  const TaskInfo* a = c.FindTask("ns/a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->pod->spec.node_name, "n1");
  EXPECT_EQ(a->pod->meta.annotations.at(api::kGpuIndicesAnnotation), "2,3");
  EXPECT_EQ(a->status, TaskStatus::kBound);
  EXPECT_THAT(a->gpus, ElementsAre(2, 3));
  EXPECT_THAT(c.FindTask("ns/b")->gpus, ElementsAre(0, 1));
  EXPECT_EQ(c.FindNode("n1")->FreeGpus(), 0);
  // The phase is the kubelet's to report: left as it was.
  EXPECT_EQ(a->pod->status.phase, "Pending");
  EXPECT_TRUE(a->pod->status.start_time.empty());
}

TEST(ApplyCycleResultTest, RunningSinceReportsEveryBoundPodRunningFromThen) {
  Cluster c = TwoPendingPods();
  ApplyCycleResult(c, BindBoth(), {.running_since = "2026-12-02T10:00:00Z"});
  for (const char* key : {"ns/a", "ns/b"}) {
    const TaskInfo* t = c.FindTask(key);
    ASSERT_NE(t, nullptr) << key;
    EXPECT_EQ(t->pod->status.phase, "Running") << key;
    EXPECT_EQ(t->pod->status.start_time, "2026-12-02T10:00:00Z") << key;
    EXPECT_EQ(t->status, TaskStatus::kRunning) << key;
  }
}

TEST(ApplyCycleResultTest, AnEvictedPodIsGoneAndItsDevicesAreFree) {
  Cluster c = TwoPendingPods();
  ApplyCycleResult(c, BindBoth());
  CycleResult r;
  r.evictions.push_back({"ns/a", "preempted"});
  ApplyCycleResult(c, r);
  EXPECT_EQ(c.FindTask("ns/a"), nullptr);
  EXPECT_NE(c.FindTask("ns/b"), nullptr);
  EXPECT_EQ(c.FindNode("n1")->FreeGpus(), 2);
}

TEST(ApplyCycleResultTest, DecisionsForPodsTheClusterNoLongerHoldsAreSkipped) {
  Cluster c = TwoPendingPods();
  CycleResult r;
  r.binds.push_back({"ns/gone", "n1", {0}});
  r.binds.push_back({"ns/a", "n1", {}});
  r.evictions.push_back({"ns/also-gone", "preempted"});
  ApplyCycleResult(c, r);
  EXPECT_EQ(c.FindTask("ns/gone"), nullptr);
  EXPECT_EQ(c.FindTask("ns/a")->pod->spec.node_name, "n1");
  // No devices named: no annotation written.
  EXPECT_FALSE(c.FindTask("ns/a")->pod->meta.annotations.count(api::kGpuIndicesAnnotation));
  EXPECT_EQ(c.FindTask("ns/b")->pod->spec.node_name, "");
}

}  // namespace
}  // namespace muster::core
