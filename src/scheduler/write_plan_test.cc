#include "scheduler/write_plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "api/gpu_indices.h"
#include "boost/json/parse.hpp"
#include "core/framework/cycle_result.h"
#include "core/testing/builders.h"
#include "scheduler/cluster_mirror.h"
#include "scheduler/cycle.h"

namespace muster::scheduler {
namespace {

namespace json = boost::json;
using core::test::MakeNode;
using core::test::MakePod;
using core::test::MakePodGroup;
using core::test::MakeQueue;
using testing::ElementsAre;
using testing::IsEmpty;
using testing::SizeIs;

core::CycleResult CycleOfSessionS1(ClusterMirror& m) {
  CycleOptions options;
  options.session_id = "s1";
  return RunCycle(m, core::DefaultSchedulerConf(), options);
}

// Two one-GPU nodes and a gang of two one-GPU pods.
class WritePlanTest : public testing::Test {
 protected:
  void SetUp() override {
    m_.UpsertNode(MakeNode("n1").Cpu("8").Gpus(1).Obj());
    m_.UpsertNode(MakeNode("n2").Cpu("8").Gpus(1).Obj());
    m_.UpsertQueue(MakeQueue("ml").Obj());
    api::PodGroup pg = MakePodGroup("ns", "pg").MinMember(2).Queue("ml").Obj();
    pg.meta.uid = "pg-uid";
    m_.UpsertPodGroup(pg);
    for (const char* name : {"w-0", "w-1"}) {
      m_.UpsertPod(MakePod("ns", name).Group("pg").Uid(std::string("u-") + name).Gpus(1).Obj());
    }
  }

