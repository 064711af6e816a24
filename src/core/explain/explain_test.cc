// Explain (explain.h): the minimal blocking set, the admission verdict and the estimated start of
// a waiting gang, on clusters built with the core's builders and Volcano's default conf.

#include "core/explain/explain.h"

#include "api/time.h"
#include "gtest/gtest.h"
#include "core/testing/builders.h"

namespace muster::core {
namespace {

using test::MakeNode;
using test::MakePod;
using test::MakePodGroup;
using test::MakeQueue;

constexpr int64_t kExplainNow = 1'800'000'000;  // 2027-01-15T08:00:00Z
std::string At(int64_t offset) { return api::FormatUnixTime(kExplainNow + offset); }

ExplainOptions Now() {
  ExplainOptions o;
  o.now_unix = kExplainNow;
  return o;
}

// The seed's cluster: two g4dn.xlarge nodes of one T4 each, tainted nvidia.com/gpu.
void SeedNodes(Cluster& c) {
  for (const char* name : {"gpu-node-0", "gpu-node-1"}) {
    c.UpsertNode(MakeNode(name)
                     .Cpu("4")
                     .Memory("16Gi")
                     .Gpus(1)
                     .Pods(110)
                     .Label("node.kubernetes.io/instance-type", "g4dn.xlarge")
                     .Taint("nvidia.com/gpu", "present", "NoSchedule")
                     .Obj());
  }
  c.UpsertQueue(MakeQueue("ml-queue").Obj());
}

api::Pod Trainer(int i, const std::string& group) {
  return MakePod("default", "gang-tf-job-trainer-" + std::to_string(i))
      .Group(group)
      .Req("cpu", "2")
      .Req("memory", "4Gi")
      .Gpus(1)
      .Toleration("nvidia.com/gpu", "Exists", "", "NoSchedule")
      .RequiredNodeAffinity("node.kubernetes.io/instance-type", "In",
                            {"g4dn.xlarge", "g4dn.2xlarge", "g5.xlarge"})
      .Created(At(-30))
      .Obj();
}

api::Pod Blocker(const std::string& runtime) {
  auto b = MakePod("default", "blocker")
               .Gpus(1)
               .Toleration("nvidia.com/gpu", "Exists", "", "NoSchedule")
               .RunningOn("gpu-node-0")
               .Started(At(-60));
  if (!runtime.empty()) b.ExpectedRuntime(runtime);
  return b.Obj();
}

// The seed's story: the gang's PodGroup waits for admission, its pods not made yet (the Volcano
// Job controller makes them once admitted), the blocker on gpu-node-0.
ExplainOptions SeedStory(Cluster& c, const std::string& blocker_runtime) {
  SeedNodes(c);
  c.UpsertPod(Blocker(blocker_runtime));
  c.UpsertPodGroup(MakePodGroup("default", "gang")
                       .MinMember(2)
                       .Queue("ml-queue")
                       .MinResources("nvidia.com/gpu", "2")
                       .MinResources("cpu", "4")
                       .Phase("Pending")
                       .Created(At(-30))
                       .Obj());
  ExplainOptions o = Now();
  o.planned_pods = {Trainer(0, "gang"), Trainer(1, "gang")};
  return o;
}

TEST(ExplainTest, SeedStoryNamesTheBlockerAndEstimatesItsExpectedEnd) {
  Cluster c;
  ExplainOptions o = SeedStory(c, "10m");
  auto e = Explain(c, DefaultSchedulerConf(), "default/gang", o);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->queue, "ml-queue");
  EXPECT_EQ(e->position, 1);
  EXPECT_FALSE(e->admitted);
  ASSERT_EQ(e->admission_shortfalls.size(), 1u);
  EXPECT_EQ(e->admission_shortfalls[0].resource, "nvidia.com/gpu");
  EXPECT_EQ(e->admission_shortfalls[0].need, "2");
  EXPECT_EQ(e->admission_shortfalls[0].free, "1");
  EXPECT_EQ(e->admission_shortfalls[0].short_by, "1");
  EXPECT_EQ(e->pods_waiting, 2);
  EXPECT_EQ(e->matching_nodes, 2);
  EXPECT_EQ(e->fitting_pods, 1);
  EXPECT_EQ(e->blocking, std::vector<std::string>{"default/blocker"});
  ASSERT_EQ(e->nodes.size(), 2u);
  EXPECT_EQ(e->nodes[0].free, "0");
  EXPECT_EQ(e->nodes[0].holders, std::vector<std::string>{"default/blocker"});
  EXPECT_EQ(e->nodes[1].free, "1");
  EXPECT_NE(e->placement.find("node.kubernetes.io/instance-type In [g4dn.xlarge, g4dn.2xlarge, "
                              "g5.xlarge] and tolerating nvidia.com/gpu"),
            std::string::npos)
      << e->placement;
  EXPECT_NE(e->placement.find("gpu-node-0 has 0 free (held by default/blocker), gpu-node-1 has 1 "
                              "free; fits when default/blocker ends"),
            std::string::npos)
      << e->placement;
  // Started 60 s ago with 10 minutes to run: 540 s from now.
  ASSERT_TRUE(e->estimated_start.has_value()) << e->estimate;
  EXPECT_EQ(*e->estimated_start, kExplainNow + 540);
  EXPECT_EQ(e->reason, "waits for admission in queue ml-queue; fits when default/blocker ends");
}

// What the live scheduler sees: the Volcano Job's PodGroup without pods (none planned). The
// blockers are what keeps enqueue from admitting it, and it starts when admitted.
TEST(ExplainTest, AGangWithoutPodsIsBlockedByWhatKeepsItFromAdmission) {
  Cluster c;
  ExplainOptions o = SeedStory(c, "10m");
  o.planned_pods.clear();
  auto e = Explain(c, DefaultSchedulerConf(), "default/gang", o);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->pods_waiting, 0);
  EXPECT_EQ(e->blocking, std::vector<std::string>{"default/blocker"});
  ASSERT_TRUE(e->estimated_start.has_value()) << e->estimate;
  EXPECT_EQ(*e->estimated_start, kExplainNow + 540);
  EXPECT_EQ(e->reason, "waits for admission in queue ml-queue; fits when default/blocker ends");
}

