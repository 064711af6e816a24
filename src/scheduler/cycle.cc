#include "scheduler/cycle.h"

#include <iterator>
#include <utility>

namespace muster::scheduler {
namespace {

template <typename T>
void Append(std::vector<T>& to, std::vector<T>& from) {
  to.insert(to.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
}

bool DefaultPodsWaiting(const core::Cluster& cluster) {
  for (int id : cluster.JobIds()) {
    const core::JobInfo& j = cluster.job(id);
    if (j.pg && j.Count(core::TaskStatus::kPending) > 0 && IsDefaultSchedulerJob(j)) return true;
  }
  return false;
}

}  // namespace

core::CycleResult RunCycle(ClusterMirror& mirror, const core::SchedulerConf& conf,
                           CycleOptions& options) {
  core::Cluster& cluster = mirror.cluster();
  core::SessionOptions so;
  so.session_id = options.session_id;
  so.start_node_index = options.start_node_index;
  so.now_unix = options.now_unix;
  so.on_step = options.on_step;
  // The Volcano session leaves the default scheduler's jobs out, the kube session the others;
  // both hold back the jobs waiting out a backoff.
  auto role = [hold_back = options.hold_back](bool left_out, const core::JobInfo& j) {
    if (left_out) return core::JobRole::kLeftOut;
    if (hold_back && hold_back(j)) return core::JobRole::kHeldBack;
    return core::JobRole::kScheduled;
  };
  so.job_role = [role](const core::JobInfo& j) { return role(IsDefaultSchedulerJob(j), j); };
  core::CycleResult result;
  {
    core::Session volcano(cluster, conf, so);
    result = volcano.Run();
    options.start_node_index = volcano.next_start_node();
  }
  if (!mirror.options().serve_default_scheduler || !DefaultPodsWaiting(cluster)) return result;

  so.start_node_index = options.start_node_index;
  so.job_role = [role](const core::JobInfo& j) { return role(!IsDefaultSchedulerJob(j), j); };
  core::Session kube(cluster, KubeSchedulerConf(), so);
  core::CycleResult more = kube.Run();
  options.start_node_index = kube.next_start_node();
  Append(result.binds, more.binds);
  Append(result.evictions, more.evictions);
  result.pipelined.merge(more.pipelined);
  Append(result.pod_groups, more.pod_groups);
  Append(result.pod_conditions, more.pod_conditions);
  Append(result.events, more.events);
  return result;
}

}  // namespace muster::scheduler
