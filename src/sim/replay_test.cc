// Replay mode on small hand-built workloads whose outcome under each scheduler can be worked out
// by hand, and on the Philly loader's job mapping.

#include "sim/replay.h"

#include "sim/replay_report.h"

#include <string>
#include <tuple>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::sim {
namespace {

using ::testing::HasSubstr;

// `nodes` nodes of 8 GPUs and 64 cores.
ReplayWorkload Cluster(int nodes) {
  ReplayWorkload w;
  w.source = "test";
  w.models = std::make_shared<core::GpuModels>();
  w.models->Id("gpu");
  for (int i = 0; i < nodes; ++i) w.nodes.push_back({"n" + std::to_string(i), 64000, 1 << 20, 8, "gpu"});
  return w;
}

void AddJob(ReplayWorkload& w, const std::string& name, int64_t submit, double duration, int pods,
            int gpus_per_pod) {
  ReplayJob j;
  j.name = name;
  j.submit = submit;
  j.duration = duration;
  j.pods = pods;
  j.pod.cpu_milli = 1000;
  j.pod.memory = 1024;
  j.pod.gpus = gpus_per_pod;
  j.pod.gpu_milli = 1000;
  w.jobs.push_back(std::move(j));
}

ReplayResult Replay(const ReplayWorkload& w, Discipline d, std::string placement = "spread") {
  ReplayOptions o;
  o.discipline = d;
  o.placement = std::move(placement);
  auto r = RunReplay(w, o);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : ReplayResult{};
}

TEST(ReplayTest, KubePlacesGangMembersOneByOneAndCanDeadlock) {
  // Two nodes. X (one 4-GPU pod) runs on one of them until t = 100. A (2 pods x 8 GPUs) takes
  // the free node at t = 1 and waits for a second free node; B (3 pods x 4 GPUs) takes X's other
  // 4 GPUs at t = 2. When X leaves, its 4 GPUs go to B's second pod (A's needs 8). Now A holds 8
  // GPUs, B holds 8, neither can ever run: a deadlock of half-placed gangs.
  ReplayWorkload w = Cluster(2);
  AddJob(w, "x", 0, 100, 1, 4);
  AddJob(w, "a", 1, 10, 2, 8);
  AddJob(w, "b", 2, 10, 3, 4);
  ReplayResult kube = Replay(w, Discipline::kKube);
  EXPECT_TRUE(kube.engine);  // one-member PodGroups through core::Session
  EXPECT_TRUE(kube.deadlock);
  EXPECT_EQ(kube.finished, 1);
  EXPECT_EQ(kube.unfinished, 2);
  EXPECT_DOUBLE_EQ(kube.deadlock_at, 100);
  // Held idle: A's 8 GPUs from t = 1 and B's 4 from t = 2 until t = 100 (B's second pod lands at
  // 100): (8 * 99 + 4 * 98) / 3600 GPU-hours.
  EXPECT_NEAR(kube.idle_held_gpu_hours, (8.0 * 99 + 4.0 * 98) / 3600, 1e-9);
  EXPECT_NEAR(kube.idle_held_cost, kube.idle_held_gpu_hours * 2.5, 1e-9);
  // Gang scheduling places a job all at once or not at all: everything finishes.
  for (Discipline d : {Discipline::kFifo, Discipline::kVolcano, Discipline::kMuster}) {
    ReplayResult r = Replay(w, d);
    EXPECT_FALSE(r.deadlock) << DisciplineName(d);
    EXPECT_EQ(r.finished, 3) << DisciplineName(d);
    EXPECT_DOUBLE_EQ(r.idle_held_gpu_hours, 0) << DisciplineName(d);
  }
}

TEST(ReplayTest, FifoBlocksBehindTheHeadVolcanoBackfillsMusterBackfillsWhatEndsInTime) {
  // Two nodes. A (8 GPUs) runs 0..100. G (2 x 8 GPUs) arrives at 1 and needs both nodes. C (1 GPU,
  // 10 s) arrives at 2.
  ReplayWorkload w = Cluster(2);
  AddJob(w, "a", 0, 100, 1, 8);
  AddJob(w, "g", 1, 50, 2, 8);
  AddJob(w, "c", 2, 10, 1, 1);
  // FIFO: C waits behind G, which starts at 100 and ends at 150.
  ReplayResult fifo = Replay(w, Discipline::kFifo);
  EXPECT_TRUE(fifo.engine);  // allocate with strictOrder
  EXPECT_DOUBLE_EQ(fifo.wait_max, 148);
  EXPECT_DOUBLE_EQ(fifo.makespan, 160);
  // Volcano: C goes ahead at once and is gone by 12; G starts at 100.
  ReplayResult volcano = Replay(w, Discipline::kVolcano);
  EXPECT_DOUBLE_EQ(volcano.wait_p50, 0);
  EXPECT_DOUBLE_EQ(volcano.gang_wait_max, 99);
  // muster: G reserves both nodes from 100; C ends at 12, before that, so it may go ahead.
  ReplayResult muster = Replay(w, Discipline::kMuster);
  EXPECT_TRUE(muster.engine);  // allocate with reserveGpus
  EXPECT_DOUBLE_EQ(muster.gang_wait_max, 99);
  EXPECT_DOUBLE_EQ(muster.makespan, 150);
  // A C that would run past 100 is held back: G still starts at 100.
  ReplayWorkload late = Cluster(2);
  AddJob(late, "a", 0, 100, 1, 8);
  AddJob(late, "g", 1, 50, 2, 8);
  AddJob(late, "c", 2, 500, 1, 1);
  EXPECT_DOUBLE_EQ(Replay(late, Discipline::kMuster).gang_wait_max, 99);
  EXPECT_DOUBLE_EQ(Replay(late, Discipline::kVolcano).gang_wait_max, 501);  // behind C
}

TEST(ReplayTest, TheLongestWaitingGangIsExplainedWhileItWaits) {
  // Volcano: G (2 x 8 GPUs) waits behind A (8 GPUs, until 100) and then C (1 GPU, 2..502). When
  // A leaves at 100, G has waited 99 s: its explanation names C's pod and estimates C's end.
  ReplayWorkload w = Cluster(2);
  AddJob(w, "a", 0, 100, 1, 8);
  AddJob(w, "g", 1, 50, 2, 8);
  AddJob(w, "c", 2, 500, 1, 1);
  ReplayResult volcano = Replay(w, Discipline::kVolcano);
  ASSERT_TRUE(volcano.longest_wait.has_value());
  const ReplayResult::LongestWait& lw = *volcano.longest_wait;
  EXPECT_EQ(lw.job, "g");
  EXPECT_DOUBLE_EQ(lw.explained_at, 100);
  EXPECT_DOUBLE_EQ(lw.estimated_start, 502);
  EXPECT_DOUBLE_EQ(lw.started, 502);
  EXPECT_THAT(lw.explanation, HasSubstr("Blocking:   sim/j0000002-0"));
  ReplayReport report;
  report.results = {volcano};
  EXPECT_THAT(ReplayHtml(report), HasSubstr("why the longest-waiting gang waited"));
}

TEST(ReplayTest, ReservationsEndStarvationOfALargeGang) {
  // One node busy with A (1 GPU) until 100, the other free; G needs both nodes. Small 1-GPU jobs
  // of 50 s arrive every 20 s until t = 2000. Under Volcano's allocate + backfill each frees a
  // GPU only after the next has arrived, so G never finds two whole nodes while they come.
  ReplayWorkload w = Cluster(2);
  AddJob(w, "a", 0, 100, 1, 1);
  AddJob(w, "g", 1, 10, 2, 8);
  for (int t = 2; t < 2000; t += 20) AddJob(w, "s" + std::to_string(t), t, 50, 1, 1);
  ReplayResult volcano = Replay(w, Discipline::kVolcano);
  ReplayResult muster = Replay(w, Discipline::kMuster);
  EXPECT_TRUE(volcano.engine);
  EXPECT_TRUE(muster.engine);
  EXPECT_GT(volcano.gang_wait_max, 1900);
  EXPECT_LT(muster.gang_wait_max, 200);
  EXPECT_EQ(muster.finished, volcano.finished);
}

TEST(ReplayTest, DeterministicAndSeeded) {
  ReplayWorkload w = Cluster(4);
  for (int i = 0; i < 200; ++i) AddJob(w, "j" + std::to_string(i), i * 7, 30 + (i * 37) % 300, 1 + i % 3, 1 + (i * 5) % 8);
  for (Discipline d : {Discipline::kKube, Discipline::kFifo, Discipline::kVolcano, Discipline::kMuster}) {
    ReplayResult a = Replay(w, d, "bestfit"), b = Replay(w, d, "bestfit");
    EXPECT_EQ(a.waits, b.waits) << DisciplineName(d);
    EXPECT_EQ(a.finished + a.unfinished, 200);
    EXPECT_GT(a.gpu_utilization, 0);
    EXPECT_LE(a.gpu_utilization, 1);
  }
}

TEST(ReplayTest, FifoAndMusterThroughTheEngineDecideAsTheirModels) {
  // Without queue admission (which fifo's and muster's confs leave out, see replay_engine.cc) the
  // engine's strictOrder and reservations start every job when the modelled disciplines do, on a
  // busy mix of single pods and gangs of up to 4 x 8 GPUs.
  // Pods ask cpu and memory in proportion to their GPUs (as Philly's do), so that the engine's
  // least-requested scoring prefers the node with the most free GPUs, as the models' spread does.
  ReplayWorkload w = Cluster(4);
  for (int i = 0; i < 300; ++i) {
    AddJob(w, "j" + std::to_string(i), i * 5, 20 + (i * 37) % 400, 1 + (i % 7 == 0 ? i % 4 : 0),
           i % 7 == 0 ? 8 : 1 + (i * 5) % 8);
    ReplayJob& j = w.jobs.back();
    j.pod.cpu_milli = 8000 * j.pod.gpus;
    j.pod.memory = (1 << 17) * j.pod.gpus;
  }
  for (Discipline d : {Discipline::kFifo, Discipline::kMuster}) {
    ReplayOptions o;
    o.discipline = d;
    auto engine = RunReplay(w, o);
    o.engine = false;
    auto modelled = RunReplay(w, o);
    ASSERT_TRUE(engine.ok() && modelled.ok());
    EXPECT_TRUE(engine->engine);
    EXPECT_FALSE(modelled->engine);
    EXPECT_EQ(engine->waits, modelled->waits) << DisciplineName(d);
    EXPECT_GT(engine->wait_max, 0) << DisciplineName(d);
  }
}

TEST(ReplayTest, VolcanoThroughTheEngineAdmitsOnlyWhatTheQueueCanHold) {
  // Two nodes of 8 GPUs. A1 and A2 (4 GPUs each) run until 100, spread over both nodes. G (one
  // 8-GPU pod) arrives at 1: Volcano's enqueue admits it (8 allocated + 8 <= 16 GPUs, the
  // proportion plugin's check against the queue's capability), but no node has 8 free GPUs.
  // C (1 GPU) arrives at 2: 8 allocated + 8 admitted + 1 > 16, so enqueue leaves it Pending and
  // allocate never sees it until A1 and A2 leave at 100. The simulator's model of Volcano, which
  // has no enqueue, backfills C at once.
  ReplayWorkload w = Cluster(2);
  AddJob(w, "a1", 0, 100, 1, 4);
  AddJob(w, "a2", 0, 100, 1, 4);
  AddJob(w, "g", 1, 50, 1, 8);
  AddJob(w, "c", 2, 10, 1, 1);
  ReplayResult engine = Replay(w, Discipline::kVolcano);
  EXPECT_TRUE(engine.engine);
  EXPECT_GT(engine.sessions, 0);
  ASSERT_EQ(engine.waits.size(), 4u);
  EXPECT_DOUBLE_EQ(engine.waits[2], 99);  // G at 100
  EXPECT_DOUBLE_EQ(engine.waits[3], 98);  // C at 100 too
  ReplayOptions o;
  o.discipline = Discipline::kVolcano;
  o.engine = false;
  auto modelled = RunReplay(w, o);
  ASSERT_TRUE(modelled.ok()) << modelled.status();
  EXPECT_FALSE(modelled->engine);
  EXPECT_DOUBLE_EQ(modelled->waits[3], 0);
  // Kubernetes' scheduler has no admission: C goes at once through the engine as well.
  ReplayResult kube = Replay(w, Discipline::kKube);
  EXPECT_TRUE(kube.engine);
  EXPECT_DOUBLE_EQ(kube.waits[3], 0);
}

TEST(ReplayTest, GpuSharesAndGpuModelsRunThroughTheEngine) {
  // Two one-GPU nodes, a V100 and a T4; every job runs 10 s. a and b ask 600m of a T4 (openb's
  // gpu_spec): b does not fit beside a on the T4 and waits for it. c and d share the V100
  // (500m each; c cannot go beside a). e asks a whole GPU: none is free of shares until 10.
  ReplayWorkload w;
  w.source = "test";
  w.models = std::make_shared<core::GpuModels>();
  w.nodes.push_back({"v", 64000, 1 << 20, 1, "V100"});
  w.nodes.push_back({"t", 64000, 1 << 20, 1, "T4"});
  const int t4 = w.models->Id("T4");
  w.models->Id("V100");
  for (const auto& [name, milli, t4_only] :
       std::vector<std::tuple<std::string, int, bool>>{
           {"a", 600, true}, {"b", 600, true}, {"c", 500, false}, {"d", 500, false},
           {"e", 1000, false}}) {
    AddJob(w, name, 0, 10, 1, 1);
    w.jobs.back().pod.gpu_milli = milli;
    if (t4_only) w.jobs.back().pod.models = {t4};
  }
  for (Discipline d : {Discipline::kKube, Discipline::kMuster}) {
    ReplayResult r = Replay(w, d);
    EXPECT_TRUE(r.engine) << DisciplineName(d);
    EXPECT_EQ(r.engine_note, "") << DisciplineName(d);
    EXPECT_EQ(r.finished, 5) << DisciplineName(d);
    EXPECT_EQ(r.waits, (std::vector<double>{0, 10, 0, 0, 10})) << DisciplineName(d);
    EXPECT_EQ(r.idle_held_gpu_hours, 0) << DisciplineName(d);  // one-pod jobs hold nothing idle
  }
  // Strict order: b holds everything behind it until a leaves; then e waits for c and d.
  ReplayResult fifo = Replay(w, Discipline::kFifo);
  EXPECT_TRUE(fifo.engine);
  EXPECT_EQ(fifo.waits, (std::vector<double>{0, 10, 10, 10, 20}));
  // Volcano's enqueue admits what the queue's 2 GPUs hold, shares counted in milli: a, b and c
  // (1.7); d (2.2) waits for a departure, and then e does too (b, d and e: 2.1).
  ReplayResult volcano = Replay(w, Discipline::kVolcano);
  EXPECT_TRUE(volcano.engine);
  EXPECT_EQ(volcano.waits, (std::vector<double>{0, 10, 0, 10, 20}));
  // The simulator's own models (no admission) decide as the engine does.
  ReplayOptions o;
  o.engine = false;
  for (Discipline d : {Discipline::kKube, Discipline::kFifo, Discipline::kMuster}) {
    o.discipline = d;
    auto modelled = RunReplay(w, o);
    ASSERT_TRUE(modelled.ok()) << modelled.status();
    EXPECT_EQ(modelled->waits, Replay(w, d).waits) << DisciplineName(d);
  }
  // A pod asking part of each of several GPUs is beyond the engine: modelled, and said so.
  w.jobs.back().pod.gpus = 2;
  w.jobs.back().pod.gpu_milli = 500;
  ReplayResult split = Replay(w, Discipline::kVolcano);
  EXPECT_FALSE(split.engine);
  EXPECT_THAT(split.engine_note, HasSubstr("e asks 500m of each of 2 GPUs"));
}

// Racks: four 8-GPU nodes in the node list's order, each of its own GPU model so that the jobs
// that name one are pinned to it: rack-0 holds a and b, rack-1 c and d.
ReplayWorkload RackCluster() {
  ReplayWorkload w;
  w.source = "test";
  w.models = std::make_shared<core::GpuModels>();
  for (const char* model : {"a", "b", "c", "d"}) {
    w.models->Id(model);
    w.nodes.push_back({std::string("node-") + model, 64000, 1 << 20, 8, model});
  }
  return w;
}

// A one-pod job of `gpus` GPUs on the node of GPU model `model`.
void AddPinnedJob(ReplayWorkload& w, const std::string& name, int64_t submit, double duration,
                  int gpus, const std::string& model) {
  AddJob(w, name, submit, duration, 1, gpus);
  w.jobs.back().pod.models = {w.models->Id(model)};
}

ReplayResult RackReplay(const ReplayWorkload& w, Discipline d, const std::string& topology,
                        double slowdown) {
  ReplayOptions o;
  o.discipline = d;
  o.rack_nodes = 2;
  o.cross_rack_slowdown = slowdown;
  o.topology = topology;
  auto r = RunReplay(w, o);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : ReplayResult{};
}

TEST(ReplayTest, OnRacksMusterKeepsAGangInOneRackWhereVolcanoSpreadsIt) {
  // Two GPUs taken on node a (rack-0) and on node c (rack-1) until 1000. G (2 pods x 6 GPUs)
  // arrives at 1. Volcano's least-allocated node order puts its pods on the two empty nodes, b
  // and d, one in each rack: it runs twice as long (the slowdown). muster's network-topology-aware
  // finds both racks able to hold it, takes the first of the equally full, rack-0, and places it
  // on a and b.
  ReplayWorkload w = RackCluster();
  AddPinnedJob(w, "fa", 0, 1000, 2, "a");
  AddPinnedJob(w, "fc", 0, 1000, 2, "c");
  AddJob(w, "g", 1, 100, 2, 6);
  ReplayResult volcano = RackReplay(w, Discipline::kVolcano, "soft", 2);
  ASSERT_TRUE(volcano.racks.has_value());
  EXPECT_EQ(volcano.racks->topology, "none");
  EXPECT_EQ(volcano.racks->gangs, 1);  // the one-pod jobs are no gangs
  EXPECT_EQ(volcano.racks->cluster, 1);
  EXPECT_EQ(volcano.racks->slowed, 1);
  EXPECT_DOUBLE_EQ(volcano.racks->InOneRack(), 0);
  EXPECT_EQ(volcano.waits, (std::vector<double>{0, 0, 0}));
  // fa and fc run 1000 s; g 2 x 100 s.
  EXPECT_DOUBLE_EQ(volcano.jct_mean, (1000.0 + 1000 + 200) / 3);
  for (const std::string topology : {"soft", "hard"}) {
    ReplayResult muster = RackReplay(w, Discipline::kMuster, topology, 2);
    ASSERT_TRUE(muster.racks.has_value()) << topology;
    EXPECT_EQ(muster.racks->topology, topology);
    EXPECT_EQ(muster.racks->one_rack, 1) << topology;
    EXPECT_EQ(muster.racks->slowed, 0) << topology;
    EXPECT_DOUBLE_EQ(muster.racks->InOneRack(), 1) << topology;
    EXPECT_DOUBLE_EQ(muster.jct_mean, (1000.0 + 1000 + 100) / 3) << topology;
  }
  // Without the plugin muster places the gang as Volcano does.
  ReplayResult blind = RackReplay(w, Discipline::kMuster, "none", 2);
  ASSERT_TRUE(blind.racks.has_value());
  EXPECT_EQ(blind.racks->topology, "none");
  EXPECT_EQ(blind.racks->cluster, 1);
  // The same options, the same decisions.
  EXPECT_EQ(RackReplay(w, Discipline::kMuster, "soft", 2).waits,
            RackReplay(w, Discipline::kMuster, "soft", 2).waits);
}

TEST(ReplayTest, OnRacksHardModeWaitsForARackWhereSoftModeSpansThem) {
  // Six GPUs taken on a until 50 and on c until 1000: no rack has 16 free GPUs, the cluster has
  // (b and d). G (2 x 8 GPUs, 100 s) arrives at 1. Soft mode, as Volcano, runs it at once on b
  // and d, 1.3 times as long: done at 131. Hard mode at tier 1 waits for rack-0 to empty at 50
  // and runs it there in 100 s: done at 150.
  ReplayWorkload w = RackCluster();
  AddPinnedJob(w, "fa", 0, 50, 6, "a");
  AddPinnedJob(w, "fc", 0, 1000, 6, "c");
  AddJob(w, "g", 1, 100, 2, 8);
  ReplayResult soft = RackReplay(w, Discipline::kMuster, "soft", 1.3);
  ASSERT_TRUE(soft.racks.has_value());
  ASSERT_EQ(soft.waits.size(), 3u);
  EXPECT_EQ(soft.racks->cluster, 1);
  EXPECT_DOUBLE_EQ(soft.waits[2], 0);
  EXPECT_DOUBLE_EQ(soft.jct_mean, (50.0 + 1000 + 130) / 3);
  ReplayResult hard = RackReplay(w, Discipline::kMuster, "hard", 1.3);
  ASSERT_TRUE(hard.racks.has_value());
  ASSERT_EQ(hard.waits.size(), 3u);
  EXPECT_EQ(hard.racks->one_rack, 1);
  EXPECT_DOUBLE_EQ(hard.waits[2], 49);
  EXPECT_DOUBLE_EQ(hard.jct_mean, (50.0 + 1000 + 149) / 3);
  ReplayResult volcano = RackReplay(w, Discipline::kVolcano, "soft", 1.3);
  ASSERT_TRUE(volcano.racks.has_value());
  EXPECT_EQ(volcano.racks->cluster, 1);
  EXPECT_DOUBLE_EQ(volcano.jct_mean, soft.jct_mean);
  // A gang larger than any rack gets no hard constraint: it spans racks rather than wait for
  // ever. Racks of one node here.
  ReplayOptions o;
  o.discipline = Discipline::kMuster;
  o.rack_nodes = 1;
  o.topology = "hard";
  auto one_node_racks = RunReplay(w, o);
  ASSERT_TRUE(one_node_racks.ok()) << one_node_racks.status();
  ASSERT_TRUE(one_node_racks->racks.has_value());
  EXPECT_EQ(one_node_racks->finished, 3);
  EXPECT_EQ(one_node_racks->racks->cluster, 1);
}

TEST(ReplayTest, RackOptionsAreCheckedAndNeedTheEngine) {
  ReplayWorkload w = RackCluster();
  AddJob(w, "g", 0, 10, 2, 8);
  ReplayOptions o;
  o.rack_nodes = 2;
  o.cross_rack_slowdown = 0.5;
  EXPECT_EQ(RunReplay(w, o).status().message(),
            "cross-rack slowdown 0.5 is not a factor of at least 1");
  o.cross_rack_slowdown = 1;
  o.topology = "strict";
  EXPECT_EQ(RunReplay(w, o).status().message(), "topology \"strict\" is not soft, hard or none");
  o.topology = "soft";
  o.rack_nodes = 0;
  o.spine_racks = 2;
  EXPECT_EQ(RunReplay(w, o).status().message(),
            "spines are made of racks: give the rack nodes too");
  o.rack_nodes = 2;
  o.engine = false;
  EXPECT_EQ(RunReplay(w, o).status().message(),
            "racks are replayed through the engine only, and the engine was turned off");
  // Without racks, no tally.
  o = ReplayOptions{};
  auto plain = RunReplay(w, o);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_FALSE(plain->racks.has_value());
}

TEST(ReplayTest, SpinesAreTheTierBetweenRacksAndTheCluster) {
  // Racks of one node, spines of two racks: rack-0 (a) and rack-1 (b) in spine-0. A gang of two
  // 8-GPU pods fits no rack; soft mode keeps it in one spine.
  ReplayWorkload w = RackCluster();
  AddJob(w, "g", 0, 10, 2, 8);
  ReplayOptions o;
  o.discipline = Discipline::kMuster;
  o.rack_nodes = 1;
  o.spine_racks = 2;
  auto r = RunReplay(w, o);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->racks.has_value());
  EXPECT_EQ(r->racks->one_spine, 1);
  EXPECT_EQ(r->racks->slowed, 1);  // across racks all the same
  ReplayReport report;
  report.racks = "racks of 1 node";
  report.results = {*r};
  EXPECT_THAT(ReplayTable(report),
              HasSubstr("muster    soft          1        0.0%      0      0      1        0"));
  EXPECT_THAT(ReplayJson(report),
              HasSubstr(R"("racks":{"topology":"soft","gangs":1,"in_one_rack":0,"one_node":0,)"
                        R"("one_rack":0,"one_spine":1,"cluster":0,"slowed":1})"));
  EXPECT_THAT(ReplayCsv(report), HasSubstr(",soft,1,0.0000,0,0,1,0\n"));
}

