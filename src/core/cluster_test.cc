#include "core/cluster.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "core/testing/builders.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::core {
namespace {

using test::MakeNode;
using test::MakePod;
using test::MakePodGroup;
using test::MakePriorityClass;
using test::MakeQueue;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using test::R;

// The device indices on `node` whose holder is the task `key`.
std::vector<int> DevicesHeldBy(Cluster& c, const std::string& node, const std::string& key) {
  std::vector<int> out;
  const TaskInfo* t = c.FindTask(key);
  for (const GpuDevice& g : c.FindNode(node)->gpus) {
    if (t && g.holder == t->id) out.push_back(g.index);
  }
  return out;
}

std::vector<std::string> NodeNames(const Cluster& c) {
  std::vector<std::string> out;
  for (int id : c.NodeIds()) out.push_back(c.node(id).name);
  return out;
}

// --- nodes ------------------------------------------------------------------------------------

TEST(ClusterNodeTest, AllocatableMaxPodsAndFlags) {
  Cluster c;
  c.UpsertNode(MakeNode("n1").Cpu("4").Memory("8Gi").Pods(16).Gpus(2).Unschedulable().Obj());
  NodeInfo* n = c.FindNode("n1");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->allocatable, R({{"cpu", "4"}, {"memory", "8Gi"}, {"nvidia.com/gpu", "2"}}));
  EXPECT_EQ(n->idle, n->allocatable);
  EXPECT_TRUE(n->used.IsEmpty());
  EXPECT_EQ(n->max_pods, 16);
  EXPECT_TRUE(n->unschedulable);
  EXPECT_TRUE(n->ready);
  ASSERT_EQ(n->gpus.size(), 2u);
  EXPECT_EQ(n->gpus[1].index, 1);
  EXPECT_EQ(n->FreeGpus(), 2);
  EXPECT_EQ(c.FindNode("nope"), nullptr);
}

TEST(ClusterNodeTest, CapacityIsUsedWhenAllocatableIsMissing) {
  Cluster c;
  c.UpsertNode(MakeNode("n1").Cpu("8").Pods(7).CapacityOnly().Obj());
  EXPECT_EQ(c.FindNode("n1")->allocatable, R({{"cpu", "8"}}));
  EXPECT_EQ(c.FindNode("n1")->max_pods, 7);
}

TEST(ClusterNodeTest, NotReadyNodesAreLeftOutOfTheTotal) {
  Cluster c;
  c.UpsertNode(MakeNode("n1").Cpu("4").Ready(true).Obj());
  c.UpsertNode(MakeNode("n2").Cpu("8").Ready(false).Obj());
  c.UpsertNode(MakeNode("n3").Cpu("1").Obj());  // no conditions: Ready
  EXPECT_FALSE(c.FindNode("n2")->ready);
  EXPECT_EQ(c.TotalAllocatable(), R({{"cpu", "5"}}));
}

TEST(ClusterNodeTest, NodesAreListedByNameAndRemovable) {
  Cluster c;
  c.UpsertNode(MakeNode("n3").Obj());
  c.UpsertNode(MakeNode("n1").Obj());
  c.UpsertNode(MakeNode("n2").Obj());
  EXPECT_THAT(NodeNames(c), ElementsAre("n1", "n2", "n3"));
  c.RemoveNode("n2");
  EXPECT_THAT(NodeNames(c), ElementsAre("n1", "n3"));
  EXPECT_EQ(c.FindNode("n2"), nullptr);
  c.RemoveNode("n2");  // again: no-op
  c.UpsertNode(MakeNode("n0").Obj());
  EXPECT_THAT(NodeNames(c), ElementsAre("n0", "n1", "n3"));
}

TEST(ClusterNodeTest, ResizeKeepsOccupiedResourcesAndGpuHolders) {
  Cluster c;
  c.UpsertNode(MakeNode("n1").Cpu("4").Gpus(4).Obj());
  c.UpsertPod(MakePod("ns", "a").Req("cpu", "1").Gpus(2).RunningOn("n1").Obj());
  c.UpsertNode(MakeNode("n1").Cpu("8").Gpus(4).Label("new", "label").Obj());
  NodeInfo* n = c.FindNode("n1");
  EXPECT_EQ(n->used, R({{"cpu", "1"}, {"nvidia.com/gpu", "2"}}));
  EXPECT_EQ(n->idle, R({{"cpu", "7"}, {"nvidia.com/gpu", "2"}}));
  EXPECT_THAT(DevicesHeldBy(c, "n1", "ns/a"), ElementsAre(0, 1));
  EXPECT_EQ(n->node->meta.labels.at("new"), "label");
}

