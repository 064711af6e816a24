// End-to-end tests of one or a few scheduling cycles: a cluster built from objects, Session::Run
// with a volcano-scheduler.conf, and the CycleResult a user would see (binds, evictions, PodGroup
// status, pod conditions and events).

#include <cstdlib>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "api/time.h"
#include "core/cluster.h"
#include "core/framework/conf.h"
#include "core/framework/session.h"
#include "core/testing/builders.h"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::core {
namespace {

using test::MakeNode;
using test::MakePod;
using test::MakePodGroup;
using test::MakePriorityClass;
using test::MakeQueue;
using ::testing::_;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

using BindMap = std::map<std::string, std::string>;

SchedulerConf MustParse(std::string_view text) {
  absl::StatusOr<SchedulerConf> conf = ParseSchedulerConf(text);
  EXPECT_TRUE(conf.ok()) << conf.status() << "\n" << text;
  return conf.ok() ? *std::move(conf) : SchedulerConf{};
}

// The default conf without drf (to show what drf changes).
constexpr char kNoDrfConf[] = R"(
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: overcommit}, {name: predicates}, {name: proportion}, {name: nodeorder}]
)";

constexpr char kBinpackConf[] = R"(
actions: "enqueue, allocate"
tiers:
- plugins: [{name: priority}, {name: gang}]
- plugins: [{name: predicates}, {name: binpack}]
)";

constexpr char kNoBackfillConf[] = R"(
actions: "enqueue, allocate"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]
)";

constexpr char kPreemptConf[] = R"(
actions: "enqueue, allocate, preempt"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]
)";

constexpr char kReclaimConf[] = R"(
actions: "enqueue, allocate, reclaim"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]
)";

// A cluster plus the API objects behind its pods, applying each cycle's decisions the way the
// API would (scenario.cc does the same): a bound pod gets spec.nodeName, an evicted pod is gone.
class Harness {
 public:
  Harness& Add(const api::Node& n) {
    cluster_.UpsertNode(n);
    return *this;
  }
  Harness& Add(const api::Pod& p) {
    cluster_.UpsertPod(p);
    pods_[p.meta.namespace_ + "/" + p.meta.name] = p;
    return *this;
  }
  Harness& Add(const api::PodGroup& pg) {
    cluster_.UpsertPodGroup(pg);
    return *this;
  }
  Harness& Add(const api::Queue& q) {
    cluster_.UpsertQueue(q);
    return *this;
  }
  Harness& Add(const api::PriorityClass& pc) {
    cluster_.UpsertPriorityClass(pc);
    return *this;
  }

  CycleResult Run(const SchedulerConf& conf = DefaultSchedulerConf(),
                  SessionOptions options = {}) {
    Session ssn(cluster_, conf, std::move(options));
    CycleResult r = ssn.Run();
    for (const auto& b : r.binds) {
      api::Pod& p = pods_.at(b.pod);
      p.spec.node_name = b.node;
      cluster_.UpsertPod(p);
    }
    for (const auto& e : r.evictions) {
      const api::Pod& p = pods_.at(e.pod);
      cluster_.RemovePod(p.meta.namespace_, p.meta.name);
      pods_.erase(e.pod);
    }
    return r;
  }
  CycleResult Run(std::string_view conf_text) { return Run(MustParse(conf_text)); }

  // Re-upserts a pod after changing it (the kubelet reporting a phase, say).
  void Update(const std::string& key, const std::function<void(api::Pod&)>& change) {
    api::Pod& p = pods_.at(key);
    change(p);
    cluster_.UpsertPod(p);
  }
  void Remove(const std::string& key) {
    const api::Pod p = pods_.at(key);
    pods_.erase(key);
    cluster_.RemovePod(p.meta.namespace_, p.meta.name);
  }

  Cluster& cluster() { return cluster_; }

 private:
  Cluster cluster_;
  std::map<std::string, api::Pod> pods_;
};

BindMap Binds(const CycleResult& r) {
  BindMap out;
  for (const auto& b : r.binds) out[b.pod] = b.node;
  return out;
}

std::vector<std::string> Evicted(const CycleResult& r) {
  std::vector<std::string> out;
  for (const auto& e : r.evictions) out.push_back(e.pod);
  return out;
}

