// A property of network-topology-aware (network_topology_aware.cc) over seeded random clusters of
// racks and spines: a hard-mode gang never spans two HyperNodes of its tier (all its pods land in
// one HyperNode of tier <= highestTierAllowed), whatever else runs, and the same input gives the
// same decisions.

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/testing/harness.h"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::core {
namespace {

using test::Binds;
using test::BindMap;
using test::Harness;
using test::MakeHyperNode;
using test::MakeNode;
using test::MakePod;
using test::MakePodGroup;
using test::MustParse;

constexpr int kTopologySeeds = 200;

// splitmix64, so that a seed means the same cluster everywhere.
class TopologyRng {
 public:
  explicit TopologyRng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  int Between(int lo, int hi) { return lo + static_cast<int>(Next() % (hi - lo + 1)); }

 private:
  uint64_t state_;
};

struct Gang {
  std::string pg;
  std::string mode;  // hard, soft or "" (none)
  int tier = 1;
};

// Racks of 2-4 nodes of 4 or 8 GPUs (tier 1), in spines of 1-3 racks (tier 2), sometimes under
// one core (tier 3); some GPUs already busy; 1-5 gangs of 1-6 pods of 1-8 GPUs, most in hard mode
// at tier 1 or 2. `hypernodes` gets each HyperNode's tier and nodes.
Harness Generate(uint64_t seed, std::vector<Gang>& gangs,
                 std::map<std::string, std::pair<int, std::set<std::string>>>& hypernodes) {
  TopologyRng rng(seed);
  Harness h;
  const int racks = rng.Between(2, 8);
  const int per_rack = rng.Between(2, 4);
  const int gpus = rng.Between(0, 1) ? 8 : 4;
  const bool core = rng.Between(0, 1);
  std::set<std::string> all;
  std::vector<std::string> spine_racks;
  int spine = 0;
  auto close_spine = [&]() {
    if (spine_racks.empty()) return;
    std::string name = fmt::format("spine{}", ++spine);
    auto hn = MakeHyperNode(name, 2);
    std::set<std::string> nodes;
    for (const std::string& r : spine_racks) {
      hn.Child(r);
      nodes.insert(hypernodes[r].second.begin(), hypernodes[r].second.end());
    }
    h.Add(hn.Obj());
    hypernodes[name] = {2, nodes};
    spine_racks.clear();
  };
  int spine_size = rng.Between(1, 3);
  for (int r = 1; r <= racks; ++r) {
    std::string rack = fmt::format("rack{}", r);
    auto hn = MakeHyperNode(rack, 1);
    std::set<std::string> nodes;
    for (int n = 1; n <= per_rack; ++n) {
      std::string node = fmt::format("{}-n{}", rack, n);
      h.Add(MakeNode(node).Cpu("64").Memory("256Gi").Gpus(gpus).Obj());
      nodes.insert(node);
      all.insert(node);
      int busy = rng.Between(-gpus, gpus);  // about half the nodes start empty
      if (busy > 0) {
        std::string pod = fmt::format("busy-{}", node);
        h.Add(MakePodGroup("other", pod).Phase("Running").Obj());
        h.Add(MakePod("other", pod).Group(pod).Req("cpu", "1").Gpus(busy).RunningOn(node).Obj());
      }
    }
    // Half the racks by name, half by regular expression.
    if (r % 2 == 0) {
      hn.Regex("Node", fmt::format("^{}-n[0-9]+$", rack));
    } else {
      for (const std::string& node : nodes) hn.Node(node);
    }
    h.Add(hn.Obj());
    hypernodes[rack] = {1, nodes};
    spine_racks.push_back(rack);
    if (static_cast<int>(spine_racks.size()) == spine_size) {
      close_spine();
      spine_size = rng.Between(1, 3);
    }
  }
  close_spine();
  if (core) {
    auto hn = MakeHyperNode("core", 3);
    for (int s = 1; s <= spine; ++s) hn.Child(fmt::format("spine{}", s));
    h.Add(hn.Obj());
    hypernodes["core"] = {3, all};
  }
  const int n_gangs = rng.Between(1, 5);
  for (int g = 1; g <= n_gangs; ++g) {
    Gang gang{fmt::format("g{}", g), "", 1};
    int kind = rng.Between(0, 5);
    gang.mode = kind == 0 ? "" : kind == 1 ? "soft" : "hard";
    gang.tier = rng.Between(1, 2);
    const int pods = rng.Between(1, 6);
    const int each = rng.Between(1, gpus);
    auto pg = MakePodGroup("ns", gang.pg).MinMember(pods).Created(
        fmt::format("2026-01-01T00:00:{:02d}Z", g));
    if (!gang.mode.empty()) pg.Topology(gang.mode, gang.tier);
    h.Add(pg.Obj());
    for (int p = 1; p <= pods; ++p) {
      h.Add(MakePod("ns", fmt::format("{}-{}", gang.pg, p))
                .Group(gang.pg)
                .Req("cpu", "1")
                .Gpus(each)
                .Obj());
    }
    gangs.push_back(gang);
  }
  return h;
}

constexpr char kPropertyConf[] = R"(
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}]
- plugins: [{name: predicates}, {name: nodeorder}, {name: binpack}, {name: network-topology-aware}]
)";

TEST(NetworkTopologyAwarePropertyTest, AHardModeGangNeverSpansTwoHyperNodesOfItsTier) {
  const SchedulerConf conf = MustParse(kPropertyConf);
  int hard_bound = 0, hard_waiting = 0;
  for (uint64_t seed = 1; seed <= kTopologySeeds; ++seed) {
    std::vector<Gang> gangs;
    std::map<std::string, std::pair<int, std::set<std::string>>> hypernodes;
    Harness h = Generate(seed, gangs, hypernodes);
    BindMap binds = Binds(h.Run(conf));
    {
      std::vector<Gang> again_gangs;
      std::map<std::string, std::pair<int, std::set<std::string>>> again_hns;
      Harness again = Generate(seed, again_gangs, again_hns);
      ASSERT_EQ(Binds(again.Run(conf)), binds) << "seed " << seed << ": not reproducible";
    }
    for (const Gang& g : gangs) {
      if (g.mode != "hard") continue;
      std::set<std::string> nodes;
      for (const auto& [pod, node] : binds) {
        if (pod.rfind("ns/" + g.pg + "-", 0) == 0) nodes.insert(node);
      }
      if (nodes.empty()) {
        ++hard_waiting;
        continue;
      }
      ++hard_bound;
      bool within = false;
      for (const auto& [name, hn] : hypernodes) {
        if (hn.first > g.tier) continue;
        bool all_in = true;
        for (const std::string& n : nodes) all_in = all_in && hn.second.count(n) > 0;
        within = within || all_in;
      }
      EXPECT_TRUE(within) << "seed " << seed << ": gang " << g.pg << " (hard, tier <= " << g.tier
                          << ") spans " << fmt::format("{}", fmt::join(nodes, ", "));
    }
  }
  // The generator gives both outcomes often enough for the property to mean something.
  EXPECT_GT(hard_bound, kTopologySeeds / 2);
  EXPECT_GT(hard_waiting, kTopologySeeds / 10);
}

}  // namespace
}  // namespace muster::core
