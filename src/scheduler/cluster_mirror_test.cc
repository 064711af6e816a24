#include "scheduler/cluster_mirror.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "api/gpu_indices.h"
#include "core/framework/cycle_result.h"
#include "core/testing/builders.h"
#include "scheduler/cycle.h"

namespace muster::scheduler {
namespace {

using core::test::MakeNode;
using core::test::MakePod;
using core::test::MakePodGroup;

MirrorOptions Serving(bool default_pods) {
  MirrorOptions o;
  o.serve_default_scheduler = default_pods;
  return o;
}

core::CycleResult Cycle(ClusterMirror& m) {
  CycleOptions options;
  return RunCycle(m, core::DefaultSchedulerConf(), options);
}

TEST(ServedByTest, SchedulerNames) {
  api::Pod pod = MakePod("ns", "p").Obj();
  MirrorOptions o = Serving(false);
  EXPECT_EQ(ServedBy(pod, o), Served::kGang);
  pod.spec.scheduler_name = "muster";
  EXPECT_EQ(ServedBy(pod, o), Served::kGang);
  pod.spec.scheduler_name = "";
  EXPECT_EQ(ServedBy(pod, o), Served::kNo);
  EXPECT_EQ(ServedBy(pod, Serving(true)), Served::kDefault);
  pod.spec.scheduler_name = "default-scheduler";
  EXPECT_EQ(ServedBy(pod, Serving(true)), Served::kDefault);
  pod.spec.scheduler_name = "yunikorn";
  EXPECT_EQ(ServedBy(pod, Serving(true)), Served::kNo);
}

TEST(ClusterMirrorTest, GangPodsJoinTheirGroup) {
  ClusterMirror m(Serving(false));
  m.UpsertPodGroup(MakePodGroup("ns", "pg").MinMember(1).Obj());
  EXPECT_EQ(m.UpsertPod(MakePod("ns", "a").Group("pg").Uid("ua").Obj()), "ns/pg");
  core::JobInfo* j = m.cluster().FindJob("ns/pg");
  ASSERT_NE(j, nullptr);
  EXPECT_EQ(j->tasks.size(), 1u);
  EXPECT_TRUE(m.PodsWithoutGroup().empty());
}

TEST(ClusterMirrorTest, ChangesCountsWhatTheViewIsToldButNotTheSchedulersOwnStatus) {
  ClusterMirror m(Serving(false));
  uint64_t before = m.Changes();
  m.UpsertNode(MakeNode("n1").Cpu("4").Obj());
  m.UpsertPodGroup(MakePodGroup("ns", "pg").MinMember(1).Obj());
  m.UpsertPod(MakePod("ns", "a").Group("pg").Uid("ua").Req("cpu", "1").Obj());
  EXPECT_EQ(m.Changes(), before + 3);
  // A cycle alone (its placement not yet bound) changes nothing the view was told.
  before = m.Changes();
  ASSERT_EQ(Cycle(m).binds.size(), 1u);
  EXPECT_EQ(m.Changes(), before);
  m.AssumeBound("ns/a", "ua", "n1", "");
  EXPECT_EQ(m.Changes(), before + 1);
  // The PodGroup's status coming back (Inqueue, Running) is not counted; its phase is applied.
  before = m.Changes();
  m.UpsertPodGroupStatus(MakePodGroup("ns", "pg").MinMember(1).Phase("Running").Obj());
  EXPECT_EQ(m.Changes(), before);
  EXPECT_EQ(m.cluster().FindJob("ns/pg")->phase, core::PodGroupPhase::kRunning);
  m.RemovePod("ns", "a");
  m.RemoveNode("n1");
  EXPECT_EQ(m.Changes(), before + 2);
}

TEST(ClusterMirrorTest, PodWithoutGroupWaitsForIt) {
  ClusterMirror m(Serving(false));
  m.UpsertNode(MakeNode("n1").Cpu("4").Obj());
  EXPECT_EQ(m.UpsertPod(MakePod("ns", "solo").Uid("u1").Req("cpu", "1").Obj()), "");
  ASSERT_EQ(m.PodsWithoutGroup().count("ns/solo"), 1u);
  EXPECT_TRUE(Cycle(m).binds.empty());

  m.UpsertPodGroup(MakePodGroup("ns", "podgroup-u1").MinMember(1).Obj());
  m.AssumeGroup("ns/solo", "u1", "podgroup-u1");
  EXPECT_TRUE(m.PodsWithoutGroup().empty());
  // A version of the pod from before the annotation does not detach it again.
  EXPECT_EQ(m.UpsertPod(MakePod("ns", "solo").Uid("u1").Req("cpu", "1").Obj()), "ns/podgroup-u1");
  core::CycleResult r = Cycle(m);
  ASSERT_EQ(r.binds.size(), 1u);
  EXPECT_EQ(r.binds[0].pod, "ns/solo");
}

TEST(ClusterMirrorTest, OtherSchedulersPodsOnlyOccupyTheirNode) {
  ClusterMirror m(Serving(false));
  m.UpsertNode(MakeNode("n1").Cpu("4").Gpus(1).Obj());
  m.UpsertPodGroup(MakePodGroup("ns", "pg").MinMember(1).Obj());
  api::Pod other = MakePod("ns", "other").Group("pg").Gpus(1).Obj();
  other.spec.scheduler_name = "";
  EXPECT_EQ(m.UpsertPod(other), "");
  EXPECT_EQ(m.cluster().FindTask("ns/other")->job, -1);
  EXPECT_TRUE(Cycle(m).binds.empty());

  // Once bound by its scheduler it holds the GPU.
  other.spec.node_name = "n1";
  m.UpsertPod(other);
  EXPECT_EQ(m.cluster().FindNode("n1")->FreeGpus(), 0);
}

TEST(ClusterMirrorTest, DefaultSchedulerPodsArePlacedOneByOne) {
  ClusterMirror m(Serving(true));
  m.UpsertNode(MakeNode("n1").Cpu("4").Gpus(1).Obj());
  m.UpsertNode(MakeNode("n2").Cpu("4").Gpus(1).Obj());
  api::Pod a = MakePod("ns", "a").Uid("ua").Gpus(1).Obj();
  a.spec.scheduler_name = "";
  api::Pod b = MakePod("ns", "b").Uid("ub").Gpus(1).Obj();
  b.spec.scheduler_name = "default-scheduler";
  EXPECT_EQ(m.UpsertPod(a), "ns/default-scheduler:a");
  EXPECT_EQ(m.UpsertPod(b), "ns/default-scheduler:b");
  core::JobInfo* ja = m.cluster().FindJob("ns/default-scheduler:a");
  ASSERT_NE(ja, nullptr);
  EXPECT_TRUE(IsDefaultSchedulerJob(*ja));
  EXPECT_EQ(ja->queue_name, kDefaultQueueName);
  core::CycleResult r = Cycle(m);
  EXPECT_EQ(r.binds.size(), 2u);

  // A third one finds no GPU: kube-scheduler's fit error, one pod at a time.
  api::Pod c = MakePod("ns", "c").Uid("uc").Gpus(1).Obj();
  c.spec.scheduler_name = "";
  m.UpsertPod(c);
  r = Cycle(m);
  EXPECT_TRUE(r.binds.empty());
  ASSERT_EQ(r.pod_conditions.size(), 1u);
  EXPECT_EQ(r.pod_conditions[0].message,
            "0/2 nodes are unavailable: 2 Insufficient nvidia.com/gpu.");

  // Deleting a pod removes its core-only group with it.
  m.RemovePod("ns", "c");
  EXPECT_EQ(m.cluster().FindJob("ns/default-scheduler:c"), nullptr);
}

TEST(ClusterMirrorTest, AssumedBindSurvivesAStaleVersion) {
  ClusterMirror m(Serving(false));
  m.UpsertNode(MakeNode("n1").Cpu("4").Gpus(2).Obj());
  m.UpsertPodGroup(MakePodGroup("ns", "pg").MinMember(1).Obj());
  api::Pod pending = MakePod("ns", "a").Group("pg").Uid("ua").Gpus(1).Obj();
  m.UpsertPod(pending);
  m.AssumeBound("ns/a", "ua", "n1", "1");
  // The watch still delivers a version from before the bind.
  m.UpsertPod(pending);
  core::TaskInfo* t = m.cluster().FindTask("ns/a");
  EXPECT_EQ(t->status, core::TaskStatus::kBound);
  EXPECT_EQ(m.cluster().node(t->node).name, "n1");
  EXPECT_THAT(t->gpus, testing::ElementsAre(1));
  EXPECT_TRUE(Cycle(m).binds.empty());

  // The bound version arrives; later the assumption no longer applies.
  api::Pod bound = pending;
  bound.spec.node_name = "n1";
  bound.meta.annotations[api::kGpuIndicesAnnotation] = "1";
  m.UpsertPod(bound);
  m.UpsertPod(pending);
  EXPECT_EQ(m.cluster().FindTask("ns/a")->status, core::TaskStatus::kPending);

  // A new pod of the same name (another UID) is not the assumed one.
  m.AssumeBound("ns/a", "ua", "n1", "1");
  m.UpsertPod(MakePod("ns", "a").Group("pg").Uid("ua-2").Gpus(1).Obj());
  EXPECT_EQ(m.cluster().FindTask("ns/a")->status, core::TaskStatus::kPending);
}

TEST(ClusterMirrorTest, AssumedEvictionKeepsThePodReleasing) {
  ClusterMirror m(Serving(false));
  m.UpsertNode(MakeNode("n1").Cpu("4").Gpus(1).Obj());
  m.UpsertPodGroup(MakePodGroup("ns", "pg").MinMember(1).Obj());
  api::Pod running = MakePod("ns", "a").Group("pg").Uid("ua").Gpus(1).RunningOn("n1").Obj();
  m.UpsertPod(running);
  m.AssumeEvicted("ns/a", "ua");
  m.UpsertPod(running);
  EXPECT_EQ(m.cluster().FindTask("ns/a")->status, core::TaskStatus::kReleasing);
}

TEST(ClusterMirrorTest, UnboundPodBeingDeletedIsGone) {
  ClusterMirror m(Serving(false));
  m.UpsertPodGroup(MakePodGroup("ns", "pg").MinMember(1).Obj());
  m.UpsertPod(MakePod("ns", "a").Group("pg").Uid("ua").Obj());
  EXPECT_EQ(m.UpsertPod(MakePod("ns", "a").Group("pg").Uid("ua").Terminating().Obj()), "");
  EXPECT_EQ(m.cluster().FindTask("ns/a"), nullptr);
}

}  // namespace
}  // namespace muster::scheduler