TEST(ExplainTest, ABlockerWithoutExpectedEndGivesNoEstimateAndSaysWhy) {
  Cluster c;
  ExplainOptions o = SeedStory(c, "");
  auto e = Explain(c, DefaultSchedulerConf(), "default/gang", o);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->blocking, std::vector<std::string>{"default/blocker"});
  EXPECT_TRUE(e->blocked_for_ever);
  EXPECT_FALSE(e->estimated_start.has_value());
  EXPECT_NE(e->estimate.find("default/blocker has no expected end"), std::string::npos)
      << e->estimate;
}

TEST(ExplainTest, TheRuntimeHistoryStandsInForAMissingAnnotation) {
  Cluster c;
  ExplainOptions o = SeedStory(c, "");
  o.runtime_history = [](const TaskInfo& t) { return t.name == "blocker" ? 300.0 : -1.0; };
  auto e = Explain(c, DefaultSchedulerConf(), "default/gang", o);
  ASSERT_TRUE(e.ok()) << e.status();
  ASSERT_TRUE(e->estimated_start.has_value()) << e->estimate;
  EXPECT_EQ(*e->estimated_start, kExplainNow + 240);
}

TEST(ExplainTest, OnceTheBlockerIsGoneTheGangStartsNow) {
  Cluster c;
  ExplainOptions o = SeedStory(c, "10m");
  c.RemovePod("default", "blocker");
  auto e = Explain(c, DefaultSchedulerConf(), "default/gang", o);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_TRUE(e->blocking.empty());
  EXPECT_EQ(e->fitting_pods, 2);
  ASSERT_TRUE(e->estimated_start.has_value());
  EXPECT_EQ(*e->estimated_start, kExplainNow);
}

TEST(ExplainTest, ARunningGangIsSaidToHaveStarted) {
  Cluster c;
  SeedNodes(c);
  c.UpsertPodGroup(
      MakePodGroup("default", "gang").MinMember(2).Queue("ml-queue").Phase("Running").Obj());
  c.UpsertPod(MakePod("default", "t0").Group("gang").Gpus(1).RunningOn("gpu-node-0").Obj());
  c.UpsertPod(MakePod("default", "t1").Group("gang").Gpus(1).RunningOn("gpu-node-1").Obj());
  auto e = Explain(c, DefaultSchedulerConf(), "default/gang", Now());
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_TRUE(e->started);
  EXPECT_EQ(e->position, 0);
  EXPECT_EQ(e->estimate, "started");
}

