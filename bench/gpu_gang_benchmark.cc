// GPU gangs on a large GPU fleet: 5,000 nodes x 8 GPUs (nvidia.com/gpu 8, cpu 64, memory 512Gi,
// taint nvidia.com/gpu=present:NoSchedule, node.kubernetes.io/instance-type one of four values).
// Every pod asks for 1 GPU (cpu 4, memory 32Gi), tolerates the GPU taint and requires one
// instance type through required node affinity; its PodGroup has minMember = gang size, phase
// Inqueue, queue "default". Volcano's default configuration (DefaultSchedulerConf).
//
// Two questions, two benchmarks:
//
//  BM_GpuGangThroughput: many gangs pending at once (half the fleet's GPUs' worth) and the clock
//    runs through the cycles, bind write-back included, until every pod is bound: pods/s.
//    While it runs, an observer on Session's allocate events stamps the moment each gang's last
//    pod is allocated; the gaps between consecutive stamps are the in-cycle cost of one gang
//    decision (job ordering, per-pod filter and score, statement, commit of the gang before),
//    reported as gap_p50_us / gap_p99_us.
//
//  BM_GpuGangDecision: the fleet is first filled to half its GPUs by gangs of 8 and 64 that the
//    scheduler itself places (not timed). Then each iteration submits ONE gang and times one whole
//    scheduling cycle (Session::Run: open, enqueue, allocate, backfill, close) that decides it:
//    what a gang arriving at a scheduling period waits for once the cycle starts. After the
//    cycle its binds are applied and the oldest gang of the same size is deleted (job
//    completion), so occupancy stays near half. Reported: cycle_p50_ms / cycle_p99_ms, and
//    decided_p50_ms / decided_p99_ms, the time from the start of Run to the gang's last
//    allocation (the rest of the cycle is the commit and the session close), and the cycle's
//    thread CPU time (cycle_cpu_p50_ms / cycle_cpu_p99_ms), which other processes on a shared
//    machine cannot inflate.
//
// One thread; manual time, so construction and fills are never in the figures.

#include <chrono>
#include <deque>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "bench/bench_support.h"
#include "benchmark/benchmark.h"
#include "core/testing/builders.h"
#include "fmt/format.h"