// The PodScheduled=False message of a pod, or "<none>".
std::string Message(const CycleResult& r, const std::string& pod) {
  for (const auto& pc : r.pod_conditions) {
    if (pc.pod == pod) return pc.message;
  }
  return "<none>";
}

const CycleResult::PodCondition* Condition(const CycleResult& r, const std::string& pod) {
  for (const auto& pc : r.pod_conditions) {
    if (pc.pod == pod) return &pc;
  }
  return nullptr;
}

const CycleResult::PodGroupStatus* Group(const CycleResult& r, const std::string& pg) {
  for (const auto& s : r.pod_groups) {
    if (s.pod_group == pg) return &s;
  }
  return nullptr;
}

std::string Phase(const CycleResult& r, const std::string& pg) {
  const auto* s = Group(r, pg);
  return s ? s->phase : "<none>";
}

// Messages of the events about `object` with `reason`.
std::vector<std::string> Events(const CycleResult& r, const std::string& object,
                                const std::string& reason) {
  std::vector<std::string> out;
  for (const auto& e : r.events) {
    if (e.object == object && e.reason == reason) out.push_back(e.message);
  }
  return out;
}

int CountWithPrefix(const BindMap& binds, const std::string& prefix) {
  int n = 0;
  for (const auto& [pod, node] : binds) n += pod.rfind(prefix, 0) == 0 ? 1 : 0;
  return n;
}

// One pod group "ns/pg" (minMember 1, default queue) with one pending pod "ns/p" asking 1 cpu,
// made unschedulable or not by `pod` and the nodes; returns the cycle's result.
CycleResult RunOnePod(const std::vector<api::Node>& nodes, test::PodBuilder pod,
                      const std::vector<api::Pod>& running = {}) {
  Harness h;
  for (const auto& n : nodes) h.Add(n);
  for (const auto& p : running) h.Add(p);
  h.Add(MakePodGroup("ns", "pg").Obj());
  h.Add(pod.Group("pg").Req("cpu", "1").Obj());
  return h.Run();
}

test::PodBuilder P() { return MakePod("ns", "p"); }
test::NodeBuilder N(std::string name) {
  return MakeNode(name).Cpu("4").Memory("8Gi").Label("kubernetes.io/hostname", name);
}

// --- predicates: reasons and the FitError text -------------------------------------------------

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

// --- gang -------------------------------------------------------------------------------------

// Nodes n1..n<count>, each with `gpus` GPUs.
void AddGpuNodes(Harness& h, int count, int gpus) {
  for (int i = 1; i <= count; ++i) {
    h.Add(MakeNode("n" + std::to_string(i)).Cpu("32").Memory("64Gi").Gpus(gpus).Obj());
  }
}

void AddGang(Harness& h, const std::string& pg, int pods, int min_member, int gpus_each,
             const std::string& queue = "") {
  h.Add(MakePodGroup("ns", pg).MinMember(min_member).Queue(queue).Obj());
  for (int i = 1; i <= pods; ++i) {
    h.Add(MakePod("ns", pg + "-" + std::to_string(i))
              .Group(pg)
              .Req("cpu", "1")
              .Gpus(gpus_each)
              .Obj());
  }
}

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

// --- enqueue ----------------------------------------------------------------------------------

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
              ::testing::Contains("resource in cluster is overused"));

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
                  ::testing::Contains("resource in cluster is overused"));
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
    if (settle) options.settled = [](const JobInfo& j) { return j.name == "a"; };
    CycleResult r = h.Run(DefaultSchedulerConf(), options);
    EXPECT_THAT(Binds(r), IsEmpty());
    EXPECT_EQ(Phase(r, "ns/b"), "Pending");
    EXPECT_EQ(h.cluster().FindJob("ns/b")->phase, "Pending");
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

// --- fair share and order ---------------------------------------------------------------------

// Two queues, each with one job of four 1-cpu pods (minMember 1), on one 4-cpu node.
BindMap RunTwoQueues(int w1, int w2) {
  Harness h;
  h.Add(N("n1").Obj());
  h.Add(MakeQueue("q1").Weight(w1).Obj());
  h.Add(MakeQueue("q2").Weight(w2).Obj());
  for (const char* q : {"q1", "q2"}) {
    std::string pg = std::string("job-") + q;
    h.Add(MakePodGroup("ns", pg).Queue(q).Obj());
    for (int i = 1; i <= 4; ++i) {
      h.Add(MakePod("ns", pg + "-" + std::to_string(i)).Group(pg).Req("cpu", "1").Obj());
    }
  }
  return Binds(h.Run());
}

