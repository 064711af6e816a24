// predicates (predicates.cc) through whole scheduling cycles: which nodes a pod passes, and the
// reasons and FitError text for the nodes it does not (kube-scheduler's texts, counted and
// sorted as Volcano's FitErrors does).

#include <set>
#include <string>
#include <vector>

#include "core/testing/builders.h"
#include "core/testing/harness.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::core {
namespace {

using test::BindMap;
using test::Binds;
using test::Condition;
using test::Events;
using test::Harness;
using test::MakePod;
using test::MakePodGroup;
using test::Message;
using test::N;
using test::P;
using test::RunOnePod;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;

TEST(PredicatesTest, UntoleratedTaint) {
  auto tainted = [](const char* n) {
    return N(n).Taint("nvidia.com/gpu", "present", "NoSchedule").Obj();
  };
  CycleResult r = RunOnePod({tainted("n1"), tainted("n2")}, P());
  EXPECT_THAT(Binds(r), IsEmpty());
  EXPECT_EQ(
      Message(r, "ns/p"),
      "0/2 nodes are unavailable: 2 node(s) had untolerated taint {nvidia.com/gpu: present}.");

  r = RunOnePod({tainted("n1")}, P().Toleration("nvidia.com/gpu", "Exists", "", "NoSchedule"));
  EXPECT_THAT(Binds(r), ElementsAre(Pair("ns/p", "n1")));
  r = RunOnePod({tainted("n1")}, P().Toleration("nvidia.com/gpu", "Equal", "present", ""));
  EXPECT_THAT(Binds(r), ElementsAre(Pair("ns/p", "n1")));
  r = RunOnePod({tainted("n1")}, P().Toleration("nvidia.com/gpu", "Equal", "absent", ""));
  EXPECT_THAT(Binds(r), IsEmpty());
  // NoExecute blocks too; PreferNoSchedule only scores.
  r = RunOnePod({N("n1").Taint("k", "v", "NoExecute").Obj()}, P());
  EXPECT_EQ(Message(r, "ns/p"),
            "0/1 nodes are unavailable: 1 node(s) had untolerated taint {k: v}.");
  r = RunOnePod({N("n1").Taint("k", "v", "PreferNoSchedule").Obj()}, P());
  EXPECT_THAT(Binds(r), ElementsAre(Pair("ns/p", "n1")));
}

struct AffinityCase {
  std::string op;
  std::string key;
  std::vector<std::string> values;
  bool fits;
};

TEST(PredicatesTest, RequiredNodeAffinityOperators) {
  const api::Node node = N("n1").Label("zone", "a").Label("gpu-mem", "80").Obj();
  const std::vector<AffinityCase> cases = {
      {"In", "zone", {"b", "a"}, true},      {"In", "zone", {"c"}, false},
      {"NotIn", "zone", {"a"}, false},       {"NotIn", "zone", {"b"}, true},
      {"NotIn", "missing", {"x"}, true},     {"Exists", "zone", {}, true},
      {"Exists", "missing", {}, false},      {"DoesNotExist", "zone", {}, false},
      {"DoesNotExist", "missing", {}, true}, {"Gt", "gpu-mem", {"40"}, true},
      {"Gt", "gpu-mem", {"80"}, false},      {"Gt", "zone", {"1"}, false},
      {"Lt", "gpu-mem", {"100"}, true},      {"Lt", "gpu-mem", {"80"}, false},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.key + " " + c.op);
    CycleResult r = RunOnePod({node}, P().RequiredNodeAffinity(c.key, c.op, c.values));
    if (c.fits) {
      EXPECT_THAT(Binds(r), ElementsAre(Pair("ns/p", "n1")));
    } else {
      EXPECT_THAT(Binds(r), IsEmpty());
      EXPECT_EQ(Message(r, "ns/p"),
                "0/1 nodes are unavailable: 1 node(s) didn't match Pod's node affinity/selector.");
    }
  }
}

