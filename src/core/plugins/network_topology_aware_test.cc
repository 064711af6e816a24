// network-topology-aware (network_topology_aware.cc) and allocate's hypernode-aware path through
// scheduling cycles: a hard-mode gang stays within one HyperNode of its tier or waits saying so,
// a soft-mode gang takes the lowest tier that fits, and the fullest rack that fits is preferred.

#include <string>

#include "core/testing/harness.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::core {
namespace {

using test::BindMap;
using test::Binds;
using test::Harness;
using test::MakeHyperNode;
using test::MakeNode;
using test::MakePod;
using test::MakePodGroup;
using test::Message;
using test::MustParse;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;
using ::testing::SizeIs;

constexpr char kConf[] = R"(
actions: "enqueue, allocate"
tiers:
- plugins: [{name: priority}, {name: gang}]
- plugins: [{name: predicates}, {name: nodeorder}, {name: network-topology-aware}]
)";

// `racks` racks r1.. of two nodes r<k>-n1, r<k>-n2 with 8 GPUs each (HyperNodes of tier 1), under
// one spine (tier 2) unless `spine` is false.
void AddRacks(Harness& h, int racks, bool spine = true) {
  auto s = MakeHyperNode("spine", 2);
  for (int r = 1; r <= racks; ++r) {
    std::string rack = "r" + std::to_string(r);
    auto hn = MakeHyperNode(rack, 1).TierName("rack");
    for (const char* n : {"-n1", "-n2"}) {
      h.Add(MakeNode(rack + n).Cpu("32").Memory("64Gi").Gpus(8).Obj());
      hn.Node(rack + n);
    }
    h.Add(hn.Obj());
    s.Child(rack);
  }
  if (spine) h.Add(s.Obj());
}

// A pod running on `node` with `gpus` GPUs, of a job of its own.
void AddBusy(Harness& h, const std::string& name, const std::string& node, int gpus) {
  h.Add(MakePodGroup("other", name).Phase("Running").Obj());
  h.Add(MakePod("other", name).Group(name).Req("cpu", "1").Gpus(gpus).RunningOn(node).Obj());
}

// Gang "ns/<pg>" of `pods` pods of 8 GPUs each, all needed; mode "" for no networkTopology.
void AddGang(Harness& h, const std::string& pg, int pods, const std::string& mode, int tier = -1) {
  auto group = MakePodGroup("ns", pg).MinMember(pods);
  if (!mode.empty()) group.Topology(mode, tier);
  h.Add(group.Obj());
  for (int i = 1; i <= pods; ++i) {
    h.Add(MakePod("ns", pg + "-" + std::to_string(i)).Group(pg).Req("cpu", "1").Gpus(8).Obj());
  }
}

std::vector<std::string> RacksOf(const BindMap& binds) {
  std::vector<std::string> out;
  for (const auto& [pod, node] : binds) out.push_back(node.substr(0, node.find('-')));
  return out;
}

TEST(NetworkTopologyAwareTest, HardModeLandsWithinOneRack) {
  auto run = [](const std::string& mode) {
    Harness h;
    AddRacks(h, 2);
    AddBusy(h, "busy", "r1-n1", 4);  // r1 has 12 GPUs free, r2 16
    AddGang(h, "g", 2, mode, 1);
    return Binds(h.Run(MustParse(kConf)));
  };
  // Spread by nodeorder, the gang takes r1-n2 and a node of r2; kept to a rack, both r2 nodes.
  EXPECT_THAT(RacksOf(run("")), ElementsAre("r1", "r2"));
  EXPECT_THAT(run("hard"), ElementsAre(Pair("ns/g-1", "r2-n1"), Pair("ns/g-2", "r2-n2")));
}

TEST(NetworkTopologyAwareTest, HardModeWaitsNamingTheTierWhenNoRackHoldsTheGang) {
  Harness h;
  AddRacks(h, 2);
  AddGang(h, "g", 3, "hard", 1);
  CycleResult r = h.Run(MustParse(kConf));
  EXPECT_THAT(Binds(r), IsEmpty());
  EXPECT_THAT(Message(r, "ns/g-1"),
              HasSubstr("network topology hard mode: no HyperNode of tier <= 1 can hold the gang "
                        "(2 HyperNodes of tier <= 1, 2 with room enough to try)"));
  // Allowed up to the spine, it spans the two racks.
  Harness h2;
  AddRacks(h2, 2);
  AddGang(h2, "g", 3, "hard", 2);
  EXPECT_THAT(Binds(h2.Run(MustParse(kConf))), SizeIs(3));
}

