// Large cluster: 15,000 nodes and 30,000 pods in one process, for throughput and, above all,
// peak memory. A plain driver rather than Google Benchmark, because the figure that matters is
// this process's own high-water mark (VmHWM), so it must run alone and once.
//
// Shape: scheduler_perf's default node (cpu 4, memory 32Gi, 110 pods) and pod (cpu 100m,
// memory 500Mi), every pod in its own one-member PodGroup (Inqueue, queue "default"), Volcano's
// default configuration. All pods are pending at the start; cycles run, binds written back, until
// every pod is bound.
//
// Usage: large_cluster_benchmark [--nodes=N] [--pods=N]   (defaults 15000 and 30000)

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "bench/bench_support.h"
#include "core/testing/builders.h"
#include "fmt/format.h"

namespace muster::bench {
namespace {

using core::test::MakeNode;
using core::test::MakePod;
using core::test::MakePodGroup;

constexpr char kNamespace[] = "large";
constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kTargetPeakMiB = 1024.0;

struct Flags {
  int nodes = 15000;
  int pods = 30000;
};

bool ParseFlags(int argc, char** argv, Flags& flags) {
  for (int i = 1; i < argc; ++i) {
    const char* arg = argv[i];
    if (std::strncmp(arg, "--nodes=", 8) == 0) {
      flags.nodes = std::atoi(arg + 8);
    } else if (std::strncmp(arg, "--pods=", 7) == 0) {
      flags.pods = std::atoi(arg + 7);
    } else {
      std::fprintf(stderr, "usage: %s [--nodes=N] [--pods=N]\nunknown argument: %s\n", argv[0],
                   arg);
      return false;
    }
  }
  if (flags.nodes < 1 || flags.pods < 1) {
    std::fprintf(stderr, "--nodes and --pods must be positive\n");
    return false;
  }
  return true;
}

int Run(const Flags& flags) {
  const int64_t rss_at_start = CurrentRssBytes();
  auto start = std::chrono::steady_clock::now();
  auto cluster = std::make_unique<core::Cluster>();
  for (int i = 0; i < flags.nodes; ++i) {
    cluster->UpsertNode(
        MakeNode(fmt::format("node-{:05d}", i)).Cpu("4").Memory("32Gi").Pods(110).Obj());
  }
  for (int i = 0; i < flags.pods; ++i) {
    std::string name = fmt::format("pod-{:05d}", i);
    cluster->UpsertPodGroup(MakePodGroup(kNamespace, "pg-" + name).Phase("Inqueue").Obj());
    cluster->UpsertPod(MakePod(kNamespace, name)
                           .Req("cpu", "100m")
                           .Req("memory", "500Mi")
                           .Group("pg-" + name)
                           .Obj());
  }
  const double build_seconds = SecondsSince(start);
  const int64_t rss_after_build = CurrentRssBytes();

  RunOptions options;
  options.want_binds = flags.pods;
  CycleStats stats = RunUntilBound(*cluster, core::DefaultSchedulerConf(), options);
  const int64_t rss_after_run = CurrentRssBytes();
  const int64_t peak = PeakRssBytes();

  std::printf("large_cluster: %d nodes, %d pods (Volcano default conf, one thread)\n", flags.nodes,
              flags.pods);
  std::printf("  build cluster        %10.3f s\n", build_seconds);
  std::printf("  cycles               %10d\n", stats.cycles);
  std::printf("  pods bound           %10lld of %d\n", static_cast<long long>(stats.binds),
              flags.pods);
  std::printf("  session time         %10.3f s\n", stats.session_seconds);
  std::printf("  bind write-back      %10.3f s\n", stats.apply_seconds);
  std::printf("  throughput           %10.0f pods/s (cycles + write-back)\n",
              static_cast<double>(stats.binds) / stats.total_seconds());
  std::printf("  RSS at start         %10.1f MiB\n", static_cast<double>(rss_at_start) / kMiB);
  std::printf("  RSS after build      %10.1f MiB\n", static_cast<double>(rss_after_build) / kMiB);
  std::printf("  RSS after cycles     %10.1f MiB\n", static_cast<double>(rss_after_run) / kMiB);
  std::printf("  peak RSS (VmHWM)     %10.1f MiB (target <= %.0f MiB: %s)\n",
              static_cast<double>(peak) / kMiB, kTargetPeakMiB,
              static_cast<double>(peak) / kMiB <= kTargetPeakMiB ? "met" : "MISSED");
  if (stats.binds != flags.pods) {
    std::fprintf(stderr, "large_cluster: only %lld of %d pods were bound\n",
                 static_cast<long long>(stats.binds), flags.pods);
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace muster::bench

int main(int argc, char** argv) {
  muster::bench::Flags flags;
  if (!muster::bench::ParseFlags(argc, argv, flags)) return 2;
  return muster::bench::Run(flags);
}