TEST(PredicatesTest, NodeAffinityRequirementsAndSelectorAllMustHold) {
  const std::vector<api::Node> nodes = {N("n1").Label("zone", "a").Obj(),
                                        N("n2").Label("zone", "b").Label("ssd", "true").Obj(),
                                        N("n3").Label("zone", "a").Label("ssd", "true").Obj()};
  CycleResult r = RunOnePod(
      nodes, P().RequiredNodeAffinity("zone", "In", {"a"}).RequiredNodeAffinity("ssd", "Exists"));
  EXPECT_THAT(Binds(r), ElementsAre(Pair("ns/p", "n3")));
  r = RunOnePod(nodes, P().NodeSelector("zone", "a").RequiredNodeAffinity("ssd", "Exists"));
  EXPECT_THAT(Binds(r), ElementsAre(Pair("ns/p", "n3")));
}

TEST(PredicatesTest, NodeSelector) {
  const std::vector<api::Node> nodes = {N("n1").Label("zone", "a").Obj(),
                                        N("n2").Label("zone", "b").Obj()};
  CycleResult r = RunOnePod(nodes, P().NodeSelector("zone", "b"));
  EXPECT_THAT(Binds(r), ElementsAre(Pair("ns/p", "n2")));
  r = RunOnePod(nodes, P().NodeSelector("zone", "c"));
  EXPECT_EQ(Message(r, "ns/p"),
            "0/2 nodes are unavailable: 2 node(s) didn't match Pod's node affinity/selector.");
}

TEST(PredicatesTest, PodsOfOneJobWithDifferentNodeConstraintsAreJudgedEachOnTheirOwn) {
  Harness h;
  h.Add(N("n1").Label("zone", "a").Obj());
  h.Add(N("n2").Label("zone", "b").Taint("k", "v", "NoSchedule").Obj());
  h.Add(MakePodGroup("ns", "pg").MinMember(1).Obj());
  h.Add(MakePod("ns", "pg-1").Group("pg").Req("cpu", "1").NodeSelector("zone", "a").Obj());
  h.Add(MakePod("ns", "pg-2")
            .Group("pg")
            .Req("cpu", "1")
            .NodeSelector("zone", "b")
            .Toleration("k", "Exists", "", "")
            .Obj());
  h.Add(MakePod("ns", "pg-3").Group("pg").Req("cpu", "1").NodeSelector("zone", "b").Obj());
  h.Add(MakePod("ns", "pg-4").Group("pg").Req("cpu", "1").NodeSelector("zone", "a").Obj());
  CycleResult r = h.Run();
  EXPECT_THAT(Binds(r),
              ElementsAre(Pair("ns/pg-1", "n1"), Pair("ns/pg-2", "n2"), Pair("ns/pg-4", "n1")));
  EXPECT_EQ(Message(r, "ns/pg-3"),
            "0/2 nodes are unavailable: 1 node(s) didn't match Pod's node affinity/selector, 1 "
            "node(s) had untolerated taint {k: v}.");
}

// The node-only filters read labels and taints from the cluster's label columns and interned
// taint lists: a node relabelled, retainted, removed or added between cycles is judged anew.
TEST(PredicatesTest, NodeLabelAndTaintChangesBetweenCyclesAreSeen) {
  Harness h;
  h.Add(N("n1").Label("zone", "a").Obj());
  h.Add(N("n2").Label("zone", "b").Obj());
  auto pod = [&h](const std::string& name) {
    h.Add(MakePodGroup("ns", name).MinMember(1).Obj());
    return MakePod("ns", name).Group(name).Req("cpu", "1").NodeSelector("zone", "b");
  };
  h.Add(pod("p1").Obj());
  EXPECT_THAT(Binds(h.Run()), ElementsAre(Pair("ns/p1", "n2")));

  // zone=b moves from n2 to n1.
  h.Add(N("n1").Label("zone", "b").Obj());
  h.Add(N("n2").Label("zone", "c").Obj());
  h.Add(pod("p2").Obj());
  EXPECT_THAT(Binds(h.Run()), ElementsAre(Pair("ns/p2", "n1")));

  // n1 keeps zone=b but gains a taint; n2 loses its zone label.
  h.Add(N("n1").Label("zone", "b").Taint("k", "v", "NoSchedule").Obj());
  h.Add(N("n2").Obj());
  h.Add(pod("p3").Obj());
  CycleResult r = h.Run();
  EXPECT_THAT(Binds(r), IsEmpty());
  EXPECT_EQ(Message(r, "ns/p3"),
            "0/2 nodes are unavailable: 1 node(s) didn't match Pod's node affinity/selector, 1 "
            "node(s) had untolerated taint {k: v}.");
  h.Add(pod("p4").Toleration("k", "Equal", "v", "NoSchedule").Obj());
  EXPECT_THAT(Binds(h.Run()), ElementsAre(Pair("ns/p4", "n1")));

  // A node removed no longer matches; one added under a new name does.
  h.cluster().RemoveNode("n1");
  h.Add(N("n3").Label("zone", "b").Obj());
  h.Add(pod("p5").Toleration("k", "Equal", "v", "NoSchedule").Obj());
  EXPECT_THAT(Binds(h.Run()), ElementsAre(Pair("ns/p3", "n3"), Pair("ns/p5", "n3")));
}

