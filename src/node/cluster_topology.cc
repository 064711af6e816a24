// Racks and spines of a cluster file read into HyperNodes, and written to the API server
// (cluster_topology.h). Follows Volcano's label-based HyperNode discovery
// (pkg/controllers/hypernode/discovery/label/label.go and pkg/controllers/hypernode/utils:
// tier-1 members are nodes by exact name, higher tiers' members HyperNodes by exact name, every
// HyperNode labelled with its source) and its HyperNode controller's create/update/delete of
// what a source no longer reports.

#include "node/cluster_topology.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "api/hypernode_exact.h"
#include "api/json_codec.h"
#include "api/names.h"
#include "boost/json/value.hpp"
#include "fmt/format.h"
#include "node/cluster_file_yaml.h"
#include "node/json_access.h"

namespace muster::node {

namespace {

namespace json = boost::json;
using namespace cluster_yaml;

constexpr int64_t kMaxGroup = 100000;

struct Group {
  std::string name;
  std::vector<size_t> members;  // node indices (racks) or rack indices (spines)
};

// A HyperNode name that is also a node label value (the label that names it on its nodes).
absl::Status CheckName(const YAML::Node& at, const std::string& what, const std::string& name) {
  if (api::IsDns1123Subdomain(name) && api::IsLabelValue(name)) return absl::OkStatus();
  return ErrorAt(at, Cat(what, ": \"", name,
                         "\" must be lower-case letters, digits, '-' and '.', starting and ending "
                         "with a letter or digit, at most 63 characters"));
}

absl::StatusOr<int64_t> GroupSize(const YAML::Node& node, const std::string& what) {
  absl::StatusOr<int64_t> n = Integer(node, what);
  if (!n.ok()) return n.status();
  if (*n < 1 || *n > kMaxGroup) {
    return ErrorAt(node, Cat(what, ": must be between 1 and ", kMaxGroup));
  }
  return *n;
}

// Generated groups: `prefix`-0, -1, ... of `size` consecutive members out of `count`.
std::vector<Group> Consecutive(const std::string& prefix, size_t count, size_t size) {
  std::vector<Group> out;
  for (size_t at = 0; at < count; at += size) {
    Group g;
    g.name = Cat(prefix, "-", out.size());
    for (size_t i = at; i < std::min(count, at + size); ++i) g.members.push_back(i);
    out.push_back(std::move(g));
  }
  return out;
}

// HyperNode names across racks and spines: where each was given, to name duplicates.
class Names {
 public:
  absl::Status Add(const YAML::Node& at, const std::string& what, const std::string& name) {
    auto [it, added] = where_.emplace(name, what);
    if (added) return absl::OkStatus();
    return ErrorAt(at, Cat(what, ": \"", name, "\" is also the name of ", it->second,
                           " (racks and spines are HyperNodes: one name each)"));
  }

