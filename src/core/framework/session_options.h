#pragma once

// What the adapter (live scheduler, sim replay, benches) tells a session besides the conf: the
// feasible-node search's bounds (Volcano's --minimum-feasible-nodes and
// --percentage-nodes-to-find, cmd/scheduler/app/options), which jobs the session takes, whether
// it writes diagnostics, and a step callback for timing.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "core/cluster.h"

namespace muster::core {

// How a session takes a job with a PodGroup and a known queue, as the adapter decides.
enum class JobRole {
  // Ordered and tried by every action, reported at close: every job unless the adapter says.
  kScheduled,
  // Waiting out the adapter's backoff (a live scheduler's unchanged unschedulable gangs): in
  // jobs() and in every plugin's accounting, and enqueue may admit it, but allocate, backfill,
  // preempt and reclaim skip it and close reports nothing new for it.
  kHeldBack,
  // Known to the adapter to be beyond any action's change this cycle (the replay's jobs that a
  // cycle tried and failed, with nothing released since): out of jobs(), so that no action, not
  // even enqueue, tries it and close passes it by, but still counted wherever plugins sum over
  // jobs (Session::ForEachCountedJob), so that the others meet the same decisions.
  kSettled,
  // Another scheduler's share of the cluster: out of the session altogether; its pods only
  // occupy their nodes.
  kLeftOut,
};

struct SessionOptions {
  // Volcano's --minimum-feasible-nodes and --percentage-nodes-to-find (0 = adaptive).
  int min_feasible_nodes = 100;
  int percentage_nodes_to_find = 0;
  // Rotates the first node examined across cycles (kube-scheduler's nextStartNodeIndex).
  int start_node_index = 0;
  std::string session_id = "session";
  // Wall-clock time of the cycle in Unix seconds, for age-based plugins (sla); 0 = unknown.
  int64_t now_unix = 0;
  // Events, pod conditions, and all of a PodGroup condition but its type and status: what a
  // live scheduler writes back for people to read. No decision reads them; an adapter that applies
  // only binds and evictions (sim replay) turns them off, which saves most of a cycle's cost while
  // thousands of pods wait (each would get its fit errors written out every cycle).
  bool diagnostics = true;
  // How the session takes each job (JobRole above), asked when the session opens and again
  // wherever an action asks whether a job is held back. Empty: every job is kScheduled.
  std::function<JobRole(const JobInfo&)> job_role;
  JobRole RoleOf(const JobInfo& j) const { return job_role ? job_role(j) : JobRole::kScheduled; }
  // Called as the cycle passes each step, so that an adapter with a clock can time them (the
  // core has none): ("start", "") first, then ("OnSessionOpen", plugin) after each plugin
  // opened, ("action", name) after each action ran, ("OnSessionClose", plugin) after each
  // plugin closed, and ("end", "") last. A step lasts from the call before it. Empty: none.
  std::function<void(std::string_view step, std::string_view name)> on_step;
};

}  // namespace muster::core
