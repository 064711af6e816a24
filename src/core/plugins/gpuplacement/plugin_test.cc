// The gpu-* plugins in a real scheduling session: volcano-scheduler.conf names them in
// nodeorder's tier and they decide where a pod goes.

#include <map>
#include <string>

#include "core/cluster.h"
#include "core/framework/conf.h"
#include "core/framework/session.h"
#include "core/testing/builders.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::core {
namespace {

using test::MakeNode;
using test::MakePod;
using test::MakePodGroup;

std::string Conf(const std::string& plugin) {
  return R"(
actions: "enqueue, allocate"
tiers:
- plugins: [{name: priority}, {name: gang}]
- plugins: [{name: predicates}, {name: )" +
         plugin + R"(}]
)";
}

// Nodes "a-free" (8 free GPUs) and "b-used" (8 GPUs, `running` of them held by a running pod);
// the pending pod asks for `gpus` GPUs. Returns the node it was bound to, or "" when none.
std::string PlaceOne(const std::string& plugin, int gpus, int running = 6) {
  Cluster cluster;
  cluster.UpsertNode(MakeNode("a-free").Cpu("64").Memory("256Gi").Gpus(8).Obj());
  cluster.UpsertNode(MakeNode("b-used").Cpu("64").Memory("256Gi").Gpus(8).Obj());
  cluster.UpsertPod(
      MakePod("ns", "running").Req("cpu", "8").Gpus(running).RunningOn("b-used").Obj());
  cluster.UpsertPodGroup(MakePodGroup("ns", "pg").Obj());
  cluster.UpsertPod(MakePod("ns", "p").Group("pg").Req("cpu", "4").Gpus(gpus).Obj());
  auto conf = ParseSchedulerConf(Conf(plugin));
  EXPECT_TRUE(conf.ok()) << conf.status();
  Session ssn(cluster, *conf, SessionOptions{});
  CycleResult r = ssn.Run();
  for (const auto& b : r.binds) {
    if (b.pod == "ns/p") return b.node;
  }
  return "";
}

TEST(GpuPlacementPluginTest, PackingPoliciesFillTheUsedNode) {
  // Without a scoring plugin the first node in name order wins the tie.
  EXPECT_EQ(PlaceOne("nodeorder", 2), "a-free");
  EXPECT_EQ(PlaceOne("gpu-bestfit", 2), "b-used");
  EXPECT_EQ(PlaceOne("gpu-packing", 2), "b-used");
  EXPECT_EQ(PlaceOne("gpu-dotproduct", 2), "b-used");
  EXPECT_EQ(PlaceOne("gpu-clustering", 2), "a-free");  // a 6-GPU pod's node is another kind
  EXPECT_EQ(PlaceOne("gpu-clustering", 2, /*running=*/2), "b-used");  // the same kind
  // FGD learns from the pods seen (a 6-GPU and a 2-GPU pod): placing the 2-GPU pod on the
  // free node would leave 6 GPUs, still room for either; on the used node it leaves nothing.
  EXPECT_EQ(PlaceOne("gpu-fgd", 2), "b-used");
  EXPECT_EQ(PlaceOne("gpu-muster", 2), "b-used");
  // Three GPUs only fit the free node.
  EXPECT_EQ(PlaceOne("gpu-bestfit", 3), "a-free");
}

TEST(GpuPlacementPluginTest, RandomIsRepeatable) {
  std::string first = PlaceOne("gpu-random", 1);
  EXPECT_FALSE(first.empty());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(PlaceOne("gpu-random", 1), first);
}

TEST(GpuPlacementPluginTest, UnknownGpuPluginIsAConfError) {
  auto conf = ParseSchedulerConf(Conf("gpu-tetris"));
  ASSERT_FALSE(conf.ok());
  EXPECT_THAT(std::string(conf.status().message()), ::testing::HasSubstr("gpu-tetris"));
}

}  // namespace
}  // namespace muster::core
