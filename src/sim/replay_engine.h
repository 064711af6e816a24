#pragma once

// Replay through the scheduling engine (replay_engine.cc): the `volcano` and `kube` schedulers
// run as core::Session cycles over a core::Cluster kept up to date in virtual time. Internal to
// src/sim; RunReplay (replay.h) chooses between this and the simulator's own disciplines.

#include <limits>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/framework/conf.h"
#include "sim/replay.h"

namespace muster::sim {

// A virtual time that never comes (no next arrival, no running job), and the lowest score.
inline constexpr double kInf = std::numeric_limits<double>::infinity();

// What a replay accumulated, for SummariseReplay (replay.cc): per job its start and end (-1 when
// it never started), the busy and held GPU-seconds, when the replay ended and the last job's end.
struct ReplayTally {
  std::vector<double> start, end;
  double capacity_gpus = 0;
  double busy_seconds = 0, held_seconds = 0;
  double end_time = 0, last_end = 0;
  std::vector<ReplayResult::Sample> samples;
};
ReplayResult SummariseReplay(const ReplayWorkload& workload, const ReplayOptions& options,
                             ReplayTally tally);

// The volcano-scheduler.conf the replay runs options.discipline with (replay_engine.cc's top
// comment says which and why).
core::SchedulerConf EngineConf(const ReplayOptions& options);

// Empty when the engine can replay this workload; otherwise why not (a pod asking part of each of
// several GPUs: the engine shares one device at most).
std::string EngineUnsupported(const ReplayWorkload& workload, const ReplayOptions& options);

absl::StatusOr<ReplayResult> RunEngineReplay(const ReplayWorkload& workload,
                                             const ReplayOptions& options);

}  // namespace muster::sim
