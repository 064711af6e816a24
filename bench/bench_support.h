#pragma once

// Shared pieces of the benchmark suites: a cycle driver that runs real Sessions and applies their
// binds the way scenario.cc does, and small statistics helpers. Objects are built with the core's
// test builders (core/testing/builders.h).
//
// Nothing here reaches into the engine: clusters are built with Cluster::Upsert*, decisions come
// from Session::Run, and binds are written back as pod updates with spec.nodeName set.

#include <chrono>
#include <cstdint>
#include <vector>

#include "core/apply_cycle_result.h"
#include "core/cluster.h"
#include "core/framework/conf.h"
#include "core/framework/session.h"

namespace muster::bench {

// What RunUntilBound did. Times are wall-clock seconds, except cpu_seconds: CPU time of the
// calling thread over the same region, which other processes on a shared machine do not inflate.
struct CycleStats {
  int cycles = 0;
  int64_t binds = 0;
  double session_seconds = 0;  // inside Session::Run (open, actions, close)
  double apply_seconds = 0;    // writing binds back into the cluster (Cluster::UpsertPod)
  double cpu_seconds = 0;      // thread CPU time of session + apply
  double total_seconds() const { return session_seconds + apply_seconds; }

  CycleStats& operator+=(const CycleStats& o) {
    cycles += o.cycles;
    binds += o.binds;
    session_seconds += o.session_seconds;
    apply_seconds += o.apply_seconds;
    cpu_seconds += o.cpu_seconds;
    return *this;
  }
};

struct RunOptions {
  // Stop once this many binds have been made in total.
  int64_t want_binds = 0;
  int max_cycles = 10;
  // Observer attached to every session before it runs (Session::AddEventHandler); it must not
  // change state. Empty handlers are not attached.
  core::EventHandler observer;
};

// Runs scheduling cycles, as scenario.cc does, until `want_binds` pods are bound, a cycle binds
// nothing, or max_cycles is reached. After each cycle the binds are applied the way the API
// server would (core::ApplyCycleResult: spec.nodeName and the GPU indices; the engine then sees
// the pod Bound).
CycleStats RunUntilBound(core::Cluster& cluster, const core::SchedulerConf& conf,
                         const RunOptions& options);

// Nearest-rank percentile (p in [0, 100]) of unsorted samples; 0 when empty.
double Percentile(std::vector<double> samples, double p);

// Peak and current resident set size of this process in bytes (VmHWM / VmRSS from
// /proc/self/status); 0 when unavailable.
int64_t PeakRssBytes();
int64_t CurrentRssBytes();

inline double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// CPU time consumed by the calling thread, in seconds (CLOCK_THREAD_CPUTIME_ID).
double ThreadCpuSeconds();

}  // namespace muster::bench
