// The job controller's Prometheus metrics (metrics.h); phases are Volcano's batch/v1alpha1
// JobPhase values (controller/job.h).

#include "controller/metrics.h"

#include "controller/job.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"

namespace muster::controller {

ControllerMetrics::ControllerMetrics(prometheus::Registry& registry)
    : jobs_(prometheus::BuildGauge()
                .Name("muster_controller_jobs")
                .Help("Volcano Jobs by status.state.phase, as the watch last delivered them (a "
                      "Job with no phase yet counts as Pending).")
                .Register(registry)),
      depth_(&prometheus::BuildGauge()
                  .Name("muster_controller_work_queue_depth")
                  .Help("Job controller requests waiting for a worker (retries and TTL checks "
                        "count once they are due).")
                  .Register(registry)
                  .Add({})),
      syncs_(&prometheus::BuildCounter()
                  .Name("muster_controller_syncs_total")
                  .Help("Job controller requests handled: a Job's plan carried out.")
                  .Register(registry)
                  .Add({})),
      sync_errors_(&prometheus::BuildCounter()
                        .Name("muster_controller_sync_errors_total")
                        .Help("Job controller requests whose plan the API refused in part; each "
                              "is retried with backoff, or the Job terminated after the retry "
                              "limit.")
                        .Register(registry)
                        .Add({})) {
  std::lock_guard lock(mu_);
  for (const char* phase : {kPending, kRunning, kRestarting, kCompleting, kCompleted, kAborting,
                            kAborted, kTerminating, kTerminated, kFailed}) {
    PhaseGauge(phase);
  }
}

prometheus::Gauge& ControllerMetrics::PhaseGauge(const std::string& phase) {
  auto& g = by_phase_[phase];
  if (g == nullptr) g = &jobs_.Add({{"phase", phase}});
  return *g;
}

void ControllerMetrics::SetJobPhase(const std::string& key, std::string_view phase) {
  const std::string now = phase.empty() ? std::string(kPending) : std::string(phase);
  std::lock_guard lock(mu_);
  auto [it, added] = phase_of_.try_emplace(key, now);
  if (!added) {
    if (it->second == now) return;
    PhaseGauge(it->second).Decrement();
    it->second = now;
  }
  PhaseGauge(now).Increment();
}

void ControllerMetrics::ForgetJob(const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = phase_of_.find(key);
  if (it == phase_of_.end()) return;
  PhaseGauge(it->second).Decrement();
  phase_of_.erase(it);
}

void ControllerMetrics::QueueDepth(int delta) { depth_->Increment(delta); }

void ControllerMetrics::Synced(bool ok) {
  syncs_->Increment();
  if (!ok) sync_errors_->Increment();
}

}  // namespace muster::controller
