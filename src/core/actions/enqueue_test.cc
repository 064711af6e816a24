// enqueue (enqueue.cc) through whole scheduling cycles: which Pending pod groups are admitted,
// against their queue's capability (proportion) and the cluster times overcommit-factor
// (overcommit), and what those not admitted are told.

#include <set>
#include <string>
#include <utility>

#include "core/testing/harness.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::core {
namespace {

using test::Binds;
using test::Condition;
using test::Events;
using test::Group;
using test::Harness;
using test::MakePod;
using test::MakePodGroup;
using test::MakeQueue;
using test::Message;
using test::N;
using test::Phase;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

TEST(EnqueueTest, WithoutMinResourcesAGroupIsAdmittedAndPlaced) {
  Harness h;
  h.Add(N("n1").Obj());
  h.Add(MakePod("other", "hog").Req("cpu", "3").RunningOn("n1").Obj());
  h.Add(MakePodGroup("ns", "pg").Obj());
  h.Add(MakePod("ns", "p").Group("pg").Req("cpu", "2").Obj());
  CycleResult r = h.Run();
  EXPECT_EQ(Phase(r, "ns/pg"), "Inqueue");
  EXPECT_EQ(Message(r, "ns/p"), "0/1 nodes are unavailable: 1 Insufficient cpu.");
}

TEST(EnqueueTest, MinResourcesAboveQueueCapabilityStaysPending) {
  Harness h;
  h.Add(N("n1").Cpu("16").Obj());
  h.Add(MakeQueue("q").Capability("cpu", "2").Obj());
  h.Add(MakePodGroup("ns", "big").Queue("q").MinResources("cpu", "4").Obj());
  h.Add(MakePod("ns", "big-1").Group("big").Req("cpu", "1").Obj());
  h.Add(MakePodGroup("ns", "small").Queue("q").MinResources("cpu", "2").Obj());
  h.Add(MakePod("ns", "small-1").Group("small").Req("cpu", "1").Obj());
  CycleResult r = h.Run();
  EXPECT_EQ(Phase(r, "ns/big"), "Pending");
  EXPECT_THAT(Events(r, "ns/big", "Unschedulable"),
              ::testing::Contains("queue resource quota insufficient"));
  EXPECT_EQ(Phase(r, "ns/small"), "Running");
  EXPECT_THAT(Binds(r), ElementsAre(Pair("ns/small-1", "n1")));
}

TEST(EnqueueTest, QueueCapabilityCountsWhatIsAlreadyAdmitted) {
  Harness h;
  h.Add(N("n1").Cpu("16").Obj());
  h.Add(MakeQueue("q").Capability("cpu", "3").Obj());
  h.Add(MakePodGroup("ns", "a").Queue("q").MinResources("cpu", "2").Obj());
  h.Add(MakePod("ns", "a-1").Group("a").Req("cpu", "2").Obj());
  h.Add(MakePodGroup("ns", "b").Queue("q").MinResources("cpu", "2").Obj());
  h.Add(MakePod("ns", "b-1").Group("b").Req("cpu", "2").Obj());
  CycleResult r = h.Run();
  // 2 + 2 > 3: only one of the two is admitted.
  EXPECT_EQ(r.binds.size(), 1u);
  std::multiset<std::string> phases = {Phase(r, "ns/a"), Phase(r, "ns/b")};
  EXPECT_THAT(phases, UnorderedElementsAre("Pending", "Running"));
}

TEST(EnqueueTest, ElasticResourcesOfRunningJobsDoNotCountAgainstTheQueue) {
  // Volcano's proportion admits against minReq + allocated + inqueue - elastic, where elastic is
  // what running jobs hold beyond their minResources (pods that may be reclaimed). Job a holds
  // 3 cpu for a minimum of 1: 2 cpu are elastic, so b (minimum 2) fits in the 4-cpu queue:
  // 2 + 3 - 2 = 3 <= 4.
  Harness h;
  h.Add(N("n1").Cpu("8").Obj());
  h.Add(MakeQueue("q").Capability("cpu", "4").Obj());
  h.Add(MakePodGroup("ns", "a").Queue("q").MinResources("cpu", "1").Phase("Running").Obj());
  for (int i = 1; i <= 3; ++i) {
    h.Add(MakePod("ns", "a-" + std::to_string(i)).Group("a").Req("cpu", "1").RunningOn("n1").Obj());
  }
  h.Add(MakePodGroup("ns", "b").Queue("q").MinResources("cpu", "2").Obj());
  h.Add(MakePod("ns", "b-1").Group("b").Req("cpu", "1").Obj());
  CycleResult r = h.Run();
  EXPECT_THAT(Events(r, "ns/b", "Unschedulable"),
              ::testing::Not(::testing::Contains("queue resource quota insufficient")));
  EXPECT_EQ(Phase(r, "ns/b"), "Running");
  EXPECT_THAT(Binds(r), ElementsAre(Pair("ns/b-1", "n1")));
}

TEST(EnqueueTest, OvercommitLimitsAdmissionToTheClusterTimesFactor) {
  Harness h;
  h.Add(N("n1").Cpu("4").Obj());
  h.Add(MakePodGroup("ns", "huge").MinResources("cpu", "5").Obj());
  h.Add(MakePod("ns", "huge-1").Group("huge").Req("cpu", "1").Obj());
  CycleResult r = h.Run();
  EXPECT_EQ(Phase(r, "ns/huge"), "Pending");
  EXPECT_THAT(Binds(r), IsEmpty());
  EXPECT_THAT(Events(r, "ns/huge", "Unschedulable"),
              ::testing::Contains("resource in cluster is overused: overused cpu"));

  // Across queues (each within its own share) the admitted minResources add up against
  // 1.2 x the cluster: 3 + 2 > 4.8 is refused, 3 + 1.8 = 4.8 is admitted.
  for (auto [second, admitted] : {std::pair{"2", false}, std::pair{"1800m", true}}) {
    SCOPED_TRACE(second);
    Harness q;
    q.Add(N("n1").Cpu("4").Obj());
    q.Add(MakeQueue("q1").Obj()).Add(MakeQueue("q2").Obj());
    q.Add(MakePodGroup("ns", "first").Queue("q1").MinResources("cpu", "3").Obj());
    q.Add(MakePod("ns", "first-1").Group("first").Req("cpu", "1").Obj());
    q.Add(MakePodGroup("ns", "second").Queue("q2").MinResources("cpu", second).Obj());
    q.Add(MakePod("ns", "second-1").Group("second").Req("cpu", "1").Obj());
    r = q.Run();
    EXPECT_EQ(Phase(r, "ns/first"), "Running");
    EXPECT_EQ(Phase(r, "ns/second"), admitted ? "Running" : "Pending");
    if (!admitted) {
      EXPECT_THAT(Events(r, "ns/second", "Unschedulable"),
                  ::testing::Contains("resource in cluster is overused: overused cpu"));
    }
  }
}

TEST(EnqueueTest, SettledJobsStillCountAgainstTheQueue) {
  // a was admitted and cannot be placed (n1 has 1 free cpu); the adapter settles it this cycle.
  // (Overcommit's 1.2 x 16 cpu less the 15 used would admit b: the queue decides here.)
  // It gets no status and no placement, but its minResources still take 2 of the queue's 3 cpu:
  // b (minimum 2) is not admitted, as it would not be with a in the session.
  for (bool settle : {false, true}) {
    SCOPED_TRACE(settle ? "settled" : "in the session");
    Harness h;
    h.Add(N("n1").Cpu("16").Obj());
    h.Add(MakePod("other", "hog").Req("cpu", "15").RunningOn("n1").Obj());
    h.Add(MakeQueue("q").Capability("cpu", "3").Obj());
    h.Add(MakePodGroup("ns", "a").Queue("q").MinResources("cpu", "2").Phase("Inqueue").Obj());
    h.Add(MakePod("ns", "a-1").Group("a").Req("cpu", "2").Obj());
    h.Add(MakePodGroup("ns", "b").Queue("q").MinResources("cpu", "2").Obj());
    h.Add(MakePod("ns", "b-1").Group("b").Req("cpu", "1").Obj());
    SessionOptions options;
    if (settle) {
      options.job_role = [](const JobInfo& j) {
        return j.name == "a" ? JobRole::kSettled : JobRole::kScheduled;
      };
    }
    CycleResult r = h.Run(DefaultSchedulerConf(), options);
    EXPECT_THAT(Binds(r), IsEmpty());
    EXPECT_EQ(Phase(r, "ns/b"), "Pending");
    EXPECT_EQ(h.cluster().FindJob("ns/b")->phase, PodGroupPhase::kPending);
    EXPECT_EQ(Group(r, "ns/a") == nullptr, settle);
    EXPECT_EQ(Condition(r, "ns/a-1") == nullptr, settle);
  }
}

TEST(EnqueueTest, ClosedQueueAdmitsNothing) {
  Harness h;
  h.Add(N("n1").Obj());
  h.Add(MakeQueue("q").State("Closed").Obj());
  h.Add(MakePodGroup("ns", "pg").Queue("q").Obj());
  h.Add(MakePod("ns", "p").Group("pg").Req("cpu", "1").Obj());
  CycleResult r = h.Run();
  EXPECT_THAT(Binds(r), IsEmpty());
  EXPECT_EQ(Phase(r, "ns/pg"), "Pending");
  EXPECT_THAT(Events(r, "ns/pg", "Unschedulable"), ::testing::Contains("queue q is not open"));
}

TEST(EnqueueTest, GroupOfAnUnknownQueueIsIgnored) {
  Harness h;
  h.Add(N("n1").Obj());
  h.Add(MakePodGroup("ns", "pg").Queue("nope").Obj());
  h.Add(MakePod("ns", "p").Group("pg").Req("cpu", "1").Obj());
  CycleResult r = h.Run();
  EXPECT_THAT(Binds(r), IsEmpty());
  EXPECT_EQ(Group(r, "ns/pg"), nullptr);
}

}  // namespace
}  // namespace muster::core