namespace muster::bench {
namespace {

using core::test::MakeNode;
using core::test::MakePod;
using core::test::MakePodGroup;

constexpr int kNodes = 5000;
constexpr int kGpusPerNode = 8;
constexpr char kNamespace[] = "gpu-jobs";
constexpr char kInstanceTypeLabel[] = "node.kubernetes.io/instance-type";
const std::vector<std::string>& InstanceTypes() {
  static const auto* types = new std::vector<std::string>{"p4d.24xlarge", "p5.48xlarge",
                                                          "a3-highgpu-8g", "nd96amsr-a100-v4"};
  return *types;
}

std::unique_ptr<core::Cluster> BuildGpuFleet() {
  auto cluster = std::make_unique<core::Cluster>();
  const auto& types = InstanceTypes();
  for (int i = 0; i < kNodes; ++i) {
    cluster->UpsertNode(MakeNode(fmt::format("gpu-node-{:05d}", i))
                            .Cpu("64")
                            .Memory("512Gi")
                            .Pods(110)
                            .Gpus(kGpusPerNode)
                            .Label(kInstanceTypeLabel, types[i % types.size()])
                            .Taint(api::kGpuResource, "present", "NoSchedule")
                            .Obj());
  }
  return cluster;
}

struct Gang {
  std::string name;
  int size = 0;
};

// Adds a pending gang (PodGroup minMember = size, Inqueue) whose pods require `instance_type`.
Gang AddGang(core::Cluster& cluster, const std::string& name, int size,
             const std::string& instance_type) {
  cluster.UpsertPodGroup(MakePodGroup(kNamespace, name).MinMember(size).Phase("Inqueue").Obj());
  for (int i = 0; i < size; ++i) {
    cluster.UpsertPod(MakePod(kNamespace, fmt::format("{}-{}", name, i))
                          .Gpus(1)
                          .Req("cpu", "4")
                          .Req("memory", "32Gi")
                          .Toleration(api::kGpuResource, "Exists", "", "NoSchedule")
                          .RequiredNodeAffinity(kInstanceTypeLabel, "In", {instance_type})
                          .Group(name)
                          .Obj());
  }
  return {name, size};
}

void RemoveGang(core::Cluster& cluster, const Gang& gang) {
  for (int i = 0; i < gang.size; ++i) {
    cluster.RemovePod(kNamespace, fmt::format("{}-{}", gang.name, i));
  }
  cluster.RemovePodGroup(kNamespace, gang.name);
}

// Stamps the moment a gang's last pod is allocated (ReadyTaskNum reaches minMember).
core::EventHandler GangDoneObserver(core::Cluster& cluster,
                                    std::vector<std::chrono::steady_clock::time_point>& stamps) {
  core::EventHandler h;
  h.on_allocate = [&cluster, &stamps](const core::TaskInfo& t) {
    if (t.job < 0 || t.status != core::TaskStatus::kAllocated) return;
    const core::JobInfo& j = cluster.job(t.job);
    if (j.ReadyTaskNum() == j.min_available) stamps.push_back(std::chrono::steady_clock::now());
  };
  return h;
}

void BM_GpuGangThroughput(benchmark::State& state) {
  const int gang_size = static_cast<int>(state.range(0));
  const int gangs = static_cast<int>(state.range(1));
  const auto& types = InstanceTypes();
  const core::SchedulerConf& conf = core::DefaultSchedulerConf();
  CycleStats sum;
  std::vector<double> gaps_us;
  for (auto _ : state) {
    std::unique_ptr<core::Cluster> cluster = BuildGpuFleet();
    for (int g = 0; g < gangs; ++g) {
      AddGang(*cluster, fmt::format("gang{}-{:05d}", gang_size, g), gang_size,
              types[g % types.size()]);
    }
    std::vector<std::chrono::steady_clock::time_point> stamps;
    stamps.reserve(gangs);
    RunOptions options;
    options.want_binds = static_cast<int64_t>(gangs) * gang_size;
    options.observer = GangDoneObserver(*cluster, stamps);
    CycleStats stats = RunUntilBound(*cluster, conf, options);
    if (stats.binds != options.want_binds) {
      state.SkipWithError(fmt::format("bound {} of {} pods in {} cycles", stats.binds,
                                      options.want_binds, stats.cycles)
                              .c_str());
      break;
    }
    state.SetIterationTime(stats.total_seconds());
    for (size_t i = 1; i < stamps.size(); ++i) {
      gaps_us.push_back(
          std::chrono::duration<double, std::micro>(stamps[i] - stamps[i - 1]).count());
    }
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
  state.counters["gap_p50_us"] = Percentile(gaps_us, 50);
  state.counters["gap_p99_us"] = Percentile(gaps_us, 99);
}

BENCHMARK(BM_GpuGangThroughput)
    ->ArgNames({"gang_size", "gangs"})
    ->Args({8, 2500})  // 20,000 pods: half the fleet's GPUs
    ->Args({64, 312})  // 19,968 pods
    ->UseManualTime()
    ->Iterations(2)
    ->Unit(benchmark::kMillisecond);

void BM_GpuGangDecision(benchmark::State& state) {
  const int gang_size = static_cast<int>(state.range(0));
  const auto& types = InstanceTypes();
  const core::SchedulerConf& conf = core::DefaultSchedulerConf();

  // Fill half the GPUs, half of that in gangs of 64 and half in gangs of 8, four instance types
  // in turn, placed by the scheduler itself.
  std::unique_ptr<core::Cluster> cluster = BuildGpuFleet();
  std::deque<Gang> live8, live64;
  const int fill_gpus = kNodes * kGpusPerNode / 2;
  for (int g = 0; g < fill_gpus / 2 / 64; ++g) {
    live64.push_back(
        AddGang(*cluster, fmt::format("fill64-{:05d}", g), 64, types[g % types.size()]));
  }
  for (int g = 0; g < fill_gpus / 2 / 8; ++g) {
    live8.push_back(AddGang(*cluster, fmt::format("fill8-{:05d}", g), 8, types[g % types.size()]));
  }
  RunOptions fill;
  fill.want_binds =
      static_cast<int64_t>(live64.size()) * 64 + static_cast<int64_t>(live8.size()) * 8;
  CycleStats filled = RunUntilBound(*cluster, conf, fill);
  if (filled.binds != fill.want_binds) {
    state.SkipWithError(
        fmt::format("fill bound {} of {} pods", filled.binds, fill.want_binds).c_str());
    return;
  }
  std::deque<Gang>& live = gang_size == 64 ? live64 : live8;

  std::vector<double> cycle_ms, cycle_cpu_ms, decided_ms;
  std::vector<std::chrono::steady_clock::time_point> stamps;
  core::EventHandler observer = GangDoneObserver(*cluster, stamps);
  int submitted = 0;
  for (auto _ : state) {
    Gang gang = AddGang(*cluster, fmt::format("gang{}-{:05d}", gang_size, submitted), gang_size,
                        types[submitted % types.size()]);
    ++submitted;
    stamps.clear();
    core::SessionOptions so;
    so.session_id = fmt::format("cycle-{}", submitted);
    const double cpu_start = ThreadCpuSeconds();
    const auto start = std::chrono::steady_clock::now();
    core::CycleResult result;
    {
      core::Session ssn(*cluster, conf, so);
      ssn.AddEventHandler(observer);
      result = ssn.Run();
    }
    const double seconds = SecondsSince(start);
    const double cpu_seconds = ThreadCpuSeconds() - cpu_start;
    if (static_cast<int>(result.binds.size()) != gang_size || stamps.size() != 1) {
      state.SkipWithError(
          fmt::format("gang {} got {} binds, want {}", gang.name, result.binds.size(), gang_size)
              .c_str());
      break;
    }
    state.SetIterationTime(seconds);
    cycle_ms.push_back(seconds * 1e3);
    cycle_cpu_ms.push_back(cpu_seconds * 1e3);
    decided_ms.push_back(std::chrono::duration<double, std::milli>(stamps[0] - start).count());
    core::ApplyCycleResult(*cluster, result);
    RemoveGang(*cluster, live.front());
    live.pop_front();
    live.push_back(gang);
  }
  if (cycle_ms.empty()) return;
  state.counters["fill_pods"] = static_cast<double>(filled.binds);
  state.counters["cycle_p50_ms"] = Percentile(cycle_ms, 50);
  state.counters["cycle_p99_ms"] = Percentile(cycle_ms, 99);
  state.counters["cycle_cpu_p50_ms"] = Percentile(cycle_cpu_ms, 50);
  state.counters["cycle_cpu_p99_ms"] = Percentile(cycle_cpu_ms, 99);
  state.counters["decided_p50_ms"] = Percentile(decided_ms, 50);
  state.counters["decided_p99_ms"] = Percentile(decided_ms, 99);
  state.counters["pods_per_s"] = static_cast<double>(gang_size) *
                                 static_cast<double>(cycle_ms.size()) /
                                 (std::accumulate(cycle_ms.begin(), cycle_ms.end(), 0.0) / 1e3);
}

BENCHMARK(BM_GpuGangDecision)
    ->ArgName("gang_size")
    ->Arg(8)
    ->Arg(64)
    ->UseManualTime()
    ->Iterations(200)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace muster::bench

BENCHMARK_MAIN();
