// gang (gang.cc) through whole scheduling cycles: a gang's pods bind all together or not at
// all, minTaskMember, JobValid, the PodGroup condition and events with Volcano's texts, and the
// GPU devices a gang's binds get.

#include <map>
#include <set>
#include <string>

#include "core/testing/harness.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::core {
namespace {

using test::AddGang;
using test::AddGpuNodes;
using test::Binds;
using test::Condition;
using test::Events;
using test::Evicted;
using test::Group;
using test::Harness;
using test::MakePod;
using test::MakePodGroup;
using test::Message;
using test::N;
using test::Phase;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

TEST(GangTest, FourPodGangOnThreeFreeGpusBindsNothing) {
  Harness h;
  AddGpuNodes(h, 4, 1);
  h.Add(MakePod("other", "holder").Gpus(1).RunningOn("n4").Obj());
  AddGang(h, "pg", 4, 4, 1);
  CycleResult r = h.Run();
  EXPECT_THAT(Binds(r), IsEmpty());
  EXPECT_THAT(Evicted(r), IsEmpty());
  const auto* st = Group(r, "ns/pg");
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(st->phase, "Inqueue");  // admitted by enqueue, not placed
  ASSERT_TRUE(st->condition.has_value());
  EXPECT_EQ(st->condition->type, "Unschedulable");
  EXPECT_EQ(st->condition->status, "True");
  EXPECT_EQ(st->condition->reason, "NotEnoughResources");
  EXPECT_EQ(st->condition->message,
            "1/4 tasks in gang unschedulable: pod group is not ready, 4 Pending, 4 minAvailable; "
            "Pending: 1 Unschedulable, 3 Schedulable. Origin reason is pg-4: 0/4 nodes are "
            "unavailable: 4 Insufficient nvidia.com/gpu.");
  EXPECT_THAT(Events(r, "ns/pg", "Unschedulable"),
              ElementsAre("4/4 tasks in gang unschedulable: pod group is not ready, 4 Pending, 4 "
                          "minAvailable; Pending: 1 Unschedulable, 3 Schedulable. Origin reason "
                          "is pg-4: 0/4 nodes are unavailable: 4 Insufficient nvidia.com/gpu."));
  // The three that fitted wait for the gang; the fourth has its own reason.
  const auto* p1 = Condition(r, "ns/pg-1");
  ASSERT_NE(p1, nullptr);
  EXPECT_EQ(p1->reason, "Schedulable");
  EXPECT_THAT(p1->message, ::testing::MatchesRegex(
                               "Pod ns/pg-1 can possibly be assigned to n[123], once minAvailable "
                               "is satisfied"));
  EXPECT_EQ(Message(r, "ns/pg-4"), "0/4 nodes are unavailable: 4 Insufficient nvidia.com/gpu.");
  EXPECT_EQ(Events(r, "ns/pg-4", "FailedScheduling").size(), 1u);
  // Nothing is left tentatively placed in the cluster.
  for (const char* n : {"n1", "n2", "n3"}) {
    EXPECT_EQ(h.cluster().FindNode(n)->FreeGpus(), 1) << n;
    EXPECT_EQ(h.cluster().FindNode(n)->pod_count, 0) << n;
  }

  // The holder finishes: the whole gang binds, one pod per node.
  h.Remove("other/holder");
  r = h.Run();
  EXPECT_THAT(Binds(r),
              UnorderedElementsAre(Pair("ns/pg-1", ::testing::_), Pair("ns/pg-2", ::testing::_),
                                   Pair("ns/pg-3", ::testing::_), Pair("ns/pg-4", ::testing::_)));
  std::set<std::string> nodes;
  for (const auto& b : r.binds) {
    nodes.insert(b.node);
    EXPECT_THAT(b.gpus, ElementsAre(0));
  }
  EXPECT_EQ(nodes.size(), 4u);
  st = Group(r, "ns/pg");
  EXPECT_EQ(st->phase, "Running");
  ASSERT_TRUE(st->condition.has_value());
  EXPECT_EQ(st->condition->type, "Scheduled");
  EXPECT_THAT(Events(r, "ns/pg", "Scheduled"), ElementsAre("pod group is ready"));
  EXPECT_THAT(Events(r, "ns/pg-1", "Scheduled"),
              ElementsAre("Successfully assigned ns/pg-1 to " + Binds(r)["ns/pg-1"]));
  EXPECT_THAT(r.pod_conditions, IsEmpty());
}

// Pods of one shape that fit nowhere are judged once per allocate while no node changes: every
// one of them gets the full search's reasons, and a node that a discarded gang gives back is
// seen by the next pod of that shape.
constexpr char kNoQueueShareConf[] = R"(
actions: "enqueue, allocate"
tiers:
- plugins: [{name: priority}, {name: gang}]
- plugins: [{name: predicates}, {name: nodeorder}]
)";

