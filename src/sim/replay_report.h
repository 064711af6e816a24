#pragma once

// Replay results as a table, JSON, CSV and a self-contained HTML report (queueing-delay
// distribution and GPU utilisation over time per scheduler).

#include <string>
#include <vector>

#include "sim/replay.h"

namespace muster::sim {

struct ReplayReport {
  std::string trace;
  std::string cluster;  // in words: "80 nodes x 8 GPUs (640 GPUs)"
  int skipped = 0;      // trace rows that could not run on the cluster
  double gpu_hour_price = 2.5;
  // The rack layout in words when the replay had racks ("racks of 4 nodes (20 racks), no spines,
  // a gang across racks runs 1.3 x its duration"); empty without.
  std::string racks;
  std::vector<ReplayResult> results;
};

std::string ReplayTable(const ReplayReport& report);
// {"trace", "cluster", "gpu_hour_price", "results": [{"scheduler", "placement", "jobs",
// "finished", "unfinished", "deadlock", "wait": {"mean", "p50", "p99", "max"}, "jct": {...},
// "gang_wait_max", "makespan", "gpu_utilization", "idle_held_gpu_hours", "idle_held_cost",
// "seconds", "engine" (ran as engine sessions), "sessions" (when it did), "engine_note" (why a
// kube or volcano run was modelled instead), "racks" (with racks: {"topology", "gangs",
// "in_one_rack" (a fraction), "one_node", "one_rack", "one_spine", "cluster", "slowed"})}]},
// and "racks" (ReplayReport::racks) at the top when there were racks.
// Times in seconds.
std::string ReplayJson(const ReplayReport& report);
std::string ReplayCsv(const ReplayReport& report);
std::string ReplayHtml(const ReplayReport& report);

}  // namespace muster::sim
