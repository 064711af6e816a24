// HyperNodes resolved to nodes (hypernodes.h): what a rack or a spine holds as nodes and
// HyperNodes come and go, and what is left out.

#include "core/hypernodes.h"

#include "core/cluster.h"
#include "core/testing/builders.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::core {
namespace {

using test::MakeHyperNode;
using test::MakeNode;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::vector<std::string> NodesOf(const Cluster& c, const std::string& hn) {
  std::vector<std::string> out;
  const HyperNodeInfo* h = c.Topology().Find(hn);
  if (h == nullptr) return {"<no HyperNode " + hn + ">"};
  for (int id : h->nodes) out.push_back(c.node(id).name);
  return out;
}

Cluster Racks() {
  Cluster c;
  for (const char* n : {"a1", "a2", "b1", "b2", "c1"}) {
    c.UpsertNode(MakeNode(n).Cpu("4").Label("rack", std::string(1, n[0])).Obj());
  }
  return c;
}

TEST(HyperNodeTopologyTest, MembersByNameRegexAndLabelNestedIntoASpine) {
  Cluster c = Racks();
  c.UpsertHyperNode(MakeHyperNode("rack-a", 1).Node("a1").Node("a2").Obj());
  c.UpsertHyperNode(MakeHyperNode("rack-b", 1).Regex("Node", "^b[0-9]+$").Obj());
  c.UpsertHyperNode(MakeHyperNode("rack-c", 1).Labels("rack", "c").Obj());
  c.UpsertHyperNode(MakeHyperNode("spine", 2).Child("rack-a").Regex("HyperNode", "rack-[bc]").Obj());
  EXPECT_THAT(NodesOf(c, "rack-a"), ElementsAre("a1", "a2"));
  EXPECT_THAT(NodesOf(c, "rack-b"), ElementsAre("b1", "b2"));
  EXPECT_THAT(NodesOf(c, "rack-c"), ElementsAre("c1"));
  EXPECT_THAT(NodesOf(c, "spine"), ElementsAre("a1", "a2", "b1", "b2", "c1"));
  const HyperNodeTopology& t = c.Topology();
  EXPECT_EQ(t.MaxTier(), 2);
  EXPECT_EQ(t.hypernodes()[t.Find("rack-b")->parent].name, "spine");
  // Tier order, then name; the whole cluster one tier above.
  std::vector<std::string> order;
  for (const HyperNodeInfo& h : t.hypernodes()) order.push_back(h.name);
  EXPECT_THAT(order, ElementsAre("rack-a", "rack-b", "rack-c", "spine", "<cluster-top-hypernode>"));
  EXPECT_EQ(t.VirtualTop()->tier, 3);
  EXPECT_THAT(t.problems(), IsEmpty());
}

TEST(HyperNodeTopologyTest, FollowsNodesAndLabelsAsTheyChange) {
  Cluster c = Racks();
  c.UpsertHyperNode(MakeHyperNode("rack-c", 1).Labels("rack", "c").Obj());
  EXPECT_THAT(NodesOf(c, "rack-c"), ElementsAre("c1"));
  c.UpsertNode(MakeNode("c2").Cpu("4").Label("rack", "c").Obj());
  c.UpsertNode(MakeNode("c1").Cpu("4").Label("rack", "x").Obj());
  EXPECT_THAT(NodesOf(c, "rack-c"), ElementsAre("c2"));
  c.RemoveNode("c2");
  EXPECT_THAT(NodesOf(c, "rack-c"), IsEmpty());  // a selector matching nothing: no node, no error
  EXPECT_THAT(c.Topology().problems(), IsEmpty());
  c.RemoveHyperNode("rack-c");
  EXPECT_TRUE(c.Topology().empty());
}

TEST(HyperNodeTopologyTest, ACycleIsLeftOutWithItsReason) {
  Cluster c = Racks();
  c.UpsertHyperNode(MakeHyperNode("x", 2).Child("y").Obj());
  c.UpsertHyperNode(MakeHyperNode("y", 2).Child("x").Node("a1").Obj());
  c.UpsertHyperNode(MakeHyperNode("ok", 1).Node("b1").Obj());
  EXPECT_EQ(c.Topology().Find("x"), nullptr);
  EXPECT_EQ(c.Topology().Find("y"), nullptr);
  EXPECT_THAT(NodesOf(c, "ok"), ElementsAre("b1"));
  ASSERT_EQ(c.Topology().problems().size(), 2u);
  EXPECT_THAT(c.Topology().problems()[0], HasSubstr("HyperNode x: cyclic dependency"));
}

TEST(HyperNodeTopologyTest, ABadRegexAndASecondParentAreReported) {
  Cluster c = Racks();
  c.UpsertHyperNode(MakeHyperNode("bad", 1).Regex("Node", "a[").Obj());
  c.UpsertHyperNode(MakeHyperNode("rack-a", 1).Node("a1").Obj());
  c.UpsertHyperNode(MakeHyperNode("s1", 2).Child("rack-a").Obj());
  c.UpsertHyperNode(MakeHyperNode("s2", 2).Child("rack-a").Node("c1").Obj());
  EXPECT_EQ(c.Topology().Find("bad"), nullptr);
  EXPECT_THAT(NodesOf(c, "s1"), ElementsAre("a1"));
  EXPECT_THAT(NodesOf(c, "s2"), ElementsAre("c1"));
  ASSERT_EQ(c.Topology().problems().size(), 2u);
  EXPECT_THAT(c.Topology().problems()[0], HasSubstr("spec.members[0].selector.regexMatch.pattern"));
  EXPECT_THAT(c.Topology().problems()[1],
              HasSubstr("HyperNode rack-a already has a parent s1, and cannot set another parent s2"));
}

TEST(HyperNodeTopologyTest, TierNamesAndClones) {
  Cluster c = Racks();
  c.UpsertHyperNode(MakeHyperNode("rack-a", 1).TierName("rack").Node("a1").Obj());
  EXPECT_EQ(c.Topology().TierByName("rack"), 1);
  EXPECT_EQ(c.Topology().TierByName("spine"), std::nullopt);
  std::unique_ptr<Cluster> copy = c.Clone();
  c.RemoveHyperNode("rack-a");
  EXPECT_THAT(NodesOf(*copy, "rack-a"), ElementsAre("a1"));
  EXPECT_TRUE(c.Topology().empty());
}

}  // namespace
}  // namespace muster::core