TEST(ProportionTest, QueuesShareByWeight) {
  BindMap even = RunTwoQueues(1, 1);
  EXPECT_EQ(CountWithPrefix(even, "ns/job-q1-"), 2);
  EXPECT_EQ(CountWithPrefix(even, "ns/job-q2-"), 2);
  BindMap skewed = RunTwoQueues(3, 1);
  EXPECT_EQ(CountWithPrefix(skewed, "ns/job-q1-"), 3);
  EXPECT_EQ(CountWithPrefix(skewed, "ns/job-q2-"), 1);
}

TEST(ProportionTest, QueueCapabilityCapsPlacement) {
  Harness h;
  h.Add(N("n1").Cpu("8").Obj());
  h.Add(MakeQueue("q").Capability("cpu", "2").Obj());
  h.Add(MakePodGroup("ns", "pg").Queue("q").Obj());
  for (int i = 1; i <= 4; ++i) {
    h.Add(MakePod("ns", "pg-" + std::to_string(i)).Group("pg").Req("cpu", "1").Obj());
  }
  CycleResult r = h.Run();
  EXPECT_EQ(r.binds.size(), 2u);
}

// Jobs a (3 running) and b (1 running), each with 4 more 1-cpu pods, on an 8-cpu node.
BindMap RunDrfCase(const SchedulerConf& conf) {
  Harness h;
  h.Add(N("n1").Cpu("8").Memory("16Gi").Obj());
  for (auto [pg, running] : {std::pair{"a", 3}, std::pair{"b", 1}}) {
    h.Add(MakePodGroup("ns", pg).Phase("Running").Obj());
    for (int i = 0; i < running + 4; ++i) {
      auto pod = MakePod("ns", std::string(pg) + "-" + std::to_string(i)).Group(pg).Req("cpu", "1");
      if (i < running) pod.RunningOn("n1");
      h.Add(pod.Obj());
    }
  }
  return Binds(h.Run(conf));
}

TEST(DrfTest, LowerDominantShareGoesFirst) {
  BindMap drf = RunDrfCase(DefaultSchedulerConf());
  EXPECT_EQ(CountWithPrefix(drf, "ns/b-"), 3);  // b: 1/8 -> 4/8, a: 3/8 -> 4/8
  EXPECT_EQ(CountWithPrefix(drf, "ns/a-"), 1);
  BindMap plain = RunDrfCase(MustParse(kNoDrfConf));
  EXPECT_EQ(CountWithPrefix(plain, "ns/a-"), 4);  // creation, then uid: a first every time
  EXPECT_EQ(CountWithPrefix(plain, "ns/b-"), 0);
}

TEST(PriorityTest, HigherPriorityJobGoesFirst) {
  Harness h;
  h.Add(N("n1").Cpu("1").Obj());
  h.Add(MakePriorityClass("high", 100));
  h.Add(MakePodGroup("ns", "a").Obj());
  h.Add(MakePod("ns", "a-1").Group("a").Req("cpu", "1").Obj());
  h.Add(MakePodGroup("ns", "b").PriorityClass("high").Obj());
  h.Add(MakePod("ns", "b-1").Group("b").Req("cpu", "1").Obj());
  EXPECT_THAT(Binds(h.Run()), ElementsAre(Pair("ns/b-1", "n1")));

  Harness same;  // without the class, uid order: a first
  same.Add(N("n1").Cpu("1").Obj());
  same.Add(MakePodGroup("ns", "a").Obj());
  same.Add(MakePod("ns", "a-1").Group("a").Req("cpu", "1").Obj());
  same.Add(MakePodGroup("ns", "b").Obj());
  same.Add(MakePod("ns", "b-1").Group("b").Req("cpu", "1").Obj());
  EXPECT_THAT(Binds(same.Run()), ElementsAre(Pair("ns/a-1", "n1")));
}