TEST(ExplainTest, AMissingPodGroupIsNotFound) {
  Cluster c;
  auto e = Explain(c, DefaultSchedulerConf(), "default/nope", Now());
  EXPECT_EQ(e.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(e.status().message().find("not found"), std::string::npos);
}

// Four 2-GPU nodes, each holding pods; a gang of two 2-GPU pods needs two nodes emptied. The
// blocking set is the fewest pods to end: the node with one 2-GPU pod, and the node with one
// 1-GPU pod beside a free GPU, not the node with two 1-GPU pods.
TEST(ExplainTest, TheBlockingSetIsTheFewestPodsWhoseEndLetsTheGangFit) {
  Cluster c;
  for (int i = 0; i < 4; ++i) {
    c.UpsertNode(
        MakeNode("n" + std::to_string(i)).Cpu("16").Memory("64Gi").Gpus(2).Pods(110).Obj());
  }
  auto running = [&](const std::string& name, const std::string& node, int gpus,
                     const std::string& runtime) {
    c.UpsertPod(MakePod("default", name)
                    .Gpus(gpus)
                    .RunningOn(node)
                    .Started(At(-10))
                    .ExpectedRuntime(runtime)
                    .Obj());
  };
  running("a1", "n0", 1, "1h");
  running("a2", "n0", 1, "1h");
  running("b", "n1", 2, "30m");
  running("c", "n2", 1, "20m");
  running("d1", "n3", 1, "2h");
  running("d2", "n3", 1, "2h");
  c.UpsertPodGroup(
      MakePodGroup("default", "big").MinMember(2).Phase("Inqueue").Created(At(-5)).Obj());
  for (int i = 0; i < 2; ++i) {
    c.UpsertPod(MakePod("default", "big-" + std::to_string(i)).Group("big").Gpus(2).Obj());
  }
  auto e = Explain(c, DefaultSchedulerConf(), "default/big", Now());
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_TRUE(e->admitted);
  EXPECT_EQ(e->fitting_pods, 0);
  EXPECT_EQ(e->blocking, (std::vector<std::string>{"default/b", "default/c"}));
  // b ends at 30m after its start 10 s ago, c earlier: the gang starts when b ends.
  ASSERT_TRUE(e->estimated_start.has_value()) << e->estimate;
  EXPECT_EQ(*e->estimated_start, kExplainNow + 1800 - 10);
}

// Queued jobs ahead start in order: a second gang behind the first waits for the first's end.
// Among pods whose end would bring as much, the blocking set names the one expected to end first,
// then the first by key, wherever they run.
TEST(ExplainTest, EqualBlockersAreTakenByEarliestEndThenByKey) {
  Cluster c;
  for (int i = 0; i < 4; ++i) {
    c.UpsertNode(
        MakeNode("n" + std::to_string(i)).Cpu("16").Memory("64Gi").Gpus(2).Pods(110).Obj());
  }
  auto running = [&](const std::string& name, const std::string& node,
                     const std::string& runtime) {
    c.UpsertPod(MakePod("default", name)
                    .Gpus(1)
                    .RunningOn(node)
                    .Started(At(-10))
                    .ExpectedRuntime(runtime)
                    .Obj());
  };
  running("z1", "n0", "1h");
  running("z2", "n0", "1h");
  running("m1", "n1", "1h");
  running("m2", "n1", "1h");
  running("k1", "n2", "1h");
  running("k2", "n2", "2h");
  running("q1", "n3", "1h");
  running("q2", "n3", "1h");
  c.UpsertPodGroup(
      MakePodGroup("default", "pair").MinMember(2).Phase("Inqueue").Created(At(-5)).Obj());
  for (int i = 0; i < 2; ++i) {
    c.UpsertPod(MakePod("default", "pair-" + std::to_string(i)).Group("pair").Gpus(1).Obj());
  }
  auto e = Explain(c, DefaultSchedulerConf(), "default/pair", Now());
  ASSERT_TRUE(e.ok()) << e.status();
  // Every pod's end lets one member fit: k1 (1h) before k2 (2h) on n2, then m1 first by key.
  EXPECT_EQ(e->blocking, (std::vector<std::string>{"default/k1", "default/m1"}));
  // With z1 ending sooner than all, it is taken first.
  running("z1", "n0", "30m");
  e = Explain(c, DefaultSchedulerConf(), "default/pair", Now());
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->blocking, (std::vector<std::string>{"default/k1", "default/z1"}));
}