// --- pods on nodes ----------------------------------------------------------------------------

TEST(ClusterPodTest, NodeIdleFollowsPodsBindingAndLeaving) {
  Cluster c;
  c.UpsertNode(MakeNode("n1").Cpu("4").Memory("8Gi").Obj());
  api::Pod p = MakePod("ns", "p").Req("cpu", "1").Req("memory", "2Gi").Obj();
  c.UpsertPod(p);
  NodeInfo* n = c.FindNode("n1");
  EXPECT_EQ(n->pod_count, 0);
  EXPECT_EQ(c.FindTask("ns/p")->status, TaskStatus::kPending);
  EXPECT_EQ(n->idle, R({{"cpu", "4"}, {"memory", "8Gi"}}));

  p.spec.node_name = "n1";  // bound
  c.UpsertPod(p);
  EXPECT_EQ(c.FindTask("ns/p")->status, TaskStatus::kBound);
  EXPECT_EQ(n->idle, R({{"cpu", "3"}, {"memory", "6Gi"}}));
  EXPECT_EQ(n->used, R({{"cpu", "1"}, {"memory", "2Gi"}}));
  EXPECT_EQ(n->pod_count, 1);
  EXPECT_THAT(n->tasks, ElementsAre(c.FindTask("ns/p")->id));

  p.status.phase = "Running";
  c.UpsertPod(p);
  EXPECT_EQ(c.FindTask("ns/p")->status, TaskStatus::kRunning);
  EXPECT_EQ(n->idle, R({{"cpu", "3"}, {"memory", "6Gi"}}));
  EXPECT_EQ(n->pod_count, 1);

  c.RemovePod("ns", "p");
  EXPECT_EQ(c.FindTask("ns/p"), nullptr);
  EXPECT_EQ(n->idle, R({{"cpu", "4"}, {"memory", "8Gi"}}));
  EXPECT_TRUE(n->used.IsEmpty());
  EXPECT_EQ(n->pod_count, 0);
  EXPECT_THAT(n->tasks, IsEmpty());
  c.RemovePod("ns", "p");  // again: no-op
}

TEST(ClusterPodTest, FinishedPodsHoldNothing) {
  Cluster c;
  c.UpsertNode(MakeNode("n1").Cpu("4").Obj());
  c.UpsertPod(MakePod("ns", "done").Req("cpu", "1").NodeName("n1").Phase("Succeeded").Obj());
  c.UpsertPod(MakePod("ns", "bad").Req("cpu", "1").NodeName("n1").Phase("Failed").Obj());
  EXPECT_EQ(c.FindNode("n1")->idle, R({{"cpu", "4"}}));
  EXPECT_EQ(c.FindNode("n1")->pod_count, 0);
  EXPECT_EQ(c.FindTask("ns/done")->status, TaskStatus::kSucceeded);
  EXPECT_EQ(c.FindTask("ns/bad")->status, TaskStatus::kFailed);
}

TEST(ClusterPodTest, PodInUnknownPhaseOnANodeStillHoldsItsResources) {
  // FORMAT.md: "A pod with spec.nodeName set is placed there and uses its requests, whatever its
  // phase (Succeeded and Failed pods excepted)". Phase Unknown means the node stopped reporting;
  // the pod may well be running (Volcano's NodeInfo.AddTask accounts Unknown tasks as used).
  Cluster c;
  c.UpsertNode(MakeNode("n1").Cpu("4").Gpus(2).Obj());
  c.UpsertPod(MakePod("ns", "lost").Req("cpu", "3").Gpus(1).NodeName("n1").Phase("Unknown").Obj());
  NodeInfo* n = c.FindNode("n1");
  EXPECT_EQ(n->idle, R({{"cpu", "1"}, {"nvidia.com/gpu", "1"}}));
  EXPECT_EQ(n->pod_count, 1);
  EXPECT_THAT(DevicesHeldBy(c, "n1", "ns/lost"), ElementsAre(0));
}

