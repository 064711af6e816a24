#pragma once

// What the live scheduler writes about each gang that waits (issue 15, item 2): the PodGroup's
// annotations muster.dev/estimated-start (RFC 3339, core::EstimateStarts' answer) and
// muster.dev/wait-reason (core::Explain's one-line reason: admission or placement, and the pods
// whose end lets it fit), which `kubectl describe podgroup` shows; the same answer goes into the
// PodGroup's status as a condition of type Estimated (write_plan.h), written with its status.
//
// Cost: the estimator is asked after every scheduling cycle and works only when an answer may
// have moved: estimates are computed (one forward simulation for all waiting gangs, bounded by
// `max_sessions`, and one explanation per gang) when the cluster view or the configuration
// changed (the caller's `generation`), a gang's phase or the set of waiting gangs did, or a
// written estimate came due (a blocker outlived its expected end, so the answer now moves with
// the clock); and at most once per `every`. A gang counts as waiting once a scheduling cycle
// before the current one left it unplaced and it still is: one created or admitted since the
// previous cycle is usually placed by the next and is not explained.
//
// Write volume: a gang's annotations are rewritten only when its reason changes, its estimate
// appears or goes, or its estimate moves by more than `tolerance`; once it starts (or stops
// waiting), they are removed, once.
//
// Pure: no I/O, threads or clock. Thread-safety: none; the scheduler's loop owns it.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/cluster.h"
#include "core/framework/conf.h"
#include "scheduler/write_plan.h"

namespace muster::scheduler {

inline constexpr char kEstimatedStartAnnotation[] = "muster.dev/estimated-start";
inline constexpr char kWaitReasonAnnotation[] = "muster.dev/wait-reason";

struct EstimatorOptions {
  int64_t every_seconds = 10;
  int64_t tolerance_seconds = 60;
  int max_sessions = 50;
  size_t max_gangs = 1000;  // the first waiting gangs by key beyond which none is explained
};

// One PodGroup's annotations to write: a merge patch of metadata.annotations.
struct EstimateWrite {
  std::string ns, name;
  std::optional<int64_t> start;  // nullopt: no estimate (the annotation is removed)
  std::string reason;            // "": the gang no longer waits (both annotations removed)
  std::string Patch() const;
};

class StartEstimator {
 public:
  explicit StartEstimator(EstimatorOptions options = {}) : options_(options) {}

  // Whether the rate limit lets estimates run at `now_unix`.
  bool Due(int64_t now_unix) const {
    return last_run_ < 0 || now_unix >= last_run_ + options_.every_seconds;
  }
  // Called after each scheduling cycle (after its binds), with a number that changes whenever
  // the cluster view or the configuration does (ClusterMirror::Changes): notes which gangs the
  // cycle left waiting and returns the writes that bring the waiting gangs' annotations up to
  // date at `now_unix` (the rules above); nothing, and no simulation, when none is due. Call
  // Written for each write the API accepted.
  std::vector<EstimateWrite> Plan(const core::Cluster& cluster, const core::SchedulerConf& conf,
                                  int64_t now_unix, uint64_t generation);
  // How many times estimates were computed (simulation and explanations) so far.
  int64_t runs() const { return runs_; }
  void Written(const EstimateWrite& w);
  // What the API holds for each waiting gang (the writes it accepted), by ns/name: the
  // PodGroup's Estimated condition says the same (PlanContext::estimates).
  const std::map<std::string, GangEstimate>& Written() const { return written_; }

 private:
  // What an answer depends on besides the clock, as of the last time estimates were computed.
  struct Inputs {
    uint64_t generation = 0;
    uint64_t phases = 14695981039346656037ull;  // every gang's phase, hashed (FNV-1a)
    std::vector<std::pair<std::string, int>> waiting;  // ns/name and phase, by key

    bool operator==(const Inputs&) const = default;
  };
  bool CameDue(int64_t now_unix) const;

  EstimatorOptions options_;
  int64_t last_run_ = -1;  // when a simulation last ran
  int64_t runs_ = 0;
  std::optional<Inputs> last_inputs_;
  std::set<std::string> left_waiting_;           // the gangs the previous cycle left waiting
  std::map<std::string, GangEstimate> written_;  // by ns/name
};

}  // namespace muster::scheduler
