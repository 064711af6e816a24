#pragma once

// The network topology as the engine sees it: Volcano's HyperNodes (topology.volcano.sh/v1alpha1)
// resolved to the nodes they hold. A HyperNode has a tier (lower is closer on the network: tier 1
// a rack, tier 2 a spine) and members: nodes, by exact name, by a regular expression over node
// names or by a label selector over node labels, and HyperNodes of a lower tier, by exact name or
// regular expression. A HyperNode's nodes are its node members and, transitively, its HyperNode
// members' nodes. Follows Volcano's pkg/scheduler/api/hyper_node_info.go (HyperNodesInfo: tiers,
// real nodes, parents) and pkg/util/hypernode (member selection).
//
// What Volcano's cache refuses is left out here too, with the reason kept in problems(): a
// HyperNode on a member cycle (every HyperNode of the cycle), a regular expression that does not
// compile (ECMAScript syntax, which Go's RE2 patterns for names mostly are). A HyperNode member
// that a second HyperNode also claims keeps its first parent by name. A selector matching nothing is
// no error (a rack whose nodes have not joined yet): it adds no node.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/model.h"

namespace muster::core {

struct HyperNodeInfo {
  int index = -1;  // in HyperNodeTopology::hypernodes()
  std::string name;
  int tier = 0;
  std::string tier_name;
  int parent = -1;            // index of the HyperNode holding this one, or -1
  std::vector<int> children;  // indices of member HyperNodes
  // Node ids (Cluster's) of the HyperNode's nodes, ascending; a node is a member of `in` when
  // in[node id] is set.
  std::vector<int> nodes;
  std::vector<char> in;
  bool virtual_top = false;  // the whole cluster (see HyperNodeTopology)

  bool Has(int node_id) const {
    return node_id >= 0 && node_id < static_cast<int>(in.size()) && in[node_id] != 0;
  }
};

// One node as the topology needs it: its id in the Cluster, its name and labels.
struct TopologyNode {
  int id = -1;
  const std::string* name = nullptr;
  const api::StringMap* labels = nullptr;
};

class HyperNodeTopology {
 public:
  // Resolves `objects` (by name) against `nodes`. When there is at least one HyperNode, a
  // virtual HyperNode holding every node is added one tier above the highest (Volcano's
  // ClusterTopHyperNode): what a soft-mode gang falls back to.
  static HyperNodeTopology Build(
      const std::map<std::string, std::shared_ptr<const api::HyperNode>>& objects,
      const std::vector<TopologyNode>& nodes);

  bool empty() const { return hypernodes_.empty(); }
  // Ordered by tier, then name; the virtual top last.
  const std::vector<HyperNodeInfo>& hypernodes() const { return hypernodes_; }
  const HyperNodeInfo* Find(const std::string& name) const;
  // The highest tier of a real HyperNode (0 when there is none).
  int MaxTier() const { return max_tier_; }
  // The tier a HyperNode's spec.tierName names, if one does.
  std::optional<int> TierByName(const std::string& tier_name) const;
  const HyperNodeInfo* VirtualTop() const {
    return hypernodes_.empty() ? nullptr : &hypernodes_.back();
  }
  // HyperNodes left out, and why ("HyperNode rack-1: ..."), in name order.
  const std::vector<std::string>& problems() const { return problems_; }

 private:
  std::vector<HyperNodeInfo> hypernodes_;
  std::map<std::string, int> by_name_;
  std::map<std::string, int> tier_names_;
  int max_tier_ = 0;
  std::vector<std::string> problems_;
};

}  // namespace muster::core