TEST(ClusterPodTest, TerminatingPodIsReleasingAndCountsAsFutureIdle) {
  Cluster c;
  c.UpsertNode(MakeNode("n1").Cpu("4").Obj());
  c.UpsertPod(MakePod("ns", "t").Req("cpu", "3").RunningOn("n1").Terminating().Obj());
  NodeInfo* n = c.FindNode("n1");
  EXPECT_EQ(c.FindTask("ns/t")->status, TaskStatus::kReleasing);
  EXPECT_EQ(n->idle, R({{"cpu", "1"}}));
  EXPECT_EQ(n->releasing, R({{"cpu", "3"}}));
  EXPECT_EQ(n->releasing_pods, 1);
  EXPECT_EQ(n->FutureIdle(), R({{"cpu", "4"}}));
  c.RemovePod("ns", "t");
  EXPECT_EQ(n->idle, R({{"cpu", "4"}}));
  EXPECT_TRUE(n->releasing.IsEmpty());
  EXPECT_EQ(n->releasing_pods, 0);
}

TEST(ClusterPodTest, PodArrivingBeforeItsNodeIsPlacedWhenTheNodeArrives) {
  Cluster c;
  c.UpsertPodGroup(MakePodGroup("ns", "pg").Obj());
  c.UpsertPod(MakePod("ns", "early").Group("pg").Req("cpu", "2").Gpus(1).RunningOn("n9").Obj());
  TaskInfo* t = c.FindTask("ns/early");
  EXPECT_EQ(t->node, -1);
  EXPECT_EQ(t->status, TaskStatus::kRunning);
  EXPECT_EQ(c.FindJob("ns/pg")->Count(TaskStatus::kRunning), 1);

  c.UpsertNode(MakeNode("n9").Cpu("4").Gpus(2).Obj());
  NodeInfo* n = c.FindNode("n9");
  EXPECT_EQ(t->node, n->id);
  EXPECT_EQ(t->status, TaskStatus::kRunning);
  EXPECT_EQ(n->idle, R({{"cpu", "2"}, {"nvidia.com/gpu", "1"}}));
  EXPECT_EQ(n->pod_count, 1);
  EXPECT_THAT(DevicesHeldBy(c, "n9", "ns/early"), ElementsAre(0));
  EXPECT_EQ(c.FindJob("ns/pg")->Count(TaskStatus::kRunning), 1);
}

TEST(ClusterPodTest, RunningPodWithNoNodeCountsAsRunningAndHoldsNoNode) {
  // Volcano's getTaskStatus: phase Running is a running task whatever spec.nodeName says, so its
  // pod group keeps its members and the pod is not offered to allocate again.
  Cluster c;
  c.UpsertNode(MakeNode("n1").Cpu("4").Obj());
  c.UpsertPodGroup(MakePodGroup("ns", "pg").Obj());
  c.UpsertPod(MakePod("ns", "r").Group("pg").Req("cpu", "1").Phase("Running").Obj());
  c.UpsertPod(MakePod("ns", "p").Group("pg").Req("cpu", "1").Obj());
  EXPECT_EQ(c.FindTask("ns/r")->status, TaskStatus::kRunning);
  EXPECT_EQ(c.FindTask("ns/r")->node, -1);
  EXPECT_EQ(c.FindTask("ns/p")->status, TaskStatus::kPending);
  EXPECT_EQ(c.FindJob("ns/pg")->Count(TaskStatus::kRunning), 1);
  EXPECT_EQ(c.FindNode("n1")->idle, R({{"cpu", "4"}}));
  EXPECT_EQ(c.FindNode("n1")->pod_count, 0);
}

TEST(ClusterPodTest, PodRemovedWhileWaitingForItsNodeIsNotPlacedLater) {
  Cluster c;
  c.UpsertPod(MakePod("ns", "gone").Req("cpu", "1").RunningOn("n1").Obj());
  c.RemovePod("ns", "gone");
  c.UpsertNode(MakeNode("n1").Cpu("4").Obj());
  EXPECT_EQ(c.FindNode("n1")->idle, R({{"cpu", "4"}}));
  EXPECT_EQ(c.FindNode("n1")->pod_count, 0);
}

TEST(ClusterPodTest, RemovedNodeReturnsItsPodsWhenItComesBack) {
  Cluster c;
  c.UpsertNode(MakeNode("n1").Cpu("4").Obj());
  c.UpsertPod(MakePod("ns", "p").Req("cpu", "1").RunningOn("n1").Obj());
  c.RemoveNode("n1");
  TaskInfo* t = c.FindTask("ns/p");
  EXPECT_EQ(t->node, -1);
  EXPECT_EQ(t->status, TaskStatus::kRunning);
  c.UpsertNode(MakeNode("n1").Cpu("4").Obj());
  EXPECT_EQ(t->node, c.FindNode("n1")->id);
  EXPECT_EQ(c.FindNode("n1")->idle, R({{"cpu", "3"}}));
}

