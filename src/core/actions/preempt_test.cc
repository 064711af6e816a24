// preempt (preempt.cc) through scheduling cycles: a higher-priority job evicts what it needs,
// and no more, and never takes a gang below its minimum.

#include "core/testing/harness.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::core {
namespace {

using test::Binds;
using test::Events;
using test::Evicted;
using test::Harness;
using test::MakePod;
using test::MakePodGroup;
using test::MakePriorityClass;
using test::N;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;

constexpr char kPreemptConf[] = R"(
actions: "enqueue, allocate, preempt"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]
)";

void AddPreemptCase(Harness& h, const char* preemptor_class) {
  h.Add(N("n1").Cpu("2").Obj());
  h.Add(MakePriorityClass("low", 10)).Add(MakePriorityClass("high", 1000));
  h.Add(MakePodGroup("ns", "low").PriorityClass("low").Phase("Running").Obj());
  for (const char* name : {"low-1", "low-2"}) {
    h.Add(MakePod("ns", name).Group("low").Priority(10).Req("cpu", "1").RunningOn("n1").Obj());
  }
  h.Add(MakePodGroup("ns", "high").PriorityClass(preemptor_class).Obj());
  h.Add(MakePod("ns", "high-1").Group("high").Priority(1000).Req("cpu", "1").Obj());
}

TEST(PreemptTest, HighPriorityJobEvictsOneLowPriorityPodThenBinds) {
  Harness h;
  AddPreemptCase(h, "high");
  CycleResult r = h.Run(kPreemptConf);
  EXPECT_THAT(Binds(r), IsEmpty());
  ASSERT_EQ(r.evictions.size(), 1u);
  EXPECT_THAT(r.evictions[0].pod, ::testing::StartsWith("ns/low-"));
  EXPECT_EQ(r.evictions[0].reason, "preempt");
  EXPECT_THAT(Events(r, r.evictions[0].pod, "Evict"),
              ElementsAre("Pod is evicted, because of preempt"));
  EXPECT_THAT(r.pipelined, ElementsAre(Pair("ns/high-1", "n1")));
  // The victim is gone: the next cycle binds the preemptor.
  r = h.Run(kPreemptConf);
  EXPECT_THAT(Binds(r), ElementsAre(Pair("ns/high-1", "n1")));
  EXPECT_THAT(Evicted(r), IsEmpty());
}

TEST(PreemptTest, EqualPriorityEvictsNothing) {
  Harness h;
  AddPreemptCase(h, "low");
  CycleResult r = h.Run(kPreemptConf);
  EXPECT_THAT(Evicted(r), IsEmpty());
  EXPECT_THAT(Binds(r), IsEmpty());
  EXPECT_THAT(r.pipelined, IsEmpty());
}

TEST(PreemptTest, VictimsNeverGoBelowTheirGangMinimum) {
  Harness h;
  h.Add(N("n1").Cpu("2").Obj());
  h.Add(MakePriorityClass("low", 10)).Add(MakePriorityClass("high", 1000));
  h.Add(MakePodGroup("ns", "low").MinMember(2).PriorityClass("low").Phase("Running").Obj());
  for (const char* name : {"low-1", "low-2"}) {
    h.Add(MakePod("ns", name).Group("low").Priority(10).Req("cpu", "1").RunningOn("n1").Obj());
  }
  h.Add(MakePodGroup("ns", "high").PriorityClass("high").Obj());
  h.Add(MakePod("ns", "high-1").Group("high").Priority(1000).Req("cpu", "1").Obj());
  CycleResult r = h.Run(kPreemptConf);
  EXPECT_THAT(Evicted(r), IsEmpty());
}

}  // namespace
}  // namespace muster::core
