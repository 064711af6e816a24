// Store write, read and watch fan-out costs, with the default durability (WAL,
// synchronous=NORMAL: safe against a crash of the process; see StoreOptions). With
// fsync_every_commit the create figures would be the disk's fsync rate; run on the disk you care
// about (TMPDIR selects it).

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "benchmark/benchmark.h"
#include "boost/json/serialize.hpp"
#include "boost/json/value.hpp"
#include "fmt/format.h"
#include "store/store.h"

namespace muster::store {
namespace {

class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern =
        (std::filesystem::path(base != nullptr ? base : "/tmp") / "muster-store-bench-XXXXXX")
            .string();
    if (mkdtemp(pattern.data()) == nullptr) std::abort();
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  std::string File(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// A pod of about 2 KB of JSON: the size of a typical Volcano job task pod.
boost::json::value Pod(const std::string& name) {
  boost::json::array env;
  for (int i = 0; i < 16; ++i) {
    env.push_back({{"name", fmt::format("ENV_VAR_{}", i)}, {"value", "some-configuration-value"}});
  }
  return boost::json::object{
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", name},
        {"namespace", "default"},
        {"uid", "6f1c2a3e-0a4b-4c5d-8e9f-0123456789ab"},
        {"creationTimestamp", "2024-01-01T00:00:00Z"},
        {"labels", {{"volcano.sh/job-name", "train"}, {"volcano.sh/task-spec", "worker"}}},
        {"annotations",
         {{"scheduling.k8s.io/group-name", "train-pg"},
          {"volcano.sh/job-version", "0"},
          {"volcano.sh/task-spec", "worker"}}},
        {"ownerReferences",
         {{{"apiVersion", "batch.volcano.sh/v1alpha1"},
           {"kind", "Job"},
           {"name", "train"},
           {"uid", "1a2b3c4d-0000-1111-2222-333344445555"},
           {"controller", true}}}}}},
      {"spec",
       {{"schedulerName", "volcano"},
        {"restartPolicy", "Never"},
        {"containers",
         {{{"name", "worker"},
           {"image", "nvcr.io/nvidia/pytorch:24.01-py3"},
           {"command", {"torchrun", "--nnodes=4", "--nproc_per_node=8", "train.py"}},
           {"env", std::move(env)},
           {"resources",
            {{"requests", {{"cpu", "32"}, {"memory", "256Gi"}, {"nvidia.com/gpu", "8"}}},
             {"limits", {{"cpu", "32"}, {"memory", "256Gi"}, {"nvidia.com/gpu", "8"}}}}},
           {"volumeMounts", {{{"name", "data"}, {"mountPath", "/data"}}}}}}},
        {"volumes", {{{"name", "data"}, {"hostPath", {{"path", "/mnt/data"}}}}}},
        {"tolerations",
         {{{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}}}}}},
      {"status", {{"phase", "Pending"}}}};
}

Key PodKey(const std::string& name) {
  return Key{.resource = "pods", .ns = "default", .name = name};
}

Op CreatePod(const std::string& name) {
  return Op{.kind = OpKind::kCreate,
            .key = PodKey(name),
            .object = Pod(name),
            .expected_revision = std::nullopt,
            .managed_fields = std::nullopt};
}

// Single-op commits: one fsync per create. Argument: number of watchers of pods.
void BM_CreatePod(benchmark::State& state) {
  TempDir dir;
  std::unique_ptr<Store> store = *Store::Open(dir.File("db"));
  std::vector<std::unique_ptr<Watch>> watches;
  for (int i = 0; i < state.range(0); ++i) watches.push_back(*store->WatchFrom("pods", "", 0));
  int64_t n = 0;
  for (auto _ : state) {
    state.PauseTiming();
    std::vector<Op> ops;
    ops.push_back(CreatePod(fmt::format("pod-{}", n++)));
    state.ResumeTiming();
    if (!store->Commit(std::move(ops)).ok()) state.SkipWithError("commit failed");
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["json_bytes"] = static_cast<double>(boost::json::serialize(Pod("pod-0")).size());
}
BENCHMARK(BM_CreatePod)->Arg(0)->Arg(1000)->Unit(benchmark::kMicrosecond)->UseRealTime();

// Batched commits of `range(0)` creates: one fsync per batch.
void BM_CreatePodBatch(benchmark::State& state) {
  TempDir dir;
  std::unique_ptr<Store> store = *Store::Open(dir.File("db"));
  int64_t n = 0;
  for (auto _ : state) {
    state.PauseTiming();
    std::vector<Op> ops;
    for (int i = 0; i < state.range(0); ++i) ops.push_back(CreatePod(fmt::format("pod-{}", n++)));
    state.ResumeTiming();
    if (!store->Commit(std::move(ops)).ok()) state.SkipWithError("commit failed");
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_CreatePodBatch)->Arg(10)->Arg(100)->Unit(benchmark::kMicrosecond)->UseRealTime();

// Single-op updates of `range(0)` stored pods in turn, as a cluster's status writes come: the
// steady stream under which SQLite's WAL checkpoints copy the same pages again. CPU time of the
// writing thread (the one that runs SQLite), so that other load on the machine counts less.
void BM_UpdatePod(benchmark::State& state) {
  TempDir dir;
  std::unique_ptr<Store> store = *Store::Open(dir.File("db"));
  const int64_t pods = state.range(0);
  std::vector<int64_t> revisions(static_cast<size_t>(pods));
  for (int64_t i = 0; i < pods; i += 100) {
    std::vector<Op> ops;
    for (int64_t j = i; j < std::min(pods, i + 100); ++j) {
      ops.push_back(CreatePod(fmt::format("pod-{}", j)));
    }
    absl::StatusOr<std::vector<Object>> created = store->Commit(std::move(ops));
    if (!created.ok()) state.SkipWithError("create failed");
    for (const Object& o : *created) {
      revisions[static_cast<size_t>(std::stoll(o.key.name.substr(4)))] = o.revision;
    }
  }
  int64_t n = 0;
  for (auto _ : state) {
    state.PauseTiming();
    const size_t i = static_cast<size_t>(n % pods);
    Op op = CreatePod(fmt::format("pod-{}", i));
    op.kind = OpKind::kUpdate;
    op.object.as_object()["status"].as_object()["phase"] = fmt::format("Running-{}", n++);
    op.expected_revision = revisions[i];
    std::vector<Op> ops;
    ops.push_back(std::move(op));
    state.ResumeTiming();
    absl::StatusOr<std::vector<Object>> updated = store->Commit(std::move(ops));
    if (!updated.ok()) {
      state.SkipWithError("update failed");
      break;
    }
    revisions[i] = (*updated)[0].revision;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_UpdatePod)->Arg(8000)->Unit(benchmark::kMicrosecond)->Iterations(100000);

void BM_Get(benchmark::State& state) {
  TempDir dir;
  std::unique_ptr<Store> store = *Store::Open(dir.File("db"));
  constexpr int kPods = 10000;
  for (int b = 0; b < kPods / 100; ++b) {
    std::vector<Op> ops;
    for (int i = 0; i < 100; ++i) ops.push_back(CreatePod(fmt::format("pod-{}", b * 100 + i)));
    if (!store->Commit(std::move(ops)).ok()) state.SkipWithError("commit failed");
  }
  int64_t n = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(store->Get(PodKey(fmt::format("pod-{}", n++ % kPods))));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Get);

// Fan-out: `range(0)` watcher threads each receive every event of 100-op commits.
void BM_WatchFanout(benchmark::State& state) {
  TempDir dir;
  std::unique_ptr<Store> store = *Store::Open(dir.File("db"));
  const int watchers = static_cast<int>(state.range(0));
  constexpr int kBatch = 100;
  int64_t n = 0;
  for (auto _ : state) {
    state.PauseTiming();
    std::vector<std::unique_ptr<Watch>> watches;
    for (int i = 0; i < watchers; ++i) watches.push_back(*store->WatchFrom("pods", "", 0));
    std::vector<Op> ops;
    for (int i = 0; i < kBatch; ++i) ops.push_back(CreatePod(fmt::format("pod-{}", n++)));
    std::vector<std::thread> threads;
    for (int i = 0; i < watchers; ++i) {
      threads.emplace_back([&watch = *watches[i]] {
        for (int e = 0; e < kBatch; ++e) {
          if (!watch.Next(std::chrono::seconds(60)).ok()) return;
        }
      });
    }
    state.ResumeTiming();
    if (!store->Commit(std::move(ops)).ok()) state.SkipWithError("commit failed");
    for (std::thread& t : threads) t.join();
  }
  state.SetItemsProcessed(state.iterations() * kBatch * watchers);
}
BENCHMARK(BM_WatchFanout)->Arg(100)->Arg(1000)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace muster::store

BENCHMARK_MAIN();