TEST(ClusterPodTest, PodUpdateMovingNodesMovesTheAccounting) {
  Cluster c;
  c.UpsertNode(MakeNode("n1").Cpu("4").Gpus(2).Obj());
  c.UpsertNode(MakeNode("n2").Cpu("4").Gpus(2).Obj());
  api::Pod p = MakePod("ns", "p").Req("cpu", "3").Gpus(2).RunningOn("n1").Obj();
  c.UpsertPod(p);
  EXPECT_EQ(c.FindNode("n1")->idle, R({{"cpu", "1"}}));
  EXPECT_EQ(c.FindNode("n1")->FreeGpus(), 0);
  p.spec.node_name = "n2";
  c.UpsertPod(p);
  EXPECT_EQ(c.FindNode("n1")->idle, R({{"cpu", "4"}, {"nvidia.com/gpu", "2"}}));
  EXPECT_EQ(c.FindNode("n1")->FreeGpus(), 2);
  EXPECT_EQ(c.FindNode("n1")->pod_count, 0);
  EXPECT_EQ(c.FindNode("n2")->idle, R({{"cpu", "1"}}));
  EXPECT_EQ(c.FindNode("n2")->pod_count, 1);
  EXPECT_THAT(DevicesHeldBy(c, "n2", "ns/p"), ElementsAre(0, 1));
  // And its requests may change with the update.
  p.spec.containers[0].resources.requests["cpu"] = test::Q("1");
  c.UpsertPod(p);
  EXPECT_EQ(c.FindNode("n2")->idle, R({{"cpu", "3"}}));
  EXPECT_EQ(c.FindNode("n2")->pod_count, 1);
}

// --- GPU devices ------------------------------------------------------------------------------

TEST(ClusterGpuTest, DevicesAreHeldByTheirTaskAndFreedWhenItLeaves) {
  Cluster c;
  c.UpsertNode(MakeNode("n1").Cpu("32").Gpus(4).Obj());
  c.UpsertPod(MakePod("ns", "a").Gpus(2).RunningOn("n1").Obj());
  c.UpsertPod(MakePod("ns", "b").Gpus(1).RunningOn("n1").Obj());
  EXPECT_THAT(c.FindTask("ns/a")->gpus, ElementsAre(0, 1));
  EXPECT_THAT(DevicesHeldBy(c, "n1", "ns/a"), ElementsAre(0, 1));
  EXPECT_THAT(DevicesHeldBy(c, "n1", "ns/b"), ElementsAre(2));
  EXPECT_EQ(c.FindNode("n1")->FreeGpus(), 1);

  c.RemovePod("ns", "a");
  EXPECT_EQ(c.FindNode("n1")->FreeGpus(), 3);
  EXPECT_EQ(c.FindNode("n1")->gpus[0].holder, -1);
  EXPECT_EQ(c.FindNode("n1")->gpus[1].holder, -1);

  // The freed devices go to the next pod, lowest index first.
  c.UpsertPod(MakePod("ns", "c").Gpus(2).RunningOn("n1").Obj());
  EXPECT_THAT(DevicesHeldBy(c, "n1", "ns/c"), ElementsAre(0, 1));
  EXPECT_EQ(c.FindNode("n1")->FreeGpus(), 1);
}

TEST(ClusterGpuTest, ChooseGpusPicksLowestFreeDevices) {
  Cluster c;
  c.UpsertNode(MakeNode("n1").Gpus(4).Obj());
  c.UpsertPod(MakePod("ns", "a").Gpus(1).RunningOn("n1").Obj());
  c.UpsertPod(MakePod("ns", "b").Gpus(1).RunningOn("n1").Obj());
  c.RemovePod("ns", "a");
  c.UpsertPod(MakePod("ns", "want2").Gpus(2).Obj());
  c.UpsertPod(MakePod("ns", "want9").Gpus(9).Obj());
  c.UpsertPod(MakePod("ns", "cpu").Req("cpu", "1").Obj());
  const NodeInfo& n = *c.FindNode("n1");
  EXPECT_THAT(c.ChooseGpus(*c.FindTask("ns/want2"), n), ElementsAre(0, 2));
  EXPECT_THAT(c.ChooseGpus(*c.FindTask("ns/want9"), n), ElementsAre(0, 2, 3));
  EXPECT_THAT(c.ChooseGpus(*c.FindTask("ns/cpu"), n), IsEmpty());
}

