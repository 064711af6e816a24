#pragma once

// Racks and spines of a cluster file (its `topology` section, docs/cluster-file.md) as Volcano's
// HyperNodes (topology.volcano.sh/v1alpha1): a rack is a HyperNode of tier 1 (tierName "rack")
// whose members are its nodes by exact name, a spine one of tier 2 (tierName "spine") whose
// members are its racks, as Volcano's label-based HyperNode discovery builds them
// (pkg/controllers/hypernode/discovery/label/label.go: one HyperNode per value of a tier's node
// label, nodes by exact name at the lowest tier, HyperNodes above). The nodes carry their rack and
// spine as labels. ParseClusterSpec (cluster_file.h) reads the section; `muster up` writes the
// HyperNodes through its API server with ApplyHyperNodes.
//
//   topology:                      # generated: rack-0, rack-1, ... of 4 nodes in file order,
//     nodesPerRack: 4              # spine-0, spine-1, ... of 2 racks each
//     racksPerSpine: 2
//
//   topology:                      # listed
//     racks:
//       - {name: rack-a, nodePools: [a100]}
//       - {name: rack-b, nodes: [t4-0, t4-1]}
//     spines:
//       - {name: spine, racks: [rack-a, rack-b]}

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "api/model.h"
#include "client/client.h"

namespace muster::node {

// The labels a node of a rack (and of a spine) carries: the HyperNode's name.
inline constexpr char kRackLabel[] = "topology.muster.dev/rack";
inline constexpr char kSpineLabel[] = "topology.muster.dev/spine";
// The label of every HyperNode a cluster file describes, Volcano's key for where a HyperNode
// came from (its discovery sources set it to "ufm", "label", ...).
inline constexpr char kTopologySourceLabel[] = "volcano.sh/network-topology-source";
inline constexpr char kTopologySource[] = "muster-cluster-file";

// Makes the API server's HyperNodes those of `hypernodes` (ParseClusterSpec's, racks before
// spines): each is created, or its spec and labels replaced when they differ; HyperNodes labelled
// kTopologySourceLabel=kTopologySource that are not in `hypernodes` (a rack the file no longer
// has) are deleted. Others are left alone. Idempotent: a second call with the same list writes
// nothing. Errors name the HyperNode ("HyperNode rack-0: ...").
absl::Status ApplyHyperNodes(client::Client& api, const std::vector<api::HyperNode>& hypernodes);

}  // namespace muster::node
