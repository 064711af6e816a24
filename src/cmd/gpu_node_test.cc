// The local node's GPUs under NVIDIA device-plugin configs (muster up --gpu-config): resources,
// device numbering and what each device puts in the pod's environment, labels.

#include "cmd/gpu_node.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "deviceplugin/testing/gpus.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::cmd {
namespace {

namespace dp = muster::deviceplugin;
using dp::testing::MakeGpu;
using dp::testing::MakeMig;
using dp::testing::MakeSystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

dp::PluginConfig Config(const std::string& yaml) {
  auto config = dp::ParseConfig(yaml, "config.yaml");
  EXPECT_TRUE(config.ok()) << config.status();
  return config.ok() ? *config : dp::PluginConfig{};
}

gpu::GpuDevice MigGpu(int index, const std::vector<std::string>& profiles) {
  gpu::GpuDevice g = MakeGpu(index, "NVIDIA A100-SXM4-80GB", 81920);
  g.compute_major = 8;
  g.mig_enabled = true;
  for (size_t slot = 0; slot < profiles.size(); ++slot) {
    g.mig_devices.push_back(
        MakeMig(index, static_cast<int>(slot), profiles[slot], static_cast<unsigned>(slot + 1)));
  }
  return g;
}

node::NodeConfig Node(const gpu::GpuSystem& system, const dp::PluginConfig& config) {
  node::NodeConfig node;
  absl::Status s = AddConfiguredGpus(node, system, config, {});
  EXPECT_TRUE(s.ok()) << s;
  return node;
}

// "id visible cuda" per device of `resource`.
std::vector<std::string> Devices(const node::NodeConfig& node, const std::string& resource) {
  std::vector<std::string> out;
  for (const node::DeviceResource& r : node.device_resources) {
    if (r.name != resource) continue;
    for (const node::NodeDevice& d : r.devices)
      out.push_back(d.id + " " + d.visible + " " + d.cuda);
  }
  return out;
}

int64_t Allocatable(const node::NodeConfig& node, const std::string& resource) {
  auto it = node.allocatable.find(resource);
  return it == node.allocatable.end() ? -1 : it->second.Value();
}

TEST(GpuNodeTest, StrategyNoneOffersEveryGpuByUuidOrIndex) {
  auto system = MakeSystem({MakeGpu(0), MakeGpu(1)});
  node::NodeConfig node = Node(system, Config("version: v1\n"));
  EXPECT_EQ(Allocatable(node, "nvidia.com/gpu"), 2);
  EXPECT_EQ(node.capacity.at("nvidia.com/gpu").Value(), 2);
  EXPECT_THAT(Devices(node, "nvidia.com/gpu"), ElementsAre("GPU-0 GPU-0 0", "GPU-1 GPU-1 1"));
  EXPECT_EQ(node.gpus.size(), 2u);
  EXPECT_EQ(node.labels.at("nvidia.com/gpu.product"), "NVIDIA-H100-80GB-HBM3");
  EXPECT_EQ(node.labels.at("nvidia.com/gpu.count"), "2");
  EXPECT_EQ(node.labels.at("nvidia.com/gpu.family"), "hopper");
  EXPECT_EQ(node.labels.at("nvidia.com/cuda.driver-version.major"), "550");
  EXPECT_EQ(node.labels.at("nvidia.com/mig.strategy"), "none");

  node::NodeConfig by_index =
      Node(system, Config("version: v1\nflags:\n  plugin:\n    deviceIDStrategy: index\n"));
  EXPECT_THAT(Devices(by_index, "nvidia.com/gpu"), ElementsAre("GPU-0 0 0", "GPU-1 1 1"));
}

TEST(GpuNodeTest, StrategySingleOffersMigDevicesAsGpus) {
  auto system = MakeSystem({MigGpu(0, {"1g.10gb", "1g.10gb"}), MigGpu(1, {"1g.10gb", "1g.10gb"})});
  node::NodeConfig node = Node(system, Config("version: v1\nflags:\n  migStrategy: single\n"));
  EXPECT_EQ(Allocatable(node, "nvidia.com/gpu"), 4);
  EXPECT_THAT(Devices(node, "nvidia.com/gpu"),
              ElementsAre("MIG-0-0 MIG-0-0 MIG-0-0", "MIG-0-1 MIG-0-1 MIG-0-1",
                          "MIG-1-0 MIG-1-0 MIG-1-0", "MIG-1-1 MIG-1-1 MIG-1-1"));
  EXPECT_EQ(node.labels.at("nvidia.com/gpu.product"), "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb");
  EXPECT_EQ(node.labels.at("nvidia.com/gpu.count"), "4");
  EXPECT_EQ(node.labels.at("nvidia.com/gpu.memory"), "9856");
  EXPECT_EQ(node.labels.at("nvidia.com/mig.strategy"), "single");

  node::NodeConfig by_index = Node(
      system,
      Config("version: v1\nflags:\n  migStrategy: single\n  plugin: {deviceIDStrategy: index}\n"));
  EXPECT_EQ(Devices(by_index, "nvidia.com/gpu")[3], "MIG-1-1 1:1 MIG-1-1");
}

TEST(GpuNodeTest, StrategySingleRefusesDifferentLayoutsAsNvidiaDoes) {
  auto system = MakeSystem({MigGpu(0, {"1g.10gb"}), MigGpu(1, {"3g.40gb"})});
  node::NodeConfig node;
  absl::Status s =
      AddConfiguredGpus(node, system, Config("version: v1\nflags:\n  migStrategy: single\n"), {});
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_THAT(std::string(s.message()), HasSubstr("more than one MIG profile"));
  EXPECT_TRUE(node.device_resources.empty());
  EXPECT_TRUE(node.allocatable.empty());
}

TEST(GpuNodeTest, StrategyMixedOffersAResourcePerProfileAndTheWholeGpus) {
  auto system = MakeSystem({MakeGpu(0), MigGpu(1, {"1g.10gb", "1g.10gb", "2g.20gb"})});
  node::NodeConfig node = Node(system, Config("version: v1\nflags:\n  migStrategy: mixed\n"));
  EXPECT_EQ(Allocatable(node, "nvidia.com/gpu"), 1);
  EXPECT_EQ(Allocatable(node, "nvidia.com/mig-1g.10gb"), 2);
  EXPECT_EQ(Allocatable(node, "nvidia.com/mig-2g.20gb"), 1);
  EXPECT_THAT(Devices(node, "nvidia.com/gpu"), ElementsAre("GPU-0 GPU-0 0"));
  EXPECT_THAT(Devices(node, "nvidia.com/mig-1g.10gb"),
              ElementsAre("MIG-1-0 MIG-1-0 MIG-1-0", "MIG-1-1 MIG-1-1 MIG-1-1"));
  EXPECT_THAT(Devices(node, "nvidia.com/mig-2g.20gb"), ElementsAre("MIG-1-2 MIG-1-2 MIG-1-2"));
  // nvidia.com/gpu first: its devices are what muster.dev/gpu-indices numbers.
  EXPECT_EQ(node.device_resources.front().name, "nvidia.com/gpu");
  EXPECT_EQ(node.labels.at("nvidia.com/mig-1g.10gb.count"), "2");
  EXPECT_EQ(node.labels.at("nvidia.com/mig-2g.20gb.count"), "1");
  EXPECT_EQ(node.labels.at("nvidia.com/mig.strategy"), "mixed");
}

TEST(GpuNodeTest, TimeSlicingReplicasAreNumberedByTheAllocationPolicy) {
  auto system = MakeSystem({MakeGpu(0), MakeGpu(1)});
  const std::string sharing =
      "sharing:\n  timeSlicing:\n    resources:\n    - {name: nvidia.com/gpu, replicas: 4}\n";
  node::NodeConfig distributed = Node(system, Config("version: v1\n" + sharing));
  EXPECT_EQ(Allocatable(distributed, "nvidia.com/gpu"), 8);
  EXPECT_THAT(
      Devices(distributed, "nvidia.com/gpu"),
      ElementsAre("GPU-0::0 GPU-0 0", "GPU-1::0 GPU-1 1", "GPU-0::1 GPU-0 0", "GPU-1::1 GPU-1 1",
                  "GPU-0::2 GPU-0 0", "GPU-1::2 GPU-1 1", "GPU-0::3 GPU-0 0", "GPU-1::3 GPU-1 1"));
  EXPECT_EQ(distributed.labels.at("nvidia.com/gpu.replicas"), "4");
  EXPECT_EQ(distributed.labels.at("nvidia.com/gpu.sharing-strategy"), "time-slicing");
  EXPECT_EQ(distributed.labels.at("nvidia.com/gpu.product"), "NVIDIA-H100-80GB-HBM3-SHARED");

  node::NodeConfig packed = Node(
      system,
      Config("version: v1\nflags:\n  plugin: {sharedDevicesAllocationPolicy: packed}\n" + sharing));
  EXPECT_THAT(
      Devices(packed, "nvidia.com/gpu"),
      ElementsAre("GPU-0::0 GPU-0 0", "GPU-0::1 GPU-0 0", "GPU-0::2 GPU-0 0", "GPU-0::3 GPU-0 0",
                  "GPU-1::0 GPU-1 1", "GPU-1::1 GPU-1 1", "GPU-1::2 GPU-1 1", "GPU-1::3 GPU-1 1"));

  node::NodeConfig renamed =
      Node(system, Config("version: v1\nsharing:\n  timeSlicing:\n    renameByDefault: true\n"
                          "    resources:\n    - {name: nvidia.com/gpu, replicas: 4}\n"));
  EXPECT_EQ(Allocatable(renamed, "nvidia.com/gpu"), -1);
  EXPECT_EQ(Allocatable(renamed, "nvidia.com/gpu.shared"), 8);
  EXPECT_EQ(renamed.labels.at("nvidia.com/gpu.product"), "NVIDIA-H100-80GB-HBM3");
}

TEST(GpuNodeTest, MigDevicesCanBeSharedToo) {
  auto system = MakeSystem({MigGpu(0, {"1g.10gb", "1g.10gb"})});
  node::NodeConfig node =
      Node(system, Config("version: v1\nflags: {migStrategy: mixed}\nsharing:\n  timeSlicing:\n"
                          "    resources:\n    - {name: nvidia.com/mig-1g.10gb, replicas: 2}\n"));
  EXPECT_EQ(Allocatable(node, "nvidia.com/mig-1g.10gb"), 4);
  EXPECT_THAT(Devices(node, "nvidia.com/mig-1g.10gb"),
              ElementsAre("MIG-0-0::0 MIG-0-0 MIG-0-0", "MIG-0-1::0 MIG-0-1 MIG-0-1",
                          "MIG-0-0::1 MIG-0-0 MIG-0-0", "MIG-0-1::1 MIG-0-1 MIG-0-1"));
  EXPECT_EQ(node.labels.at("nvidia.com/mig-1g.10gb.replicas"), "2");
}

TEST(GpuNodeTest, NoDevicesLeaveTheNodeWithoutGpus) {
  gpu::GpuDevice empty = MigGpu(0, {});
  node::NodeConfig node =
      Node(MakeSystem({empty}), Config("version: v1\nflags:\n  migStrategy: mixed\n"));
  EXPECT_TRUE(node.device_resources.empty());
  EXPECT_TRUE(node.gpus.empty());
  EXPECT_EQ(Allocatable(node, "nvidia.com/gpu"), -1);
}

TEST(GpuNodeTest, LabelInputsReadTheMachineTypeFile) {
  char path[] = "/tmp/gpu_node_test_XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  std::ofstream(path) << "DGX A100 \n";
  dp::PluginConfig config =
      Config(std::string("version: v1\nflags:\n  gfd:\n    noTimestamp: true\n"
                         "    machineTypeFile: ") +
             path + "\n");
  dp::LabelInputs inputs = CurrentLabelInputs(config);
  EXPECT_EQ(inputs.machine_type, "DGX A100");
  EXPECT_FALSE(inputs.timestamp.has_value());
  node::NodeConfig node;
  ASSERT_TRUE(AddConfiguredGpus(node, MakeSystem({MakeGpu(0)}), config, inputs).ok());
  EXPECT_EQ(node.labels.at("nvidia.com/gpu.machine"), "DGX-A100");
  EXPECT_EQ(node.labels.count("nvidia.com/gfd.timestamp"), 0u);
  std::remove(path);
  EXPECT_TRUE(CurrentLabelInputs(dp::PluginConfig{}).timestamp.has_value());
}

}  // namespace
}  // namespace muster::cmd