TEST(ClusterGpuTest, PodUpdateKeepsTheDevicesItWasGiven) {
  // A pod's devices are fixed once it is bound (the device plugin hands those devices to its
  // containers). An unrelated update of the pod, such as the kubelet reporting it Running, must
  // not move it to other device indices in the engine's books: otherwise the devices it really
  // uses look free and are handed to the next pod.
  Cluster c;
  c.UpsertNode(MakeNode("n1").Gpus(4).Obj());
  c.UpsertPod(MakePod("ns", "a").Gpus(2).RunningOn("n1").Obj());
  api::Pod b = MakePod("ns", "b").Gpus(1).NodeName("n1").Obj();  // bound, not yet running
  c.UpsertPod(b);
  ASSERT_THAT(DevicesHeldBy(c, "n1", "ns/b"), ElementsAre(2));
  c.RemovePod("ns", "a");  // frees devices 0 and 1
  b.status.phase = "Running";
  c.UpsertPod(b);
  EXPECT_THAT(DevicesHeldBy(c, "n1", "ns/b"), ElementsAre(2));
  EXPECT_THAT(c.FindTask("ns/b")->gpus, ElementsAre(2));
}

// --- jobs -------------------------------------------------------------------------------------

TEST(ClusterJobTest, StatusCountersFollowPodPhases) {
  Cluster c;
  c.UpsertNode(MakeNode("n1").Cpu("16").Obj());
  c.UpsertPodGroup(MakePodGroup("ns", "pg").MinMember(3).Obj());
  auto pod = [](const char* name) { return MakePod("ns", name).Group("pg").Req("cpu", "1"); };
  c.UpsertPod(pod("pending").Obj());
  c.UpsertPod(pod("bound").NodeName("n1").Obj());
  c.UpsertPod(pod("running").RunningOn("n1").Obj());
  c.UpsertPod(pod("releasing").RunningOn("n1").Terminating().Obj());
  c.UpsertPod(pod("succeeded").NodeName("n1").Phase("Succeeded").Obj());
  c.UpsertPod(pod("failed").NodeName("n1").Phase("Failed").Obj());
  JobInfo* j = c.FindJob("ns/pg");
  ASSERT_NE(j, nullptr);
  EXPECT_EQ(j->tasks.size(), 6u);
  EXPECT_EQ(j->Count(TaskStatus::kPending), 1);
  EXPECT_EQ(j->Count(TaskStatus::kBound), 1);
  EXPECT_EQ(j->Count(TaskStatus::kRunning), 1);
  EXPECT_EQ(j->Count(TaskStatus::kReleasing), 1);
  EXPECT_EQ(j->Count(TaskStatus::kSucceeded), 1);
  EXPECT_EQ(j->Count(TaskStatus::kFailed), 1);
  EXPECT_EQ(j->ReadyTaskNum(), 3);  // bound, running, succeeded
  EXPECT_EQ(j->ValidTaskNum(), 4);  // + pending
  EXPECT_EQ(j->min_available, 3);
  EXPECT_EQ(c.FindNode("n1")->pod_count, 3);  // bound, running, releasing

  // The pending pod gets bound, the running pod finishes, the failed pod is deleted.
  c.UpsertPod(pod("pending").NodeName("n1").Obj());
  c.UpsertPod(pod("running").NodeName("n1").Phase("Succeeded").Obj());
  c.RemovePod("ns", "failed");
  EXPECT_EQ(j->tasks.size(), 5u);
  EXPECT_EQ(j->Count(TaskStatus::kPending), 0);
  EXPECT_EQ(j->Count(TaskStatus::kBound), 2);
  EXPECT_EQ(j->Count(TaskStatus::kRunning), 0);
  EXPECT_EQ(j->Count(TaskStatus::kSucceeded), 2);
  EXPECT_EQ(j->Count(TaskStatus::kFailed), 0);
  EXPECT_EQ(c.FindNode("n1")->pod_count, 3);  // 2 bound, releasing
}

