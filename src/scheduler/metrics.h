#pragma once

// The live scheduler's Prometheus metrics: Volcano's, with the names, types, labels and buckets of
// volcano-sh/volcano pkg/scheduler/metrics (metrics.go and queue.go at v1.15, which the project
// follows; since v1.11 Volcano times actions and plugins in milliseconds, so the
// `_microseconds` names of older releases are not served), and muster's own.
//
// Volcano's, where muster measures the same thing:
//   volcano_e2e_scheduling_latency_milliseconds              histogram  (1..5000 ms, 20 buckets)
//   volcano_action_scheduling_latency_milliseconds{action}   histogram  (1..2000 ms, 20)
//   volcano_plugin_scheduling_latency_milliseconds{plugin,OnSession}  histogram  (0.1..100 ms, 15)
//   volcano_schedule_attempts_total{result}                  counter    (result: scheduled,
//                                                                    unschedulable, error)
//   volcano_unschedule_task_count{job_id}                    gauge
//   volcano_unschedule_job_count                             gauge
//   volcano_queue_allocated_milli_cpu{queue_name}            gauge
//   volcano_queue_allocated_memory_bytes{queue_name}         gauge
//   volcano_queue_allocated_scalar_resources{queue_name,resource}  gauge (thousandths, as Volcano)
//   volcano_queue_deserved_milli_cpu{queue_name}, volcano_queue_deserved_memory_bytes{queue_name},
//   volcano_queue_deserved_scalar_resources{queue_name,resource}  gauges (the proportion plugin's)
// muster's:
//   muster_gang_decision_latency_milliseconds   histogram  (1 ms..1 h, 30 buckets)
//   muster_pods_bound_total, muster_bind_failures_total, muster_scheduler_cycles_total  counters
//   muster_gangs_waiting, muster_gpus_idle_in_partial_gangs                             gauges
//
// Where muster's cycle differs from vc-scheduler's runOnce the help texts say what is measured:
// muster binds within the cycle, so the e2e latency covers the binds and status writes too; a
// cycle may run a second session for default-scheduler pods, whose steps are timed into the same
// action and plugin histograms. Volcano defines schedule_attempts_total but no longer counts it;
// muster counts pods as kube-scheduler does. A queue's deserved resources are those of the
// last session that ran the proportion plugin (none without it, as Volcano).
//
// Thread-safety: one thread (the scheduler's loop) calls the methods; the registry may be
// scraped from any thread meanwhile.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/cluster.h"

namespace prometheus {
class Counter;
class Gauge;
class Histogram;
class Registry;
template <typename T>
class Family;
}  // namespace prometheus

namespace muster::scheduler {

// Prometheus' ExponentialBucketsRange (client_golang): `count` upper bounds from `min` to `max`,
// each a constant factor above the one before.
std::vector<double> ExponentialBucketsRange(double min, double max, int count);

class SchedulerMetrics {
 public:
  using Clock = std::chrono::steady_clock;

  // Registers every family in `registry`, which must outlive this object.
  explicit SchedulerMetrics(prometheus::Registry& registry);
  ~SchedulerMetrics();
  SchedulerMetrics(const SchedulerMetrics&) = delete;
  SchedulerMetrics& operator=(const SchedulerMetrics&) = delete;

  // A core::SessionOptions::on_step that times the steps of the sessions it is given to (one at
  // a time) into the action and plugin histograms.
  std::function<void(std::string_view step, std::string_view name)> StepTimer();

  // Before the cycle's sessions, with the changes applied: gangs below their minAvailable that
  // were not seen so before are seen now (the start of their decision latency).
  // Only reads `cluster` (as AfterCycle does; its lookups are not const).
  void BeforeSessions(core::Cluster& cluster, Clock::time_point cycle_start);

  // The cycle's binds: accepted by the API, refused by it.
  void CountBinds(uint64_t bound, uint64_t failed);
  // Pods the cycle's sessions tried and left waiting (those given a PodScheduled=False
  // condition).
  void CountUnschedulable(uint64_t pods);

  // The queues' deserved resources from the cycle's session (core::CycleResult::queue_deserved,
  // every queue where proportion ran): a queue left out loses its series.
  void RecordDeserved(std::map<std::string, core::Resources> deserved);

  // After the binds and writes: the gauges from the view, the decision latencies of gangs now at
  // their minAvailable, the cycle count and its duration.
  void AfterCycle(core::Cluster& cluster, int gangs_waiting, Clock::time_point now,
                  std::chrono::nanoseconds cycle_duration);

 private:
  prometheus::Histogram& ActionHistogram(std::string_view action);
  prometheus::Histogram& PluginHistogram(std::string_view plugin, std::string_view on_session);

  prometheus::Family<prometheus::Histogram>& e2e_;
  prometheus::Family<prometheus::Histogram>& action_;
  prometheus::Family<prometheus::Histogram>& plugin_;
  prometheus::Family<prometheus::Counter>& attempts_;
  prometheus::Family<prometheus::Gauge>& unschedule_tasks_;
  prometheus::Family<prometheus::Gauge>& unschedule_jobs_;
  prometheus::Family<prometheus::Histogram>& gang_decision_;
  prometheus::Family<prometheus::Counter>& pods_bound_;
  prometheus::Family<prometheus::Counter>& bind_failures_;
  prometheus::Family<prometheus::Counter>& cycles_;
  prometheus::Family<prometheus::Gauge>& gangs_waiting_;
  prometheus::Family<prometheus::Gauge>& gpus_idle_partial_;

  prometheus::Histogram* e2e_metric_;
  prometheus::Histogram* gang_decision_metric_;
  prometheus::Counter *scheduled_, *unschedulable_, *error_;
  prometheus::Counter *pods_bound_metric_, *bind_failures_metric_, *cycles_metric_;
  prometheus::Gauge *unschedule_jobs_metric_, *gangs_waiting_metric_, *gpus_idle_partial_metric_;

  std::map<std::string, prometheus::Histogram*, std::less<>> actions_;
  std::map<std::string, prometheus::Histogram*, std::less<>> plugins_;  // "plugin\nOnSession"
  std::map<std::string, prometheus::Gauge*> unschedule_series_;         // by job_id
  // Per-queue resource gauges in Volcano's three families (milli_cpu, memory_bytes,
  // scalar_resources), with the series of each queue.
  struct QueueGauges {
    struct Series {
      prometheus::Gauge* cpu = nullptr;
      prometheus::Gauge* memory = nullptr;
      std::map<std::string, prometheus::Gauge*> scalar;  // by resource; kept at 0 once absent
    };
    prometheus::Family<prometheus::Gauge>& cpu;
    prometheus::Family<prometheus::Gauge>& memory;
    prometheus::Family<prometheus::Gauge>& scalar;
    std::map<std::string, Series> queues;
    // Sets every queue of `by_queue`; a queue not in it loses its series.
    void Set(const std::map<std::string, core::Resources>& by_queue);
  };
  static QueueGauges MakeQueueGauges(prometheus::Registry& registry, const std::string& what,
                                     const std::string& What);
  QueueGauges allocated_, deserved_;
  // Gangs below their minAvailable, by key: the cycle that first saw them so.
  std::map<std::string, Clock::time_point> waiting_since_;
};

}  // namespace muster::scheduler
