#pragma once

// The job controller's Prometheus metrics (JobControllerOptions::metrics). vc-controller-manager
// serves no gauge of Jobs by phase, no work-queue depth of its own (client-go's workqueue
// metrics are not registered there) and no sync error count, so these are muster's names:
//
//   muster_controller_jobs{phase}           gauge    Volcano Jobs by status.state.phase, as the
//                                                    watch last delivered them ("" as Pending)
//   muster_controller_work_queue_depth      gauge    requests waiting for a worker (retries and
//                                                    TTLs scheduled for later count once due)
//   muster_controller_syncs_total           counter  requests handled (a Job's plan carried out)
//   muster_controller_sync_errors_total     counter  requests whose plan the API refused in part
//                                                    (retried with backoff, or the Job
//                                                    terminated after max_requeues)
//
// Thread-safety: every method may be called from any thread.

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace prometheus {
class Counter;
class Gauge;
class Registry;
template <typename T>
class Family;
}  // namespace prometheus

namespace muster::controller {

class ControllerMetrics {
 public:
  // Registers the families in `registry`, which must outlive this object. Every Volcano phase
  // has its series from the start, at 0.
  explicit ControllerMetrics(prometheus::Registry& registry);

  // Job `key` ("ns/name") is in `phase` now (added or updated).
  void SetJobPhase(const std::string& key, std::string_view phase);
  // Job `key` was deleted.
  void ForgetJob(const std::string& key);
  // A request entered (+1) or left (-1) a work queue.
  void QueueDepth(int delta);
  // A request was handled; `ok` false when its plan failed.
  void Synced(bool ok);

 private:
  prometheus::Gauge& PhaseGauge(const std::string& phase);  // requires mu_

  prometheus::Family<prometheus::Gauge>& jobs_;
  prometheus::Gauge* depth_;
  prometheus::Counter* syncs_;
  prometheus::Counter* sync_errors_;
  std::mutex mu_;
  std::map<std::string, std::string> phase_of_;  // job key -> phase counted
  std::map<std::string, prometheus::Gauge*> by_phase_;
};

}  // namespace muster::controller
