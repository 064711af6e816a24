// overcommit (overcommit.cc) through the enqueue action: a pod group is admitted while its
// minResources, with what admitted jobs still reserve, fit the cluster's resources times
// overcommit-factor, less what is in use (Volcano's overcommit.go OnSessionOpen).

#include <string>

#include <utility>

#include "core/testing/harness.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::core {
namespace {

using test::Events;
using test::Harness;
using test::MakeNode;
using test::MakePod;
using test::MakePodGroup;
using test::Phase;

constexpr char kOvercommitOne[] =
    "actions: \"enqueue\"\ntiers:\n- plugins:\n  - name: overcommit\n"
    "    arguments: {overcommit-factor: 1.0}\n";

// The phase an 8-cpu pod group reaches on a 10-cpu cluster with the given factor.
std::string PhaseWithFactor(const std::string& factor) {
  Harness h;
  h.Add(MakeNode("n1").Cpu("10").Memory("16Gi").Obj());
  h.Add(MakePodGroup("ns", "pg").MinResources("cpu", "8").Phase("Pending").Obj());
  return Phase(h.Run("actions: \"enqueue\"\ntiers:\n- plugins:\n  - name: overcommit\n"
                     "    arguments: {overcommit-factor: " + factor + "}\n"),
               "ns/pg");
}

TEST(OvercommitTest, AdmitsWhatFitsTheOvercommittedCluster) {
  EXPECT_EQ(PhaseWithFactor("1.2"), "Inqueue");  // 8 of 12
  EXPECT_EQ(PhaseWithFactor("0.8"), "Inqueue");  // below 1: the default 1.2 applies
  EXPECT_EQ(PhaseWithFactor("0.5"), "Inqueue");  // likewise, not 5 cpu
}

TEST(OvercommitTest, RejectsWhatExceedsIt) {
  Harness h;
  h.Add(MakeNode("n1").Cpu("10").Memory("16Gi").Obj());
  h.Add(MakePodGroup("ns", "pg").MinResources("cpu", "13").Phase("Pending").Obj());
  CycleResult r = h.Run(
      "actions: \"enqueue\"\ntiers:\n- plugins:\n  - name: overcommit\n"
      "    arguments: {overcommit-factor: 1.2}\n");
  EXPECT_NE(Phase(r, "ns/pg"), "Inqueue");
}

// A Running job of minMember 1 and minResources 6 cpu holds 2 cpu of a 10-cpu node: it still
// reserves 4, so a new job asking 5 waits (4 + 5 > 10 - 2) and one asking 4 is admitted.
TEST(OvercommitTest, ARunningJobReservesTheRestOfItsMinResources) {
  for (auto [ask, admitted] : {std::pair{"5", false}, std::pair{"4", true}}) {
    SCOPED_TRACE(ask);
    Harness h;
    h.Add(MakeNode("n1").Cpu("10").Memory("16Gi").Obj());
    h.Add(MakePodGroup("ns", "running").MinMember(1).MinResources("cpu", "6").Phase("Running").Obj());
    h.Add(MakePod("ns", "running-1").Group("running").Req("cpu", "2").RunningOn("n1").Obj());
    h.Add(MakePodGroup("ns", "next").MinResources("cpu", ask).Phase("Pending").Obj());
    CycleResult r = h.Run(kOvercommitOne);
    EXPECT_EQ(Phase(r, "ns/next"), admitted ? "Inqueue" : "Pending");
    if (!admitted) {
      EXPECT_THAT(Events(r, "ns/next", "Unschedulable"),
                  ::testing::Contains("resource in cluster is overused: overused cpu"));
    }
  }
}

// Below its minMember allocated (one of two pods), a Running job reserves nothing: the same
// new job of 5 cpu is admitted. Holding more than its minResources gives nothing back either:
// 4 cpu held against a minResources of 2 reserves 0, not -2, so 7 of the 6 left is refused.
TEST(OvercommitTest, ARunningJobShortOfItsMinMemberOrPastItsMinResourcesReservesNothing) {
  Harness h;
  h.Add(MakeNode("n1").Cpu("10").Memory("16Gi").Obj());
  h.Add(MakePodGroup("ns", "running").MinMember(2).MinResources("cpu", "6").Phase("Running").Obj());
  h.Add(MakePod("ns", "running-1").Group("running").Req("cpu", "2").RunningOn("n1").Obj());
  h.Add(MakePodGroup("ns", "next").MinResources("cpu", "5").Phase("Pending").Obj());
  EXPECT_EQ(Phase(h.Run(kOvercommitOne), "ns/next"), "Inqueue");

  Harness past;
  past.Add(MakeNode("n1").Cpu("10").Memory("16Gi").Obj());
  past.Add(MakePodGroup("ns", "running").MinMember(1).MinResources("cpu", "2").Phase("Running").Obj());
  past.Add(MakePod("ns", "running-1").Group("running").Req("cpu", "4").RunningOn("n1").Obj());
  past.Add(MakePodGroup("ns", "next").MinResources("cpu", "7").Phase("Pending").Obj());
  EXPECT_EQ(Phase(past.Run(kOvercommitOne), "ns/next"), "Pending");
}

// GPUs a Running job's minResources names and none of its pods holds yet stay reserved whole:
// a new job asking 2 of the node's 4 GPUs waits while the running job still reserves all 4.
TEST(OvercommitTest, GpusARunningJobHasNotPlacedStayReserved) {
  Harness h;
  h.Add(MakeNode("n1").Cpu("10").Memory("16Gi").Gpus(4).Obj());
  h.Add(MakePodGroup("ns", "running")
            .MinMember(1)
            .MinResources("cpu", "2")
            .MinResources("nvidia.com/gpu", "4")
            .Phase("Running")
            .Obj());
  h.Add(MakePod("ns", "running-1").Group("running").Req("cpu", "2").RunningOn("n1").Obj());
  h.Add(MakePodGroup("ns", "next").MinResources("nvidia.com/gpu", "2").Phase("Pending").Obj());
  CycleResult r = h.Run(kOvercommitOne);
  EXPECT_EQ(Phase(r, "ns/next"), "Pending");
  EXPECT_THAT(Events(r, "ns/next", "Unschedulable"),
              ::testing::Contains("resource in cluster is overused: overused nvidia.com/gpu"));
}

}  // namespace
}  // namespace muster::core
