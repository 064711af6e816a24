// PlanGangRepairs: which gangs left bound below minAvailable are completed as recorded, which are
// undone, and which are none of its business.

#include "scheduler/gang_repair.h"

#include <gtest/gtest.h>

#include "api/gpu_indices.h"
#include "core/testing/builders.h"
#include "scheduler/cluster_mirror.h"

namespace muster::scheduler {
namespace {

using core::test::MakeNode;
using core::test::MakePod;
using core::test::MakePodGroup;

client::Binding Member(std::string pod, std::string uid, std::string node, std::string gpus = "") {
  client::Binding b;
  b.ns = "ns";
  b.pod = std::move(pod);
  b.pod_uid = std::move(uid);
  b.node = std::move(node);
  if (!gpus.empty()) b.annotations[api::kGpuIndicesAnnotation] = std::move(gpus);
  return b;
}

// Two one-GPU nodes and a gang of two recorded on n0 and n1; `a` is bound to n0, `b` is not.
class GangRepairTest : public ::testing::Test {
 protected:
  void SetUp() override {
    mirror_.UpsertNode(MakeNode("n0").Cpu("4").Memory("8Gi").Gpus(1).Obj());
    mirror_.UpsertNode(MakeNode("n1").Cpu("4").Memory("8Gi").Gpus(1).Obj());
    record_ = {Member("a", "ua", "n0", "0"), Member("b", "ub", "n1", "0")};
  }
  void Gang(std::string scheduler = "volcano") {
    api::PodGroup pg = MakePodGroup("ns", "pg").MinMember(2).Phase("Inqueue").Obj();
    pg.meta.annotations[kPlacementAnnotation] = PlacementText(record_);
    mirror_.UpsertPodGroup(pg);
    api::Pod a = MakePod("ns", "a").Group("pg").Uid("ua").Req("cpu", "1").Gpus(1).Obj();
    a.spec.node_name = "n0";
    a.meta.annotations[api::kGpuIndicesAnnotation] = "0";
    a.spec.scheduler_name = scheduler;
    mirror_.UpsertPod(a);
    api::Pod b = MakePod("ns", "b").Group("pg").Uid("ub").Req("cpu", "1").Gpus(1).Obj();
    b.spec.scheduler_name = scheduler;
    mirror_.UpsertPod(b);
  }
  std::vector<GangRepair> Plan() {
    return PlanGangRepairs(mirror_.cluster(), {"volcano", "muster"});
  }

  ClusterMirror mirror_{MirrorOptions{}};
  std::vector<client::Binding> record_;
};

TEST(PlacementTest, TextRoundTrips) {
  std::vector<client::Binding> b = {Member("a", "ua", "n0", "0,3"), Member("b", "ub", "n1")};
  std::vector<RecordedMember> m = ParsePlacement(PlacementText(b));
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].name, "a");
  EXPECT_EQ(m[0].uid, "ua");
  EXPECT_EQ(m[0].node, "n0");
  EXPECT_EQ(m[0].gpus, "0,3");
  EXPECT_EQ(m[1].gpus, "");
  EXPECT_TRUE(ParsePlacement("not json").empty());
  EXPECT_TRUE(ParsePlacement(R"({"pods":[{"name":"a"}]})").empty());
}

TEST_F(GangRepairTest, AHalfBoundGangWhoseRecordStillFitsIsCompletedAsRecorded) {
  Gang();
  std::vector<GangRepair> repairs = Plan();
  ASSERT_EQ(repairs.size(), 1u);
  EXPECT_EQ(repairs[0].job, "ns/pg");
  EXPECT_EQ(repairs[0].bound, 1);
  ASSERT_TRUE(repairs[0].complete) << repairs[0].why;
  ASSERT_EQ(repairs[0].bindings.size(), 1u);
  EXPECT_EQ(repairs[0].bindings[0].pod, "b");
  EXPECT_EQ(repairs[0].bindings[0].node, "n1");
  EXPECT_EQ(repairs[0].bindings[0].pod_uid, "ub");
  EXPECT_EQ(repairs[0].bindings[0].annotations.at(api::kGpuIndicesAnnotation), "0");
}

TEST_F(GangRepairTest, WhenTheRecordNoLongerFitsTheBoundMembersAreUndone) {
  Gang();
  // Another pod took n1's GPU meanwhile.
  api::Pod other = MakePod("ns", "other").Uid("uo").Gpus(1).Obj();
  other.spec.scheduler_name = "default-scheduler";
  other.spec.node_name = "n1";
  other.status.phase = "Running";
  mirror_.UpsertPod(other);
  std::vector<GangRepair> repairs = Plan();
  ASSERT_EQ(repairs.size(), 1u);
  EXPECT_FALSE(repairs[0].complete);
  EXPECT_NE(repairs[0].why.find("n1"), std::string::npos) << repairs[0].why;
  ASSERT_EQ(repairs[0].undo.size(), 1u);
  EXPECT_EQ(repairs[0].undo[0].pod, "a");
  EXPECT_EQ(repairs[0].undo[0].pod_uid, "ua");
}

TEST_F(GangRepairTest, AGoneNodeUndoesTheGang) {
  Gang();
  mirror_.RemoveNode("n1");
  std::vector<GangRepair> repairs = Plan();
  ASSERT_EQ(repairs.size(), 1u);
  EXPECT_FALSE(repairs[0].complete);
  EXPECT_EQ(repairs[0].undo.size(), 1u);
}

TEST_F(GangRepairTest, PodsOfAnotherSchedulerAreNeverTouched) {
  Gang("yunikorn");
  EXPECT_TRUE(Plan().empty());
}

TEST_F(GangRepairTest, AReplacedMemberMeansTheRecordIsStale) {
  record_[1].pod_uid = "an-older-b";
  Gang();
  EXPECT_TRUE(Plan().empty());
}

TEST_F(GangRepairTest, AWholeGangOrOneWithNothingBoundNeedsNoRepair) {
  Gang();
  api::Pod b = MakePod("ns", "b").Group("pg").Uid("ub").Req("cpu", "1").Gpus(1).Obj();
  b.spec.node_name = "n1";
  mirror_.UpsertPod(b);
  EXPECT_TRUE(Plan().empty());

  mirror_.RemovePod("ns", "a");
  mirror_.RemovePod("ns", "b");
  mirror_.UpsertPod(MakePod("ns", "a").Group("pg").Uid("ua").Gpus(1).Obj());
  mirror_.UpsertPod(MakePod("ns", "b").Group("pg").Uid("ub").Gpus(1).Obj());
  EXPECT_TRUE(Plan().empty());
}

}  // namespace
}  // namespace muster::scheduler
