// nodeorder: kube-scheduler's scores (0-100 each) weighted as Volcano's nodeorder plugin does
// (leastrequested 1, mostrequested 0, balancedresource 1, nodeaffinity 2, tainttoleration 3,
// podaffinity 2, podtopologyspread 2, imagelocality 1). Follows Volcano's
// pkg/scheduler/plugins/nodeorder/nodeorder.go.

#include <algorithm>
#include <cmath>

#include "api/selector.h"
#include "core/framework/conf.h"
#include "core/framework/session.h"
#include "core/plugins/node_score.h"

namespace muster::core {
namespace {

// Fraction of a dimension used once the task is placed; 0 when the node has none.
double UsedFraction(const TaskInfo& t, const NodeInfo& n, ResourceId r) {
  double alloc = static_cast<double>(n.allocatable.Get(r));
  if (alloc <= 0) return 0;
  double used = static_cast<double>(n.used.Get(r) + t.resreq.Get(r));
  return std::min(used / alloc, 1.0);
}

class NodeOrderPlugin : public Plugin {
 public:
  explicit NodeOrderPlugin(const PluginOption& opt) {
    auto w = [&](const char* key, double def) { return opt.Number(key, def).value_or(def); };
    least_ = w("leastrequested.weight", 1);
    most_ = w("mostrequested.weight", 0);
    balanced_ = w("balancedresource.weight", 1);
    node_affinity_ = w("nodeaffinity.weight", 2);
    taint_ = w("tainttoleration.weight", 3);
  }

  void OnSessionOpen(Session& ssn) override {
    ssn.AddBatchNodeOrderFn("nodeorder", [this](const TaskInfo& t,
                                                const std::vector<const NodeInfo*>& nodes,
                                                std::vector<double>& scores) {
      Score(t, nodes, scores);
    });
  }

 private:
  void Score(const TaskInfo& t, const std::vector<const NodeInfo*>& nodes,
             std::vector<double>& out) {
    const auto& affinity_spec = t.pod->spec.affinity;
    bool has_preferred = affinity_spec && affinity_spec->node_affinity &&
                         !affinity_spec->node_affinity->preferred.empty();
    if (has_preferred) affinity_.assign(nodes.size(), 0.0);
    taints_.assign(nodes.size(), 0.0);
    double max_affinity = 0, max_taints = 0;
    for (size_t i = 0; i < nodes.size(); ++i) {
      const NodeInfo& n = *nodes[i];
      double cpu = UsedFraction(t, n, kCpu), mem = UsedFraction(t, n, kMemory);
      if (least_ != 0) out[i] += least_ * ((1 - cpu) + (1 - mem)) / 2 * kMaxNodeScore;
      if (most_ != 0) out[i] += most_ * (cpu + mem) / 2 * kMaxNodeScore;
      if (balanced_ != 0) out[i] += balanced_ * (1 - std::abs(cpu - mem) / 2) * kMaxNodeScore;
      if (node_affinity_ != 0 && has_preferred) {
        affinity_[i] = static_cast<double>(api::PreferredNodeAffinityScore(*t.pod, *n.node));
        max_affinity = std::max(max_affinity, affinity_[i]);
      }
      if (taint_ != 0 && n.has_prefer_no_schedule_taint) {
        taints_[i] = api::CountIntolerablePreferNoSchedule(n.node->spec.taints,
                                                           t.pod->spec.tolerations);
        max_taints = std::max(max_taints, taints_[i]);
      }
    }
    if (max_affinity == 0 && max_taints == 0) {
      // No preference anywhere: every node gets the full taint score; no second pass needed.
      if (taint_ != 0) {
        for (size_t i = 0; i < nodes.size(); ++i) out[i] += taint_ * kMaxNodeScore;
      }
      return;
    }
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (max_affinity > 0) out[i] += node_affinity_ * affinity_[i] * kMaxNodeScore / max_affinity;
      if (taint_ != 0) {
        double s = max_taints > 0 ? (max_taints - taints_[i]) * kMaxNodeScore / max_taints
                                  : kMaxNodeScore;
        out[i] += taint_ * s;
      }
    }
  }

  std::vector<double> affinity_, taints_;
  double least_, most_, balanced_, node_affinity_, taint_;
};

}  // namespace

std::unique_ptr<Plugin> NewNodeOrderPlugin(const PluginOption& opt) {
  return std::make_unique<NodeOrderPlugin>(opt);
}

}  // namespace muster::core