TEST(PredicatesTest, UnschedulableNode) {
  CycleResult r = RunOnePod({N("n1").Unschedulable().Obj()}, P());
  EXPECT_EQ(Message(r, "ns/p"), "0/1 nodes are unavailable: 1 node(s) were unschedulable.");
  r = RunOnePod({N("n1").Unschedulable().Obj()},
                P().Toleration("node.kubernetes.io/unschedulable", "Exists", "", "NoSchedule"));
  EXPECT_THAT(Binds(r), ElementsAre(Pair("ns/p", "n1")));
}

TEST(PredicatesTest, PodCount) {
  std::vector<api::Pod> running = {MakePod("other", "r1").Req("cpu", "100m").RunningOn("n1").Obj(),
                                   MakePod("other", "r2").Req("cpu", "100m").RunningOn("n1").Obj()};
  CycleResult r = RunOnePod({N("n1").Pods(2).Obj()}, P(), running);
  EXPECT_EQ(Message(r, "ns/p"), "0/1 nodes are unavailable: 1 node(s) pod number exceeded.");
  r = RunOnePod({N("n1").Pods(3).Obj()}, P(), running);
  EXPECT_THAT(Binds(r), ElementsAre(Pair("ns/p", "n1")));
  // A terminating pod does not hold its slot.
  running[1] = MakePod("other", "r2").Req("cpu", "100m").RunningOn("n1").Terminating().Obj();
  r = RunOnePod({N("n1").Pods(2).Obj()}, P(), running);
  EXPECT_THAT(Binds(r), ElementsAre(Pair("ns/p", "n1")));
}

TEST(PredicatesTest, InsufficientResources) {
  // Every GPU is held by a running pod; in the cpu case 500m of 4 cpus are free.
  CycleResult r = RunOnePod({N("n1").Gpus(1).Obj(), N("n2").Gpus(1).Obj()}, P().Gpus(1),
                            {MakePod("other", "g1").Gpus(1).RunningOn("n1").Obj(),
                             MakePod("other", "g2").Gpus(1).RunningOn("n2").Obj()});
  EXPECT_EQ(Message(r, "ns/p"), "0/2 nodes are unavailable: 2 Insufficient nvidia.com/gpu.");
  r = RunOnePod({N("n1").Obj()}, P(),
                {MakePod("other", "hog").Req("cpu", "3500m").RunningOn("n1").Obj()});
  EXPECT_EQ(Message(r, "ns/p"), "0/1 nodes are unavailable: 1 Insufficient cpu.");
}

TEST(PredicatesTest, PodInUnknownPhaseKeepsItsResourcesOnTheNode) {
  // A node whose kubelet stopped reporting has its pods turn Unknown; they may still run on
  // their GPUs. Binding more pods there double-books the node.
  CycleResult r = RunOnePod({N("n1").Gpus(1).Obj(), N("n2").Gpus(1).Obj()}, P().Gpus(1),
                            {MakePod("other", "lost").Gpus(1).NodeName("n1").Phase("Unknown").Obj(),
                             MakePod("other", "busy").Gpus(1).RunningOn("n2").Obj()});
  EXPECT_THAT(Binds(r), IsEmpty());
  EXPECT_EQ(Message(r, "ns/p"), "0/2 nodes are unavailable: 2 Insufficient nvidia.com/gpu.");
}

