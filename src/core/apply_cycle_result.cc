// ApplyCycleResult: a cycle's binds and evictions applied to the cluster view (header).

#include "core/apply_cycle_result.h"

#include "api/gpu_indices.h"

namespace muster::core {

void ApplyBinds(Cluster& cluster, const std::vector<CycleResult::Bind>& binds,
                const ApplyOptions& options) {
  for (const auto& b : binds) {
    const TaskInfo* t = cluster.FindTask(b.pod);
    if (t == nullptr || !t->pod) continue;
    api::Pod pod = *t->pod;
    pod.spec.node_name = b.node;
    if (!b.gpus.empty()) pod.meta.annotations[api::kGpuIndicesAnnotation] = api::FormatGpuIndices(b.gpus);
    if (options.running_since) {
      pod.status.phase = "Running";
      pod.status.start_time = *options.running_since;
    }
    cluster.UpsertPod(pod);
  }
}

void ApplyEvictions(Cluster& cluster, const std::vector<CycleResult::Eviction>& evictions) {
  for (const auto& e : evictions) {
    const TaskInfo* t = cluster.FindTask(e.pod);
    if (t == nullptr) continue;
    const std::string ns = t->ns;
    const std::string name = t->name;
    cluster.RemovePod(ns, name);
  }
}

void ApplyCycleResult(Cluster& cluster, const CycleResult& result, const ApplyOptions& options) {
  ApplyBinds(cluster, result.binds, options);
  ApplyEvictions(cluster, result.evictions);
}

}  // namespace muster::core
