// `muster up` end to end: exactly what `muster up` runs (cmd::LocalCluster: the API server and
// its SQLite store, the node agents, the Volcano job controller and the scheduler, sharing one
// in-process client), with 1,000 simulated nodes of 8 GPUs, then 1,250 Volcano Jobs of 8 one-GPU
// replicas (minAvailable 8, schedulerName volcano, simulated pods that run until deleted) created
// as fast as the submitting threads can. Every pod goes the whole way: Job -> PodGroup (controller)
// -> Inqueue (scheduler) -> pods (controller) -> bound as a gang (scheduler) -> Running (node
// agent) -> Job Running (controller).
//
// 10,000 pods do not fit on 8,000 GPUs at once, so the run has two phases:
//   1. all Jobs created: the 1,000 gangs that fit are bound and run, 250 wait (the headline
//      figure: pods bound per second from the first create to the last of those 8,000 binds);
//   2. the first 250 running Jobs are deleted (as `kubectl delete vcjob` does); garbage collection
//      removes their pods, the node agents confirm, and the waiting gangs are bound: the time from
//      the deletes to the last bind, and from the first create to the 10,000th bind.
// Also: the time until every pod runs and every Job is Running, the scheduler's per-cycle latency
// (p50/p99/longest of the whole cycle, and of the session alone), store writes per pod, process
// CPU time and peak RSS (VmHWM, so it runs as its own process), and how much CPU the machine gave
// (two spinning threads, just before). Afterwards it checks through the API that no node holds
// more than 8 GPUs and no gang is partly bound; exit status 1 when any check fails.
//
// Usage: up_benchmark [--nodes=N] [--jobs=N] [--replicas=N] [--threads=N] [--submit=local|http]
//                     [--timeout=SECONDS]
//   defaults: 1000 nodes, 1250 jobs, 8 replicas, 4 threads, local (a client on the in-process
//   transport, as the components use); http submits through the kubeconfig `muster up` writes, as
//   kubectl would. --jobs=1000 is phase 1 alone with every gang fitting.

#include <stdlib.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "apiserver/apiserver.h"
#include "apiserver/local_transport.h"
#include "bench/bench_support.h"
#include "boost/json/parse.hpp"
#include "client/client.h"
#include "client/http_transport.h"
#include "cmd/cluster.h"
#include "fmt/format.h"
#include "node/cluster_file.h"
#include "store/store.h"

namespace muster::bench {
namespace {

namespace json = boost::json;
using Clock = std::chrono::steady_clock;

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kTargetPodsPerSecond = 2000.0;

struct Flags {
  int nodes = 1000;
  int jobs = 1250;
  int replicas = 8;
  int threads = 4;
  bool http = false;
  int timeout_s = 300;
};

bool ParseFlags(int argc, char** argv, Flags& f) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const char* name, int& out) {
      std::string prefix = std::string(name) + "=";
      if (arg.rfind(prefix, 0) != 0) return false;
      out = std::atoi(arg.c_str() + prefix.size());
      return true;
    };
    if (value("--nodes", f.nodes) || value("--jobs", f.jobs) || value("--replicas", f.replicas) ||
        value("--threads", f.threads) || value("--timeout", f.timeout_s)) {
      continue;
    }
    if (arg == "--submit=local" || arg == "--submit=http") {
      f.http = arg == "--submit=http";
      continue;
    }
    std::fprintf(stderr,
                 "usage: %s [--nodes=N] [--jobs=N] [--replicas=N] [--threads=N] "
                 "[--submit=local|http] [--timeout=SECONDS]\nunknown argument: %s\n",
                 argv[0], arg.c_str());
    return false;
  }
  if (f.nodes < 1 || f.jobs < 1 || f.replicas < 1 || f.replicas > 8 || f.threads < 1 ||
      f.timeout_s < 1) {
    std::fprintf(stderr,
                 "--nodes, --jobs, --threads and --timeout must be positive, --replicas 1 to 8\n");
    return false;
  }
  return true;
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
double Ms(std::chrono::microseconds d) { return static_cast<double>(d.count()) / 1000.0; }

double ProcessCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// How much CPU this machine gives right now: two threads spin for `window`; the CPU time they got
// over the wall time (2.0 on two idle cores). On a shared or throttled machine the end-to-end
// figures scale with it, so it is printed with them.
double ProbeCores(std::chrono::milliseconds window) {
  double cpu[2] = {0, 0};
  std::vector<std::thread> spinners;
  for (int i = 0; i < 2; ++i) {
    spinners.emplace_back([&cpu, i, window] {
      const double start = ThreadCpuSeconds();
      const Clock::time_point end = Clock::now() + window;
      volatile uint64_t x = 0;
      while (Clock::now() < end) {
        for (int k = 0; k < 10000; ++k) x = x + 1;
      }
      cpu[i] = ThreadCpuSeconds() - start;
    });
  }
  for (auto& t : spinners) t.join();
  return (cpu[0] + cpu[1]) / std::chrono::duration<double>(window).count();
}

// The nodes as a cluster file (docs/cluster-file.md): `muster up --config` with the same text
// runs the same cluster.
std::string ClusterFile(int nodes) {
  return fmt::format(R"(nodePools:
  - name: gpu
    count: {}
    labels: {{node.kubernetes.io/instance-type: p4d.24xlarge}}
    allocatable: {{cpu: "96", memory: 1152Gi, pods: 110}}
    gpu: {{count: 8, model: NVIDIA-A100-SXM4-40GB, memory: 40960Mi}}
    runtime: simulated
)",
                     nodes);
}

// A Volcano Job as a user submits it: one task of `replicas` one-GPU workers, all or nothing.
json::object JobObject(const std::string& name, int replicas) {
  return json::parse(fmt::format(R"({{
    "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
    "metadata": {{"name": "{}"}},
    "spec": {{"minAvailable": {}, "schedulerName": "volcano", "queue": "default",
      "tasks": [{{"name": "worker", "replicas": {}, "template": {{"spec": {{
        "restartPolicy": "Never",
        "containers": [{{"name": "worker", "image": "pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime",
          "command": ["python", "train.py"],
          "resources": {{"requests": {{"cpu": "4", "memory": "32Gi"}},
                         "limits": {{"cpu": "4", "memory": "32Gi", "nvidia.com/gpu": 1}}}}}}]}}}}}}]}}}})",
                                 name, replicas, replicas))
      .as_object();
}

std::string Str(const json::object& o, std::initializer_list<const char*> path) {
  const json::value* v = nullptr;
  const json::object* at = &o;
  for (const char* key : path) {
    if (at == nullptr) return "";
    v = at->if_contains(key);
    if (v == nullptr) return "";
    at = v->if_object();
  }
  return v != nullptr && v->is_string() ? std::string(v->get_string()) : "";
}

// Runs submit(thread, i) for i in [0, n), spread over `threads` threads; false (once the calls
// under way have returned) as soon as one returns false.
template <typename F>
bool Parallel(int n, int threads, F submit) {
  std::atomic<bool> failed{false};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (int i = t; i < n && !failed; i += threads) {
        if (!submit(t, i)) failed = true;
      }
    });
  }
  for (auto& w : workers) w.join();
  return !failed;
}

struct Progress {
  cmd::LocalCluster& cluster;
  Clock::time_point start;
  Clock::time_point next_report;
  const std::atomic<int>* created;