TEST(PredicatesTest, RequestAboveTheQueueShareIsNotTriedOnNodes) {
  // As in Volcano, proportion's Allocatable skips a task that would take its queue past the
  // deserved share (here: more GPUs than the cluster has); the pod then carries the gang's
  // message instead of a per-node FitError.
  CycleResult r = RunOnePod({N("n1").Obj(), N("n2").Obj()}, P().Gpus(1));
  EXPECT_THAT(Binds(r), IsEmpty());
  EXPECT_EQ(Message(r, "ns/p"),
            "1/1 tasks in gang unschedulable: pod group is not ready, 1 Pending, 1 minAvailable; "
            "Pending: 1 Unschedulable");
}

TEST(PredicatesTest, MixedReasonsAreCountedAndSorted) {
  std::vector<api::Node> nodes = {
      N("n1").Taint("k", "v", "NoSchedule").Obj(),
      N("n2").Unschedulable().Obj(),
      N("n3").Cpu("500m").Obj(),
      N("n4").Taint("k", "v", "NoSchedule").Obj(),
      N("n5").Label("zone", "b").Obj(),
  };
  CycleResult r = RunOnePod(nodes, P().RequiredNodeAffinity("zone", "NotIn", {"b"}));
  EXPECT_THAT(Binds(r), IsEmpty());
  EXPECT_EQ(Message(r, "ns/p"),
            "0/5 nodes are unavailable: 1 Insufficient cpu, 1 node(s) didn't match Pod's node "
            "affinity/selector, 1 node(s) were unschedulable, 2 node(s) had untolerated taint "
            "{k: v}.");
  // The same text is the FailedScheduling event.
  EXPECT_THAT(Events(r, "ns/p", "FailedScheduling"), ElementsAre(Message(r, "ns/p")));
  const auto* pc = Condition(r, "ns/p");
  ASSERT_NE(pc, nullptr);
  EXPECT_EQ(pc->reason, "Unschedulable");
}

TEST(PredicatesTest, PodAntiAffinityOfTheIncomingPod) {
  std::vector<api::Pod> running = {
      MakePod("ns", "web-0").Label("app", "web").Req("cpu", "1").RunningOn("n1").Obj()};
  auto pod = [] { return P().AntiAffinity("app", "web", "kubernetes.io/hostname"); };
  CycleResult r = RunOnePod({N("n1").Obj(), N("n2").Obj()}, pod(), running);
  EXPECT_THAT(Binds(r), ElementsAre(Pair("ns/p", "n2")));
  r = RunOnePod({N("n1").Obj()}, pod(), running);
  EXPECT_EQ(Message(r, "ns/p"),
            "0/1 nodes are unavailable: 1 node(s) didn't match pod anti-affinity rules.");
  // Pods of other namespaces are not matched by a term without namespaces.
  running[0].meta.namespace_ = "elsewhere";
  r = RunOnePod({N("n1").Obj()}, pod(), running);
  EXPECT_THAT(Binds(r), ElementsAre(Pair("ns/p", "n1")));
}

TEST(PredicatesTest, PodAntiAffinityOfAnExistingPod) {
  std::vector<api::Pod> running = {MakePod("ns", "db-0")
                                       .Label("app", "db")
                                       .AntiAffinity("app", "db", "kubernetes.io/hostname")
                                       .Req("cpu", "1")
                                       .RunningOn("n1")
                                       .Obj()};
  CycleResult r = RunOnePod({N("n1").Obj(), N("n2").Obj()}, P().Label("app", "db"), running);
  EXPECT_THAT(Binds(r), ElementsAre(Pair("ns/p", "n2")));
  r = RunOnePod({N("n1").Obj()}, P().Label("app", "db"), running);
  EXPECT_EQ(Message(r, "ns/p"),
            "0/1 nodes are unavailable: 1 node(s) didn't satisfy existing pods anti-affinity "
            "rules.");
  r = RunOnePod({N("n1").Obj()}, P().Label("app", "web"), running);
  EXPECT_THAT(Binds(r), ElementsAre(Pair("ns/p", "n1")));
}