TEST(ExplainTest, AGangBehindAnotherStartsAfterTheOneAheadHasRun) {
  Cluster c;
  c.UpsertNode(MakeNode("n0").Cpu("16").Memory("64Gi").Gpus(2).Pods(110).Obj());
  c.UpsertPod(MakePod("default", "running")
                  .Gpus(2)
                  .RunningOn("n0")
                  .Started(At(0))
                  .ExpectedRuntime("10m")
                  .Obj());
  for (const char* name : {"first", "second"}) {
    c.UpsertPodGroup(MakePodGroup("default", name)
                         .MinMember(1)
                         .Phase("Inqueue")
                         .Created(At(std::string(name) == "first" ? -20 : -10))
                         .Obj());
    c.UpsertPod(MakePod("default", std::string(name) + "-0")
                    .Group(name)
                    .Gpus(2)
                    .ExpectedRuntime("15m")
                    .Created(At(-20))
                    .Obj());
  }
  auto starts =
      EstimateStarts(c, DefaultSchedulerConf(), {"default/first", "default/second"}, Now());
  ASSERT_EQ(starts.size(), 2u);
  EXPECT_EQ(starts["default/first"], kExplainNow + 600);
  EXPECT_EQ(starts["default/second"], kExplainNow + 600 + 900);
  auto e = Explain(c, DefaultSchedulerConf(), "default/second", Now());
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->position, 2);
  EXPECT_EQ(e->waiting_in_queue, 2);
}

// A running pod whose PodGroup is gone (deleted before its pods, as when a finished Job is
// deleted) ends in the simulation like any other; removing it forgets its job, which the
// estimate must not read afterwards (up_benchmark crashed here under load).
TEST(ExplainTest, APodWhosePodGroupIsGoneEndsWithoutBreakingTheEstimate) {
  Cluster c;
  c.UpsertNode(MakeNode("n0").Cpu("16").Memory("64Gi").Gpus(2).Pods(110).Obj());
  c.UpsertPod(MakePod("default", "orphan-0")
                  .Group("deleted-job")
                  .Gpus(2)
                  .RunningOn("n0")
                  .Started(At(0))
                  .ExpectedRuntime("5m")
                  .Obj());
  c.UpsertPodGroup(
      MakePodGroup("default", "waiting").MinMember(1).Phase("Inqueue").Created(At(-10)).Obj());
  c.UpsertPod(MakePod("default", "waiting-0").Group("waiting").Gpus(2).Created(At(-10)).Obj());
  ASSERT_EQ(c.FindJob("default/deleted-job")->pg, nullptr);
  auto starts = EstimateStarts(c, DefaultSchedulerConf(), {"default/waiting"}, Now());
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts["default/waiting"], kExplainNow + 300);
}

// The explanation does not change the cluster it explains.
TEST(ExplainTest, ExplainingLeavesTheClusterAsItWas) {
  Cluster c;
  ExplainOptions o = SeedStory(c, "10m");
  ASSERT_TRUE(Explain(c, DefaultSchedulerConf(), "default/gang", o).ok());
  EXPECT_EQ(c.FindJob("default/gang")->PhaseText(), "Pending");
  EXPECT_EQ(c.FindTask("default/gang-tf-job-trainer-0"), nullptr);
  EXPECT_NE(c.FindTask("default/blocker"), nullptr);
  EXPECT_EQ(c.FindNode("gpu-node-1")->FreeGpus(), 1);
}

TEST(ExplainTest, TheJsonFormCarriesTheVerdicts) {
  Cluster c;
  ExplainOptions o = SeedStory(c, "10m");
  auto e = Explain(c, DefaultSchedulerConf(), "default/gang", o);
  ASSERT_TRUE(e.ok());
  boost::json::value j = ExplanationJson(*e);
  EXPECT_EQ(j.at("placement").at("blockingSet").as_array().at(0).as_string(), "default/blocker");
  EXPECT_EQ(j.at("estimate").at("start").as_string(), At(540));
  EXPECT_EQ(j.at("admission").at("shortfalls").as_array().at(0).at("shortBy").as_string(), "1");
  std::string text = ExplanationText(*e);
  EXPECT_NE(text.find("Blocking:   default/blocker"), std::string::npos) << text;
}

}  // namespace
}  // namespace muster::core
