// NodeResources: which devices a pod gets on its node, for whole GPUs named by the scheduler and
// for the device resources (MIG devices, time-slicing replicas) the node hands out itself; and
// which pods' requests it admits, as the kubelet does.

#include "node/node_resources.h"

#include <initializer_list>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::node {

void PrintTo(const Rejection& r, std::ostream* os) { *os << r.reason << ": " << r.message; }

namespace {

using common::Quantity;
using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::Optional;
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
  r.Release("a");
  r.Release("b");
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

  r.Release("a");
  auto e = r.AcquireDevices("e", {}, {{"nvidia.com/gpu", 1}, {"nvidia.com/mig-1g.10gb", 1}});
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_THAT(*e, UnorderedElementsAre(Pair("nvidia.com/gpu", ElementsAre(0)),
                                       Pair("nvidia.com/mig-1g.10gb", ElementsAre(0))));
  EXPECT_EQ(r.DevicesInUse(), 3);
}

api::ResourceList Requests(std::initializer_list<std::pair<const char*, const char*>> list) {
  api::ResourceList out;
  for (const auto& [name, q] : list) out[name] = *Quantity::Parse(q);
  return out;
}

NodeConfig Allocatable(std::initializer_list<std::pair<const char*, const char*>> list) {
  NodeConfig node = TwoGpus();
  node.allocatable = Requests(list);
  return node;
}

auto Rejected(const std::string& reason, const std::string& message) {
  return Optional(AllOf(Field(&Rejection::reason, reason), Field(&Rejection::message, message)));
}

TEST(NodeResourcesTest, RequestsAreAdmittedWhileTheyFitBesideThoseAdmittedBefore) {
  NodeResources r(Allocatable({{"cpu", "4"}}));
  EXPECT_EQ(r.AdmitRequests("a", Requests({{"cpu", "1500m"}})), std::nullopt);
  EXPECT_EQ(r.AdmitRequests("b", Requests({{"cpu", "1500m"}})), std::nullopt);
  // The kubelet's words: cpu in milli.
  EXPECT_THAT(r.AdmitRequests("c", Requests({{"cpu", "1500m"}})),
              Rejected("OutOfcpu",
                       "Node didn't have enough resource: cpu, requested: 1500, used: 3000, "
                       "capacity: 4000"));
  // Admitted again: counted once.
  EXPECT_EQ(r.AdmitRequests("a", Requests({{"cpu", "1500m"}})), std::nullopt);
  EXPECT_EQ(r.AdmitRequests("d", Requests({{"cpu", "1"}})), std::nullopt);  // exactly full
  r.Release("a");
  EXPECT_EQ(r.AdmitRequests("c", Requests({{"cpu", "1500m"}})), std::nullopt);
  EXPECT_THAT(r.AdmitRequests("e", Requests({{"cpu", "1m"}})),
              Rejected("OutOfcpu",
                       "Node didn't have enough resource: cpu, requested: 1, used: 4000, "
                       "capacity: 4000"));
  // A pod that asks for nothing always fits.
  EXPECT_EQ(r.AdmitRequests("f", {}), std::nullopt);
}

TEST(NodeResourcesTest, MemoryIsAdmittedInBytes) {
  NodeResources r(Allocatable({{"cpu", "4"}, {"memory", "4Gi"}}));
  EXPECT_EQ(r.AdmitRequests("a", Requests({{"cpu", "1"}, {"memory", "3Gi"}})), std::nullopt);
  EXPECT_THAT(r.AdmitRequests("b", Requests({{"cpu", "1"}, {"memory", "1025Mi"}})),
              Rejected("OutOfmemory",
                       "Node didn't have enough resource: memory, requested: 1074790400, used: "
                       "3221225472, capacity: 4294967296"));
  // Nothing of a rejected pod is counted.
  EXPECT_EQ(r.AdmitRequests("c", Requests({{"cpu", "3"}, {"memory", "1Gi"}})), std::nullopt);
}

TEST(NodeResourcesTest, EachPodCountsAgainstTheAllocatablePodsFirst) {
  NodeResources r(Allocatable({{"cpu", "1"}, {"pods", "2"}}));
  EXPECT_EQ(r.AdmitRequests("a", {}), std::nullopt);
  EXPECT_EQ(r.AdmitRequests("b", Requests({{"cpu", "1"}})), std::nullopt);
  EXPECT_THAT(r.AdmitRequests("c", Requests({{"cpu", "1"}})),
              Rejected("OutOfpods",
                       "Node didn't have enough resource: pods, requested: 1, used: 2, "
                       "capacity: 2"));
  r.Release("a");
  EXPECT_THAT(r.AdmitRequests("c", Requests({{"cpu", "1"}})),
              Rejected("OutOfcpu",
                       "Node didn't have enough resource: cpu, requested: 1000, used: 1000, "
                       "capacity: 1000"));
  EXPECT_EQ(r.AdmitRequests("d", {}), std::nullopt);
}

TEST(NodeResourcesTest, ResourcesTheNodeLacksHaveNoRoomExceptTheClustersAndDevices) {
  NodeResources r(Allocatable({{"cpu", "4"}, {"example.com/nic", "1"}}));
  EXPECT_THAT(r.AdmitRequests("a", Requests({{"cpu", "1"}, {"ephemeral-storage", "1Gi"}})),
              Rejected("OutOfephemeral-storage",
                       "Node didn't have enough resource: ephemeral-storage, requested: "
                       "1073741824, used: 0, capacity: 0"));
  // An extended resource the node does not have may be the cluster's: not checked. One it has is.
  // GPUs and GPU shares are the devices' (AcquireDevices).
  EXPECT_EQ(r.AdmitRequests("b", Requests({{"example.com/nic", "1"},
                                           {"example.com/license", "5"},
                                           {"nvidia.com/gpu", "8"},
                                           {"muster.dev/gpu-milli", "500"}})),
            std::nullopt);
  EXPECT_THAT(r.AdmitRequests("c", Requests({{"example.com/nic", "1"}})),
              Rejected("OutOfexample.com/nic",
                       "Node didn't have enough resource: example.com/nic, requested: 1, "
                       "used: 1, capacity: 1"));
}

TEST(NodeResourcesTest, PodsAdmittedBeforeCountWithoutBeingChecked) {
  NodeResources r(Allocatable({{"cpu", "4"}, {"pods", "1"}}));
  EXPECT_EQ(r.AdmitRequests("a", Requests({{"cpu", "3"}}), /*admitted_before=*/true), std::nullopt);
  EXPECT_EQ(r.AdmitRequests("b", Requests({{"cpu", "3"}}), /*admitted_before=*/true), std::nullopt);
  // Then a new pod sees both.
  EXPECT_THAT(r.AdmitRequests("c", {}),
              Rejected("OutOfpods",
                       "Node didn't have enough resource: pods, requested: 1, used: 2, "
                       "capacity: 1"));
  r.Release("a");
  r.Release("b");
  EXPECT_EQ(r.AdmitRequests("c", Requests({{"cpu", "4"}})), std::nullopt);
}

}  // namespace
}  // namespace muster::node
