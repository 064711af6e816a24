// allocate's reservations for large gangs (reserve.h) through scheduling cycles: which jobs go
// ahead of a gang that holds a reservation, and when a gang gets one.

#include <string>
#include <string_view>
#include <utility>

#include "core/testing/harness.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::core {
namespace {

using test::AddBlockedGang;
using test::AddGang;
using test::AddGpuNodes;
using test::AllocateConf;
using test::At;
using test::Binds;
using test::Group;
using test::Harness;
using test::MakeHyperNode;
using test::MakeNode;
using test::MakePod;
using test::MakePodGroup;
using test::MakePriorityClass;
using test::MustParse;
using test::Now;
using ::testing::_;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

TEST(ReserveTest, JobsThatEndBeforeTheGangCanStartGoAheadOthersWait) {
  // At 10 g does not fit (A holds n1 until 100): it gets a reservation of both nodes from 100.
  // c1 (1 GPU for 50 s, gone by 60) goes ahead; c2 (500 s) and c3 (no expected runtime: for
  // ever) would keep g from starting at 100, and wait.
  Harness h;
  AddBlockedGang(h, {{"c1", 1, "50s"}, {"c2", 1, "500s"}, {"c3", 1, ""}});
  CycleResult r = h.Run(AllocateConf("{reserveGpus: 16}"), Now(10));
  EXPECT_THAT(Binds(r), ElementsAre(Pair("ns/c1-1", "n2")));
  const auto* c2 = Group(r, "ns/c2");
  ASSERT_NE(c2, nullptr);
  ASSERT_TRUE(c2->condition.has_value());
  EXPECT_THAT(c2->condition->message,
              ::testing::HasSubstr("waits for the reservation of ns/g (expected to fit in 90s)"));

  // Without reservations (or for gangs of more GPUs than g's 16) everything that fits goes.
  for (std::string_view arguments : {"{}", "{reserveGpus: 17}"}) {
    Harness plain;
    AddBlockedGang(plain, {{"c1", 1, "50s"}, {"c2", 1, "500s"}, {"c3", 1, ""}});
    EXPECT_EQ(plain.Run(AllocateConf(arguments), Now(10)).binds.size(), 3u) << arguments;
  }
  // Not before g has waited reserveAfter.
  Harness young;
  AddBlockedGang(young, {{"c2", 1, "500s"}});
  EXPECT_THAT(Binds(young.Run(AllocateConf("{reserveGpus: 16, reserveAfter: 1m}"), Now(10))),
              ElementsAre(Pair("ns/c2-1", "n2")));
  Harness old;
  AddBlockedGang(old, {{"c2", 1, "500s"}});
  EXPECT_THAT(old.Run(AllocateConf("{reserveGpus: 16, reserveAfter: 1m}"), Now(70)).binds,
              IsEmpty());
}

TEST(ReserveTest, NoReservationWhileTheGangWaitsForAPodWithoutAnExpectedEnd) {
  // A has no expected runtime: nothing tells when g could start, so nothing is held for it.
  Harness h;
  AddBlockedGang(h, {{"c2", 1, "500s"}}, /*a_runtime=*/"");
  EXPECT_THAT(Binds(h.Run(AllocateConf("{reserveGpus: 16}"), Now(10))),
              ElementsAre(Pair("ns/c2-1", "n2")));
  // Nor without the cycle's time to plan from.
  Harness untimed;
  AddBlockedGang(untimed, {{"c2", 1, "500s"}});
  EXPECT_THAT(Binds(untimed.Run(AllocateConf("{reserveGpus: 16}"), SessionOptions{})),
              ElementsAre(Pair("ns/c2-1", "n2")));
}

TEST(ReserveTest, JobsOnNodesTheGangDoesNotNeedGoAhead) {
  // Three nodes; A (n1) ends at 100, B (n2) at 200, D holds 4 GPUs of n3 for ever. g (2 x 8)
  // fits at 200 on n1 and n2. c (4 GPUs for 500 s) can only go to n3's other 4 GPUs, which g
  // does not need: it goes ahead although it runs past 200.
  Harness h;
  AddGpuNodes(h, 3, 8);
  h.Add(MakePodGroup("other", "run").Phase("Running").Created(At(0)).Obj());
  h.Add(MakePod("other", "a")
            .Group("run")
            .Req("cpu", "1")
            .Gpus(8)
            .RunningOn("n1")
            .Started(At(0))
            .ExpectedRuntime("100s")
            .Obj());
  h.Add(MakePod("other", "b")
            .Group("run")
            .Req("cpu", "1")
            .Gpus(8)
            .RunningOn("n2")
            .Started(At(0))
            .ExpectedRuntime("200s")
            .Obj());
  h.Add(MakePod("other", "d")
            .Group("run")
            .Req("cpu", "1")
            .Gpus(4)
            .RunningOn("n3")
            .Started(At(0))
            .Obj());
  AddGang(h, "g", 2, 2, 8);
  h.Add(MakePodGroup("ns", "c").Created(At(5)).Obj());
  h.Add(MakePod("ns", "c-1").Group("c").Req("cpu", "1").Gpus(4).ExpectedRuntime("500s").Obj());
  CycleResult r = h.Run(AllocateConf("{reserveGpus: 16}"), Now(10));
  EXPECT_THAT(Binds(r), ElementsAre(Pair("ns/c-1", "n3")));
}

TEST(ReserveTest, AHigherPriorityJobIsNotHeldBackByALowerOnesReservation) {
  // g has waited since 1 and holds its reservation from the start of the cycle at 10 (tried
  // first, it does not fit). hi (priority 1000, 500 s) would keep g from starting at 100 on n2,
  // but a lower-priority reservation does not hold it back; lo, the same at priority 0, waits.
  auto run = [](int32_t priority) {
    Harness h;
    AddBlockedGang(h, {});
    h.Add(MakePriorityClass("high", 1000)).Add(MakePriorityClass("low", 0));
    const char* cls = priority > 0 ? "high" : "low";
    h.Add(MakePodGroup("ns", "c").PriorityClass(cls).Created(At(5)).Obj());
    h.Add(MakePod("ns", "c-1")
              .Group("c")
              .Priority(priority)
              .Req("cpu", "1")
              .Gpus(1)
              .ExpectedRuntime("500s")
              .Obj());
    return Binds(h.Run(AllocateConf("{reserveGpus: 16}"), Now(10)));
  };
  EXPECT_THAT(run(1000), ElementsAre(Pair("ns/c-1", "n2")));
  EXPECT_THAT(run(0), IsEmpty());
}

TEST(ReserveTest, AGangThatHasWaitedIsTriedFirstAndTheJobsBeforeItLeaveItRoom) {
  // Two free nodes of 8 GPUs; c (1 GPU, created at 0) and g (2 x 8 GPUs, created at 1) wait.
  // In job order c goes first and g no longer fits. Once g has waited since an earlier cycle,
  // it holds its reservation from the start of the cycle and is tried first.
  auto run = [](std::string_view arguments, int now) {
    Harness h;
    AddGpuNodes(h, 2, 8);
    h.Add(MakePodGroup("ns", "c").Created(At(0)).Obj());
    h.Add(MakePod("ns", "c-1").Group("c").Req("cpu", "1").Gpus(1).ExpectedRuntime("50s").Obj());
    h.Add(MakePodGroup("ns", "g").MinMember(2).Created(At(1)).Obj());
    for (const char* p : {"g-1", "g-2"}) {
      h.Add(MakePod("ns", p).Group("g").Req("cpu", "1").Gpus(8).ExpectedRuntime("50s").Obj());
    }
    return Binds(h.Run(AllocateConf(arguments), Now(now)));
  };
  EXPECT_THAT(run("{reserveGpus: 16}", 1), ElementsAre(Pair("ns/c-1", _)));
  EXPECT_THAT(run("{reserveGpus: 16}", 5),
              UnorderedElementsAre(Pair("ns/g-1", _), Pair("ns/g-2", _)));
  EXPECT_THAT(run("{}", 5), ElementsAre(Pair("ns/c-1", _)));
}

TEST(ReserveTest, AWaitedGangWithANetworkTopologyIsPlacedOnceAndItsNodesAreFreedWhenItEnds) {
  // Four nodes of 8 GPUs in one rack; g (2 x 8 GPUs, networkTopology soft) has waited since an
  // earlier cycle, so it holds the reservation from the start of the cycle and is placed first,
  // in the rack. It comes up again in the loop over the queues: its pods must not be placed a
  // second time (each pod once on one node), and once they end all four nodes are free again.
  Harness h;
  AddGpuNodes(h, 4, 8);
  h.Add(MakeHyperNode("r1", 1).Node("n1").Node("n2").Node("n3").Node("n4").Obj());
  h.Add(MakePodGroup("ns", "g").MinMember(2).Created(At(1)).Topology("soft").Obj());
  for (const char* p : {"g-1", "g-2"}) {
    h.Add(MakePod("ns", p).Group("g").Req("cpu", "1").Gpus(8).ExpectedRuntime("50s").Obj());
  }
  const SchedulerConf conf = MustParse(R"(
actions: "allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}]
- plugins: [{name: predicates}, {name: nodeorder}, {name: network-topology-aware}]
configurations:
- name: allocate
  arguments: {reserveGpus: 16}
)");
  CycleResult r = h.Run(conf, Now(5));
  EXPECT_EQ(r.binds.size(), 2u);
  EXPECT_THAT(Binds(r), UnorderedElementsAre(Pair("ns/g-1", _), Pair("ns/g-2", _)));
  int on_nodes = 0;
  for (int id : h.cluster().NodeIds()) on_nodes += h.cluster().node(id).pod_count;
  EXPECT_EQ(on_nodes, 2);

  // g ends; a gang of 4 x 8 GPUs that has waited takes the whole rack.
  h.Remove("ns/g-1");
  h.Remove("ns/g-2");
  h.Add(MakePodGroup("ns", "w").MinMember(4).Created(At(6)).Topology("soft").Obj());
  for (const char* p : {"w-1", "w-2", "w-3", "w-4"}) {
    h.Add(MakePod("ns", p).Group("w").Req("cpu", "1").Gpus(8).ExpectedRuntime("50s").Obj());
  }
  EXPECT_THAT(Binds(h.Run(conf, Now(60))),
              UnorderedElementsAre(Pair("ns/w-1", _), Pair("ns/w-2", _), Pair("ns/w-3", _),
                                   Pair("ns/w-4", _)));
}

TEST(ReserveTest, AHardTopologyGangsReservationIsPlannedWithinOneRack) {
  // Racks r1 {n1, n2} and r2 {n3, n4} of 8-GPU nodes, each half taken by a pod of 4 GPUs that
  // ends at 100 (n1), 1000 (n2), 50 (n3) and 5000 (n4). g (2 x 8 GPUs) must land in one rack
  // (hard, tier 1): r1 holds it at 1000, r2 only at 5000, so it is expected to fit at 1000, not
  // at 100 when n1 and n3 (two racks) are free. s (1 GPU for 2000 s, only on n2) would keep r1
  // from holding g at 1000: it waits. t (the same, only on n4) does not touch r1: it goes ahead.
  // Planned over the whole cluster, g's reservation would be for n1 and n3 at 100, turn t away
  // and let s through.
  Harness h;
  for (const char* n : {"n1", "n2", "n3", "n4"}) {
    h.Add(MakeNode(n).Cpu("32").Memory("64Gi").Gpus(8).Label("slot", n).Obj());
  }
  h.Add(MakeHyperNode("r1", 1).Node("n1").Node("n2").Obj());
  h.Add(MakeHyperNode("r2", 1).Node("n3").Node("n4").Obj());
  h.Add(MakePodGroup("other", "run").Phase("Running").Created(At(0)).Obj());
  for (auto [node, end] : {std::pair{"n1", "100s"}, {"n2", "1000s"}, {"n3", "50s"},
                           {"n4", "5000s"}}) {
    h.Add(MakePod("other", std::string("on-") + node)
              .Group("run")
              .Req("cpu", "1")
              .Gpus(4)
              .RunningOn(node)
              .Started(At(0))
              .ExpectedRuntime(end)
              .Obj());
  }
  h.Add(MakePodGroup("ns", "g").MinMember(2).Created(At(1)).Topology("hard", 1).Obj());
  for (const char* p : {"g-1", "g-2"}) {
    h.Add(MakePod("ns", p).Group("g").Req("cpu", "1").Gpus(8).ExpectedRuntime("50s").Obj());
  }
  for (auto [job, node] : {std::pair{"s", "n2"}, {"t", "n4"}}) {
    h.Add(MakePodGroup("ns", job).Created(At(5)).Obj());
    h.Add(MakePod("ns", std::string(job) + "-1")
              .Group(job)
              .Req("cpu", "1")
              .Gpus(1)
              .NodeSelector("slot", node)
              .ExpectedRuntime("2000s")
              .Obj());
  }
  const SchedulerConf conf = MustParse(R"(
actions: "allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}]
- plugins: [{name: predicates}, {name: nodeorder}, {name: network-topology-aware}]
configurations:
- name: allocate
  arguments: {reserveGpus: 16}
)");
  CycleResult r = h.Run(conf, Now(10));
  EXPECT_THAT(Binds(r), ElementsAre(Pair("ns/t-1", "n4")));
  const auto* s = Group(r, "ns/s");
  ASSERT_NE(s, nullptr);
  ASSERT_TRUE(s->condition.has_value());
  EXPECT_THAT(s->condition->message,
              ::testing::HasSubstr("waits for the reservation of ns/g (expected to fit in 990s)"));
}

}  // namespace
}  // namespace muster::core
