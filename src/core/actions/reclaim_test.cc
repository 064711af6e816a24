// reclaim (reclaim.cc) through scheduling cycles: a starved queue takes back its deserved share
// from a reclaimable queue, and from a queue that is not reclaimable takes nothing.

#include "core/testing/harness.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::core {
namespace {

using test::Binds;
using test::Evicted;
using test::Harness;
using test::MakePod;
using test::MakePodGroup;
using test::MakeQueue;
using test::N;
using test::Phase;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;

constexpr char kReclaimConf[] = R"(
actions: "enqueue, allocate, reclaim"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]
)";

void AddReclaimCase(Harness& h, bool reclaimable) {
  h.Add(N("n1").Obj());  // 4 cpu
  h.Add(MakeQueue("q1").Reclaimable(reclaimable).Obj());
  h.Add(MakeQueue("q2").Obj());
  h.Add(MakePodGroup("ns", "a").Queue("q1").Phase("Running").Obj());
  for (int i = 1; i <= 4; ++i) {
    h.Add(MakePod("ns", "a-" + std::to_string(i)).Group("a").Req("cpu", "1").RunningOn("n1").Obj());
  }
  h.Add(MakePodGroup("ns", "b").MinMember(2).Queue("q2").Obj());
  for (int i = 1; i <= 2; ++i) {
    h.Add(MakePod("ns", "b-" + std::to_string(i)).Group("b").Req("cpu", "1").Obj());
  }
}

TEST(ReclaimTest, StarvedQueueTakesBackItsShare) {
  Harness h;
  AddReclaimCase(h, true);
  CycleResult r = h.Run(kReclaimConf);
  // q1 and q2 deserve 2 cpu each: two of a's four pods go, as many as b's gang needs.
  ASSERT_EQ(r.evictions.size(), 2u);
  for (const auto& e : r.evictions) {
    EXPECT_THAT(e.pod, ::testing::StartsWith("ns/a-"));
    EXPECT_EQ(e.reason, "reclaim");
  }
  EXPECT_THAT(r.pipelined, ElementsAre(Pair("ns/b-1", "n1"), Pair("ns/b-2", "n1")));
  r = h.Run(kReclaimConf);
  EXPECT_THAT(Binds(r), ElementsAre(Pair("ns/b-1", "n1"), Pair("ns/b-2", "n1")));
  EXPECT_THAT(Evicted(r), IsEmpty());
  EXPECT_EQ(Phase(r, "ns/b"), "Running");
}

TEST(ReclaimTest, NonReclaimableQueueKeepsItsPods) {
  Harness h;
  AddReclaimCase(h, false);
  CycleResult r = h.Run(kReclaimConf);
  EXPECT_THAT(Evicted(r), IsEmpty());
  EXPECT_THAT(r.pipelined, IsEmpty());
}

}  // namespace
}  // namespace muster::core