TEST(GangTest, PodsThatFitNowhereAllGetTheReasonsOfTheFullSearch) {
  Harness h;
  AddGpuNodes(h, 2, 1);
  for (const char* pg : {"a", "b", "c", "d"}) {
    h.Add(MakePodGroup("ns", pg).Obj());
    h.Add(MakePod("ns", std::string(pg) + "-1").Group(pg).Req("cpu", "1").Gpus(1).Obj());
  }
  CycleResult r = h.Run(kNoQueueShareConf);
  EXPECT_EQ(r.binds.size(), 2u);
  int unplaced = 0;
  for (const char* pod : {"ns/a-1", "ns/b-1", "ns/c-1", "ns/d-1"}) {
    if (Binds(r).count(pod)) continue;
    ++unplaced;
    EXPECT_EQ(Message(r, pod), "0/2 nodes are unavailable: 2 Insufficient nvidia.com/gpu.") << pod;
  }
  EXPECT_EQ(unplaced, 2);
}

TEST(GangTest, NodesADiscardedGangGivesBackGoToTheNextPodOfItsShape) {
  Harness h;
  AddGpuNodes(h, 1, 2);
  // a (first in order) places two pods on n1's two GPUs, finds no node for its third and gives
  // both back; b's pod, of the same shape, then fits.
  AddGang(h, "a", 3, 3, 1);
  h.Add(MakePodGroup("ns", "b").Obj());
  h.Add(MakePod("ns", "b-1").Group("b").Req("cpu", "1").Gpus(1).Obj());
  CycleResult r = h.Run(kNoQueueShareConf);
  EXPECT_THAT(Binds(r), ElementsAre(Pair("ns/b-1", "n1")));
  EXPECT_EQ(Phase(r, "ns/a"), "Inqueue");
}

TEST(GangTest, GangBeyondMinMemberBindsWhatFits) {
  Harness h;
  AddGpuNodes(h, 1, 2);
  AddGang(h, "pg", 3, 2, 1);
  CycleResult r = h.Run();
  EXPECT_THAT(Binds(r), ElementsAre(Pair("ns/pg-1", "n1"), Pair("ns/pg-2", "n1")));
  EXPECT_EQ(Phase(r, "ns/pg"), "Running");
  // The third is over the queue's share (2 GPUs in the cluster), so no node was tried for it.
  EXPECT_EQ(Message(r, "ns/pg-3"), "all nodes are unavailable");
}

TEST(GangTest, MissingRoleMinimumBlocksTheWholeGang) {
  Harness h;
  h.Add(N("n1").Obj());
  h.Add(MakePodGroup("ns", "pg")
            .MinMember(2)
            .MinTaskMember("ps", 1)
            .MinTaskMember("worker", 1)
            .Obj());
  h.Add(
      MakePod("ns", "pg-ps-0").Group("pg").Role("ps").Req("cpu", "1").NodeSelector("x", "y").Obj());
  h.Add(MakePod("ns", "pg-worker-0").Group("pg").Role("worker").Req("cpu", "1").Obj());
  h.Add(MakePod("ns", "pg-worker-1").Group("pg").Role("worker").Req("cpu", "1").Obj());
  CycleResult r = h.Run();
  EXPECT_THAT(Binds(r), IsEmpty()) << "two workers satisfy minMember but not minTaskMember[ps]";
  EXPECT_EQ(Phase(r, "ns/pg"), "Inqueue");

  // With the ps placeable the gang binds.
  h.Update("ns/pg-ps-0", [](api::Pod& p) { p.spec.node_selector.clear(); });
  r = h.Run();
  EXPECT_EQ(Binds(r).size(), 3u);
}

TEST(GangTest, GangWithTooFewPodsIsInvalid) {
  Harness h;
  h.Add(N("n1").Obj());
  AddGang(h, "pg", 2, 3, 0);
  CycleResult r = h.Run();
  EXPECT_THAT(Binds(r), IsEmpty());
  const auto* st = Group(r, "ns/pg");
  ASSERT_NE(st, nullptr);
  ASSERT_TRUE(st->condition.has_value());
  EXPECT_EQ(st->condition->reason, "NotEnoughTasks");
  EXPECT_EQ(st->condition->message, "Not enough valid tasks for gang-scheduling, valid: 2, min: 3");
  EXPECT_EQ(st->phase, "Pending");
}