TEST(ClusterJobTest, PodChangingGroupMovesBetweenJobs) {
  Cluster c;
  c.UpsertPod(MakePod("ns", "p").Group("a").Obj());
  EXPECT_EQ(c.FindJob("ns/a")->Count(TaskStatus::kPending), 1);
  c.UpsertPod(MakePod("ns", "p").Group("b").Obj());
  // a has neither a PodGroup nor pods left: forgotten.
  EXPECT_EQ(c.FindJob("ns/a"), nullptr);
  EXPECT_EQ(c.FindJob("ns/b")->Count(TaskStatus::kPending), 1);
  c.UpsertPodGroup(MakePodGroup("ns", "b").Obj());
  c.UpsertPod(MakePod("ns", "p").Obj());  // no group
  EXPECT_EQ(c.FindTask("ns/p")->job, -1);
  ASSERT_NE(c.FindJob("ns/b"), nullptr);  // its PodGroup keeps it
  EXPECT_THAT(c.FindJob("ns/b")->tasks, IsEmpty());
}

TEST(ClusterJobTest, AJobIsForgottenOnceItsPodGroupAndPodsAreGone) {
  // Every session walks the cluster's jobs: finished ones must not pile up.
  Cluster c;
  c.UpsertPodGroup(MakePodGroup("ns", "done").Obj());
  c.UpsertPod(MakePod("ns", "done-1").Group("done").Obj());
  c.UpsertPodGroup(MakePodGroup("ns", "live").Obj());
  c.RemovePodGroup("ns", "done");
  ASSERT_NE(c.FindJob("ns/done"), nullptr);  // its pod is still there
  c.RemovePod("ns", "done-1");
  EXPECT_EQ(c.FindJob("ns/done"), nullptr);
  ASSERT_EQ(c.JobIds().size(), 1u);
  EXPECT_EQ(c.job(c.JobIds()[0]).key, "ns/live");
  // The same name again is a new job.
  c.UpsertPodGroup(MakePodGroup("ns", "done").MinMember(3).Obj());
  EXPECT_EQ(c.FindJob("ns/done")->min_available, 3);
  EXPECT_EQ(c.JobIds().size(), 2u);
}

TEST(ClusterJobTest, PodGroupFieldsAndDefaults) {
  Cluster c;
  c.UpsertPod(MakePod("ns", "p").Group("pg").Obj());  // before its PodGroup
  EXPECT_EQ(c.FindJob("ns/pg")->pg, nullptr);
  c.UpsertPodGroup(MakePodGroup("ns", "pg")
                       .MinMember(4)
                       .MinTaskMember("ps", 1)
                       .MinTaskMember("worker", 2)
                       .MinResources("cpu", "4")
                       .Obj());
  JobInfo* j = c.FindJob("ns/pg");
  ASSERT_NE(j->pg, nullptr);
  EXPECT_EQ(j->queue_name, "default");
  EXPECT_EQ(j->phase, PodGroupPhase::kPending);
  EXPECT_EQ(j->min_available, 4);
  EXPECT_EQ(j->task_min_total, 3);
  ASSERT_TRUE(j->min_resources.has_value());
  EXPECT_EQ(*j->min_resources, R({{"cpu", "4"}}));
  EXPECT_EQ(j->tasks.size(), 1u);

  c.UpsertPodGroup(MakePodGroup("ns", "pg").Queue("q1").Phase("Inqueue").Obj());
  EXPECT_EQ(j->queue_name, "q1");
  EXPECT_EQ(j->phase, PodGroupPhase::kInqueue);
  EXPECT_FALSE(j->min_resources.has_value());
  EXPECT_EQ(j->task_min_total, 0);

  c.RemovePodGroup("ns", "pg");
  EXPECT_EQ(j->pg, nullptr);
  EXPECT_EQ(j->tasks.size(), 1u);  // the pods stay
}

TEST(ClusterJobTest, JobPriorityComesFromItsPriorityClass) {
  Cluster c;
  c.UpsertPodGroup(MakePodGroup("ns", "pg").PriorityClass("high").Obj());
  c.UpsertPodGroup(MakePodGroup("ns", "plain").Obj());
  JobInfo* j = c.FindJob("ns/pg");
  EXPECT_EQ(j->priority, 0);  // class not known yet
  c.UpsertPriorityClass(MakePriorityClass("high", 1000));
  EXPECT_EQ(j->priority, 1000);
  EXPECT_EQ(c.FindJob("ns/plain")->priority, 0);
  EXPECT_EQ(c.PriorityClassValue("high"), 1000);
  c.UpsertPriorityClass(MakePriorityClass("high", 50));
  EXPECT_EQ(j->priority, 50);
  c.RemovePriorityClass("high");
  EXPECT_EQ(j->priority, 0);
  EXPECT_EQ(c.PriorityClassValue("high"), std::nullopt);
  // A class known before the group is resolved on upsert.
  c.UpsertPriorityClass(MakePriorityClass("low", 7));
  c.UpsertPodGroup(MakePodGroup("ns", "late").PriorityClass("low").Obj());
  EXPECT_EQ(c.FindJob("ns/late")->priority, 7);
}