TEST(PriorityTest, HigherPriorityTaskGoesFirstWithinAJob) {
  Harness h;
  h.Add(N("n1").Cpu("2").Obj());
  h.Add(MakePodGroup("ns", "pg").Obj());
  h.Add(MakePod("ns", "pg-1").Group("pg").Priority(1).Req("cpu", "1").Obj());
  h.Add(MakePod("ns", "pg-2").Group("pg").Priority(10).Req("cpu", "1").Obj());
  h.Add(MakePod("ns", "pg-3").Group("pg").Priority(5).Req("cpu", "1").Obj());
  EXPECT_THAT(Binds(h.Run()), ElementsAre(Pair("ns/pg-2", "n1"), Pair("ns/pg-3", "n1")));
}

TEST(TaskOrderTest, NameIndexDecidesAmongEquals) {
  Harness h;
  h.Add(N("n1").Cpu("2").Obj());
  h.Add(MakePodGroup("ns", "pg").Obj());
  for (const char* name : {"pg-10", "pg-2", "pg-1"}) {
    h.Add(MakePod("ns", name).Group("pg").Req("cpu", "1").Obj());
  }
  EXPECT_THAT(Binds(h.Run()), ElementsAre(Pair("ns/pg-1", "n1"), Pair("ns/pg-2", "n1")));
}

// --- node order -------------------------------------------------------------------------------

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

TEST(BinpackTest, PrefersTheFullerNode) {
  auto run = [](std::string_view conf, bool gpu) {
    Harness h;
    h.Add(MakeNode("n1").Cpu("8").Memory("16Gi").Gpus(8).Obj());
    h.Add(MakeNode("n2").Cpu("8").Memory("16Gi").Gpus(8).Obj());
    auto busy = MakePod("other", "busy").RunningOn("n2");
    auto p = MakePod("ns", "p").Group("pg");
    if (gpu) {
      busy.Gpus(4);
      p.Gpus(1);
    } else {
      busy.Req("cpu", "4").Req("memory", "8Gi");
      p.Req("cpu", "1").Req("memory", "1Gi");
    }
    h.Add(busy.Obj());
    h.Add(MakePodGroup("ns", "pg").Obj());
    h.Add(p.Obj());
    return Binds(h.Run(MustParse(conf)));
  };
  EXPECT_THAT(run(kBinpackConf, false), ElementsAre(Pair("ns/p", "n2")));
  EXPECT_THAT(run(kBinpackConf, true), ElementsAre(Pair("ns/p", "n2")));
  // The default nodeorder spreads instead.
  EXPECT_THAT(run(kNoBackfillConf, false), ElementsAre(Pair("ns/p", "n1")));
}

// --- allocate: strictOrder and reservations ---------------------------------------------------

// allocate and backfill without queue shares, with `arguments` as allocate's configuration.
SchedulerConf AllocateConf(std::string_view arguments) {
  return MustParse(fmt::format(R"(
actions: "allocate, backfill"
tiers:
- plugins: [{{name: priority}}, {{name: gang}}]
- plugins: [{{name: predicates}}, {{name: nodeorder}}]
configurations:
- name: allocate
  arguments: {}
)",
                               arguments));
}

// Times of the reservation cases: t0 and seconds after it.
constexpr int64_t kT0 = 1767225600;  // 2026-01-01T00:00:00Z
std::string At(int seconds) { return api::FormatUnixTime(kT0 + seconds); }
SessionOptions Now(int seconds) {
  SessionOptions o;
  o.now_unix = kT0 + seconds;
  return o;
}

// Two nodes of 8 GPUs. A runs on n1 from t0 and is expected to take 100 s; gang g (2 x 8 GPUs,
// both nodes) arrives at 1; then single-pod jobs `small` (name, GPUs, expected runtime, or none
// when empty), each a second after the last.
void AddBlockedGang(Harness& h, const std::vector<std::tuple<std::string, int, std::string>>& small,
                    const std::string& a_runtime = "100s") {
  AddGpuNodes(h, 2, 8);
  auto a = MakePod("ns", "a-1").Group("a").Req("cpu", "1").Gpus(8).RunningOn("n1").Started(At(0));
  if (!a_runtime.empty()) a.ExpectedRuntime(a_runtime);
  h.Add(MakePodGroup("ns", "a").Phase("Running").Created(At(0)).Obj()).Add(a.Obj());
  h.Add(MakePodGroup("ns", "g").MinMember(2).Created(At(1)).Obj());
  for (const char* p : {"g-1", "g-2"}) {
    h.Add(MakePod("ns", p).Group("g").Req("cpu", "1").Gpus(8).ExpectedRuntime("50s").Obj());
  }
  int created = 2;
  for (const auto& [name, gpus, runtime] : small) {
    h.Add(MakePodGroup("ns", name).Created(At(created++)).Obj());
    auto p = MakePod("ns", name + "-1").Group(name).Req("cpu", "1").Gpus(gpus);
    if (!runtime.empty()) p.ExpectedRuntime(runtime);
    h.Add(p.Obj());
  }
}