TEST(PredicatesTest, AntiAffinityBetweenTasksOfOneGangSpreadsThem) {
  Harness h;
  h.Add(N("n1").Obj()).Add(N("n2").Obj()).Add(N("n3").Obj());
  h.Add(MakePodGroup("ns", "pg").MinMember(3).Obj());
  for (int i = 1; i <= 3; ++i) {
    h.Add(MakePod("ns", "w-" + std::to_string(i))
              .Group("pg")
              .Label("app", "w")
              .AntiAffinity("app", "w", "kubernetes.io/hostname")
              .Req("cpu", "1")
              .Obj());
  }
  CycleResult r = h.Run();
  BindMap binds = Binds(r);
  ASSERT_EQ(binds.size(), 3u);
  std::set<std::string> nodes;
  for (const auto& [pod, node] : binds) nodes.insert(node);
  EXPECT_EQ(nodes.size(), 3u) << "two tasks with mutual anti-affinity share a node";
}

TEST(PredicatesTest, PodAffinity) {
  std::vector<api::Node> nodes = {N("n1").Label("zone", "a").Obj(),
                                  N("n2").Label("zone", "b").Obj()};
  std::vector<api::Pod> running = {
      MakePod("ns", "cache-0").Label("app", "cache").Req("cpu", "1").RunningOn("n2").Obj()};
  CycleResult r = RunOnePod(nodes, P().PodAffinity("app", "cache", "zone"), running);
  EXPECT_THAT(Binds(r), ElementsAre(Pair("ns/p", "n2")));
  // The zone with the cache is full.
  running[0].spec.containers[0].resources.requests["cpu"] = test::Q("4");
  r = RunOnePod(nodes, P().PodAffinity("app", "cache", "zone"), running);
  EXPECT_EQ(Message(r, "ns/p"),
            "0/2 nodes are unavailable: 1 Insufficient cpu, 1 node(s) didn't match pod affinity "
            "rules.");
  // The first pod of a group that matches its own term may go anywhere.
  r = RunOnePod(nodes, P().Label("app", "x").PodAffinity("app", "x", "zone"));
  EXPECT_EQ(Binds(r).size(), 1u);
  // ...but not a pod whose term matches nothing, itself included.
  r = RunOnePod(nodes, P().PodAffinity("app", "x", "zone"));
  EXPECT_EQ(Message(r, "ns/p"),
            "0/2 nodes are unavailable: 2 node(s) didn't match pod affinity rules.");
}

TEST(PredicatesTest, TopologySpreadDoNotSchedule) {
  std::vector<api::Node> nodes = {N("n1").Label("zone", "a").Obj(),
                                  N("n2").Label("zone", "b").Obj()};
  std::vector<api::Pod> running = {
      MakePod("ns", "x-0").Label("app", "x").Req("cpu", "1").RunningOn("n1").Obj(),
      MakePod("ns", "x-1").Label("app", "x").Req("cpu", "1").RunningOn("n1").Obj()};
  auto pod = [] { return P().Label("app", "x").SpreadConstraint(1, "zone", "app", "x"); };
  CycleResult r = RunOnePod(nodes, pod(), running);
  EXPECT_THAT(Binds(r), ElementsAre(Pair("ns/p", "n2")));

  nodes[1] = N("n2").Label("zone", "b").Cpu("500m").Obj();
  r = RunOnePod(nodes, pod(), running);
  EXPECT_EQ(Message(r, "ns/p"),
            "0/2 nodes are unavailable: 1 Insufficient cpu, 1 node(s) didn't match pod topology "
            "spread constraints.");

  // ScheduleAnyway does not filter; a larger skew allows the crowded zone.
  r = RunOnePod({nodes[0]},
                P().Label("app", "x").SpreadConstraint(1, "zone", "app", "x", "ScheduleAnyway"),
                running);
  EXPECT_EQ(Binds(r).size(), 1u);
  r = RunOnePod({nodes[0], N("n3").Label("zone", "c").Cpu("0").Obj()},
                P().Label("app", "x").SpreadConstraint(3, "zone", "app", "x"), running);
  EXPECT_THAT(Binds(r), ElementsAre(Pair("ns/p", "n1")));
  // A node without the topology label cannot host the pod.
  r = RunOnePod({N("n9").Obj()}, pod());
  EXPECT_EQ(Message(r, "ns/p"),
            "0/1 nodes are unavailable: 1 node(s) didn't match pod topology spread constraints "
            "(missing required label).");
}

}  // namespace
}  // namespace muster::core