TEST(ClusterJobTest, GroupWithoutAKnownClassGetsTheGlobalDefaultPriority) {
  // Volcano (cache.Snapshot) starts every job at the value of the PriorityClass marked
  // globalDefault and overrides it only with a class that exists.
  Cluster c;
  api::PriorityClass normal = MakePriorityClass("normal", 500);
  normal.global_default = true;
  c.UpsertPriorityClass(normal);
  c.UpsertPriorityClass(MakePriorityClass("low", 10));
  c.UpsertPodGroup(MakePodGroup("ns", "plain").Obj());
  c.UpsertPodGroup(MakePodGroup("ns", "typo").PriorityClass("nope").Obj());
  c.UpsertPodGroup(MakePodGroup("ns", "low").PriorityClass("low").Obj());
  EXPECT_EQ(c.FindJob("ns/plain")->priority, 500);
  EXPECT_EQ(c.FindJob("ns/typo")->priority, 500);
  EXPECT_EQ(c.FindJob("ns/low")->priority, 10);
}

TEST(ClusterJobTest, JobsAreListedByKey) {
  Cluster c;
  c.UpsertPodGroup(MakePodGroup("b", "x").Obj());
  c.UpsertPodGroup(MakePodGroup("a", "y").Obj());
  c.UpsertPodGroup(MakePodGroup("a", "x").Obj());
  std::vector<std::string> keys;
  for (int id : c.JobIds()) keys.push_back(c.job(id).key);
  EXPECT_THAT(keys, ElementsAre("a/x", "a/y", "b/x"));
}

// --- tasks ------------------------------------------------------------------------------------

TEST(ClusterTaskTest, FieldsReadFromThePod) {
  Cluster c;
  c.UpsertPod(MakePod("ns", "job-worker-12")
                  .Role("worker")
                  .Preemptable(false)
                  .Priority(5)
                  .Req("cpu", "1")
                  .Obj());
  c.UpsertPod(MakePod("ns", "nopri").Label(api::kTaskSpecKey, "ps").Obj());
  c.UpsertPod(MakePod("kube-system", "dns").Req("cpu", "1").Obj());
  c.UpsertPod(MakePod("ns", "node-crit")
                  .Req("cpu", "1")
                  .PriorityClass("system-node-critical")
                  .Uid("u-1")
                  .PreemptionPolicy("Never")
                  .Obj());
  const TaskInfo& w = *c.FindTask("ns/job-worker-12");
  EXPECT_EQ(w.key, "ns/job-worker-12");
  EXPECT_EQ(w.uid, "ns-job-worker-12");
  EXPECT_EQ(w.role, "worker");
  EXPECT_FALSE(w.preemptable);
  EXPECT_EQ(w.priority, 5);
  EXPECT_EQ(w.name_index, 12);
  EXPECT_FALSE(w.best_effort);
  EXPECT_FALSE(w.critical);
  EXPECT_FALSE(w.preempt_never);

  const TaskInfo& n = *c.FindTask("ns/nopri");
  EXPECT_EQ(n.role, "ps");  // from a label
  EXPECT_TRUE(n.preemptable);
  EXPECT_EQ(n.priority, 1);  // Volcano's default when spec.priority is unset
  EXPECT_EQ(n.name_index, -1);
  EXPECT_TRUE(n.best_effort);

  EXPECT_TRUE(c.FindTask("kube-system/dns")->critical);
  const TaskInfo& crit = *c.FindTask("ns/node-crit");
  EXPECT_TRUE(crit.critical);
  EXPECT_EQ(crit.uid, "u-1");
  EXPECT_TRUE(crit.preempt_never);
}