  // Polls until `done` or the deadline, the scheduler's counters every millisecond and the node
  // agents' every 10 ms (they count GPUs node by node); a line on stderr every second. Returns
  // when `done` held (its time), or time_point{} on timeout.
  template <typename Done>
  Clock::time_point Until(Clock::time_point deadline, Done done) {
    node::NodeAgentStats n = cluster.agent().Stats();
    Clock::time_point agent_read = Clock::now();
    while (Clock::now() < deadline) {
      Clock::time_point now = Clock::now();
      scheduler::SchedulerStats s = cluster.scheduler().Stats();
      if (now - agent_read >= std::chrono::milliseconds(10)) {
        n = cluster.agent().Stats();
        agent_read = now;
      }
      if (done(s, n)) return now;
      if (now >= next_report) {
        fmt::print(stderr,
                   "{:5.1f} s: jobs created {}, pods bound {}, running {} | cycles {} (last {:.1f} "
                   "ms), gangs waiting {}\n",
                   Seconds(now - start), created->load(), s.pods_bound, n.pods_running, s.cycles,
                   Ms(s.last_cycle), s.gangs_waiting);
        next_report += std::chrono::seconds(1);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return Clock::time_point{};
  }
};

int Run(const Flags& flags) {
  const int total_pods = flags.jobs * flags.replicas;
  // Simulated pods run until deleted, so only the gangs that fit at once are bound at first
  // (1,000 of 1,250 by default); the rest wait Pending until Jobs are deleted.
  const int fitting_jobs = std::min(flags.jobs, flags.nodes * 8 / flags.replicas);
  const int fitting_pods = fitting_jobs * flags.replicas;
  const int excess_jobs = flags.jobs - fitting_jobs;
  if (excess_jobs > fitting_jobs) {
    fmt::print(stderr, "{} Jobs: deleting {} of the first ones cannot make room for the other {}\n",
               flags.jobs, excess_jobs, excess_jobs);
    return 2;
  }
  auto nodes = node::ParseClusterFile(ClusterFile(flags.nodes));
  if (!nodes.ok()) {
    fmt::print(stderr, "cluster file: {}\n", std::string(nodes.status().message()));
    return 1;
  }
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = (std::filesystem::path(tmp ? tmp : "/tmp") / "muster-up-bench-XXXXXX");
  if (::mkdtemp(dir.data()) == nullptr) {
    fmt::print(stderr, "cannot create a temporary directory under {}\n", tmp ? tmp : "/tmp");
    return 1;
  }
  struct RemoveDir {
    std::string dir;
    ~RemoveDir() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } remove_dir{dir};

  fmt::print("muster up end to end: {} simulated nodes x 8 GPUs, {} Volcano Jobs x {} one-GPU "
             "replicas ({} pods), submitted by {} thread{} ({})\n",
             flags.nodes, flags.jobs, flags.replicas, total_pods, flags.threads,
             flags.threads == 1 ? "" : "s", flags.http ? "HTTP, kubeconfig" : "in-process client");
  double load[3] = {0, 0, 0};
  ::getloadavg(load, 3);
  fmt::print("machine: {} CPUs online, load average {:.2f} {:.2f} {:.2f}; two spinning threads get "
             "{:.2f} cores\n",
             std::thread::hardware_concurrency(), load[0], load[1], load[2],
             ProbeCores(std::chrono::milliseconds(500)));
  std::fflush(stdout);

  cmd::LocalClusterOptions options;
  options.data_dir = dir;
  options.listen = "127.0.0.1:0";
  options.nodes = *std::move(nodes);
  options.scheduler.log = [](std::string_view line) {
    fmt::print(stderr, "scheduler: {}\n", line);
  };
  Clock::time_point boot = Clock::now();
  auto started = cmd::LocalCluster::Start(std::move(options));
  if (!started.ok()) {
    fmt::print(stderr, "muster up: {}\n", std::string(started.status().message()));
    return 1;
  }
  cmd::LocalCluster& cluster = **started;
  if (!cluster.scheduler().WaitForSync(std::chrono::seconds(60))) {
    fmt::print(stderr, "the scheduler's informers did not sync\n");
    return 1;
  }
  const double boot_s = Seconds(Clock::now() - boot);
  const int64_t rss_booted = CurrentRssBytes();

  // The submitters' clients: in-process (as the components' own) or over HTTP.
  std::vector<std::unique_ptr<client::Client>> submitters;
  for (int t = 0; t < flags.threads; ++t) {
    if (flags.http) {
      auto config = client::LoadKubeconfig(cluster.server().kubeconfig_path());
      if (!config.ok()) {
        fmt::print(stderr, "kubeconfig: {}\n", std::string(config.status().message()));
        return 1;
      }
      auto transport = client::MakeHttpTransport(*config);
      if (!transport.ok()) {
        fmt::print(stderr, "HTTP transport: {}\n", std::string(transport.status().message()));
        return 1;
      }
      submitters.push_back(std::make_unique<client::Client>(*transport));
    } else {
      submitters.push_back(std::make_unique<client::Client>(
          std::make_shared<apiserver::LocalTransport>(cluster.server())));
    }
  }
  auto job_name = [](int j) { return fmt::format("train-{:04}", j); };
  std::vector<json::object> jobs;
  jobs.reserve(static_cast<size_t>(flags.jobs));
  for (int j = 0; j < flags.jobs; ++j) jobs.push_back(JobObject(job_name(j), flags.replicas));

  // Phase 1: every Job created at once; the gangs that fit are bound and run.
  const double cpu_before = ProcessCpuSeconds();
  const int64_t revision_before = cluster.server().store().Revision();
  std::atomic<int> created{0};
  Clock::time_point start = Clock::now();
  const Clock::time_point deadline = start + std::chrono::seconds(flags.timeout_s);
  Clock::time_point created_at{};
  std::thread submitting([&] {
    bool ok = Parallel(flags.jobs, flags.threads, [&](int t, int j) {
      auto r = submitters[static_cast<size_t>(t)]->Create(client::VolcanoJobs(), "default",
                                                           jobs[static_cast<size_t>(j)]);
      if (!r.ok()) {
        fmt::print(stderr, "creating Job {}: {}\n", job_name(j), std::string(r.status().message()));
        return false;
      }
      ++created;
      return true;
    });
    if (ok) created_at = Clock::now();
  });
  Progress progress{cluster, start, start + std::chrono::seconds(1), &created};
  const auto want_fitting = static_cast<uint64_t>(fitting_pods);
  Clock::time_point bound_at = progress.Until(deadline, [&](const auto& s, const auto&) {
    return s.pods_bound >= want_fitting;
  });
  Clock::time_point running_at = progress.Until(deadline, [&](const auto&, const auto& n) {
    return n.pods_running >= fitting_pods;
  });
  submitting.join();
  const double cpu_phase1 = ProcessCpuSeconds() - cpu_before;
  const int64_t writes_phase1 = cluster.server().store().Revision() - revision_before;
  const scheduler::SchedulerStats s1 = cluster.scheduler().Stats();
  if (created_at == Clock::time_point{} || bound_at == Clock::time_point{} ||
      running_at == Clock::time_point{}) {
    fmt::print(stderr, "up_benchmark: phase 1 did not complete: {} of {} Jobs created, {} of {} "
               "pods bound\n", created.load(), flags.jobs, s1.pods_bound, fitting_pods);
    return 1;
  }

  // Phase 2: the oldest Jobs are deleted (as `kubectl delete vcjob` does: background
  // propagation) to make room for the gangs still waiting; they are bound as GPUs come free.
  // Which gangs won the race for GPUs depends on the order the submitting threads' creates
  // landed in, so the Jobs to delete are the first running ones by name (untimed).
  std::vector<std::string> victims;
  if (excess_jobs > 0) {
    auto pods = submitters[0]->List(client::Pods(), "default");
    if (!pods.ok()) {
      fmt::print(stderr, "listing pods: {}\n", std::string(pods.status().message()));
      return 1;
    }
    std::set<std::string> bound_jobs;
    for (const json::object& pod : pods->items) {
      if (!Str(pod, {"spec", "nodeName"}).empty()) {
        bound_jobs.insert(Str(pod, {"metadata", "annotations", "volcano.sh/job-name"}));
      }
    }
    victims.assign(bound_jobs.begin(), bound_jobs.end());
    victims.resize(std::min(victims.size(), static_cast<size_t>(excess_jobs)));
  }
  Clock::time_point delete_at = Clock::now(), rebound_at{}, all_running_at{};
  if (excess_jobs > 0) {
    if (!Parallel(static_cast<int>(victims.size()), flags.threads, [&](int t, int j) {
          const std::string& name = victims[static_cast<size_t>(j)];
          absl::Status st =
              submitters[static_cast<size_t>(t)]->Delete(client::VolcanoJobs(), "default", name);
          if (!st.ok()) fmt::print(stderr, "deleting Job {}: {}\n", name, std::string(st.message()));
          return st.ok();
        })) {
      return 1;
    }
    rebound_at = progress.Until(deadline, [&](const auto& s, const auto&) {
      return s.pods_bound >= static_cast<uint64_t>(total_pods);
    });
    all_running_at = progress.Until(deadline, [&](const auto& s, const auto& n) {
      return n.pods_running >= fitting_pods && n.pods_pending == 0;
    });
  } else {
    rebound_at = bound_at;
    all_running_at = running_at;
  }
  const double cpu_used = ProcessCpuSeconds() - cpu_before;
  const scheduler::SchedulerStats s = cluster.scheduler().Stats();

  // Every remaining Job Running, as the controller reports it (checked every 50 ms).
  Clock::time_point jobs_running_at{};
  int jobs_running = 0;
  while (all_running_at != Clock::time_point{} && Clock::now() < deadline) {
    auto list = submitters[0]->List(client::VolcanoJobs(), "default");
    if (list.ok()) {
      jobs_running = 0;
      for (const json::object& job : list->items) {
        if (Str(job, {"status", "state", "phase"}) == "Running") ++jobs_running;
      }
      if (jobs_running == fitting_jobs) {
        jobs_running_at = Clock::now();
        break;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }

  // What the API holds: the remaining Jobs' pods all bound, each to GPU devices of its node that
  // no other pod there holds (the muster.dev/gpu-indices annotation of the binding), no gang split
  // between bound and unbound pods.
  int pods_listed = 0, pods_bound = 0, gpus_shared = 0, gangs_split = 0;
  {
    auto pods = submitters[0]->List(client::Pods(), "default");
    if (!pods.ok()) {
      fmt::print(stderr, "listing pods: {}\n", std::string(pods.status().message()));
      return 1;
    }
    std::set<std::pair<std::string, std::string>> devices;  // node, GPU index
    std::map<std::string, std::pair<int, int>> per_job;      // bound, all
    for (const json::object& pod : pods->items) {
      ++pods_listed;
      const std::string node = Str(pod, {"spec", "nodeName"});
      auto& job = per_job[Str(pod, {"metadata", "annotations", "volcano.sh/job-name"})];
      ++job.second;
      if (node.empty()) continue;
      ++pods_bound;
      ++job.first;
      const std::string gpus = Str(pod, {"metadata", "annotations", "muster.dev/gpu-indices"});
      bool own = !gpus.empty();
      for (size_t at = 0; own && at <= gpus.size();) {  // "3" or "0,1"
        const size_t comma = std::min(gpus.find(',', at), gpus.size());
        own = devices.emplace(node, gpus.substr(at, comma - at)).second;
        at = comma + 1;
      }
      if (!own) ++gpus_shared;
    }
    for (const auto& [job, counts] : per_job) {
      gangs_split += counts.first != 0 && counts.first != counts.second ? 1 : 0;
    }
  }
  const int64_t peak_rss = PeakRssBytes();
  cluster.Stop();

  const double phase1_s = Seconds(bound_at - start);
  fmt::print("start (API server, {} nodes registered, informers synced)  {:.2f} s, RSS {:.0f} MiB\n",
             flags.nodes, boot_s, static_cast<double>(rss_booted) / kMiB);
  fmt::print("jobs created                          {} in {:.2f} s ({:.0f} Jobs/s)\n", flags.jobs,
             Seconds(created_at - start), flags.jobs / std::max(1e-9, Seconds(created_at - start)));
  fmt::print("first create -> last bind that fits   {:.2f} s: {} pods, {:.0f} pods bound/s (target "
             ">= {:.0f}: {})\n",
             phase1_s, fitting_pods, fitting_pods / phase1_s, kTargetPodsPerSecond,
             fitting_pods / phase1_s >= kTargetPodsPerSecond ? "met" : "missed");
  fmt::print("first create -> last of those Running {:.2f} s; process CPU {:.2f} s ({:.2f} cores, "
             "{:.2f} ms per pod); {} store writes ({:.1f} per pod)\n",
             Seconds(running_at - start), cpu_phase1, cpu_phase1 / Seconds(running_at - start),
             cpu_phase1 * 1000.0 / fitting_pods, writes_phase1,
             static_cast<double>(writes_phase1) / fitting_pods);
  if (excess_jobs > 0) {
    fmt::print("{} Jobs deleted -> the {} waiting pods bound  {}\n", excess_jobs,
               total_pods - fitting_pods,
               rebound_at == Clock::time_point{}
                   ? std::string("NOT ALL BOUND")
                   : fmt::format("{:.2f} s", Seconds(rebound_at - delete_at)));
    if (rebound_at != Clock::time_point{}) {
      fmt::print("first create -> all {} pods bound   {:.2f} s: {:.0f} pods bound/s overall\n",
                 total_pods, Seconds(rebound_at - start),
                 total_pods / Seconds(rebound_at - start));
    }
  }
  if (all_running_at != Clock::time_point{}) {
    fmt::print("first create -> every pod Running     {:.2f} s; process CPU {:.2f} s\n",
               Seconds(all_running_at - start), cpu_used);
  }
  fmt::print("every remaining Job Running           {}\n",
             jobs_running_at == Clock::time_point{}
                 ? fmt::format("only {} of {}", jobs_running, fitting_jobs)
                 : fmt::format("{:.2f} s after the first create", Seconds(jobs_running_at - start)));
  fmt::print("scheduler, until those ran            {} cycles: whole cycle p50 {:.1f} ms, p99 {:.1f} "
             "ms, longest {:.1f} ms; session alone p50 {:.1f} ms, p99 {:.1f} ms\n",
             s1.cycles, Ms(s1.cycle_p50), Ms(s1.cycle_p99), Ms(s1.longest_cycle),
             Ms(s1.session_p50), Ms(s1.session_p99));
  fmt::print("scheduler, whole run                  {} cycles: whole cycle p50 {:.1f} ms, p99 {:.1f} "
             "ms, longest {:.1f} ms; session alone p50 {:.1f} ms, p99 {:.1f} ms\n",
             s.cycles, Ms(s.cycle_p50), Ms(s.cycle_p99), Ms(s.longest_cycle), Ms(s.session_p50),
             Ms(s.session_p99));
  fmt::print("scheduler writes                      {} binds, {} bind failures, {} write errors, {} "
             "events ({} dropped)\n",
             s.pods_bound, s.bind_failures, s.write_errors, s.events_written, s.events_dropped);
  fmt::print("peak RSS (VmHWM)                      {:.0f} MiB\n",
             static_cast<double>(peak_rss) / kMiB);
  fmt::print("API check                             {} pods listed, {} bound, {} without a GPU of "
             "their own, {} gangs partly bound\n",
             pods_listed, pods_bound, gpus_shared, gangs_split);

  if (rebound_at == Clock::time_point{} || all_running_at == Clock::time_point{} ||
      jobs_running_at == Clock::time_point{} || pods_bound != fitting_pods ||
      pods_listed != fitting_pods || gpus_shared != 0 || gangs_split != 0 ||
      s.bind_failures != 0) {
    fmt::print(stderr, "up_benchmark: the run did not complete as it should (see above)\n");
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