TEST(AllocateStrictOrderTest, NothingGoesAheadOfAHeadThatDoesNotFit) {
  auto run = [](std::string_view arguments) {
    Harness h;
    AddBlockedGang(h, {{"c", 1, ""}});
    return Binds(h.Run(AllocateConf(arguments)));
  };
  EXPECT_THAT(run("{strictOrder: true}"), IsEmpty());
  EXPECT_THAT(run("{strictOrder: false}"), ElementsAre(Pair("ns/c-1", "n2")));
  EXPECT_THAT(run("{}"), ElementsAre(Pair("ns/c-1", "n2")));

  // Once A is gone the head binds, and what follows it too while it fits.
  Harness h;
  AddBlockedGang(h, {{"c", 1, ""}});
  h.Remove("ns/a-1");
  EXPECT_THAT(Binds(h.Run(AllocateConf("{strictOrder: true}"))),
              UnorderedElementsAre(Pair("ns/g-1", _), Pair("ns/g-2", _)));
}

TEST(AllocateStrictOrderTest, AJobEnqueueHasNotAdmittedHoldsItsPlace) {
  // As EnqueueTest.MinResourcesAboveQueueCapabilityStaysPending, in strict order: big, first,
  // stays Pending and small, which fits, waits behind it.
  auto run = [](bool strict) {
    Harness h;
    h.Add(N("n1").Cpu("16").Obj());
    h.Add(MakeQueue("q").Capability("cpu", "2").Obj());
    h.Add(MakePodGroup("ns", "big").Queue("q").MinResources("cpu", "4").Created(At(0)).Obj());
    h.Add(MakePod("ns", "big-1").Group("big").Req("cpu", "1").Obj());
    h.Add(MakePodGroup("ns", "small").Queue("q").MinResources("cpu", "2").Created(At(1)).Obj());
    h.Add(MakePod("ns", "small-1").Group("small").Req("cpu", "1").Obj());
    SchedulerConf conf = DefaultSchedulerConf();
    if (strict) conf.configurations["allocate"]["strictOrder"] = "true";
    return Binds(h.Run(conf));
  };
  EXPECT_THAT(run(false), ElementsAre(Pair("ns/small-1", "n1")));
  EXPECT_THAT(run(true), IsEmpty());
}

TEST(AllocateStrictOrderTest, BadArgumentsAreRejectedWhenTheConfIsRead) {
  for (const char* arguments :
       {"{strictOrder: maybe}", "{reserveGpus: -1}", "{reserveGpus: x}", "{reserveAfter: soon}"}) {
    absl::StatusOr<SchedulerConf> conf = ParseSchedulerConf(fmt::format(R"(
actions: "allocate"
configurations:
- name: allocate
  arguments: {}
)",
                                                                        arguments));
    EXPECT_FALSE(conf.ok()) << arguments;
    EXPECT_THAT(std::string(conf.status().message()),
                ::testing::HasSubstr("configuration \"allocate\": "))
        << arguments;
  }
}

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

// --- backfill ---------------------------------------------------------------------------------

TEST(BackfillTest, BestEffortPodsArePlacedOnlyByBackfill) {
  auto run = [](const SchedulerConf& conf) {
    Harness h;
    h.Add(N("n1").Obj());
    h.Add(MakePod("other", "hog").Req("cpu", "4").Req("memory", "8Gi").RunningOn("n1").Obj());
    h.Add(MakePodGroup("ns", "pg").Obj());
    h.Add(MakePod("ns", "be").Group("pg").Obj());  // no requests
    return h.Run(conf);
  };
  CycleResult r = run(DefaultSchedulerConf());
  EXPECT_THAT(Binds(r), ElementsAre(Pair("ns/be", "n1")));  // a full node still takes it
  EXPECT_EQ(Phase(r, "ns/pg"), "Running");
  r = run(MustParse(kNoBackfillConf));
  EXPECT_THAT(Binds(r), IsEmpty());
}

