// nvlink: a pod that asks for two or more whole GPUs gets the best-connected free GPUs of its
// node, and nodes are scored by how well-connected that set is, so that a gang's pods go where
// NVLinked GPUs are free. The topology is the node's muster.dev/gpu-topology annotation
// (api/gpu_topology.h, published by the device plugin and `muster up`'s node agents); the set is
// api::BestGpuSet (api/gpu_sets.h), the very function the device plugin answers the kubelet's
// GetPreferredAllocation with, so that the GPUs in muster.dev/gpu-indices are the kubelet's.
//
//   - plugins:
//     - name: predicates
//     - name: nodeorder
//     - name: nvlink            # before any gpu-* plugin: the first plugin to choose GPUs wins
//       arguments:
//         nvlink.weight: 10
//
// Score: nvlink.weight (default 1) x 100 x the NVLinks within the best free set of the pod's size,
// over the NVLinks within the best set the node has when all its GPUs are free: 100 where a fully
// linked quad is free, 78 on a DGX-1 whose free GPUs hold only a scattered four (7 NVLinks of 9).
// A node without the annotation, with a malformed one, or whose count of GPUs differs from its
// nvidia.com/gpu (MIG, time-slicing replicas) scores 0 and gets the engine's lowest free GPUs, as
// do pods of one GPU or a GPU share. No Volcano counterpart: Volcano does not choose devices.

#include <map>
#include <optional>
#include <unordered_map>
#include <vector>

#include "api/gpu_sets.h"
#include "api/gpu_topology.h"
#include "core/framework/conf.h"
#include "core/framework/session.h"
#include "core/plugins/node_score.h"

namespace muster::core {
namespace {

// How many whole GPUs the task asks for; 0 for a GPU share or none.
int WholeGpusAsked(const TaskInfo& t) {
  if (t.gpu_share > 0) return 0;
  return static_cast<int>((t.resreq.Get(kGpu) + 999) / 1000);  // milli, as Cluster::ChooseGpus
}

std::vector<int> FreeGpusOf(const NodeInfo& n) {
  std::vector<int> free;
  for (const GpuDevice& g : n.gpus) {
    if (g.IsFree()) free.push_back(g.index);
  }
  return free;
}

class NvLinkPlugin : public Plugin {
 public:
  explicit NvLinkPlugin(const PluginOption& opt)
      : weight_(opt.Number("nvlink.weight", 1).value_or(1)) {}

  void OnSessionOpen(Session& ssn) override {
    ssn.AddGpuChoiceFn([this](const TaskInfo& t, const NodeInfo& n) -> std::vector<int> {
      const int size = WholeGpusAsked(t);
      if (size < 2) return {};
      const NodeTopology* topology = TopologyOf(n);
      if (topology == nullptr) return {};
      return api::BestGpuSet(topology->gpus, FreeGpusOf(n), size);
    });
    ssn.AddNodeOrderFn("nvlink", [this](const TaskInfo& t, const NodeInfo& n) {
      return weight_ * kMaxNodeScore * Connectivity(t, n);
    });
  }

 private:
  struct NodeTopology {
    api::GpuTopology gpus;
    std::map<int, int> best_nvlinks;  // by set size: NVLinks in the best set with all GPUs free
  };
  struct CachedTopology {
    const api::Node* source = nullptr;  // the node object it was read from
    std::optional<NodeTopology> topology;
  };

  // The node's topology while it matches its devices; nullptr when it has none that does.
  // Read once per node object (the cluster replaces the object when the node changes).
  NodeTopology* TopologyOf(const NodeInfo& n) {
    CachedTopology& cached = cache_[n.id];
    if (cached.source == n.node.get() && cached.source != nullptr) {
      return cached.topology ? &*cached.topology : nullptr;
    }
    cached.source = n.node.get();
    cached.topology.reset();
    if (n.node == nullptr) return nullptr;
    auto it = n.node->meta.annotations.find(api::kGpuTopologyAnnotation);
    if (it == n.node->meta.annotations.end()) return nullptr;
    absl::StatusOr<api::GpuTopology> parsed = api::ParseGpuTopology(it->second);
    if (!parsed.ok() || parsed->gpus() != static_cast<int>(n.gpus.size()) ||
        !parsed->HasNvLinks()) {
      return nullptr;
    }
    cached.topology = NodeTopology{*std::move(parsed), {}};
    return &*cached.topology;
  }

  // The NVLinks of the best free set of the task's size over those of the best set of that size
  // on the node: 0 to 1; 0 where the plugin has no opinion.
  double Connectivity(const TaskInfo& t, const NodeInfo& n) {
    const int size = WholeGpusAsked(t);
    if (size < 2) return 0;
    NodeTopology* topology = TopologyOf(n);
    if (topology == nullptr) return 0;
    auto [best, inserted] = topology->best_nvlinks.try_emplace(size, 0);
    if (inserted) {
      std::vector<int> all(n.gpus.size());
      for (size_t g = 0; g < all.size(); ++g) all[g] = static_cast<int>(g);
      best->second =
          api::ScoreGpuSet(topology->gpus, api::BestGpuSet(topology->gpus, all, size)).nvlinks;
    }
    if (best->second == 0) return 0;
    const std::vector<int> set = api::BestGpuSet(topology->gpus, FreeGpusOf(n), size);
    if (set.empty()) return 0;  // does not fit: the session's own checks reject the node
    return static_cast<double>(api::ScoreGpuSet(topology->gpus, set).nvlinks) / best->second;
  }

  double weight_;
  std::unordered_map<int, CachedTopology> cache_;  // by node id, for this session
};

}  // namespace

std::unique_ptr<Plugin> NewNvLinkPlugin(const PluginOption& opt) {
  return std::make_unique<NvLinkPlugin>(opt);
}

}  // namespace muster::core
