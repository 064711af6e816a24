// nodeorder (nodeorder.cc) through scheduling cycles: which node its scores choose.

#include "core/testing/harness.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::core {
namespace {

using test::Binds;
using test::Harness;
using test::MakePod;
using test::MakePodGroup;
using test::N;
using test::P;
using test::RunOnePod;
using ::testing::ElementsAre;
using ::testing::Pair;

TEST(NodeOrderTest, DefaultsPreferTheLeastRequestedNode) {
  Harness h;
  h.Add(N("n1").Obj()).Add(N("n2").Obj());
  h.Add(MakePod("other", "busy").Req("cpu", "3").Req("memory", "1Gi").RunningOn("n1").Obj());
  h.Add(MakePodGroup("ns", "pg").Obj());
  h.Add(MakePod("ns", "p").Group("pg").Req("cpu", "1").Req("memory", "1Gi").Obj());
  EXPECT_THAT(Binds(h.Run()), ElementsAre(Pair("ns/p", "n2")));
}

TEST(NodeOrderTest, PreferredAffinityAndPreferNoScheduleTaintsScore) {
  // n1 wins ties (first by name), so n2 winning shows the score.
  CycleResult r = RunOnePod({N("n1").Label("zone", "a").Obj(), N("n2").Label("zone", "b").Obj()},
                            P().PreferredNodeAffinity(10, "zone", "In", {"b"}));
  EXPECT_THAT(Binds(r), ElementsAre(Pair("ns/p", "n2")));
  r = RunOnePod({N("n1").Taint("k", "v", "PreferNoSchedule").Obj(), N("n2").Obj()}, P());
  EXPECT_THAT(Binds(r), ElementsAre(Pair("ns/p", "n2")));
  r = RunOnePod({N("n1").Obj(), N("n2").Obj()}, P());
  EXPECT_THAT(Binds(r), ElementsAre(Pair("ns/p", "n1")));
}

TEST(NodeOrderTest, PreferredPodAffinityAndAntiAffinityScore) {
  // Each node runs one pod; least-requested alone would pick the empty n3, or n1 (first by name,
  // its pod asks for nothing) where n3 is absent.
  auto run = [](bool anti) {
    Harness h;
    h.Add(N("n1").Label("kubernetes.io/hostname", "n1").Obj());
    h.Add(N("n2").Label("kubernetes.io/hostname", "n2").Obj());
    if (!anti) h.Add(N("n3").Label("kubernetes.io/hostname", "n3").Obj());
    h.Add(MakePod("ns", "s2").Label("service", "s2").RunningOn("n1").Obj());
    h.Add(MakePod("ns", "s1").Label("service", "s1").Req("cpu", "1").RunningOn("n2").Obj());
    h.Add(MakePodGroup("ns", "pg").Obj());
    h.Add(MakePod("ns", "p").Group("pg").Req("cpu", "1")
              .PreferredPodAffinity(100, "service", anti ? "s2" : "s1", "kubernetes.io/hostname",
                                    anti)
              .Obj());
    return Binds(h.Run());
  };
  EXPECT_THAT(run(false), ElementsAre(Pair("ns/p", "n2")));  // beside s1
  EXPECT_THAT(run(true), ElementsAre(Pair("ns/p", "n2")));   // away from s2
}

TEST(NodeOrderTest, ScheduleAnywaySpreadPrefersTheEmptierDomain) {
  // n2 is the fuller node, so least-requested alone would pick n1, where the pod's peer runs.
  Harness h;
  h.Add(N("n1").Label("zone", "a").Obj()).Add(N("n2").Label("zone", "b").Obj());
  h.Add(MakePod("ns", "w1").Label("app", "w").Req("cpu", "1").RunningOn("n1").Obj());
  h.Add(MakePod("other", "big").Req("cpu", "2").RunningOn("n2").Obj());
  h.Add(MakePodGroup("ns", "pg").Obj());
  h.Add(MakePod("ns", "p").Group("pg").Label("app", "w").Req("cpu", "1")
            .SpreadConstraint(1, "zone", "app", "w", "ScheduleAnyway")
            .Obj());
  EXPECT_THAT(Binds(h.Run()), ElementsAre(Pair("ns/p", "n2")));
}

}  // namespace
}  // namespace muster::core
