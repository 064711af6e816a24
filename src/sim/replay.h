#pragma once

// Replay mode: jobs arrive at their trace times, wait in a queue, run for their durations and
// leave, in virtual time, under one of four scheduling disciplines:
//
//   kube     Kubernetes' default scheduler: every pod on its own, in arrival order, whenever it
//            fits; a job runs once all its pods are placed, so a gang placed in part holds its
//            GPUs idle (and two such gangs can deadlock).
//   fifo     strict FIFO over whole jobs: the oldest waiting job is placed all at once or
//            nothing after it is.
//   volcano  Volcano's default allocate + backfill: every cycle, jobs in queue order (priority,
//            then arrival), each placed all at once if it fits (gang), else skipped; later,
//            smaller jobs go ahead of a large gang that does not fit.
//   muster   the same, plus a reservation for the oldest waiting large gang (EASY backfilling):
//            its earliest start is computed from the running jobs' ends, and a job goes ahead
//            only if the gang can still start then. Durations come from the trace (perfect
//            estimates).
//
// Placement inside a discipline uses a GPU placement policy (core/plugins/gpuplacement) or
// "spread" (the node with the most free GPU milli, kube-scheduler's and Volcano's default
// least-allocated scoring). Ties go to the node's rank, a permutation drawn with the seed.
//
// All four run through the scheduling engine (replay_engine.cc): a core::Cluster kept up to date
// in virtual time and a core::Session per virtual second at which something arrives or leaves,
// with Volcano's default conf (volcano), the live scheduler's session for default-scheduler pods
// (kube), or allocate with muster's strictOrder (fifo) or reserveGpus/reserveAfter (muster)
// arguments. Workloads the engine cannot express (pods sharing a GPU, GPU model constraints:
// openb), and every workload with ReplayOptions::engine off, run as disciplines modelled here
// over the simulator's own compact cluster state (the same node and pod model as packing mode).

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/plugins/gpuplacement/placement.h"
#include "core/plugins/gpuplacement/typical_pods.h"
#include "sim/trace.h"

