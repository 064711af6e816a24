#pragma once

// A HyperNode whose members are named exactly (topology.volcano.sh/v1alpha1; Volcano's
// label-based discovery writes its racks the same way): the racks and spines of a cluster file
// (node/cluster_topology.cc) and those of `muster sim replay --rack-nodes` (sim/replay_engine.cc).

#include <string>
#include <vector>

#include "api/model.h"

namespace muster::api {

// member_type: "Node" or "HyperNode".
inline HyperNode ExactMembersHyperNode(std::string name, int tier, std::string tier_name,
                                       const std::string& member_type,
                                       std::vector<std::string> members) {
  HyperNode hn;
  hn.meta.name = std::move(name);
  hn.spec.tier = tier;
  hn.spec.tier_name = std::move(tier_name);
  for (std::string& m : members) {
    HyperNodeMember member;
    member.type = member_type;
    member.selector.exact_match = HyperNodeExactMatch{std::move(m)};
    hn.spec.members.push_back(std::move(member));
  }
  return hn;
}

}  // namespace muster::api