TEST(NetworkTopologyAwareTest, MinResourcesLeaveOutRacksWithoutRoom) {
  Harness h;
  AddRacks(h, 2);
  AddBusy(h, "busy", "r1-n1", 1);
  AddBusy(h, "busy2", "r2-n1", 1);
  h.Add(MakePodGroup("ns", "g").MinMember(2).Topology("hard", 1).MinResources("nvidia.com/gpu", "16").Obj());
  for (const char* p : {"g-1", "g-2"}) {
    h.Add(MakePod("ns", p).Group("g").Req("cpu", "1").Gpus(8).Obj());
  }
  CycleResult r = h.Run(MustParse(kConf));
  EXPECT_THAT(Binds(r), IsEmpty());
  EXPECT_THAT(Message(r, "ns/g-1"), HasSubstr("(2 HyperNodes of tier <= 1, 0 with room enough"));
}

TEST(NetworkTopologyAwareTest, SoftModeTakesTheLowestTierThatFits) {
  auto run = [](int pods, bool spine) {
    Harness h;
    AddRacks(h, 2, spine);
    AddBusy(h, "busy", "r1-n1", 4);
    AddGang(h, "g", pods, "soft");
    return Binds(h.Run(MustParse(kConf)));
  };
  EXPECT_THAT(RacksOf(run(2, true)), ElementsAre("r2", "r2"));
  // No rack holds three: the spine (or, without one, the whole cluster) does.
  EXPECT_THAT(run(3, true), SizeIs(3));
  EXPECT_THAT(run(3, false), SizeIs(3));
}

TEST(NetworkTopologyAwareTest, PrefersTheFullestRackThatFits) {
  auto run = [](const std::string& conf) {
    Harness h;
    AddRacks(h, 3);
    AddBusy(h, "busy", "r2-n1", 8);  // r2 has 8 GPUs free, r1 and r3 16
    AddGang(h, "g", 1, "hard", 1);
    return RacksOf(Binds(h.Run(MustParse(conf))));
  };
  EXPECT_THAT(run(kConf), ElementsAre("r2"));
  // Without the HyperNode order, the first rack by name that takes it.
  std::string no_order = kConf;
  no_order.replace(no_order.find("{name: network-topology-aware}"),
                   std::string("{name: network-topology-aware}").size(),
                   "{name: network-topology-aware, enabledHyperNodeOrder: false}");
  EXPECT_THAT(run(no_order), ElementsAre("r1"));
}

TEST(NetworkTopologyAwareTest, MorePodsOfAPlacedGangStayInItsRack) {
  Harness h;
  AddRacks(h, 2);
  h.Add(MakePodGroup("ns", "g").MinMember(1).Topology("hard", 1).Phase("Running").Obj());
  h.Add(MakePod("ns", "g-1").Group("g").Req("cpu", "1").Gpus(4).RunningOn("r2-n1").Obj());
  h.Add(MakePod("ns", "g-2").Group("g").Req("cpu", "1").Gpus(8).Obj());
  // nodeorder alone would pick an empty node of r1.
  EXPECT_THAT(Binds(h.Run(MustParse(kConf))), ElementsAre(Pair("ns/g-2", "r2-n2")));
}

TEST(NetworkTopologyAwareTest, TierByNameAndUnknownTierName) {
  auto run = [](const std::string& tier_name) {
    Harness h;
    AddRacks(h, 2);
    auto group = MakePodGroup("ns", "g").MinMember(3).Topology("hard");
    api::PodGroup pg = group.Obj();
    pg.spec.network_topology->highest_tier_name = tier_name;
    h.Add(pg);
    for (const char* p : {"g-1", "g-2", "g-3"}) {
      h.Add(MakePod("ns", p).Group("g").Req("cpu", "1").Gpus(8).Obj());
    }
    return h.Run(MustParse(kConf));
  };
  CycleResult rack = run("rack");
  EXPECT_THAT(Binds(rack), IsEmpty());
  EXPECT_THAT(Message(rack, "ns/g-1"), HasSubstr("no HyperNode of tier <= 1"));
  CycleResult unknown = run("pod");
  EXPECT_THAT(Binds(unknown), IsEmpty());
  EXPECT_THAT(Message(unknown, "ns/g-1"), HasSubstr("failed to find hypernode tier name pod"));
}

TEST(NetworkTopologyAwareTest, WithoutHyperNodesAGangIsPlacedAsAnyOther) {
  Harness h;
  for (const char* n : {"n1", "n2"}) h.Add(MakeNode(n).Cpu("32").Memory("64Gi").Gpus(8).Obj());
  AddGang(h, "g", 2, "hard", 1);
  EXPECT_THAT(Binds(h.Run(MustParse(kConf))), SizeIs(2));
}

}  // namespace
}  // namespace muster::core