  ClusterMirror m_{MirrorOptions{}};
  WriteMemo memo_;
};

TEST_F(WritePlanTest, AGangIsBoundTogetherWithItsGpus) {
  core::CycleResult r = CycleOfSessionS1(m_);
  std::vector<GangBinding> gangs = PlanBinds(r, m_.cluster());
  ASSERT_THAT(gangs, SizeIs(1));
  EXPECT_EQ(gangs[0].job, "ns/pg");
  ASSERT_THAT(gangs[0].bindings, SizeIs(2));
  for (const client::Binding& b : gangs[0].bindings) {
    EXPECT_EQ(b.ns, "ns");
    EXPECT_EQ(b.pod_uid, "u-" + b.pod);
    EXPECT_EQ(b.annotations.at(api::kGpuIndicesAnnotation), "0");
  }
  EXPECT_NE(gangs[0].bindings[0].node, gangs[0].bindings[1].node);

  PlanContext ctx;
  ctx.now = "2026-01-01T00:00:00Z";
  ctx.bound = {"ns/w-0", "ns/w-1"};
  CycleWrites w = PlanWrites(r, m_.cluster(), ctx, memo_);
  EXPECT_THAT(w.pod_conditions, IsEmpty());
  ASSERT_THAT(w.pod_groups, SizeIs(1));
  EXPECT_EQ(w.pod_groups[0].view.phase, "Running");
  ASSERT_THAT(w.pod_groups[0].view.conditions, SizeIs(1));
  EXPECT_EQ(w.pod_groups[0].view.conditions[0].type, "Scheduled");
  json::value patch = json::parse(w.pod_groups[0].patch);
  EXPECT_EQ(patch.at("status").at("phase").as_string(), "Running");
  EXPECT_EQ(patch.at("status").at("conditions").at(0).at("transitionID").as_string(), "s1");
  EXPECT_EQ(patch.at("status").at("conditions").at(0).at("lastTransitionTime").as_string(),
            "2026-01-01T00:00:00Z");

  std::vector<std::string> events;
  for (const auto& e : w.events) {
    events.push_back(e.involved_kind + " " + e.involved_name + " " + e.reason + ": " + e.message);
    EXPECT_EQ(e.source_component, "volcano");
  }
  EXPECT_THAT(events,
              testing::UnorderedElementsAre(
                  testing::MatchesRegex("Pod w-0 Scheduled: Successfully assigned ns/w-0 to n[12]"),
                  testing::MatchesRegex("Pod w-1 Scheduled: Successfully assigned ns/w-1 to n[12]"),
                  "PodGroup pg Scheduled: pod group is ready"));
}

TEST_F(WritePlanTest, RefusedBindsWriteNoStatusAndNoScheduledEvents) {
  core::CycleResult r = CycleOfSessionS1(m_);
  PlanContext ctx;
  ctx.failed_jobs = {"ns/pg"};
  CycleWrites w = PlanWrites(r, m_.cluster(), ctx, memo_);
  EXPECT_THAT(w.pod_groups, IsEmpty());
  EXPECT_THAT(w.events, IsEmpty());
}

TEST_F(WritePlanTest, AnUnschedulableGangIsToldOnceWithVolcanosTexts) {
  // A blocker takes n2's GPU: the gang cannot fit.
  api::Pod blocker = MakePod("ns", "blocker").Uid("ub").Gpus(1).RunningOn("n2").Obj();
  blocker.spec.scheduler_name = "";
  m_.UpsertPod(blocker);
  core::CycleResult r = CycleOfSessionS1(m_);
  EXPECT_THAT(r.binds, IsEmpty());
  PlanContext ctx;
  ctx.now = "2026-01-01T00:00:00Z";
  CycleWrites w = PlanWrites(r, m_.cluster(), ctx, memo_);

  // w-0 found room on n1 (only the gang is short); w-1 found none.
  ASSERT_THAT(w.pod_conditions, SizeIs(2));
  std::map<std::string, PodScheduledView> conditions;
  for (const auto& pc : w.pod_conditions) {
    conditions[pc.name] = pc.view;
    json::value patch = json::parse(pc.patch);
    EXPECT_EQ(patch.at("status").at("conditions").at(0).at("type").as_string(), "PodScheduled");
  }
  EXPECT_EQ(conditions["w-0"],
            (PodScheduledView{"False", "Schedulable",
                              "Pod ns/w-0 can possibly be assigned to n1, once minAvailable is "
                              "satisfied",
                              ""}));
  EXPECT_EQ(conditions["w-1"],
            (PodScheduledView{"False", "Unschedulable",
                              "0/2 nodes are unavailable: 2 Insufficient nvidia.com/gpu.", ""}));
  ASSERT_THAT(w.pod_groups, SizeIs(1));
  const PodGroupStatusView& pg = w.pod_groups[0].view;
  ASSERT_THAT(pg.conditions, SizeIs(1));
  EXPECT_EQ(pg.conditions[0].type, "Unschedulable");
  EXPECT_EQ(pg.conditions[0].reason, "NotEnoughResources");
  EXPECT_EQ(pg.conditions[0].message,
            "1/2 tasks in gang unschedulable: pod group is not ready, 2 Pending, 2 minAvailable; "
            "Pending: 1 Schedulable, 1 Unschedulable. Origin reason is w-1: 0/2 nodes are "
            "unavailable: 2 Insufficient nvidia.com/gpu.");
  int failed_scheduling = 0, unschedulable = 0;
  for (const auto& e : w.events) {
    if (e.reason == "FailedScheduling") ++failed_scheduling;
    if (e.reason == "Unschedulable") {
      ++unschedulable;
      EXPECT_EQ(e.involved_kind, "PodGroup");
      EXPECT_EQ(e.involved_uid, "pg-uid");
      EXPECT_EQ(e.involved_api_version, "scheduling.volcano.sh/v1beta1");
    }
  }
  EXPECT_EQ(failed_scheduling, 2);
  EXPECT_EQ(unschedulable, 1);

  // The writes succeeded; the next cycle decides the same and writes nothing again.
  for (const auto& pc : w.pod_conditions) memo_.pods[pc.ns + "/" + pc.name] = {pc.view, "10"};
  for (const auto& g : w.pod_groups) memo_.pod_groups[g.ns + "/" + g.name] = {g.view, "11"};
  core::CycleResult again = CycleOfSessionS1(m_);
  CycleWrites w2 = PlanWrites(again, m_.cluster(), ctx, memo_);
  EXPECT_THAT(w2.pod_conditions, IsEmpty());
  EXPECT_THAT(w2.pod_groups, IsEmpty());
  EXPECT_THAT(w2.events, IsEmpty());

  // A newer version of the pod group arrives without that status (someone reset it): it is
  // written again.
  memo_.SawPodGroup("ns/pg", "12");
  CycleWrites w3 = PlanWrites(again, m_.cluster(), ctx, memo_);
  EXPECT_THAT(w3.pod_groups, SizeIs(1));
  // An older one (still in flight from before the write) changes nothing.
  memo_.pod_groups["ns/pg"] = {w3.pod_groups[0].view, "20"};
  memo_.SawPodGroup("ns/pg", "19");
  EXPECT_THAT(PlanWrites(again, m_.cluster(), ctx, memo_).pod_groups, IsEmpty());
}

TEST_F(WritePlanTest, NothingIsWrittenWhereTheObjectAlreadySaysIt) {
  core::CycleResult r = CycleOfSessionS1(m_);
  PlanContext ctx;
  ctx.bound = {"ns/w-0", "ns/w-1"};
  CycleWrites w = PlanWrites(r, m_.cluster(), ctx, memo_);
  ASSERT_THAT(w.pod_groups, SizeIs(1));
  // The PodGroup's stored status now says what was written (the watch delivered it).
  api::PodGroup pg = *m_.cluster().FindJob("ns/pg")->pg;
  json::value status = json::parse(w.pod_groups[0].patch).at("status");
  pg.status.phase = status.at("phase").as_string().c_str();
  const json::object& c = status.at("conditions").at(0).as_object();
  pg.status.conditions = {{c.at("type").as_string().c_str(), c.at("status").as_string().c_str(),
                           c.at("reason").as_string().c_str(), "", "t", "s1"}};
  m_.UpsertPodGroup(pg);
  ctx.dirty_jobs = {"ns/pg"};
  EXPECT_THAT(PlanWrites(core::CycleResult{}, m_.cluster(), ctx, memo_).pod_groups, IsEmpty());
}

TEST_F(WritePlanTest, APhaseTheEngineHasNoNameForIsWrittenBackAsItCame) {
  api::PodGroup pg = *m_.cluster().FindJob("ns/pg")->pg;
  pg.status.phase = "Suspended";  // another controller's
  pg.status.running = 3;          // not what the engine counts, so the status is written
  m_.UpsertPodGroup(pg);
  PlanContext ctx;
  ctx.dirty_jobs = {"ns/pg"};
  CycleWrites w = PlanWrites(core::CycleResult{}, m_.cluster(), ctx, memo_);
  ASSERT_THAT(w.pod_groups, SizeIs(1));
  EXPECT_EQ(w.pod_groups[0].view.phase, "Suspended");
  EXPECT_EQ(json::parse(w.pod_groups[0].patch).at("status").at("phase").as_string(), "Suspended");
}

// A waiting gang's estimate (issue 15, item 2) goes into its PodGroup's status as a condition
// of muster's own type beside Volcano's Unschedulable one, whose message stays Volcano's; its
// lastTransitionTime holds while its text does, and the condition goes with the estimate.
TEST_F(WritePlanTest, AWaitingGangsEstimateIsAConditionBesideVolcanosUnschedulable) {
  api::Pod blocker = MakePod("ns", "blocker").Uid("ub").Gpus(1).RunningOn("n2").Obj();
  blocker.spec.scheduler_name = "";
  m_.UpsertPod(blocker);
  std::map<std::string, GangEstimate> estimates{
      {"ns/pg", {1767226200, "fits when ns/blocker ends"}}};  // 2026-01-01T00:10:00Z
  PlanContext ctx;
  ctx.now = "2026-01-01T00:00:00Z";
  ctx.estimates = &estimates;
  core::CycleResult r = CycleOfSessionS1(m_);
  CycleWrites w = PlanWrites(r, m_.cluster(), ctx, memo_);
  ASSERT_THAT(w.pod_groups, SizeIs(1));
  json::value written = json::parse(w.pod_groups[0].patch).at("status").at("conditions");
  ASSERT_EQ(written.as_array().size(), 2u);
  EXPECT_EQ(written.at(0).at("type").as_string(), "Unschedulable");
  EXPECT_EQ(written.at(0).at("message").as_string().subview().substr(0, 34),
            "1/2 tasks in gang unschedulable: p");
  EXPECT_EQ(written.at(1).at("type").as_string(), "Estimated");
  EXPECT_EQ(written.at(1).at("status").as_string(), "True");
  EXPECT_EQ(written.at(1).at("reason").as_string(), "StartEstimated");
  EXPECT_EQ(written.at(1).at("message").as_string(),
            "fits when ns/blocker ends; estimated start 2026-01-01T00:10:00Z");
  EXPECT_EQ(written.at(1).at("lastTransitionTime").as_string(), "2026-01-01T00:00:00Z");

  // The status arrives as written: with the same estimate, nothing is written again, and a
  // later write keeps the condition's lastTransitionTime.
  api::PodGroup pg = *m_.cluster().FindJob("ns/pg")->pg;
  pg.status.phase = w.pod_groups[0].view.phase;
  pg.status.conditions.clear();
  for (const json::value& c : written.as_array()) {
    pg.status.conditions.push_back(
        {c.at("type").as_string().c_str(), c.at("status").as_string().c_str(),
         c.at("reason").as_string().c_str(), c.at("message").as_string().c_str(),
         c.at("lastTransitionTime").as_string().c_str(), ""});
  }
  m_.UpsertPodGroup(pg);
  ctx.now = "2026-01-01T00:05:00Z";
  ctx.dirty_jobs = {"ns/pg"};
  EXPECT_THAT(PlanWrites(core::CycleResult{}, m_.cluster(), ctx, memo_).pod_groups, IsEmpty());

  // No estimate any more: the reason alone.
  estimates["ns/pg"] = {std::nullopt, "fits when ns/blocker ends, whose end is not known"};
  CycleWrites no_start = PlanWrites(core::CycleResult{}, m_.cluster(), ctx, memo_);
  ASSERT_THAT(no_start.pod_groups, SizeIs(1));
  json::value conds = json::parse(no_start.pod_groups[0].patch).at("status").at("conditions");
  ASSERT_EQ(conds.as_array().size(), 2u);
  EXPECT_EQ(conds.at(1).at("reason").as_string(), "NoEstimate");
  EXPECT_EQ(conds.at(1).at("message").as_string(),
            "fits when ns/blocker ends, whose end is not known; no estimated start");
  EXPECT_EQ(conds.at(1).at("lastTransitionTime").as_string(), "2026-01-01T00:05:00Z");

  // The gang no longer waits: the condition goes, Volcano's stays as it was.
  estimates.clear();
  CycleWrites gone = PlanWrites(core::CycleResult{}, m_.cluster(), ctx, memo_);
  ASSERT_THAT(gone.pod_groups, SizeIs(1));
  conds = json::parse(gone.pod_groups[0].patch).at("status").at("conditions");
  ASSERT_EQ(conds.as_array().size(), 1u);
  EXPECT_EQ(conds.at(0).at("type").as_string(), "Unschedulable");

  // Without estimates in the context (replay, scenarios), conditions of that type are kept.
  ctx.estimates = nullptr;
  EXPECT_THAT(PlanWrites(core::CycleResult{}, m_.cluster(), ctx, memo_).pod_groups, IsEmpty());
}

TEST(KubeSchedulerMessageTest, Wording) {
  EXPECT_EQ(KubeSchedulerMessage("0/2 nodes are unavailable: 2 Insufficient nvidia.com/gpu."),
            "0/2 nodes are available: 2 Insufficient nvidia.com/gpu.");
  EXPECT_EQ(KubeSchedulerMessage("all nodes are unavailable"), "all nodes are unavailable");
  EXPECT_EQ(KubeSchedulerMessage("x nodes are unavailable: 1 a."), "x nodes are unavailable: 1 a.");
}

TEST(DefaultSchedulerWritesTest, KubeSchedulersTextsAndSource) {
  ClusterMirror m(MirrorOptions{{"volcano"}, true});
  m.UpsertNode(MakeNode("n1").Cpu("8").Gpus(1).Obj());
  m.UpsertNode(MakeNode("n2").Cpu("8").Gpus(1).Obj());
  api::Pod big = MakePod("default", "big").Uid("u1").Gpus(2).Obj();
  big.spec.scheduler_name = "";
  m.UpsertPod(big);
  api::Pod small = MakePod("default", "small").Uid("u2").Gpus(1).Obj();
  small.spec.scheduler_name = "";
  m.UpsertPod(small);
  core::CycleResult r = CycleOfSessionS1(m);
  ASSERT_THAT(r.binds, SizeIs(1));
  PlanContext ctx;
  ctx.bound = {"default/small"};
  WriteMemo memo;
  CycleWrites w = PlanWrites(r, m.cluster(), ctx, memo);
  ASSERT_THAT(w.pod_conditions, SizeIs(1));
  EXPECT_EQ(w.pod_conditions[0].name, "big");
  EXPECT_EQ(w.pod_conditions[0].view.message,
            "0/2 nodes are available: 2 Insufficient nvidia.com/gpu.");
  EXPECT_THAT(w.pod_groups, IsEmpty());  // the groups are the core's own
  std::vector<std::string> events;
  for (const auto& e : w.events) {
    EXPECT_EQ(e.source_component, "default-scheduler");
    events.push_back(e.involved_name + " " + e.reason + ": " + e.message);
  }
  EXPECT_THAT(
      events,
      testing::UnorderedElementsAre(
          testing::MatchesRegex("small Scheduled: Successfully assigned default/small to n[12]"),
          "big FailedScheduling: 0/2 nodes are available: 2 Insufficient nvidia.com/gpu."));
}

TEST(DefaultSchedulerWritesTest, APodHeldForReleasingResourcesIsNotNominated) {
  ClusterMirror m(MirrorOptions{{"volcano"}, true});
  m.UpsertNode(MakeNode("n1").Cpu("8").Gpus(1).Obj());
  api::Pod leaving = MakePod("default", "leaving").Uid("u1").Gpus(1).RunningOn("n1").Obj();
  leaving.spec.scheduler_name = "";
  leaving.meta.deletion_timestamp = "2026-01-01T00:00:00Z";
  m.UpsertPod(leaving);
  api::Pod next = MakePod("default", "next").Uid("u2").Gpus(1).Obj();
  next.spec.scheduler_name = "";
  m.UpsertPod(next);
  core::CycleResult r = CycleOfSessionS1(m);
  // The core holds n1 for it (Volcano's pipelining)...
  EXPECT_EQ(r.pipelined.at("default/next"), "n1");
  // ...which kube-scheduler would neither say nor do.
  WriteMemo memo;
  CycleWrites w = PlanWrites(r, m.cluster(), PlanContext{}, memo);
  EXPECT_THAT(w.pod_conditions, IsEmpty());
  EXPECT_THAT(w.events, IsEmpty());
}

TEST(QueueStatusTest, AParentsAllocatedCountsItsDescendants) {
  ClusterMirror m(MirrorOptions{});
  m.UpsertNode(MakeNode("n1").Cpu("8").Gpus(8).Obj());
  m.UpsertQueue(MakeQueue("root").Obj());
  m.UpsertQueue(MakeQueue("org").Parent("root").Obj());
  m.UpsertQueue(MakeQueue("team-a").Parent("org").Obj());
  m.UpsertQueue(MakeQueue("team-b").Parent("org").Obj());
  for (const char* team : {"team-a", "team-b"}) {
    std::string pg = std::string("pg-") + team;
    m.UpsertPodGroup(MakePodGroup("ns", pg).MinMember(1).Queue(team).Phase("Running").Obj());
    m.UpsertPod(MakePod("ns", pg + "-0").Group(pg).Uid(pg).Gpus(3).RunningOn("n1").Obj());
  }
  WriteMemo memo;
  std::map<std::string, int64_t> gpus, pods;
  for (const QueueStatusWrite& w : PlanQueueStatus(m.cluster(), memo)) {
    gpus[w.name] = w.view.allocated.count("nvidia.com/gpu") ? w.view.allocated.at("nvidia.com/gpu")
                                                             : 0;
    pods[w.name] = w.view.allocated.count("pods") ? w.view.allocated.at("pods") : 0;
  }
  EXPECT_EQ(gpus["team-a"], 3000);
  EXPECT_EQ(gpus["team-b"], 3000);
  EXPECT_EQ(gpus["org"], 6000);
  EXPECT_EQ(gpus["root"], 6000);
  EXPECT_EQ(pods["team-a"], 1000);
  EXPECT_EQ(pods["org"], 2000);
  EXPECT_EQ(pods["root"], 2000);
}

TEST(QueueStatusTest, CountsPodGroupsByPhaseAndAllocatedResources) {
  ClusterMirror m(MirrorOptions{});
  m.UpsertNode(MakeNode("n1").Cpu("8").Gpus(4).Obj());
  m.UpsertQueue(MakeQueue("ml").Obj());
  m.UpsertPodGroup(MakePodGroup("ns", "running").MinMember(1).Queue("ml").Phase("Running").Obj());
  m.UpsertPod(MakePod("ns", "r-0").Group("running").Uid("u").Gpus(2).RunningOn("n1").Obj());
  m.UpsertPodGroup(MakePodGroup("ns", "waiting").MinMember(1).Queue("ml").Phase("Inqueue").Obj());
  m.UpsertPodGroup(MakePodGroup("ns", "new").MinMember(1).Queue("ml").Obj());
  WriteMemo memo;
  std::vector<QueueStatusWrite> w = PlanQueueStatus(m.cluster(), memo);
  ASSERT_THAT(w, SizeIs(1));  // "default" has no API object
  EXPECT_EQ(w[0].name, "ml");
  EXPECT_EQ(w[0].view.running, 1);
  EXPECT_EQ(w[0].view.inqueue, 1);
  EXPECT_EQ(w[0].view.pending, 1);
  EXPECT_EQ(w[0].view.allocated.at("nvidia.com/gpu"), 2000);
  json::value patch = json::parse(w[0].patch);
  EXPECT_EQ(patch.at("status").at("allocated").at("nvidia.com/gpu").as_string(), "2");
  // One `pods` per running task, as Volcano's updateQueueStatus counts them.
  EXPECT_EQ(patch.at("status").at("allocated").at("pods").as_string(), "1");
  EXPECT_EQ(patch.at("status").at("running").as_int64(), 1);

  api::Queue q = MakeQueue("ml").Obj();
  q.status.running = 1;
  q.status.inqueue = 1;
  q.status.pending = 1;
  q.status.allocated["nvidia.com/gpu"] = core::test::Q("2");
  q.status.allocated["pods"] = core::test::Q("1");
  m.UpsertQueue(q);
  EXPECT_THAT(PlanQueueStatus(m.cluster(), memo), IsEmpty());
}

TEST(NewerVersionTest, IntegersCompareAsNumbers) {
  EXPECT_TRUE(NewerVersion("10", "9"));
  EXPECT_FALSE(NewerVersion("9", "10"));
  EXPECT_FALSE(NewerVersion("9", "9"));
  EXPECT_TRUE(NewerVersion("abc", "9"));
}

}  // namespace
}  // namespace muster::scheduler