 private:
  std::map<std::string, std::string> where_;
};

absl::StatusOr<std::vector<Group>> ListedRacks(const YAML::Node& list,
                                               const std::vector<PoolNodes>& pools,
                                               const std::vector<NodeConfig>& nodes,
                                               Names& names) {
  if (!list.IsSequence() || list.size() == 0) {
    return ErrorAt(list, "topology.racks: expected a non-empty list of racks");
  }
  std::map<std::string, size_t> node_index;
  for (size_t i = 0; i < nodes.size(); ++i) node_index.emplace(nodes[i].name, i);
  std::map<size_t, std::string> rack_of;  // node index -> rack, to refuse a node in two
  std::vector<Group> racks;
  for (size_t r = 0; r < list.size(); ++r) {
    const YAML::Node entry = list[r];
    const std::string what = Cat("topology.racks[", r, "]");
    if (absl::Status s = ExpectMap(entry, what); !s.ok()) return s;
    if (absl::Status s = KnownKeys(entry, what, {"name", "nodePools", "nodes"}); !s.ok()) return s;
    if (!entry["name"]) return ErrorAt(entry, Cat(what, ": name is required"));
    absl::StatusOr<std::string> name = String(entry["name"], what + ".name");
    if (!name.ok()) return name.status();
    if (absl::Status s = CheckName(entry["name"], what + ".name", *name); !s.ok()) return s;
    if (absl::Status s = names.Add(entry["name"], what + ".name", *name); !s.ok()) return s;
    Group rack;
    rack.name = *name;
    std::set<size_t> members;
    absl::StatusOr<std::vector<std::string>> pool_names =
        StringList(entry["nodePools"], what + ".nodePools");
    if (!pool_names.ok()) return pool_names.status();
    for (size_t p = 0; p < pool_names->size(); ++p) {
      bool found = false;
      for (const PoolNodes& pool : pools) {
        if (pool.name != (*pool_names)[p]) continue;
        found = true;
        members.insert(pool.nodes.begin(), pool.nodes.end());
      }
      if (!found) {
        return ErrorAt(entry["nodePools"][p],
                       Cat(what, ".nodePools[", p, "]: no node pool named \"", (*pool_names)[p],
                           "\""));
      }
    }
    absl::StatusOr<std::vector<std::string>> node_names =
        StringList(entry["nodes"], what + ".nodes");
    if (!node_names.ok()) return node_names.status();
    for (size_t n = 0; n < node_names->size(); ++n) {
      auto it = node_index.find((*node_names)[n]);
      if (it == node_index.end()) {
        return ErrorAt(entry["nodes"][n], Cat(what, ".nodes[", n, "]: no node named \"",
                                              (*node_names)[n], "\" in nodePools"));
      }
      members.insert(it->second);
    }
    if (members.empty()) {
      return ErrorAt(entry, Cat(what, ": rack \"", rack.name,
                                "\" has no nodes; give its nodePools or its nodes"));
    }
    for (size_t n : members) {
      auto [it, added] = rack_of.emplace(n, rack.name);
      if (!added) {
        return ErrorAt(entry, Cat(what, ": node \"", nodes[n].name, "\" is already in rack \"",
                                  it->second, "\"; a node is in one rack"));
      }
    }
    rack.members.assign(members.begin(), members.end());
    racks.push_back(std::move(rack));
  }
  return racks;
}

absl::StatusOr<std::vector<Group>> ListedSpines(const YAML::Node& list,
                                                const std::vector<Group>& racks, Names& names) {
  if (!list.IsSequence() || list.size() == 0) {
    return ErrorAt(list, "topology.spines: expected a non-empty list of spines");
  }
  std::map<std::string, size_t> rack_index;
  for (size_t i = 0; i < racks.size(); ++i) rack_index.emplace(racks[i].name, i);
  std::map<size_t, std::string> spine_of;
  std::vector<Group> spines;
  for (size_t s = 0; s < list.size(); ++s) {
    const YAML::Node entry = list[s];
    const std::string what = Cat("topology.spines[", s, "]");
    if (absl::Status st = ExpectMap(entry, what); !st.ok()) return st;
    if (absl::Status st = KnownKeys(entry, what, {"name", "racks"}); !st.ok()) return st;
    if (!entry["name"]) return ErrorAt(entry, Cat(what, ": name is required"));
    absl::StatusOr<std::string> name = String(entry["name"], what + ".name");
    if (!name.ok()) return name.status();
    if (absl::Status st = CheckName(entry["name"], what + ".name", *name); !st.ok()) return st;
    if (absl::Status st = names.Add(entry["name"], what + ".name", *name); !st.ok()) return st;
    absl::StatusOr<std::vector<std::string>> members = StringList(entry["racks"], what + ".racks");
    if (!members.ok()) return members.status();
    if (members->empty()) {
      return ErrorAt(entry, Cat(what, ": spine \"", *name, "\" has no racks; list them in racks"));
    }
    Group spine;
    spine.name = *name;
    std::set<size_t> seen;
    for (size_t r = 0; r < members->size(); ++r) {
      auto it = rack_index.find((*members)[r]);
      if (it == rack_index.end()) {
        return ErrorAt(entry["racks"][r], Cat(what, ".racks[", r, "]: no rack named \"",
                                              (*members)[r], "\" in topology.racks"));
      }
      if (!seen.insert(it->second).second) continue;
      auto [at, added] = spine_of.emplace(it->second, spine.name);
      if (!added) {
        return ErrorAt(entry["racks"][r], Cat(what, ".racks[", r, "]: rack \"", (*members)[r],
                                              "\" is already in spine \"", at->second,
                                              "\"; a rack is in one spine"));
      }
      spine.members.push_back(it->second);
    }
    spines.push_back(std::move(spine));
  }
  return spines;
}

api::HyperNode MakeHyperNode(const std::string& name, int tier, const std::string& tier_name,
                             const std::string& member_type, std::vector<std::string> members) {
  api::HyperNode hn =
      api::ExactMembersHyperNode(name, tier, tier_name, member_type, std::move(members));
  hn.meta.labels[kTopologySourceLabel] = kTopologySource;
  return hn;
}

absl::Status Named(const std::string& name, const absl::Status& s) {
  return absl::Status(s.code(), Cat("HyperNode ", name, ": ", std::string(s.message())));
}

}  // namespace

namespace cluster_yaml {

absl::StatusOr<std::vector<api::HyperNode>> ParseTopology(const YAML::Node& topology,
                                                          const std::vector<PoolNodes>& pools,
                                                          std::vector<NodeConfig>& nodes) {
  if (absl::Status s = ExpectMap(topology, "topology"); !s.ok()) return s;
  if (absl::Status s = KnownKeys(topology, "topology",
                                 {"nodesPerRack", "racks", "racksPerSpine", "spines"});
      !s.ok()) {
    return s;
  }
  const YAML::Node per_rack = topology["nodesPerRack"];
  const YAML::Node listed_racks = topology["racks"];
  const YAML::Node per_spine = topology["racksPerSpine"];
  const YAML::Node listed_spines = topology["spines"];
  if (per_rack && listed_racks) {
    return ErrorAt(listed_racks, "topology: give the racks as nodesPerRack or as a racks list, "
                                 "not both");
  }
  if (per_spine && listed_spines) {
    return ErrorAt(listed_spines, "topology: give the spines as racksPerSpine or as a spines "
                                  "list, not both");
  }
  if (!per_rack && !listed_racks) {
    return ErrorAt(topology, "topology: racks are required: nodesPerRack: N, or a racks list");
  }
  Names names;
  std::vector<Group> racks;
  if (per_rack) {
    absl::StatusOr<int64_t> n = GroupSize(per_rack, "topology.nodesPerRack");
    if (!n.ok()) return n.status();
    racks = Consecutive("rack", nodes.size(), static_cast<size_t>(*n));
    for (const Group& r : racks) {
      if (absl::Status s = names.Add(per_rack, "topology.nodesPerRack", r.name); !s.ok()) return s;
    }
  } else {
    absl::StatusOr<std::vector<Group>> listed = ListedRacks(listed_racks, pools, nodes, names);
    if (!listed.ok()) return listed.status();
    racks = *std::move(listed);
  }
  std::vector<Group> spines;
  if (per_spine) {
    absl::StatusOr<int64_t> m = GroupSize(per_spine, "topology.racksPerSpine");
    if (!m.ok()) return m.status();
    spines = Consecutive("spine", racks.size(), static_cast<size_t>(*m));
    for (const Group& s : spines) {
      if (absl::Status st = names.Add(per_spine, "topology.racksPerSpine", s.name); !st.ok()) {
        return st;
      }
    }
  } else if (listed_spines) {
    absl::StatusOr<std::vector<Group>> listed = ListedSpines(listed_spines, racks, names);
    if (!listed.ok()) return listed.status();
    spines = *std::move(listed);
  }

  std::vector<api::HyperNode> out;
  for (const Group& rack : racks) {
    std::vector<std::string> members;
    for (size_t n : rack.members) {
      members.push_back(nodes[n].name);
      nodes[n].labels[kRackLabel] = rack.name;
    }
    out.push_back(MakeHyperNode(rack.name, 1, "rack", "Node", std::move(members)));
  }
  for (const Group& spine : spines) {
    std::vector<std::string> members;
    for (size_t r : spine.members) {
      members.push_back(racks[r].name);
      for (size_t n : racks[r].members) nodes[n].labels[kSpineLabel] = spine.name;
    }
    out.push_back(MakeHyperNode(spine.name, 2, "spine", "HyperNode", std::move(members)));
  }
  return out;
}

}  // namespace cluster_yaml

absl::Status ApplyHyperNodes(client::Client& api, const std::vector<api::HyperNode>& hypernodes) {
  std::set<std::string> wanted;
  for (const api::HyperNode& hn : hypernodes) {
    wanted.insert(hn.meta.name);
    json::object desired = api::EncodeHyperNode(hn).as_object();
    absl::StatusOr<json::object> current = api.Get(client::HyperNodes(), "", hn.meta.name);
    if (absl::IsNotFound(current.status())) {
      absl::StatusOr<json::object> created = api.Create(client::HyperNodes(), "", desired);
      if (!created.ok()) return Named(hn.meta.name, created.status());
      continue;
    }
    if (!current.ok()) return Named(hn.meta.name, current.status());
    json::object& meta = (*current)["metadata"].as_object();
    json::value& labels = meta["labels"];
    if (!labels.is_object()) labels = json::object();
    const json::value* source = labels.as_object().if_contains(kTopologySourceLabel);
    const json::value* spec = current->if_contains("spec");
    if (spec != nullptr && *spec == desired.at("spec") && source != nullptr &&
        source->is_string() && source->get_string() == kTopologySource) {
      continue;
    }
    labels.as_object()[kTopologySourceLabel] = kTopologySource;
    (*current)["spec"] = desired.at("spec");
    absl::StatusOr<json::object> updated = api.Update(client::HyperNodes(), *std::move(current));
    if (!updated.ok()) return Named(hn.meta.name, updated.status());
  }
  client::ListOptions options;
  options.label_selector = fmt::format("{}={}", kTopologySourceLabel, kTopologySource);
  absl::StatusOr<client::ObjectList> listed = api.List(client::HyperNodes(), "", options);
  if (!listed.ok()) {
    return absl::Status(listed.status().code(),
                        Cat("HyperNodes: ", std::string(listed.status().message())));
  }
  for (const json::object& item : listed->items) {
    const std::string name = MetaString(item, "name");
    if (wanted.count(name)) continue;
    absl::Status deleted = api.Delete(client::HyperNodes(), "", name);
    if (!deleted.ok() && !absl::IsNotFound(deleted)) return Named(name, deleted);
  }
  return absl::OkStatus();
}

}  // namespace muster::node