// A Volcano Job's PodGroup has no pods until it is Inqueue (the controller creates them then), so
// gang's per-task check cannot hold before enqueue: the group must still be admitted, quietly.
TEST(GangTest, PendingGroupWithoutPodsYetIsEnqueuedWithoutACondition) {
  Harness h;
  AddGpuNodes(h, 2, 1);
  h.Add(MakePodGroup("ns", "job").MinMember(2).MinTaskMember("trainer", 2).Obj());
  CycleResult r = h.Run();
  const auto* st = Group(r, "ns/job");
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(st->phase, "Inqueue");
  EXPECT_FALSE(st->condition.has_value() && st->condition->reason == "NotEnoughPodsOfTask")
      << st->condition->message;
  for (const auto& e : r.events) {
    EXPECT_NE(e.message, "Not enough valid pods of each task for gang-scheduling");
  }
}

// Without enqueue in the conf, allocate admits Pending groups itself (Volcano's allocate sets them
// Inqueue when no enqueue action is configured). That must include a Volcano Job's group that has
// no pods yet, or its controller never creates them and the job waits for ever.
TEST(GangTest, WithoutEnqueueAllocateAdmitsAGroupThatHasNoPodsYet) {
  Harness h;
  AddGpuNodes(h, 2, 1);
  h.Add(MakePodGroup("ns", "job").MinMember(2).MinTaskMember("trainer", 2).Obj());
  CycleResult r = h.Run(R"(
actions: "allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: predicates}, {name: nodeorder}]
)");
  EXPECT_EQ(Phase(r, "ns/job"), "Inqueue");
  // Its pods, once created, are placed in the next cycle.
  h.Add(MakePod("ns", "job-trainer-0").Group("job").Role("trainer").Req("cpu", "1").Gpus(1).Obj());
  h.Add(MakePod("ns", "job-trainer-1").Group("job").Role("trainer").Req("cpu", "1").Gpus(1).Obj());
  r = h.Run(R"(
actions: "allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: predicates}, {name: nodeorder}]
)");
  EXPECT_EQ(Binds(r).size(), 2u);
  EXPECT_EQ(Phase(r, "ns/job"), "Running");
}

TEST(GangTest, GpuDevicesInBindsAreDistinctPerNodeAndAvoidHeldDevices) {
  Harness h;
  AddGpuNodes(h, 2, 8);
  h.Add(MakePod("other", "holder").Gpus(3).RunningOn("n1").Obj());  // devices 0-2 of n1
  AddGang(h, "pg", 6, 6, 2);
  CycleResult r = h.Run();
  ASSERT_EQ(r.binds.size(), 6u);
  std::map<std::string, std::set<int>> used = {{"n1", {0, 1, 2}}};
  for (const auto& b : r.binds) {
    EXPECT_EQ(b.gpus.size(), 2u) << b.pod;
    for (int g : b.gpus) {
      EXPECT_GE(g, 0);
      EXPECT_LT(g, 8);
      EXPECT_TRUE(used[b.node].insert(g).second)
          << "device " << g << " of " << b.node << " handed out twice (" << b.pod << ")";
    }
  }
  EXPECT_EQ(used["n1"].size() + used["n2"].size(), 15u);  // 3 held + 12 bound
}

TEST(GangTest, PodUpdateDoesNotLeadToADeviceHandedOutTwice) {
  // cycle 1 binds b to device 2 (devices 0-1 are a's); a finishes; the kubelet reports b
  // Running; cycle 2 must not give device 2 to c.
  Harness h;
  AddGpuNodes(h, 1, 4);
  h.Add(MakePod("other", "a").Gpus(2).RunningOn("n1").Obj());
  AddGang(h, "b", 1, 1, 1);
  CycleResult r = h.Run();
  ASSERT_EQ(r.binds.size(), 1u);
  ASSERT_THAT(r.binds[0].gpus, ElementsAre(2));
  h.Remove("other/a");
  h.Update("ns/b-1", [](api::Pod& p) { p.status.phase = "Running"; });
  AddGang(h, "c", 1, 1, 3);
  r = h.Run();
  ASSERT_EQ(r.binds.size(), 1u);
  EXPECT_THAT(r.binds[0].gpus, ::testing::Not(::testing::Contains(2)));
}

}  // namespace
}  // namespace muster::core