TEST(ClusterTaskTest, PlaceUnplaceAndStatusKeepNodeAccountingConsistent) {
  Cluster c;
  c.UpsertNode(MakeNode("n1").Cpu("4").Gpus(2).Obj());
  c.UpsertPodGroup(MakePodGroup("ns", "pg").Obj());
  c.UpsertPod(MakePod("ns", "p").Group("pg").Req("cpu", "1").Gpus(1).Obj());
  TaskInfo& t = *c.FindTask("ns/p");
  NodeInfo& n = *c.FindNode("n1");
  JobInfo& j = *c.FindJob("ns/pg");

  c.PlaceTask(t, n.id, TaskStatus::kPipelined);
  EXPECT_EQ(n.pipelined, R({{"cpu", "1"}, {"nvidia.com/gpu", "1"}}));
  EXPECT_EQ(n.idle, R({{"cpu", "4"}, {"nvidia.com/gpu", "2"}}));
  EXPECT_EQ(n.FutureIdle(), R({{"cpu", "3"}, {"nvidia.com/gpu", "1"}}));
  EXPECT_EQ(n.FreeGpus(), 2);  // a held (pipelined) placement takes no device yet
  EXPECT_EQ(n.pod_count, 1);
  EXPECT_EQ(j.Count(TaskStatus::kPipelined), 1);
  EXPECT_EQ(j.WaitingTaskNum(), 1);

  c.SetStatus(t, TaskStatus::kAllocated);
  EXPECT_TRUE(n.pipelined.IsEmpty());
  EXPECT_EQ(n.idle, R({{"cpu", "3"}, {"nvidia.com/gpu", "1"}}));
  EXPECT_THAT(t.gpus, ElementsAre(0));
  EXPECT_EQ(n.gpus[0].holder, t.id);
  EXPECT_EQ(j.Count(TaskStatus::kAllocated), 1);
  EXPECT_EQ(j.Count(TaskStatus::kPipelined), 0);

  c.SetStatus(t, TaskStatus::kReleasing);
  EXPECT_EQ(n.releasing, R({{"cpu", "1"}, {"nvidia.com/gpu", "1"}}));
  EXPECT_EQ(n.idle, R({{"cpu", "3"}, {"nvidia.com/gpu", "1"}}));
  EXPECT_EQ(n.releasing_pods, 1);

  c.UnplaceTask(t, TaskStatus::kPending);
  EXPECT_EQ(n.idle, n.allocatable);
  EXPECT_TRUE(n.used.IsEmpty());
  EXPECT_TRUE(n.releasing.IsEmpty());
  EXPECT_EQ(n.releasing_pods, 0);
  EXPECT_EQ(n.pod_count, 0);
  EXPECT_EQ(n.FreeGpus(), 2);
  EXPECT_THAT(t.gpus, IsEmpty());
  EXPECT_EQ(t.node, -1);
  EXPECT_EQ(j.Count(TaskStatus::kPending), 1);
  EXPECT_EQ(j.Count(TaskStatus::kReleasing), 0);
}

// --- queues -----------------------------------------------------------------------------------

TEST(ClusterQueueTest, DefaultQueueAlwaysExists) {
  Cluster c;
  QueueInfo* q = c.FindQueue("default");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->weight, 1);
  EXPECT_TRUE(q->open);
  EXPECT_TRUE(q->reclaimable);
  c.RemoveQueue("default");
  EXPECT_NE(c.FindQueue("default"), nullptr);
  c.UpsertQueue(MakeQueue("default").Weight(3).Obj());
  EXPECT_EQ(c.FindQueue("default")->weight, 3);
  EXPECT_EQ(c.QueueIds().size(), 1u);
}

TEST(ClusterQueueTest, QueueFieldsAndOrder) {
  Cluster c;
  c.UpsertQueue(MakeQueue("zeta").Weight(0).Reclaimable(false).State("Closed").Priority(2).Obj());
  c.UpsertQueue(MakeQueue("alpha").Weight(4).Obj());
  QueueInfo* z = c.FindQueue("zeta");
  EXPECT_EQ(z->weight, 0);
  EXPECT_FALSE(z->reclaimable);
  EXPECT_FALSE(z->open);
  EXPECT_EQ(z->priority, 2);
  EXPECT_TRUE(c.FindQueue("alpha")->open);
  std::vector<std::string> names;
  for (int id : c.QueueIds()) names.push_back(c.queue(id).name);
  EXPECT_THAT(names, ElementsAre("alpha", "default", "zeta"));
  c.RemoveQueue("zeta");
  EXPECT_EQ(c.FindQueue("zeta"), nullptr);
  EXPECT_EQ(c.QueueIds().size(), 2u);
}

}  // namespace
}  // namespace muster::core
