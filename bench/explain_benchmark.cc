// Explain: how long `muster explain` takes to answer (core::Explain, the analysis and the forward
// simulation through the engine; reading the cluster from the API is not timed) with 10,000
// pending pods on 1,000 nodes. A plain driver that prints its figures.
//
// Shape: 1,000 nodes of 8 GPUs (cpu 64, memory 512Gi, 110 pods), every GPU held by a running
// one-GPU pod with a muster.dev/expected-runtime of a whole number of minutes, 1 to 60, drawn
// from a seeded generator, and started up to 10 minutes ago. Pending: 1,250 gangs of 8 one-GPU
// pods (10,000 pods; PodGroups Inqueue in queue "default", each pod expected to run 30 minutes),
// created one second apart. Volcano's default configuration. Explained: the first gang in the
// queue, the 100th and the last (1,250th); each is explained `--repeat` times on the same
// cluster (Explain leaves it as it was) and the median and worst are printed with the thread
// CPU time and the estimate.
//
// Usage: explain_benchmark [--nodes=N] [--gangs=N] [--repeat=N]   (defaults 1000, 1250, 5)

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "api/time.h"
#include "bench/bench_support.h"
#include "core/explain/explain.h"
#include "core/testing/builders.h"
#include "fmt/format.h"

namespace muster::bench {
namespace {

using core::test::MakeNode;
using core::test::MakePod;
using core::test::MakePodGroup;

constexpr int64_t kBenchNow = 1'800'000'000;
constexpr int kGangSize = 8;
constexpr int kGpusPerNode = 8;
// Expected runtimes of the running pods, minutes: longer than their age, so none is overdue.
constexpr int kShortestMinutes = 11, kLongestMinutes = 70;

struct Flags {
  int nodes = 1000;
  int gangs = 1250;
  int repeat = 5;
};

bool ParseFlags(int argc, char** argv, Flags& flags) {
  for (int i = 1; i < argc; ++i) {
    const char* arg = argv[i];
    if (std::strncmp(arg, "--nodes=", 8) == 0) {
      flags.nodes = std::atoi(arg + 8);
    } else if (std::strncmp(arg, "--gangs=", 8) == 0) {
      flags.gangs = std::atoi(arg + 8);
    } else if (std::strncmp(arg, "--repeat=", 9) == 0) {
      flags.repeat = std::atoi(arg + 9);
    } else {
      std::fprintf(stderr, "usage: %s [--nodes=N] [--gangs=N] [--repeat=N]\nunknown argument: %s\n",
                   argv[0], arg);
      return false;
    }
  }
  if (flags.nodes < 1 || flags.gangs < 1 || flags.repeat < 1) {
    std::fprintf(stderr, "--nodes, --gangs and --repeat must be positive\n");
    return false;
  }
  return true;
}

std::string GangName(int g) { return fmt::format("gang-{:05d}", g); }

void Build(core::Cluster& cluster, const Flags& flags) {
  std::mt19937 rng(15);
  std::uniform_int_distribution<int> minutes(kShortestMinutes, kLongestMinutes), age(0, 600);
  for (int n = 0; n < flags.nodes; ++n) {
    std::string node = fmt::format("node-{:05d}", n);
    cluster.UpsertNode(MakeNode(node).Cpu("64").Memory("512Gi").Gpus(kGpusPerNode).Pods(110).Obj());
    for (int k = 0; k < kGpusPerNode; ++k) {
      cluster.UpsertPod(MakePod("running", fmt::format("{}-{}", node, k))
                            .Gpus(1)
                            .Req("cpu", "4")
                            .Req("memory", "32Gi")
                            .RunningOn(node)
                            .Started(api::FormatUnixTime(kBenchNow - age(rng)))
                            .ExpectedRuntime(fmt::format("{}m", minutes(rng)))
                            .Obj());
    }
  }
  for (int g = 0; g < flags.gangs; ++g) {
    std::string created = api::FormatUnixTime(kBenchNow - 2 * flags.gangs + g);
    cluster.UpsertPodGroup(MakePodGroup("queued", GangName(g))
                               .MinMember(kGangSize)
                               .Phase("Inqueue")
                               .Created(created)
                               .Obj());
    for (int i = 0; i < kGangSize; ++i) {
      cluster.UpsertPod(MakePod("queued", fmt::format("{}-{}", GangName(g), i))
                            .Group(GangName(g))
                            .Gpus(1)
                            .Req("cpu", "4")
                            .Req("memory", "32Gi")
                            .ExpectedRuntime("30m")
                            .Created(created)
                            .Obj());
    }
  }
}

int Run(const Flags& flags) {
  core::Cluster cluster;
  auto build_start = std::chrono::steady_clock::now();
  Build(cluster, flags);
  fmt::print("explain_benchmark: {} nodes x {} GPUs all busy, {} gangs x {} pending pods "
             "({} pods); built in {:.2f} s\n",
             flags.nodes, kGpusPerNode, flags.gangs, kGangSize, flags.gangs * kGangSize,
             SecondsSince(build_start));
  core::ExplainOptions options;
  options.now_unix = kBenchNow;
  for (int position : {1, 100, flags.gangs}) {
    if (position > flags.gangs) continue;
    std::string key = "queued/" + GangName(position - 1);
    std::vector<double> wall, cpu;
    std::string estimate, blocking;
    for (int r = 0; r < flags.repeat; ++r) {
      auto start = std::chrono::steady_clock::now();
      double cpu_start = ThreadCpuSeconds();
      auto e = core::Explain(cluster, core::DefaultSchedulerConf(), key, options);
      cpu.push_back(ThreadCpuSeconds() - cpu_start);
      wall.push_back(SecondsSince(start));
      if (!e.ok()) {
        fmt::print(stderr, "explain {}: {}\n", key, std::string(e.status().message()));
        return 1;
      }
      estimate = e->estimate;
      blocking = fmt::format("{} pods in the blocking set, position {} of {}", e->blocking.size(),
                             e->position, e->waiting_in_queue);
    }
    fmt::print("  gang at position {:>5}: explain p50 {:.3f} s, max {:.3f} s (cpu p50 {:.3f} s); "
               "{}; {}\n",
               position, Percentile(wall, 50), Percentile(wall, 100), Percentile(cpu, 50),
               blocking, estimate);
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