TEST(ReplayTest, PhillyJobsBecomeGangsOfEightGpuPods) {
  std::vector<PhillyJob> jobs = {
      {1000, 60, 1, "c"}, {1010, 60, 16, "c"}, {1005, 60, 12, "c"}, {990, 60, 0, "c"},
      {1020, 60, 128, "c"},  // 16 pods: more than the 4 nodes, skipped
  };
  auto w = PhillyWorkload(jobs, 4);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->skipped, 1);
  ASSERT_EQ(w->jobs.size(), 4u);
  EXPECT_EQ(w->jobs[0].submit, 0);  // sorted by submission, from the earliest
  EXPECT_EQ(w->jobs[0].pod.gpus, 0);
  EXPECT_EQ(w->jobs[2].submit, 15);
  EXPECT_EQ(w->jobs[2].pods, 2);  // 12 GPUs: 2 x 6
  EXPECT_EQ(w->jobs[2].pod.gpus, 6);
  EXPECT_EQ(w->jobs[3].pods, 2);  // 16 GPUs: 2 x 8
  EXPECT_EQ(w->jobs[3].pod.gpus, 8);
  EXPECT_THAT(std::string(PhillyWorkload(jobs, 0).status().message()), HasSubstr("at least one node"));
  EXPECT_THAT(std::string(ParseDiscipline("slurm").status().message()),
              HasSubstr("unknown scheduler \"slurm\"; known: kube, fifo, volcano, muster"));
}

}  // namespace
}  // namespace muster::sim