// --- preempt and reclaim ----------------------------------------------------------------------

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

// --- PodGroup phases at close ------------------------------------------------------------------

// One group in each phase close can give: the cluster PhasesAtClose runs a cycle over.
void AddOneGroupOfEachPhase(Harness& h) {
  h.Add(N("n1").Cpu("4").Obj());
  // Running: enough placed this cycle.
  AddGang(h, "fits", 2, 2, 0);
  // Inqueue: admitted, does not fit.
  h.Add(MakePodGroup("ns", "toobig").Obj());
  h.Add(MakePod("ns", "toobig-1").Group("toobig").Req("cpu", "64").Obj());
  // Pending: not admitted.
  h.Add(MakePodGroup("ns", "notadmitted").MinResources("cpu", "100").Obj());
  h.Add(MakePod("ns", "notadmitted-1").Group("notadmitted").Req("cpu", "1").Obj());
  // Completed: every pod succeeded.
  h.Add(MakePodGroup("ns", "done").Phase("Running").Obj());
  h.Add(MakePod("ns", "done-1")
            .Group("done")
            .Req("cpu", "1")
            .NodeName("n1")
            .Phase("Succeeded")
            .Obj());
  // Unknown: some pods run, but the gang minimum is no longer met and the rest cannot fit.
  h.Add(MakePodGroup("ns", "broken").MinMember(2).Phase("Running").Obj());
  h.Add(MakePod("ns", "broken-1").Group("broken").Req("cpu", "1").RunningOn("n1").Obj());
  h.Add(MakePod("ns", "broken-2").Group("broken").Req("cpu", "64").Obj());
}

TEST(PodGroupPhaseTest, PhasesAtClose) {
  Harness h;
  AddOneGroupOfEachPhase(h);
  CycleResult r = h.Run();
  EXPECT_EQ(Phase(r, "ns/fits"), "Running");
  EXPECT_EQ(Phase(r, "ns/toobig"), "Inqueue");
  EXPECT_EQ(Phase(r, "ns/notadmitted"), "Pending");
  EXPECT_EQ(Phase(r, "ns/done"), "Completed");
  EXPECT_EQ(Phase(r, "ns/broken"), "Unknown");
  const auto* broken = Group(r, "ns/broken");
  EXPECT_EQ(broken->running, 1);
  const auto* done = Group(r, "ns/done");
  EXPECT_EQ(done->succeeded, 1);
  // The phase sticks in the cluster for the next cycle: admitted groups are not admitted again.
  EXPECT_EQ(h.cluster().FindJob("ns/toobig")->phase, "Inqueue");
  EXPECT_EQ(h.cluster().FindJob("ns/fits")->phase, "Running");
}

TEST(PodGroupPhaseTest, WithoutDiagnosticsTheSameCycleDecidesTheSame) {
  // Binds, phases and condition types as with diagnostics; no events, pod conditions or
  // condition texts.
  Harness loud, quiet;
  AddOneGroupOfEachPhase(loud);
  AddOneGroupOfEachPhase(quiet);
  CycleResult r = loud.Run();
  SessionOptions options;
  options.diagnostics = false;
  CycleResult q = quiet.Run(DefaultSchedulerConf(), options);
  EXPECT_EQ(Binds(q), Binds(r));
  ASSERT_EQ(q.pod_groups.size(), r.pod_groups.size());
  for (const auto& st : r.pod_groups) {
    SCOPED_TRACE(st.pod_group);
    const auto* other = Group(q, st.pod_group);
    ASSERT_NE(other, nullptr);
    EXPECT_EQ(other->phase, st.phase);
    ASSERT_EQ(other->condition.has_value(), st.condition.has_value());
    if (st.condition) {
      EXPECT_EQ(other->condition->type, st.condition->type);
      EXPECT_EQ(other->condition->message, "");
    }
  }
  EXPECT_THAT(q.events, IsEmpty());
  EXPECT_THAT(q.pod_conditions, IsEmpty());
  EXPECT_FALSE(r.events.empty());
}

}  // namespace
}  // namespace muster::core
