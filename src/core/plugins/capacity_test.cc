// capacity (capacity.cc) through whole scheduling cycles, on a three-level queue tree
// (root -> org -> teams) with enableHierarchy: a team above its deserved GPUs is reclaimed for
// another team's gang, a parent's capability caps its children together, a tree with a cycle
// refuses every vote, and a job too big for its queue is held back with Volcano's message.

#include <string>

#include "core/testing/harness.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::core {
namespace {

using test::AddGang;
using test::AddGpuNodes;
using test::BindMap;
using test::Binds;
using test::CountWithPrefix;
using test::Evicted;
using test::Events;
using test::Harness;
using test::MakePodGroup;
using test::MakeQueue;
using ::testing::ElementsAre;
using ::testing::Each;
using ::testing::StartsWith;

constexpr char kHierarchyConf[] = R"(
actions: "enqueue, allocate, reclaim"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins:
  - {name: drf}
  - {name: predicates}
  - {name: capacity, enableHierarchy: true}
  - {name: nodeorder}
)";

// root -> org -> team-a, team-b; each team deserves half of the org's 8 GPUs.
void AddTree(Harness& h, const std::string& org_capability_gpus = "") {
  h.Add(MakeQueue("root").Obj());
  auto org = MakeQueue("org").Parent("root").Deserved("nvidia.com/gpu", "8");
  if (!org_capability_gpus.empty()) org.Capability("nvidia.com/gpu", org_capability_gpus);
  h.Add(org.Obj());
  for (const char* team : {"team-a", "team-b"}) {
    h.Add(MakeQueue(team).Parent("org").Deserved("nvidia.com/gpu", "4").Obj());
  }
}

TEST(CapacityTest, TeamOverItsDeservedShareIsReclaimedForAnotherTeamsGang) {
  Harness h;
  AddGpuNodes(h, 2, 4);
  AddTree(h);
  // team-a takes all 8 GPUs while team-b is idle.
  AddGang(h, "a", 8, 1, 1, "team-a");
  ASSERT_EQ(Binds(h.Run(kHierarchyConf)).size(), 8u);
  for (int i = 1; i <= 8; ++i) {
    h.Update("ns/a-" + std::to_string(i), [](api::Pod& p) { p.status.phase = "Running"; });
  }
  // team-b's gang of 4 waits for the GPUs team-a holds beyond its deserved 4.
  AddGang(h, "b", 4, 4, 1, "team-b");
  CycleResult reclaim = h.Run(kHierarchyConf);
  EXPECT_EQ(reclaim.evictions.size(), 4u);
  EXPECT_THAT(Evicted(reclaim), Each(StartsWith("ns/a-")));
  CycleResult next = h.Run(kHierarchyConf);
  EXPECT_EQ(CountWithPrefix(Binds(next), "ns/b-"), 4);
  // team-a is back at its deserved share: nothing more of it is taken.
  EXPECT_TRUE(h.Run(kHierarchyConf).evictions.empty());
}

TEST(CapacityTest, TeamWithinItsDeservedShareKeepsItsPods) {
  Harness h;
  AddGpuNodes(h, 1, 8);
  AddTree(h);
  AddGang(h, "a", 4, 1, 1, "team-a");
  AddGang(h, "b", 4, 1, 1, "team-b");
  ASSERT_EQ(Binds(h.Run(kHierarchyConf)).size(), 8u);
  for (const char* pod : {"ns/a-1", "ns/a-2", "ns/a-3", "ns/a-4", "ns/b-1", "ns/b-2", "ns/b-3",
                          "ns/b-4"}) {
    h.Update(pod, [](api::Pod& p) { p.status.phase = "Running"; });
  }
  // team-b asks for more while both are at their deserved 4: no one is reclaimed.
  AddGang(h, "b2", 1, 1, 1, "team-b");
  CycleResult r = h.Run(kHierarchyConf);
  EXPECT_TRUE(r.evictions.empty());
  EXPECT_TRUE(r.binds.empty());
}

TEST(CapacityTest, ParentCapabilityCapsItsChildrenTogether) {
  Harness h;
  AddGpuNodes(h, 1, 8);
  AddTree(h, /*org_capability_gpus=*/"4");
  AddGang(h, "a", 3, 1, 1, "team-a");
  AddGang(h, "b", 3, 1, 1, "team-b");
  BindMap binds = Binds(h.Run(kHierarchyConf));
  // Each team alone may take 3 (it inherits the org's 4); together they stop at the org's 4.
  EXPECT_EQ(binds.size(), 4u);
}

TEST(CapacityTest, ATreeWithACycleRefusesEveryVote) {
  Harness h;
  AddGpuNodes(h, 1, 8);
  AddTree(h);
  h.Add(MakeQueue("x").Parent("y").Obj());
  h.Add(MakeQueue("y").Parent("x").Obj());
  AddGang(h, "a", 1, 1, 1, "team-a");
  EXPECT_TRUE(h.Run(kHierarchyConf).binds.empty());
}

TEST(CapacityTest, JobAboveItsQueuesRealCapabilityIsNotEnqueued) {
  Harness h;
  AddGpuNodes(h, 1, 8);
  AddTree(h, /*org_capability_gpus=*/"4");
  h.Add(MakePodGroup("ns", "big").Queue("team-a").MinResources("nvidia.com/gpu", "6").Obj());
  CycleResult r = h.Run(kHierarchyConf);
  EXPECT_EQ(test::Phase(r, "ns/big"), "Pending");
  EXPECT_THAT(Events(r, "ns/big", "Unschedulable"),
              ElementsAre("queue resource quota insufficient: insufficient nvidia.com/gpu"));
}

TEST(CapacityTest, WithoutHierarchyDeservedIsTheQueuesOwn) {
  Harness h;
  AddGpuNodes(h, 1, 8);
  h.Add(MakeQueue("qa").Deserved("nvidia.com/gpu", "2").Capability("nvidia.com/gpu", "6").Obj());
  AddGang(h, "a", 8, 1, 1, "qa");
  CycleResult r = h.Run(R"(
actions: "enqueue, allocate"
tiers:
- plugins: [{name: gang}, {name: predicates}, {name: capacity}]
)");
  EXPECT_EQ(r.binds.size(), 6u);  // capability, not deserved, caps what it places
  EXPECT_EQ(r.queue_deserved.at("qa").Get(kGpu), 2000);
}

}  // namespace
}  // namespace muster::core
