// The scheduler's Prometheus metrics (metrics.h), after volcano-sh/volcano
// pkg/scheduler/metrics/metrics.go and queue.go: what each records and where Volcano records it
// (runOnce, framework.OpenSession/CloseSession, the gang plugin's OnSessionClose, proportion's
// OnSessionOpen) is described by the help texts.

#include "scheduler/metrics.h"

#include <cmath>
#include <utility>

#include "core/resources.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "scheduler/cluster_mirror.h"

namespace muster::scheduler {
namespace {

using prometheus::Histogram;

double Milliseconds(std::chrono::nanoseconds d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

// Pods that hold a node for their gang: bound or being bound, or running.
bool HoldsNode(core::TaskStatus s) {
  return s == core::TaskStatus::kBinding || s == core::TaskStatus::kBound ||
         s == core::TaskStatus::kRunning;
}

// The gangs muster's metrics are about: Volcano's PodGroups, not default-scheduler pods.
bool IsGang(const core::JobInfo& j) { return j.pg && !IsDefaultSchedulerJob(j); }

bool BelowMinAvailable(const core::JobInfo& j) { return j.ReadyTaskNum() < j.min_available; }

const std::vector<double>& E2eBuckets() {
  static const auto* const b = new std::vector<double>(ExponentialBucketsRange(1, 5000, 20));
  return *b;
}
const std::vector<double>& ActionBuckets() {
  static const auto* const b = new std::vector<double>(ExponentialBucketsRange(1, 2000, 20));
  return *b;
}
const std::vector<double>& PluginBuckets() {
  static const auto* const b = new std::vector<double>(ExponentialBucketsRange(0.1, 100, 15));
  return *b;
}
const std::vector<double>& GangBuckets() {
  static const auto* const b = new std::vector<double>(ExponentialBucketsRange(1, 3600e3, 30));
  return *b;
}

}  // namespace

std::vector<double> ExponentialBucketsRange(double min, double max, int count) {
  std::vector<double> out;
  if (count < 1 || min <= 0 || max < min) return out;
  if (count == 1) return {min};
  const double factor = std::pow(max / min, 1.0 / (count - 1));
  out.reserve(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) out.push_back(min * std::pow(factor, i));
  return out;
}

// Volcano's queue_<what>_{milli_cpu,memory_bytes,scalar_resources} gauges.
SchedulerMetrics::QueueGauges SchedulerMetrics::MakeQueueGauges(prometheus::Registry& registry,
                                                                const std::string& what,
                                                                const std::string& What) {
  return {prometheus::BuildGauge()
              .Name("volcano_queue_" + what + "_milli_cpu")
              .Help(What + " CPU count for one queue")
              .Register(registry),
          prometheus::BuildGauge()
              .Name("volcano_queue_" + what + "_memory_bytes")
              .Help(What + " memory for one queue")
              .Register(registry),
          prometheus::BuildGauge()
              .Name("volcano_queue_" + what + "_scalar_resources")
              .Help(What + " scalar resources for one queue, in thousandths of the resource's "
                    "unit as Volcano counts them (2000 for two GPUs).")
              .Register(registry),
          {}};
}

SchedulerMetrics::SchedulerMetrics(prometheus::Registry& registry)
    : e2e_(prometheus::BuildHistogram()
               .Name("volcano_e2e_scheduling_latency_milliseconds")
               .Help("Duration of one scheduling cycle in milliseconds: applying the watched "
                     "changes, the sessions (open, actions, close), the binds and the status "
                     "writes.")
               .Register(registry)),
      action_(prometheus::BuildHistogram()
                  .Name("volcano_action_scheduling_latency_milliseconds")
                  .Help("Action scheduling latency in milliseconds, per session that ran the "
                        "action.")
                  .Register(registry)),
      plugin_(prometheus::BuildHistogram()
                  .Name("volcano_plugin_scheduling_latency_milliseconds")
                  .Help("Plugin scheduling latency in milliseconds: the plugin's OnSessionOpen "
                        "or OnSessionClose.")
                  .Register(registry)),
      attempts_(prometheus::BuildCounter()
                    .Name("volcano_schedule_attempts_total")
                    .Help("Number of attempts to schedule pods, by the result: 'scheduled', the "
                          "API bound the pod; 'unschedulable', a cycle tried the pod and left it "
                          "waiting; 'error', the API refused the binding.")
                    .Register(registry)),
      unschedule_tasks_(prometheus::BuildGauge()
                            .Name("volcano_unschedule_task_count")
                            .Help("Number of tasks could not be scheduled: per gang below its "
                                  "minAvailable after the cycle, the tasks it still lacks "
                                  "(job_id is the PodGroup's name; no series once the gang "
                                  "has them).")
                            .Register(registry)),
      unschedule_jobs_(prometheus::BuildGauge()
                           .Name("volcano_unschedule_job_count")
                           .Help("Number of jobs could not be scheduled: gangs with pods but "
                                 "below their minAvailable after the cycle.")
                           .Register(registry)),
      gang_decision_(prometheus::BuildHistogram()
                         .Name("muster_gang_decision_latency_milliseconds")
                         .Help("Time from the start of the first cycle that saw a gang below "
                               "its minAvailable (not yet admitted, or with too few pods bound) "
                               "to the end of the cycle whose binds brought it to minAvailable, "
                               "in milliseconds.")
                         .Register(registry)),
      pods_bound_(prometheus::BuildCounter()
                      .Name("muster_pods_bound_total")
                      .Help("Pods this scheduler bound (the API accepted the binding).")
                      .Register(registry)),
      bind_failures_(prometheus::BuildCounter()
                         .Name("muster_bind_failures_total")
                         .Help("Bindings the API refused; the pod is tried again.")
                         .Register(registry)),
      cycles_(prometheus::BuildCounter()
                  .Name("muster_scheduler_cycles_total")
                  .Help("Scheduling cycles run.")
                  .Register(registry)),
      gangs_waiting_(prometheus::BuildGauge()
                         .Name("muster_gangs_waiting")
                         .Help("PodGroups not yet admitted, or with pods still to place, after "
                               "the last cycle.")
                         .Register(registry)),
      gpus_idle_partial_(prometheus::BuildGauge()
                             .Name("muster_gpus_idle_in_partial_gangs")
                             .Help("GPUs held by bound or running pods of gangs below their "
                                   "minAvailable after the last cycle: held by half a job "
                                   "waiting for the rest (0 unless pods of a gang failed or "
                                   "were deleted).")
                             .Register(registry)),
      allocated_(MakeQueueGauges(registry, "allocated", "Allocated")),
      deserved_(MakeQueueGauges(registry, "deserved", "Deserved")) {
  e2e_metric_ = &e2e_.Add({}, E2eBuckets());
  gang_decision_metric_ = &gang_decision_.Add({}, GangBuckets());
  scheduled_ = &attempts_.Add({{"result", "scheduled"}});
  unschedulable_ = &attempts_.Add({{"result", "unschedulable"}});
  error_ = &attempts_.Add({{"result", "error"}});
  pods_bound_metric_ = &pods_bound_.Add({});
  bind_failures_metric_ = &bind_failures_.Add({});
  cycles_metric_ = &cycles_.Add({});
  unschedule_jobs_metric_ = &unschedule_jobs_.Add({});
  gangs_waiting_metric_ = &gangs_waiting_.Add({});
  gpus_idle_partial_metric_ = &gpus_idle_partial_.Add({});
}

SchedulerMetrics::~SchedulerMetrics() = default;

Histogram& SchedulerMetrics::ActionHistogram(std::string_view action) {
  auto it = actions_.find(action);
  if (it == actions_.end()) {
    Histogram* h = &action_.Add({{"action", std::string(action)}}, ActionBuckets());
    it = actions_.emplace(std::string(action), h).first;
  }
  return *it->second;
}

Histogram& SchedulerMetrics::PluginHistogram(std::string_view plugin, std::string_view on_session) {
  std::string key = std::string(plugin) + "\n" + std::string(on_session);
  auto it = plugins_.find(key);
  if (it == plugins_.end()) {
    Histogram* h = &plugin_.Add(
        {{"plugin", std::string(plugin)}, {"OnSession", std::string(on_session)}}, PluginBuckets());
    it = plugins_.emplace(std::move(key), h).first;
  }
  return *it->second;
}

std::function<void(std::string_view, std::string_view)> SchedulerMetrics::StepTimer() {
  auto last = std::make_shared<Clock::time_point>(Clock::now());
  return [this, last](std::string_view step, std::string_view name) {
    const Clock::time_point now = Clock::now();
    const double ms = Milliseconds(now - *last);
    *last = now;
    if (step == "action") {
      ActionHistogram(name).Observe(ms);
    } else if (step == "OnSessionOpen" || step == "OnSessionClose") {
      PluginHistogram(name, step).Observe(ms);
    }
    // "start" and "end" only mark time.
  };
}

void SchedulerMetrics::BeforeSessions(core::Cluster& cluster, Clock::time_point cycle_start) {
  for (int id : cluster.JobIds()) {
    const core::JobInfo& j = cluster.job(id);
    if (IsGang(j) && BelowMinAvailable(j)) waiting_since_.emplace(j.key, cycle_start);
  }
}

void SchedulerMetrics::CountBinds(uint64_t bound, uint64_t failed) {
  scheduled_->Increment(static_cast<double>(bound));
  error_->Increment(static_cast<double>(failed));
  pods_bound_metric_->Increment(static_cast<double>(bound));
  bind_failures_metric_->Increment(static_cast<double>(failed));
}

void SchedulerMetrics::CountUnschedulable(uint64_t pods) {
  unschedulable_->Increment(static_cast<double>(pods));
}

void SchedulerMetrics::RecordDeserved(std::map<std::string, core::Resources> deserved) {
  deserved.erase(kDefaultQueueName);
  deserved_.Set(deserved);
}

void SchedulerMetrics::QueueGauges::Set(const std::map<std::string, core::Resources>& by_queue) {
  for (const auto& [queue, r] : by_queue) {
    Series& s = queues[queue];
    if (s.cpu == nullptr) {
      s.cpu = &cpu.Add({{"queue_name", queue}});
      s.memory = &memory.Add({{"queue_name", queue}});
    }
    s.cpu->Set(static_cast<double>(r.Get(core::kCpu)));
    s.memory->Set(static_cast<double>(r.Get(core::kMemory)) / 1000.0);
    std::map<std::string, double> values;
    for (auto& [name, g] : s.scalar) values[name] = 0;
    for (core::ResourceId id = 0; id < r.Size(); ++id) {
      if (id == core::kCpu || id == core::kMemory || r.Get(id) == 0) continue;
      values[core::ResourceNames::Name(id)] = static_cast<double>(r.Get(id));
    }
    for (const auto& [name, value] : values) {
      auto& g = s.scalar[name];
      if (g == nullptr) g = &scalar.Add({{"queue_name", queue}, {"resource", name}});
      g->Set(value);
    }
  }
  for (auto it = queues.begin(); it != queues.end();) {
    if (by_queue.count(it->first)) {
      ++it;
      continue;
    }
    cpu.Remove(it->second.cpu);
    memory.Remove(it->second.memory);
    for (auto& [name, g] : it->second.scalar) scalar.Remove(g);
    it = queues.erase(it);
  }
}

void SchedulerMetrics::AfterCycle(core::Cluster& cluster, int gangs_waiting, Clock::time_point now,
                                  std::chrono::nanoseconds cycle_duration) {
  core::Cluster& c = cluster;
  std::map<std::string, int> unready;  // job_id -> tasks lacking
  int unready_jobs = 0;
  int64_t idle_gpu_milli = 0;
  std::map<int, core::Resources> allocated;  // by queue id
  std::set<std::string> live;
  for (int id : cluster.JobIds()) {
    const core::JobInfo& j = c.job(id);
    if (!IsGang(j)) continue;
    live.insert(j.key);
    if (j.queue >= 0) allocated[j.queue].Add(j.allocated);
    if (!BelowMinAvailable(j)) {
      if (auto w = waiting_since_.find(j.key); w != waiting_since_.end()) {
        gang_decision_metric_->Observe(Milliseconds(now - w->second));
        waiting_since_.erase(w);
      }
      continue;
    }
    if (j.tasks.empty()) continue;  // Volcano's gang plugin skips jobs without tasks
    ++unready_jobs;
    unready[j.name] = j.min_available - j.ReadyTaskNum();
    for (int tid : j.tasks) {
      const core::TaskInfo& t = c.task(tid);
      if (HoldsNode(t.status)) idle_gpu_milli += t.resreq.Get(core::kGpu);
    }
  }
  for (auto it = waiting_since_.begin(); it != waiting_since_.end();) {
    it = live.count(it->first) ? std::next(it) : waiting_since_.erase(it);
  }

  // Volcano's unschedule_task_count: a series per unready job, gone once the job is not.
  for (auto it = unschedule_series_.begin(); it != unschedule_series_.end();) {
    if (unready.count(it->first)) {
      ++it;
      continue;
    }
    unschedule_tasks_.Remove(it->second);
    it = unschedule_series_.erase(it);
  }
  for (const auto& [job, lacking] : unready) {
    auto& g = unschedule_series_[job];
    if (g == nullptr) g = &unschedule_tasks_.Add({{"job_id", job}});
    g->Set(lacking);
  }
  unschedule_jobs_metric_->Set(unready_jobs);

  // Queues, as proportion records them each session; a scalar resource no longer allocated
  // stays at 0 (Volcano's updateScalarResourceMetrics).
  std::map<std::string, core::Resources> by_queue;
  for (int qid : cluster.QueueIds()) {
    const core::QueueInfo& q = c.queue(qid);
    if (!q.queue || q.name == kDefaultQueueName) continue;
    by_queue[q.name] = allocated[qid];
  }
  allocated_.Set(by_queue);

  gangs_waiting_metric_->Set(gangs_waiting);
  gpus_idle_partial_metric_->Set(static_cast<double>(idle_gpu_milli) / 1000.0);
  cycles_metric_->Increment();
  e2e_metric_->Observe(Milliseconds(cycle_duration));
}

}  // namespace muster::scheduler
