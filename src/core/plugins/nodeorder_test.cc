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

}  // namespace
}  // namespace muster::core
