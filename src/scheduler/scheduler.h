#pragma once

// The live scheduler: a client of the Kubernetes API that places pods with the scheduling core,
// as Volcano's vc-scheduler does, for `muster up` (in-process) and `muster scheduler` (any API
// server over HTTP).
//
//   informers (pods, nodes, podgroups, queues, priorityclasses)
//       -> changes, queued and applied one by one to the core's cluster view (ClusterMirror)
//   loop: a cycle runs soon after a change that matters (debounced) and at least every period
//       -> core::Session over the view -> binds (per gang, all or none in-process), evictions,
//          pod conditions, PodGroup and Queue status, Events (write_plan.h)
//
// Unchanged unschedulable gangs back off (GangBackoff); a change that could help ends the wait.
// A bind the API refuses (the pod was deleted or replaced meanwhile, a conflict) is undone in
// the view and retried next cycle; no pod is bound twice, and a gang's bindings are stored
// together where the transport allows. The configuration file is re-read when it changes.
//
// Thread-safety: Start, Stop and the destructor from one thread; Stats and WaitForSync from any.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "client/client.h"

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace muster::scheduler {

struct SchedulerOptions {
  // Pods whose spec.schedulerName is one of these are this scheduler's (Volcano's
  // --scheduler-name).
  std::vector<std::string> scheduler_names = {"volcano", "muster"};
  // Also place pods with no schedulerName or "default-scheduler", one by one as kube-scheduler
  // would and with its wording (`muster up`, where no other scheduler runs).
  bool serve_default_scheduler = false;
  // volcano-scheduler.conf; "" (or a file that does not exist) means Volcano's built-in default.
  std::string conf_path;
  // A cycle runs at least this often (Volcano's --schedule-period)...
  std::chrono::milliseconds period{1000};
  // ...and this long after a change that could alter a decision, gathering the changes that
  // arrive meanwhile.
  std::chrono::milliseconds debounce{20};
  // Backoff of a gang that could not be placed: doubles from initial up to max.
  std::chrono::milliseconds backoff_initial{1000};
  std::chrono::milliseconds backoff_max{10000};
  // The waiting gangs' start estimates (estimates.h) are computed at most this often, in
  // seconds, and only when an answer may have moved.
  int64_t estimate_every_seconds = 10;
  // Events waiting to be written beyond this many are dropped (and counted).
  size_t event_queue_limit = 10000;
  // The source component of Volcano-style events.
  std::string event_source = "volcano";
  // Repair gangs left bound below minAvailable at the start of each cycle (gang_repair.h). Each
  // gang's placement is recorded on its PodGroup before it is bound wherever the client's binds
  // are not all or none (Transport::BindsAtomically: over HTTP; in process they are). Off only
  // in tests that show what the repair prevents.
  bool repair_gangs = true;
  // Fault injection for the failover tests (tests/kube): when non-zero, the process kills itself
  // with SIGKILL right after its Nth successful bind, in the middle of a gang where binds are one
  // by one. Never set in production.
  uint64_t fault_kill_after_binds = 0;
  // For tests of what happens while a cycle runs: called in each cycle that has binds to make,
  // after the session and before the binds, with a function counting the watched changes that
  // wait for the next cycle. Never set in production.
  std::function<void(const std::function<size_t()>& changes_waiting)> before_binds;
  // Where errors and configuration changes are reported, one line per call, from the loop's and
  // the informers' threads; default: standard error.
  std::function<void(std::string_view)> log;
  // When set, the scheduler records Volcano's scheduler metrics and muster's own here (names,
  // types and labels in scheduler/metrics.h), updated as each cycle ends.
  std::shared_ptr<prometheus::Registry> metrics;
};

struct SchedulerStats {
  uint64_t cycles = 0;
  std::chrono::microseconds last_cycle{0};    // the whole last cycle: changes, session, writes
  std::chrono::microseconds last_session{0};  // the core's session alone
  std::chrono::microseconds longest_cycle{0};
  std::chrono::microseconds total_cycle_time{0};  // over all cycles (average = total / cycles)
  // Percentiles of last_cycle and last_session over the last 1,024 cycles.
  std::chrono::microseconds cycle_p50{0}, cycle_p99{0};
  std::chrono::microseconds session_p50{0}, session_p99{0};
  uint64_t pods_bound = 0;
  uint64_t bind_failures = 0;
  uint64_t evictions = 0;
  // PodGroups not yet admitted, or with pods still to place, after the last cycle.
  int gangs_waiting = 0;
  // Pods this scheduler serves that are not bound yet, after the last cycle.
  int pods_pending = 0;
  // Gangs tried in vain since the last change that could help them: they are retried on a
  // backoff.
  int gangs_backed_off = 0;
  uint64_t events_written = 0;
  uint64_t events_dropped = 0;
  uint64_t write_errors = 0;  // status, eviction and PodGroup writes the API refused
  uint64_t conf_reloads = 0;
  // Gangs found bound below minAvailable (gang_repair.h) and completed as recorded, or undone.
  uint64_t gangs_completed = 0;
  uint64_t gangs_undone = 0;
  // Gangs not bound in the cycle that placed them: a node they were placed on took another
  // scheduler's pods meanwhile and had no room left (placed again the next cycle).
  uint64_t gangs_deferred = 0;
  // Times the waiting gangs' start estimates were computed (a forward simulation and one
  // explanation per waiting gang, estimates.h).
  uint64_t estimate_runs = 0;
};

class Scheduler {
 public:
  // `client` must outlive the scheduler.
  Scheduler(client::Client& client, SchedulerOptions options);
  ~Scheduler();  // Stop()
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Reads the configuration (a file that exists but does not parse is an error, and nothing
  // starts), starts the informers and the loop. The first cycle runs once every informer has
  // listed. Call once.
  absl::Status Start();
  // Stops the loop and the informers, then writes the events still queued (for a bounded time).
  // Idempotent.
  void Stop();

  // True once every informer has listed (so the first cycle can run); false on timeout.
  bool WaitForSync(std::chrono::milliseconds timeout) const;
  SchedulerStats Stats() const;

  struct State;  // scheduler_state.h

 private:
  std::unique_ptr<State> state_;
};

}  // namespace muster::scheduler
