// SchedulingBasic, shaped like kube-scheduler's scheduler_perf test of that name
// (test/integration/scheduler_perf/misc/performance-config.yaml, templates node-default.yaml and
// pod-default.yaml): nodes of cpu 4, memory 32Gi, 110 pods; initial pods already running on the
// nodes; then the measured pods (cpu 100m, memory 500Mi) arrive pending and the clock runs until
// every one is bound.
//
// Volcano shape: every pod sits in its own one-member PodGroup, phase Inqueue, queue "default"
// (what Volcano's pod-group controller creates for a standalone pod), and the scheduler runs
// Volcano's default configuration (DefaultSchedulerConf: enqueue, allocate, backfill; priority,
// gang, conformance / overcommit, drf, predicates, proportion, nodeorder).
//
// Timed: the scheduling cycles (Session::Run) plus writing their binds back into the cluster,
// until every measured pod is bound. Not timed: building the cluster and tearing it down.
// One thread; manual time so that construction never leaks into the figure.

#include <chrono>
#include <memory>
#include <string>

#include "bench/bench_support.h"
#include "benchmark/benchmark.h"
#include "core/testing/builders.h"
#include "fmt/format.h"

namespace muster::bench {
namespace {

using core::test::MakeNode;
using core::test::MakePod;
using core::test::MakePodGroup;

constexpr char kNamespace[] = "sched-basic";

std::unique_ptr<core::Cluster> BuildCluster(int nodes, int init_pods, int measured_pods) {
  auto cluster = std::make_unique<core::Cluster>();
  std::vector<std::string> names;
  names.reserve(nodes);
  for (int i = 0; i < nodes; ++i) {
    names.push_back(fmt::format("node-{:05d}", i));
    cluster->UpsertNode(MakeNode(names.back()).Cpu("4").Memory("32Gi").Pods(110).Obj());
  }
  // Initial pods spread evenly over the nodes, already running, each with its own PodGroup
  // (phase Running) so that drf and proportion see them as Volcano would.
  for (int i = 0; i < init_pods; ++i) {
    std::string name = fmt::format("init-pod-{:05d}", i);
    cluster->UpsertPodGroup(MakePodGroup(kNamespace, "pg-" + name).Phase("Running").Obj());
    cluster->UpsertPod(MakePod(kNamespace, name)
                           .Req("cpu", "100m")
                           .Req("memory", "500Mi")
                           .Group("pg-" + name)
                           .RunningOn(names[static_cast<size_t>(i) * nodes / init_pods])
                           .Obj());
  }
  for (int i = 0; i < measured_pods; ++i) {
    std::string name = fmt::format("pod-{:05d}", i);
    cluster->UpsertPodGroup(MakePodGroup(kNamespace, "pg-" + name).Phase("Inqueue").Obj());
    cluster->UpsertPod(MakePod(kNamespace, name)
                           .Req("cpu", "100m")
                           .Req("memory", "500Mi")
                           .Group("pg-" + name)
                           .Obj());
  }
  return cluster;
}

void BM_SchedulingBasic(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  const int init_pods = static_cast<int>(state.range(1));
  const int measured_pods = static_cast<int>(state.range(2));
  const core::SchedulerConf& conf = core::DefaultSchedulerConf();
  CycleStats sum;
  for (auto _ : state) {
    std::unique_ptr<core::Cluster> cluster = BuildCluster(nodes, init_pods, measured_pods);
    RunOptions options;
    options.want_binds = measured_pods;
    CycleStats stats = RunUntilBound(*cluster, conf, options);
    if (stats.binds != measured_pods) {
      state.SkipWithError(
          fmt::format("bound {} of {} pods in {} cycles", stats.binds, measured_pods, stats.cycles)
              .c_str());
      break;
    }
    state.SetIterationTime(stats.total_seconds());
    sum += stats;
    cluster.reset();
  }
  if (sum.binds == 0) return;
  const double iterations = static_cast<double>(state.iterations());
  state.counters["pods_per_s"] = static_cast<double>(sum.binds) / sum.total_seconds();
  state.counters["pods_per_cpu_s"] = static_cast<double>(sum.binds) / sum.cpu_seconds;
  state.counters["cycles"] = sum.cycles / iterations;
  state.counters["session_ms"] = sum.session_seconds * 1e3 / iterations;
  state.counters["apply_ms"] = sum.apply_seconds * 1e3 / iterations;
}

// scheduler_perf's SchedulingBasic sizes: 500Nodes (500 initial, 1000 measured) and
// 5000Nodes_10000Pods (1000 initial, 10000 measured).
BENCHMARK(BM_SchedulingBasic)
    ->ArgNames({"nodes", "init_pods", "pods"})
    ->Args({500, 500, 1000})
    ->Args({5000, 1000, 10000})
    ->UseManualTime()
    ->Iterations(5)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace muster::bench

BENCHMARK_MAIN();
