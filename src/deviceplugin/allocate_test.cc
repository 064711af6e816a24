#include "deviceplugin/allocate.h"

#include <filesystem>
#include <fstream>

#include "api/gpu_sets.h"
#include "api/gpu_topology.h"
#include "deviceplugin/testing/gpus.h"
#include "gtest/gtest.h"

namespace muster::deviceplugin {
namespace {

using testing::MakeGpu;
using testing::MakeMig;
using testing::MakeSystem;

ResourceDevices Build(const gpu::GpuSystem& system, const PluginConfig& config, size_t which = 0) {
  auto resources = BuildResources(system, config);
  EXPECT_TRUE(resources.ok()) << resources.status();
  return (*resources)[which];
}

gpu::GpuSystem TwoGpus() { return MakeSystem({MakeGpu(0), MakeGpu(1)}); }

gpu::GpuSystem TwoMigGpus() {
  gpu::GpuDevice a = MakeGpu(0);
  a.mig_enabled = true;
  a.mig_devices = {MakeMig(0, 0, "1g.10gb", 7), MakeMig(0, 1, "1g.10gb", 8)};
  gpu::GpuDevice b = MakeGpu(1);
  b.mig_enabled = true;
  b.mig_devices = {MakeMig(1, 0, "1g.10gb", 9)};
  return MakeSystem({a, b});
}

TEST(AllocateTest, EnvvarListsUuidsInRequestOrder) {
  PluginConfig config;
  auto allocation = Allocate(Build(TwoGpus(), config), config, {"GPU-1", "GPU-0"});
  ASSERT_TRUE(allocation.ok()) << allocation.status();
  EXPECT_EQ(allocation->envs, (std::map<std::string, std::string>{
                                  {"NVIDIA_VISIBLE_DEVICES", "GPU-1,GPU-0"}}));
  EXPECT_TRUE(allocation->mounts.empty());
  EXPECT_TRUE(allocation->devices.empty());
  EXPECT_TRUE(allocation->annotations.empty());
  EXPECT_TRUE(allocation->cdi_devices.empty());
}

TEST(AllocateTest, IndexStrategyUsesIndicesAndMigIndexPairs) {
  PluginConfig config;
  config.device_id_strategy = DeviceIdStrategy::kIndex;
  auto full = Allocate(Build(TwoGpus(), config), config, {"GPU-0", "GPU-1"});
  ASSERT_TRUE(full.ok()) << full.status();
  EXPECT_EQ(full->envs["NVIDIA_VISIBLE_DEVICES"], "0,1");
  config.mig_strategy = MigStrategy::kSingle;
  auto mig = Allocate(Build(TwoMigGpus(), config), config, {"MIG-0-1", "MIG-1-0"});
  ASSERT_TRUE(mig.ok()) << mig.status();
  EXPECT_EQ(mig->envs["NVIDIA_VISIBLE_DEVICES"], "0:1,1:0");
}

TEST(AllocateTest, UnknownDevicesAreRefused) {
  PluginConfig config;
  auto allocation = Allocate(Build(TwoGpus(), config), config, {"GPU-0", "GPU-7"});
  ASSERT_FALSE(allocation.ok());
  EXPECT_EQ(allocation.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(allocation.status().message()),
            "invalid allocation request for 'nvidia.com/gpu': unknown device: GPU-7");
  EXPECT_FALSE(Allocate(Build(TwoGpus(), config), config, {}).ok());
}

TEST(AllocateTest, ReplicasOfOneGpuCollapseToIt) {
  PluginConfig config;
  config.time_slicing.resources.push_back({"nvidia.com/gpu", 4});
  auto allocation = Allocate(Build(TwoGpus(), config), config, {"GPU-0::2", "GPU-1::0", "GPU-0::3"});
  ASSERT_TRUE(allocation.ok()) << allocation.status();
  EXPECT_EQ(allocation->envs["NVIDIA_VISIBLE_DEVICES"], "GPU-0,GPU-1");
  config.time_slicing.fail_requests_greater_than_one = true;
  auto refused = Allocate(Build(TwoGpus(), config), config, {"GPU-0::2", "GPU-1::0"});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(std::string(refused.status().message()),
            "invalid allocation request for 'nvidia.com/gpu': request for 2 shared devices is not "
            "supported (failRequestsGreaterThanOne is set)");
  EXPECT_TRUE(Allocate(Build(TwoGpus(), config), config, {"GPU-0::2"}).ok());
}

TEST(AllocateTest, VolumeMountsListDevicesAsMounts) {
  PluginConfig config;
  config.device_list_strategy = {false, true, false, false};
  auto allocation = Allocate(Build(TwoGpus(), config), config, {"GPU-0", "GPU-1"});
  ASSERT_TRUE(allocation.ok()) << allocation.status();
  EXPECT_EQ(allocation->envs["NVIDIA_VISIBLE_DEVICES"], "/var/run/nvidia-container-devices");
  ASSERT_EQ(allocation->mounts.size(), 2u);
  EXPECT_EQ(allocation->mounts[1].container_path, "/var/run/nvidia-container-devices/GPU-1");
  EXPECT_EQ(allocation->mounts[1].host_path, "/dev/null");
  EXPECT_TRUE(allocation->mounts[1].read_only);
}

TEST(AllocateTest, CdiAnnotationsAndCdiDevices) {
  PluginConfig config;
  config.device_list_strategy = {false, false, true, true};
  config.gds_enabled = true;
  auto allocation = Allocate(Build(TwoGpus(), config), config, {"GPU-1"});
  ASSERT_TRUE(allocation.ok()) << allocation.status();
  EXPECT_TRUE(allocation->envs.empty());
  EXPECT_EQ(allocation->annotations,
            (std::map<std::string, std::string>{
                {"cdi.k8s.io/nvidia-device-plugin_gpu", "nvidia.com/gpu=GPU-1,nvidia.com/gds=all"}}));
  EXPECT_EQ(allocation->cdi_devices,
            (std::vector<std::string>{"nvidia.com/gpu=GPU-1", "nvidia.com/gds=all"}));
}

TEST(AllocateTest, FeatureFlagsSetTheirVariables) {
  PluginConfig config;
  config.gdrcopy_enabled = true;
  config.mofed_enabled = true;
  auto allocation = Allocate(Build(TwoGpus(), config), config, {"GPU-1"});
  ASSERT_TRUE(allocation.ok()) << allocation.status();
  EXPECT_EQ(allocation->envs["NVIDIA_GDRCOPY"], "enabled");
  EXPECT_EQ(allocation->envs["NVIDIA_MOFED"], "enabled");
  EXPECT_EQ(allocation->envs.count("NVIDIA_GDS"), 0u);
}

class DeviceSpecsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = ::testing::TempDir() + "/dp-specs-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::create_directories(root_ + "/dev");
    std::filesystem::create_directories(root_ + "/proc/driver/nvidia-caps");
    for (const char* node : {"nvidiactl", "nvidia-uvm"}) std::ofstream(root_ + "/dev/" + node);
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  std::string root_;
};

TEST_F(DeviceSpecsTest, FullGpusGetControlNodesThatExistAndTheirOwnNode) {
  PluginConfig config;
  config.pass_device_specs = true;
  config.nvidia_dev_root = root_;
  auto allocation = Allocate(Build(TwoGpus(), config), config, {"GPU-1"});
  ASSERT_TRUE(allocation.ok()) << allocation.status();
  ASSERT_EQ(allocation->devices.size(), 3u);
  EXPECT_EQ(allocation->devices[0].container_path, "/dev/nvidiactl");
  EXPECT_EQ(allocation->devices[0].host_path, root_ + "/dev/nvidiactl");
  EXPECT_EQ(allocation->devices[0].permissions, "rw");
  EXPECT_EQ(allocation->devices[1].container_path, "/dev/nvidia-uvm");
  EXPECT_EQ(allocation->devices[2].container_path, "/dev/nvidia1");
  EXPECT_EQ(allocation->devices[2].host_path, root_ + "/dev/nvidia1");
}

TEST_F(DeviceSpecsTest, MigDevicesGetTheirCapabilityNodes) {
  std::ofstream(root_ + "/proc/driver/nvidia-caps/mig-minors")
      << "config 1\nmonitor 2\ngpu0/gi7/access 66\ngpu0/gi7/ci0/access 67\n"
         "gpu0/gi8/access 75\ngpu0/gi8/ci0/access 76\n";
  PluginConfig config;
  config.mig_strategy = MigStrategy::kSingle;
  config.pass_device_specs = true;
  config.nvidia_dev_root = root_;
  AllocateEnvironment environment{root_ + "/proc"};
  auto allocation = Allocate(Build(TwoMigGpus(), config), config, {"MIG-0-1"}, environment);
  ASSERT_TRUE(allocation.ok()) << allocation.status();
  std::vector<std::string> paths;
  for (const auto& d : allocation->devices) paths.push_back(d.container_path);
  EXPECT_EQ(paths, (std::vector<std::string>{"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia0",
                                             "/dev/nvidia-caps/nvidia-cap75",
                                             "/dev/nvidia-caps/nvidia-cap76"}));
  auto missing = Allocate(Build(TwoMigGpus(), config), config, {"MIG-1-0"}, environment);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(std::string(missing.status().message()).find("no capability device for gpu1/gi9/access"),
            std::string::npos)
      << missing.status();
}

TEST(PreferredAllocationTest, PairScoresFollowGoGpuAllocator) {
  auto gpus = testing::Dgx1Gpus();
  EXPECT_EQ(PairScore(gpus, 2, 3), 250);  // 2 NVLinks, one PCIe switch
  EXPECT_EQ(PairScore(gpus, 0, 1), 150);  // 1 NVLink, one PCIe switch
  EXPECT_EQ(PairScore(gpus, 0, 3), 220);  // 2 NVLinks, same socket
  EXPECT_EQ(PairScore(gpus, 0, 4), 210);  // 2 NVLinks, across sockets
  EXPECT_EQ(PairScore(gpus, 0, 5), 10);   // no NVLink, across sockets
}

class Dgx1PreferredTest : public ::testing::Test {
 protected:
  Dgx1PreferredTest() : gpus_(testing::Dgx1Gpus()), resource_(Build(MakeSystem(gpus_), config_)) {}
  std::vector<std::string> Prefer(std::vector<int> available, std::vector<int> must, int size) {
    std::vector<std::string> a, m;
    for (int i : available) a.push_back("GPU-" + std::to_string(i));
    for (int i : must) m.push_back("GPU-" + std::to_string(i));
    auto chosen = PreferredAllocation(resource_, gpus_, config_, a, m, size);
    EXPECT_TRUE(chosen.ok()) << chosen.status();
    return chosen.ok() ? *chosen : std::vector<std::string>{};
  }
  std::vector<gpu::GpuDevice> gpus_;
  PluginConfig config_;
  ResourceDevices resource_;
};

std::vector<std::string> Gpus(std::vector<int> indices) {
  std::vector<std::string> ids;
  for (int i : indices) ids.push_back("GPU-" + std::to_string(i));
  return ids;
}

// On a machine with NVLinks the preferred set is the scheduler's (api/gpu_sets.h): the most
// NVLinks, then the most linked pairs, then the lowest numbers. Of the eight NV2 pairs {0,3} comes
// first; go-gpuallocator's best partition would give {2,3} here, and {0,4} for GPU 0.
TEST_F(Dgx1PreferredTest, PairsAreTheBestLinkedWithTheLowestNumbers) {
  EXPECT_EQ(Prefer({0, 1, 2, 3, 4, 5, 6, 7}, {}, 2), Gpus({0, 3}));
  EXPECT_EQ(Prefer({0, 1, 2, 3, 4, 5, 6, 7}, {0}, 2), Gpus({0, 3}));
  EXPECT_EQ(Prefer({0, 1, 2, 3, 4, 5, 6, 7}, {1}, 2), Gpus({1, 2}));
  // The kubelet's order of available devices does not change the answer.
  EXPECT_EQ(Prefer({7, 6, 5, 4, 3, 2, 1, 0}, {}, 2), Gpus({0, 3}));
}

// What the kubelet is told is what the scheduler wrote into muster.dev/gpu-indices: the same
// function over the topology this plugin publishes, for every size and must-include GPU.
TEST_F(Dgx1PreferredTest, AgreesWithTheSchedulersChoiceFromThePublishedTopology) {
  auto published = api::ParseGpuTopology(api::GpuTopologyValue(gpu::NvLinkMatrix(gpus_)));
  ASSERT_TRUE(published.ok()) << published.status();
  const std::vector<int> free = {1, 2, 4, 5, 6, 7};  // 0 and 3 held by another pod
  for (int size = 1; size <= 6; ++size) {
    EXPECT_EQ(Prefer(free, {}, size), Gpus(api::BestGpuSet(*published, free, size))) << size;
    for (int must : free) {
      EXPECT_EQ(Prefer(free, {must}, size), Gpus(api::BestGpuSet(*published, free, size, {must})))
          << size << " with " << must;
    }
  }
}

TEST_F(Dgx1PreferredTest, QuadsAreTheCubeFaces) {
  EXPECT_EQ(Prefer({0, 1, 2, 3, 4, 5, 6, 7}, {}, 4), Gpus({0, 1, 2, 3}));
  EXPECT_EQ(Prefer({0, 1, 2, 3, 4, 5, 6, 7}, {5}, 4), Gpus({4, 5, 6, 7}));
  EXPECT_EQ(Prefer({0, 1, 2, 3, 4, 5, 6, 7}, {}, 8), Gpus({0, 1, 2, 3, 4, 5, 6, 7}));
}

// With 2 and 3 taken, of the NV2 pairs left (0-4, 1-5, 4-7, 5-6, 6-7) the first.
TEST_F(Dgx1PreferredTest, OnlyAvailableGpusAreConsidered) {
  EXPECT_EQ(Prefer({0, 1, 4, 5, 6, 7}, {}, 2), Gpus({0, 4}));
  EXPECT_EQ(Prefer({1, 2, 3, 4, 5, 6, 7}, {}, 4), Gpus({4, 5, 6, 7}));
}

TEST_F(Dgx1PreferredTest, SetsThatDoNotDivideTheGpusStillGetFullSets) {
  auto chosen = Prefer({0, 1, 2, 3, 4, 5, 6, 7}, {}, 3);
  ASSERT_EQ(chosen.size(), 3u);
  // Three of one cube face: {1,2,3} / {0,2,3} (NV2 2-3 plus NVLinks to both) score 590.
  EXPECT_EQ(chosen, Gpus({0, 2, 3}));
}

TEST_F(Dgx1PreferredTest, ImpossibleRequestsAreErrors) {
  auto too_many = PreferredAllocation(resource_, gpus_, config_, Gpus({0, 1}), {}, 3);
  ASSERT_FALSE(too_many.ok());
  EXPECT_EQ(std::string(too_many.status().message()),
            "invalid preferred allocation request for 'nvidia.com/gpu': 2 devices available for "
            "an allocation of 3");
  EXPECT_FALSE(PreferredAllocation(resource_, gpus_, config_, Gpus({0, 1, 2}), Gpus({0, 1, 2}), 2)
                   .ok());
  auto unknown = PreferredAllocation(resource_, gpus_, config_, {"GPU-9"}, {}, 1);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(std::string(unknown.status().message()),
            "invalid preferred allocation request for 'nvidia.com/gpu': unknown device: GPU-9");
}

TEST(PreferredAllocationTest, DistributedSpreadsReplicasAndPackedPacksThem) {
  PluginConfig config;
  config.time_slicing.resources.push_back({"nvidia.com/gpu", 4});
  ResourceDevices resource = Build(TwoGpus(), config);
  std::vector<std::string> all;
  for (const auto& d : resource.devices) all.push_back(d.id);
  auto spread = PreferredAllocation(resource, {}, config, all, {}, 2);
  ASSERT_TRUE(spread.ok()) << spread.status();
  EXPECT_EQ(*spread, (std::vector<std::string>{"GPU-0::0", "GPU-1::0"}));
  // With two replicas of GPU 0 in use and none of GPU 1, GPU 1 is the less used.
  auto less_used = PreferredAllocation(
      resource, {}, config, {"GPU-0::2", "GPU-0::3", "GPU-1::0", "GPU-1::1", "GPU-1::2", "GPU-1::3"},
      {}, 1);
  ASSERT_TRUE(less_used.ok()) << less_used.status();
  EXPECT_EQ(*less_used, (std::vector<std::string>{"GPU-1::0"}));
  auto with_must = PreferredAllocation(resource, {}, config, all, {"GPU-1::3"}, 2);
  ASSERT_TRUE(with_must.ok()) << with_must.status();
  EXPECT_EQ(*with_must, (std::vector<std::string>{"GPU-1::3", "GPU-0::0"}));

  config.shared_allocation_policy = SharedAllocationPolicy::kPacked;
  auto packed = PreferredAllocation(resource, {}, config, all, {}, 2);
  ASSERT_TRUE(packed.ok()) << packed.status();
  EXPECT_EQ(*packed, (std::vector<std::string>{"GPU-0::0", "GPU-0::1"}));
}

}  // namespace
}  // namespace muster::deviceplugin
