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
