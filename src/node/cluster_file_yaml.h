#pragma once

// Field readers shared by the cluster file's parsers (cluster_file.cc: node pools;
// cluster_topology.cc: racks and spines), and the topology parser itself. Each error is
// InvalidArgument and starts with the 1-based line of the YAML node it is about ("line 7:
// nodePools[0].count: ..."). Internal to src/node; follows the error style of kubectl's YAML
// decoding (a value typed as kubectl reads it, quoted when it must be a string).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "api/model.h"
#include "boost/json/value.hpp"
#include "node/cluster_file.h"
#include "yaml-cpp/yaml.h"

namespace muster::node::cluster_yaml {

absl::Status ErrorAt(const YAML::Node& node, std::string_view message);
// The scalar at `node` typed as kubectl would read it.
absl::StatusOr<boost::json::value> Scalar(const YAML::Node& node, std::string_view what);
absl::StatusOr<std::string> String(const YAML::Node& node, std::string_view what);
absl::StatusOr<int64_t> Integer(const YAML::Node& node, std::string_view what);
absl::Status ExpectMap(const YAML::Node& node, std::string_view what);
// Checks that every key of `map` is one of `known` ("what: unknown key \"x\"; expected one
// of: a, b").
absl::Status KnownKeys(const YAML::Node& map, std::string_view what,
                       const std::vector<std::string_view>& known);
// A list of strings ("what[i]: expected a string"); an absent or null node is an empty list.
absl::StatusOr<std::vector<std::string>> StringList(const YAML::Node& node, std::string_view what);

// The nodes one entry of nodePools expanded into (indices into the file's nodes).
struct PoolNodes {
  std::string name;
  std::vector<size_t> nodes;
};

// The `topology` section (cluster_topology.h) against the file's `nodes` and `pools`: its racks
// and spines as HyperNodes, racks first, each in file order; every node of a rack gets
// kRackLabel (and kSpineLabel when its rack is in a spine). Defined in cluster_topology.cc.
absl::StatusOr<std::vector<api::HyperNode>> ParseTopology(const YAML::Node& topology,
                                                          const std::vector<PoolNodes>& pools,
                                                          std::vector<NodeConfig>& nodes);

}  // namespace muster::node::cluster_yaml