namespace muster::sim {

struct ReplayJob {
  std::string name;
  int64_t submit = 0;     // seconds from the trace's start
  double duration = 0;    // seconds of running once all pods are placed
  int pods = 1;           // gang size: all must be placed for the job to run
  core::GpuPodRequest pod;  // what each pod asks
  int Gpus() const { return pods * pod.gpus; }
};

struct ReplayWorkload {
  std::string source;
  std::vector<TraceNode> nodes;
  std::vector<ReplayJob> jobs;  // in submit order
  std::shared_ptr<core::GpuModels> models;
  std::shared_ptr<const core::TypicalPods> typical;  // of the pods, for FGD and muster
  int skipped = 0;  // trace rows that cannot run on this cluster at all (reported)
};

// Divides every submission time by `speedup` (> 0): the same jobs arrive faster, a heavier load
// on the same cluster. Durations stay.
void CompressArrivals(ReplayWorkload& workload, double speedup);

// Philly: `nodes` nodes of 8 GPUs, 64 cores and 512 GiB. A job of g <= 8 GPUs is one pod; a
// larger job is a gang of ceil(g / 8) pods of g / pods GPUs (16 -> 2 x 8, 12 -> 2 x 6). Each pod
// asks 4 cores and 32 GiB per GPU (1 core, 8 GiB without GPUs), so GPUs bind first. Times are
// from the earliest submission.
absl::StatusOr<ReplayWorkload> PhillyWorkload(const std::vector<PhillyJob>& jobs, int nodes);
// openb: one single-pod job per pod with creation and deletion times (pods without them are
// skipped and counted); it runs for deletion - creation seconds.
absl::StatusOr<ReplayWorkload> OpenbWorkload(std::vector<TraceNode> nodes,
                                             const std::vector<TracePod>& pods);

enum class Discipline { kKube, kFifo, kVolcano, kMuster };
const char* DisciplineName(Discipline d);
absl::StatusOr<Discipline> ParseDiscipline(std::string_view name);

struct ReplayOptions {
  Discipline discipline = Discipline::kMuster;
  std::string placement = "spread";  // "spread" or a GPU placement policy name
  int64_t seed = 42;
  int reserve_gpus = 16;         // muster: gangs of at least this many GPUs get reservations
  double reserve_after = 0;      // muster: ... once they have waited this long (seconds)
  double gpu_hour_price = 2.50;  // for the cost of GPUs held idle by partly placed gangs
  double sample_seconds = 3600;  // utilisation time series step
  // Through the engine where the workload allows; false: the modelled disciplines.
  bool engine = true;
  // Racks (engine replays only): the workload's nodes, in the order of its node list, in racks
  // of this many, HyperNodes of tier 1 rack-0, rack-1, ... (ties between nodes still go to the
  // seeded rank); 0: no racks. spine_racks: spines of that many consecutive racks, HyperNodes of
  // tier 2; 0: the whole cluster is the only tier above the racks.
  int rack_nodes = 0;
  int spine_racks = 0;
  // With racks: a gang (a job of more than one pod) whose pods span racks runs for its duration
  // times this (>= 1). Reservations still plan with the trace's durations.
  double cross_rack_slowdown = 1;
  // With racks, the muster scheduler's conf gets network-topology-aware and each gang's PodGroup a
  // networkTopology: "soft" (every gang: the lowest tier that holds it), "hard" (highestTierAllowed
  // the lowest tier one HyperNode of which has the gang's GPUs: a rack, else a spine; a gang no
  // spine holds gets none) or "none" (racks, no plugin). The other schedulers run as without
  // racks: Volcano's default conf has no network-topology-aware.
  std::string topology = "soft";
  // Called now and then on long runs: jobs arrived so far, jobs waiting, sessions run.
  std::function<void(size_t arrived, size_t waiting, int64_t sessions)> progress;
};

struct ReplayResult {
  std::string discipline;
  std::string placement;
  int jobs = 0;
  int finished = 0;
  int unfinished = 0;  // never ran (a deadlock) or never left
  double jct_mean = 0, jct_p50 = 0, jct_p99 = 0;      // completion - submit, seconds
  double wait_mean = 0, wait_p50 = 0, wait_p99 = 0, wait_max = 0;  // start - submit
  double gang_wait_max = 0;  // the longest wait of any multi-pod job (starvation)
  double makespan = 0;       // last completion - first submission
  double gpu_utilization = 0;  // running GPUs / capacity, time-averaged over the makespan
  double idle_held_gpu_hours = 0;  // GPUs held by pods of jobs that are not running yet
  double idle_held_cost = 0;       // at gpu_hour_price
  bool deadlock = false;           // jobs left that can never run
  double deadlock_at = 0;          // seconds, when nothing could move any more
  double seconds = 0;              // wall time of the simulation
  bool engine = false;             // ran as core::Session cycles (else the modelled discipline)
  std::string engine_note;         // why not, when the engine was asked for and could not run it
  int64_t sessions = 0;            // engine sessions run
  std::vector<double> waits;       // every finished job's wait, in submit order
  struct Sample {
    double t;     // seconds
    double busy;  // GPUs of running jobs
    double held;  // GPUs held by pods of jobs not running yet
  };
  std::vector<Sample> utilization;
  // Engine replays: why the longest-waiting gang waited, explained (core::Explain) while it
  // waited, as the oldest waiting job each time its wait passed 1.5 times the longest wait
  // explained before (and at least a minute): the last of those explanations.
  struct LongestWait {
    std::string job;
    double submit = 0;            // seconds
    double explained_at = 0;      // seconds: when the explanation was taken
    double estimated_start = -1;  // seconds, -1 when the explanation has no estimate
    double started = -1;          // seconds, -1 when it never started
    std::string explanation;      // core::ExplanationText
  };
  std::optional<LongestWait> longest_wait;
  // With racks: where the gangs that started ran, by the lowest tier that held all their pods.
  struct GangPlacement {
    std::string topology;  // the networkTopology its gangs had (ReplayOptions::topology), or none
    int gangs = 0;         // gangs that started
    int one_node = 0;      // all pods on one node
    int one_rack = 0;      // on several nodes of one rack
    int one_spine = 0;     // on several racks of one spine
    int cluster = 0;       // across spines, or across racks when there are no spines
    int slowed = 0;        // spanned racks: ran cross_rack_slowdown times their duration
    // The share of gangs within one rack (one node counts), 0 without gangs.
    double InOneRack() const {
      return gangs == 0 ? 0 : static_cast<double>(one_node + one_rack) / gangs;
    }
  };
  std::optional<GangPlacement> racks;
};

// Why the rack options (rack_nodes, spine_racks, cross_rack_slowdown, topology) cannot be run, or
// OK.
absl::Status CheckRackOptions(const ReplayOptions& options);

// Runs the workload. Deterministic: the same workload and options give the same result.
absl::StatusOr<ReplayResult> RunReplay(const ReplayWorkload& workload, const ReplayOptions& options);

}  // namespace muster::sim
