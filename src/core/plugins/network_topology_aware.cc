// network-topology-aware: where a gang with spec.networkTopology may land, and which HyperNode
// it prefers. Follows Volcano's pkg/scheduler/plugins/network-topology-aware/
// network_topology_aware.go (hyperNodeGradientFn, isEligibleHyperNode, HyperNodeOrderFn's
// binpacking score) and the soft-to-hard conversion of pkg/scheduler/framework/session.go.
//
// - mode hard (the default): the gang lands within one HyperNode of tier <= highestTierAllowed
//   (or the tier that highestTierName names; without either, any tier). The gradients are the
//   HyperNodes of each tier up to that one, lowest first; a HyperNode is left out when its idle
//   and its future-idle resources both fall short of the PodGroup's minResources, and, for a
//   gang that already has pods on nodes, when it does not hold them all. When none takes the
//   gang, it waits with "network topology hard mode: no HyperNode of tier <= N can hold the
//   gang ...".
// - mode soft: the same search up to the whole cluster (a virtual HyperNode one tier above the
//   highest): the gang lands in the lowest tier where one HyperNode takes it, and spans the
//   cluster only when none does.
// - Among the HyperNodes of one gradient that take the gang, binpacking: the score is the
//   weighted mean, over the resources the gang's pending pods ask for, of the HyperNode's used
//   fraction once they are placed ((used + request) / allocatable), times weight; a HyperNode
//   the request overflows scores 0. The fullest HyperNode that fits wins, which keeps whole
//   racks free for the next big gang. Arguments: weight (default 1), hypernode.binpack.cpu,
//   hypernode.binpack.memory (default 1), hypernode.binpack.resources (a comma-separated list)
//   and hypernode.binpack.resources.<name> (default 1). nvidia.com/gpu counts with weight 1
//   unless listed otherwise (Volcano counts only the listed extended resources; muster's binpack
//   does the same).
// - A cluster without HyperNodes has no topology to keep to: such gangs are placed as others.
//
// Left out: Volcano's normal-pod HyperNode binpacking (node scores for pods without a topology),
// subgroup (SubJob) policies and the eviction-purpose gradients of preempt.

#include <string>

#include "core/framework/conf.h"
#include "core/framework/session.h"
#include "core/plugins/binpack_weights.h"
#include "core/plugins/node_score.h"
#include "fmt/format.h"

namespace muster::core {
namespace {

constexpr char kName[] = "network-topology-aware";

class NetworkTopologyAwarePlugin : public Plugin {
 public:
  explicit NetworkTopologyAwarePlugin(const PluginOption& opt) {
    weight_ = opt.Number("weight", 1).value_or(1);
    weights_ = BinpackWeights(opt, "hypernode.binpack");
  }

  void OnSessionOpen(Session& ssn) override {
    ssn.AddHyperNodeGradientFn(kName, [&ssn](const JobInfo& j) { return Gradient(ssn, j); });
    ssn.AddHyperNodeOrderFn(kName, [&ssn, this](const JobInfo& j,
                                                const std::vector<const HyperNodeInfo*>& hns,
                                                std::vector<double>& scores) {
      Resources request;
      for (int tid : j.tasks) {
        const TaskInfo& t = ssn.cluster().task(tid);
        if (t.status == TaskStatus::kPending && !t.best_effort) request.Add(t.resreq);
      }
      for (size_t i = 0; i < hns.size(); ++i) scores[i] += Score(ssn, *hns[i], request);
    });
  }

 private:
  static std::optional<HyperNodeGradient> Gradient(Session& ssn, const JobInfo& j) {
    if (!j.pg || !j.pg->spec.network_topology) return std::nullopt;
    const HyperNodeTopology& topo = ssn.cluster().Topology();
    if (topo.empty()) return std::nullopt;
    const api::NetworkTopologySpec& spec = *j.pg->spec.network_topology;
    const bool soft = spec.mode == "soft";
    const int top = topo.VirtualTop()->tier;
    HyperNodeGradient g;
    int highest = top;
    if (!soft && spec.highest_tier_allowed) {
      highest = *spec.highest_tier_allowed;
    } else if (!soft && !spec.highest_tier_name.empty()) {
      std::optional<int> named = topo.TierByName(spec.highest_tier_name);
      if (!named) {
        g.unfit_reason = fmt::format("failed to find hypernode tier name {}",
                                     spec.highest_tier_name);
        return g;
      }
      highest = *named;
    }
    // Nodes the gang already has pods on: a HyperNode must hold them all.
    std::vector<int> placed;
    for (int tid : j.tasks) {
      const TaskInfo& t = ssn.cluster().task(tid);
      if (t.node >= 0) placed.push_back(t.node);
    }
    int in_tiers = 0, eligible = 0;
    for (const HyperNodeInfo& hn : topo.hypernodes()) {
      if (hn.tier > highest) continue;
      ++in_tiers;
      bool holds = true;
      for (int n : placed) holds = holds && hn.Has(n);
      if (!holds) continue;
      if (!soft) g.allowed.push_back(&hn);
      if (placed.empty() && j.min_resources && !HasRoomFor(ssn, hn, *j.min_resources)) continue;
      ++eligible;
      if (g.tiers.empty() || g.tiers.back().front()->tier != hn.tier) g.tiers.emplace_back();
      g.tiers.back().push_back(&hn);
    }
    if (!soft) {
      g.hard = true;
      g.unfit_reason = fmt::format(
          "network topology hard mode: no HyperNode of tier <= {} can hold the gang ({} "
          "HyperNodes of tier <= {}, {} with room enough to try)",
          highest, in_tiers, highest, eligible);
    }
    return g;
  }

  // Volcano's isEligibleHyperNode: minResources within the HyperNode's idle or future idle.
  static bool HasRoomFor(Session& ssn, const HyperNodeInfo& hn, const Resources& min) {
    Resources idle, future;
    for (int id : hn.nodes) {
      const NodeInfo& n = ssn.cluster().node(id);
      if (!n.ready) continue;
      idle.Add(n.idle);
      future.Add(n.FutureIdle());
    }
    return min.LessEqual(idle) || min.LessEqual(future);
  }

  double Score(Session& ssn, const HyperNodeInfo& hn, const Resources& request) const {
    Resources alloc, used;
    for (int id : hn.nodes) {
      const NodeInfo& n = ssn.cluster().node(id);
      if (!n.ready) continue;
      alloc.Add(n.allocatable);
      used.Add(n.used);
    }
    return BinpackFraction(weights_, request, alloc, used) * kMaxNodeScore * weight_;
  }

  double weight_;
  Resources weights_;
};

}  // namespace

std::unique_ptr<Plugin> NewNetworkTopologyAwarePlugin(const PluginOption& opt) {
  return std::make_unique<NetworkTopologyAwarePlugin>(opt);
}

}  // namespace muster::core
