// NodeResources: which devices a pod gets on its node, for whole GPUs named by the scheduler and
// for the device resources (MIG devices, time-slicing replicas) the node hands out itself.

#include "node/node_resources.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::node {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

NodeConfig TwoGpus() {
  NodeConfig node;
  node.name = "n";
  node.gpus.resize(2);
  for (int i = 0; i < 2; ++i) {
    node.gpus[i].index = i;
    node.gpus[i].uuid = "GPU-" + std::to_string(i);
  }
  return node;
}

// GPU 0 whole, GPU 1 split into two 1g.10gb MIG devices (the mixed strategy).
NodeConfig Mixed() {
  NodeConfig node = TwoGpus();
  node.device_resources = {
      {"nvidia.com/gpu", {{"GPU-0", "GPU-0", "0"}}},
      {"nvidia.com/mig-1g.10gb", {{"MIG-a", "MIG-a", "MIG-a"}, {"MIG-b", "MIG-b", "MIG-b"}}}};
  return node;
}

TEST(NodeResourcesTest, WithoutDeviceResourcesEachGpuIsOneDeviceNamedByItsIndex) {
  NodeResources r(TwoGpus());
  ASSERT_EQ(r.device_resources().size(), 1u);
  EXPECT_EQ(r.device_resources()[0].name, "nvidia.com/gpu");
  ASSERT_NE(r.Device("nvidia.com/gpu", 1), nullptr);
  EXPECT_EQ(r.Device("nvidia.com/gpu", 1)->id, "GPU-1");
  EXPECT_EQ(r.Device("nvidia.com/gpu", 1)->visible, "1");
  EXPECT_EQ(r.Device("nvidia.com/gpu", 1)->cuda, "1");
  EXPECT_EQ(r.Device("nvidia.com/gpu", 2), nullptr);
  EXPECT_EQ(r.DeviceCount(), 2);
  EXPECT_TRUE(NodeResources(NodeConfig{}).device_resources().empty());
}

TEST(NodeResourcesTest, NamedGpusAreTakenAsTheSchedulerGaveThem) {
  NodeResources r(TwoGpus());
  auto a = r.AcquireDevices("a", {1}, {{"nvidia.com/gpu", 1}});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_THAT(*a, ElementsAre(Pair("nvidia.com/gpu", ElementsAre(1))));
  // Without the annotation: the lowest free one.
  auto b = r.AcquireDevices("b", {}, {{"nvidia.com/gpu", 1}});
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_THAT(*b, ElementsAre(Pair("nvidia.com/gpu", ElementsAre(0))));
  EXPECT_EQ(r.DevicesInUse(), 2);
  // The same pod again holds what it held.
  EXPECT_THAT(*r.AcquireDevices("a", {}, {{"nvidia.com/gpu", 1}}),
              ElementsAre(Pair("nvidia.com/gpu", ElementsAre(1))));
  auto bad = r.AcquireDevices("c", {2}, {{"nvidia.com/gpu", 1}});
  EXPECT_EQ(bad.status().message(),
            "muster.dev/gpu-indices names GPU 2, which node n does not have (it has 2)");
  r.ReleaseDevices("a");
  r.ReleaseDevices("b");
  EXPECT_EQ(r.DevicesInUse(), 0);
}

TEST(NodeResourcesTest, MigDevicesGoToOnePodEachLowestFirst) {
  NodeResources r(Mixed());
  EXPECT_EQ(r.DeviceCount(), 3);
  auto a = r.AcquireDevices("a", {}, {{"nvidia.com/mig-1g.10gb", 1}});
  auto b = r.AcquireDevices("b", {}, {{"nvidia.com/mig-1g.10gb", 1}});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_THAT(*a, ElementsAre(Pair("nvidia.com/mig-1g.10gb", ElementsAre(0))));
  EXPECT_THAT(*b, ElementsAre(Pair("nvidia.com/mig-1g.10gb", ElementsAre(1))));
  EXPECT_EQ(r.Device("nvidia.com/mig-1g.10gb", 1)->visible, "MIG-b");

  // None left: the kubelet's words, and nothing taken (the whole GPU stays free).
  auto c = r.AcquireDevices("c", {}, {{"nvidia.com/gpu", 1}, {"nvidia.com/mig-1g.10gb", 1}});
  EXPECT_TRUE(absl::IsFailedPrecondition(c.status()));
  EXPECT_EQ(c.status().message(),
            "Allocate failed due to requested number of devices unavailable for "
            "nvidia.com/mig-1g.10gb. Requested: 1, Available: 0, which is unexpected");
  EXPECT_EQ(r.DevicesInUse(), 2);

  // A resource the node does not have at all.
  auto d = r.AcquireDevices("d", {}, {{"nvidia.com/mig-3g.40gb", 1}});
  EXPECT_EQ(d.status().message(),
            "Allocate failed due to requested number of devices unavailable for "
            "nvidia.com/mig-3g.40gb. Requested: 1, Available: 0, which is unexpected");

  r.ReleaseDevices("a");
  auto e = r.AcquireDevices("e", {}, {{"nvidia.com/gpu", 1}, {"nvidia.com/mig-1g.10gb", 1}});
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_THAT(*e, UnorderedElementsAre(Pair("nvidia.com/gpu", ElementsAre(0)),
                                       Pair("nvidia.com/mig-1g.10gb", ElementsAre(0))));
  EXPECT_EQ(r.DevicesInUse(), 3);
}

}  // namespace
}  // namespace muster::node
