#include "deviceplugin/resources.h"

#include "deviceplugin/testing/gpus.h"
#include "gtest/gtest.h"

namespace muster::deviceplugin {
namespace {

using testing::MakeGpu;
using testing::MakeMig;
using testing::MakeSystem;

PluginConfig WithStrategy(MigStrategy strategy) {
  PluginConfig config;
  config.mig_strategy = strategy;
  return config;
}

std::vector<std::string> Ids(const ResourceDevices& resource) {
  std::vector<std::string> ids;
  for (const auto& d : resource.devices) ids.push_back(d.id);
  return ids;
}

gpu::GpuDevice MigGpu(int index, std::vector<std::string> profiles) {
  gpu::GpuDevice g = MakeGpu(index);
  g.mig_enabled = true;
  for (size_t slot = 0; slot < profiles.size(); ++slot) {
    g.mig_devices.push_back(
        MakeMig(index, static_cast<int>(slot), profiles[slot], static_cast<unsigned>(slot + 1)));
  }
  return g;
}

TEST(ResourcesTest, NoneAdvertisesEveryGpuEvenWithMigEnabled) {
  auto resources = BuildResources(MakeSystem({MakeGpu(0), MigGpu(1, {"1g.10gb"})}),
                                  WithStrategy(MigStrategy::kNone));
  ASSERT_TRUE(resources.ok()) << resources.status();
  ASSERT_EQ(resources->size(), 1u);
  const ResourceDevices& gpu = (*resources)[0];
  EXPECT_EQ(gpu.name, "nvidia.com/gpu");
  EXPECT_EQ(gpu.socket_name, "nvidia-gpu.sock");
  EXPECT_TRUE(gpu.full_gpus);
  EXPECT_EQ(Ids(gpu), (std::vector<std::string>{"GPU-0", "GPU-1"}));
  EXPECT_EQ(gpu.devices[1].index, "1");
  EXPECT_EQ(gpu.devices[1].numa_node, 1);
  EXPECT_TRUE(gpu.devices[1].healthy);
}

TEST(ResourcesTest, SingleAdvertisesMigDevicesAsGpus) {
  auto resources =
      BuildResources(MakeSystem({MigGpu(0, {"1g.10gb", "1g.10gb"}), MigGpu(1, {"1g.10gb"})}),
                     WithStrategy(MigStrategy::kSingle));
  ASSERT_TRUE(resources.ok()) << resources.status();
  ASSERT_EQ(resources->size(), 1u);
  const ResourceDevices& gpu = (*resources)[0];
  EXPECT_EQ(gpu.name, "nvidia.com/gpu");
  EXPECT_FALSE(gpu.full_gpus);
  EXPECT_EQ(Ids(gpu), (std::vector<std::string>{"MIG-0-0", "MIG-0-1", "MIG-1-0"}));
  EXPECT_EQ(gpu.devices[1].index, "0:1");
  EXPECT_TRUE(gpu.devices[1].is_mig);
  EXPECT_EQ(gpu.devices[1].gpu_instance_id, 2u);
  EXPECT_EQ(gpu.devices[2].minor, 1u);
}

TEST(ResourcesTest, SingleWithoutMigIsNone) {
  auto resources =
      BuildResources(MakeSystem({MakeGpu(0), MakeGpu(1)}), WithStrategy(MigStrategy::kSingle));
  ASSERT_TRUE(resources.ok()) << resources.status();
  EXPECT_EQ(Ids((*resources)[0]), (std::vector<std::string>{"GPU-0", "GPU-1"}));
}

TEST(ResourcesTest, SingleRefusesLayoutsItCannotServe) {
  PluginConfig single = WithStrategy(MigStrategy::kSingle);
  auto mixed_modes = BuildResources(MakeSystem({MigGpu(0, {"1g.10gb"}), MakeGpu(1)}), single);
  ASSERT_FALSE(mixed_modes.ok());
  EXPECT_EQ(std::string(mixed_modes.status().message()),
            "invalid MIG configuration for migStrategy single: every GPU must have MIG enabled, "
            "or none (use mixed for a mix)");
  auto empty = BuildResources(MakeSystem({MigGpu(0, {"1g.10gb"}), MigGpu(1, {})}), single);
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(std::string(empty.status().message()),
            "invalid MIG configuration for migStrategy single: GPU 1 has MIG enabled but no MIG "
            "devices");
  auto two = BuildResources(MakeSystem({MigGpu(0, {"1g.10gb", "3g.40gb"})}), single);
  ASSERT_FALSE(two.ok());
  EXPECT_EQ(std::string(two.status().message()),
            "invalid MIG configuration for migStrategy single: more than one MIG profile "
            "(1g.10gb, 3g.40gb); use mixed");
}

TEST(ResourcesTest, MixedSplitsByProfile) {
  auto resources = BuildResources(
      MakeSystem({MakeGpu(0), MigGpu(1, {"1g.10gb", "1g.10gb+me", "3g.40gb"}),
                  MigGpu(2, {"1g.10gb"})}),
      WithStrategy(MigStrategy::kMixed));
  ASSERT_TRUE(resources.ok()) << resources.status();
  ASSERT_EQ(resources->size(), 4u);
  EXPECT_EQ((*resources)[0].name, "nvidia.com/gpu");
  EXPECT_EQ(Ids((*resources)[0]), (std::vector<std::string>{"GPU-0"}));
  EXPECT_EQ((*resources)[1].name, "nvidia.com/mig-1g.10gb");
  EXPECT_EQ(Ids((*resources)[1]), (std::vector<std::string>{"MIG-1-0", "MIG-2-0"}));
  EXPECT_EQ((*resources)[1].socket_name, "nvidia-mig-1g.10gb.sock");
  EXPECT_EQ((*resources)[2].name, "nvidia.com/mig-1g.10gb.me");
  EXPECT_EQ((*resources)[3].name, "nvidia.com/mig-3g.40gb");
}

TEST(ResourcesTest, TimeSlicingReplicatesWithAnnotatedIds) {
  PluginConfig config;
  config.time_slicing.resources.push_back({"nvidia.com/gpu", 3});
  auto resources = BuildResources(MakeSystem({MakeGpu(0), MakeGpu(1)}), config);
  ASSERT_TRUE(resources.ok()) << resources.status();
  const ResourceDevices& gpu = (*resources)[0];
  EXPECT_EQ(gpu.name, "nvidia.com/gpu");
  EXPECT_EQ(gpu.replicas, 3);
  EXPECT_EQ(Ids(gpu), (std::vector<std::string>{"GPU-0::0", "GPU-0::1", "GPU-0::2", "GPU-1::0",
                                                "GPU-1::1", "GPU-1::2"}));
  EXPECT_EQ(gpu.devices[4].uuid, "GPU-1");
  EXPECT_EQ(gpu.devices[4].replica, 1);

  config.time_slicing.rename_by_default = true;
  resources = BuildResources(MakeSystem({MakeGpu(0)}), config);
  ASSERT_TRUE(resources.ok()) << resources.status();
  EXPECT_EQ((*resources)[0].name, "nvidia.com/gpu.shared");
  EXPECT_EQ((*resources)[0].socket_name, "nvidia-gpu.shared.sock");
}

TEST(ResourcesTest, TimeSlicingOfOneMigProfileLeavesTheOthers) {
  PluginConfig config = WithStrategy(MigStrategy::kMixed);
  config.time_slicing.resources.push_back({"nvidia.com/mig-1g.10gb", 2});
  config.time_slicing.resources.push_back({"nvidia.com/mig-7g.80gb", 2});  // not on this node
  auto resources =
      BuildResources(MakeSystem({MigGpu(0, {"1g.10gb", "3g.40gb"})}), config);
  ASSERT_TRUE(resources.ok()) << resources.status();
  ASSERT_EQ(resources->size(), 2u);
  EXPECT_EQ(Ids((*resources)[0]), (std::vector<std::string>{"MIG-0-0::0", "MIG-0-0::1"}));
  EXPECT_EQ(Ids((*resources)[1]), (std::vector<std::string>{"MIG-0-1"}));
}

}  // namespace
}  // namespace muster::deviceplugin
