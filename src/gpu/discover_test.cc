#include "gpu/discover.h"

#include <filesystem>
#include <fstream>

#include "fmt/format.h"
#include "gpu/fake/fake_machine.h"
#include "gpu/mig_profile.h"
#include "gtest/gtest.h"

namespace muster::gpu {
namespace {

using testing::FakeMachine;
using testing::FakeNvmlLibrary;

DiscoverOptions FakeOptions(const FakeMachine& machine) {
  machine.Activate();
  DiscoverOptions options;
  options.nvml_library = FakeNvmlLibrary();
  options.sysfs_root = machine.dir() + "/sys";
  return options;
}

void WriteNumaNode(const FakeMachine& machine, const std::string& bus_id, int node) {
  std::string dir = fmt::format("{}/sys/bus/pci/devices/{}", machine.dir(), bus_id);
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/numa_node") << node << "\n";
}

TEST(DiscoverTest, ReadsEveryGpuAttribute) {
  FakeMachine machine(testing::TwoGpuMachine());
  WriteNumaNode(machine, "0000:18:00.0", 0);
  WriteNumaNode(machine, "0000:2a:00.0", 1);
  auto system = DiscoverSystem(FakeOptions(machine));
  ASSERT_TRUE(system.ok()) << system.status();
  EXPECT_EQ(system->driver_version, "550.107.02");
  EXPECT_EQ(system->cuda_driver_version, 12040);
  ASSERT_EQ(system->devices.size(), 2u);
  const GpuDevice& gpu = system->devices[1];
  EXPECT_EQ(gpu.index, 1);
  EXPECT_EQ(gpu.uuid, "GPU-00000000-0000-4000-8000-000000000001");
  EXPECT_EQ(gpu.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(gpu.memory_bytes, 81559 * kMiB);
  EXPECT_EQ(gpu.compute_major, 9);
  EXPECT_EQ(gpu.compute_minor, 0);
  EXPECT_EQ(gpu.pci_bus_id, "0000:2a:00.0");
  EXPECT_EQ(gpu.minor_number, 1u);
  EXPECT_EQ(gpu.numa_node, 1);
  EXPECT_EQ(system->devices[0].numa_node, 0);
  EXPECT_TRUE(gpu.mig_capable);
  EXPECT_FALSE(gpu.mig_enabled);
  EXPECT_TRUE(gpu.mig_devices.empty());
}

TEST(DiscoverTest, NumaNodeIsUnknownWithoutSysfsEntryOrWhenNegative) {
  FakeMachine machine(testing::TwoGpuMachine());
  WriteNumaNode(machine, "0000:18:00.0", -1);
  auto gpus = Discover(FakeOptions(machine));
  ASSERT_TRUE(gpus.ok()) << gpus.status();
  EXPECT_EQ((*gpus)[0].numa_node, -1);
  EXPECT_EQ((*gpus)[1].numa_node, -1);
}

TEST(DiscoverTest, MigDevicesGetNvidiasProfileNames) {
  FakeMachine machine(testing::MixedMigMachine());
  auto gpus = Discover(FakeOptions(machine));
  ASSERT_TRUE(gpus.ok()) << gpus.status();
  ASSERT_EQ(gpus->size(), 2u);
  const GpuDevice& gpu0 = (*gpus)[0];
  EXPECT_TRUE(gpu0.mig_enabled);
  ASSERT_EQ(gpu0.mig_devices.size(), 3u);
  EXPECT_EQ(gpu0.mig_devices[0].profile, "1g.10gb");
  EXPECT_EQ(gpu0.mig_devices[1].profile, "1g.10gb");
  EXPECT_EQ(gpu0.mig_devices[2].profile, "2g.20gb");
  EXPECT_EQ(gpu0.mig_devices[2].uuid, "MIG-00000000-0000-4000-8000-000000000002");
  EXPECT_EQ(gpu0.mig_devices[2].gpu_instance_id, 3u);
  EXPECT_EQ(gpu0.mig_devices[2].memory_bytes, 19968 * kMiB);
  EXPECT_EQ(gpu0.mig_devices[2].multiprocessors, 28u);
  const GpuDevice& gpu1 = (*gpus)[1];
  ASSERT_EQ(gpu1.mig_devices.size(), 2u);
  EXPECT_EQ(gpu1.mig_devices[0].profile, "3g.40gb");
  EXPECT_EQ(gpu1.mig_devices[0].copy_engines, 3u);
  EXPECT_EQ(gpu1.mig_devices[0].decoders, 2u);
}

TEST(DiscoverTest, MigPlusMediaExtensionsFromTheGpuInstanceProfile) {
  FakeMachine machine(
      "gpu name=\"NVIDIA A100-SXM4-80GB\" memory_mib=81920 mig=on\n"
      "mig gpu=0 gi=9 ci=0 gi_slices=1 ci_slices=1 memory_mib=9728 sms=14 profile_id=7\n"
      "mig gpu=0 gi=1 ci=0 gi_slices=4 ci_slices=2 memory_mib=40192 sms=28 profile_id=3\n");
  auto gpus = Discover(FakeOptions(machine));
  ASSERT_TRUE(gpus.ok()) << gpus.status();
  ASSERT_EQ((*gpus)[0].mig_devices.size(), 2u);
  EXPECT_EQ((*gpus)[0].mig_devices[0].profile, "1g.10gb+me");
  EXPECT_EQ((*gpus)[0].mig_devices[1].profile, "2c.4g.40gb");
}

TEST(DiscoverTest, GpusWithoutMigSupportAreNotMigCapable) {
  FakeMachine machine("gpu name=\"Tesla T4\" memory_mib=15360 cc=7.5 mig=unsupported\n");
  auto gpus = Discover(FakeOptions(machine));
  ASSERT_TRUE(gpus.ok()) << gpus.status();
  EXPECT_FALSE((*gpus)[0].mig_capable);
  EXPECT_FALSE((*gpus)[0].mig_enabled);
}

TEST(DiscoverTest, NvLinksAndPcieLevelsBetweenEveryPair) {
  FakeMachine machine(testing::Dgx1Machine());
  auto gpus = Discover(FakeOptions(machine));
  ASSERT_TRUE(gpus.ok()) << gpus.status();
  ASSERT_EQ(gpus->size(), 8u);
  const GpuDevice& gpu0 = (*gpus)[0];
  ASSERT_EQ(gpu0.peers.size(), 7u);
  EXPECT_EQ(gpu0.Peer(1)->nvlinks, 1);
  EXPECT_EQ(gpu0.Peer(1)->level, TopologyLevel::kSingle);  // same PCIe switch
  EXPECT_EQ(gpu0.Peer(3)->nvlinks, 2);
  EXPECT_EQ(gpu0.Peer(3)->level, TopologyLevel::kNode);  // same socket
  EXPECT_EQ(gpu0.Peer(4)->nvlinks, 2);
  EXPECT_EQ(gpu0.Peer(4)->level, TopologyLevel::kSystem);  // across sockets
  EXPECT_EQ(gpu0.Peer(5)->nvlinks, 0);
  EXPECT_EQ(gpu0.Peer(0), nullptr);
  // Symmetric, as the hardware is.
  for (const GpuDevice& a : *gpus) {
    for (const PeerLink& link : a.peers) {
      const PeerLink* back = (*gpus)[link.peer_index].Peer(a.index);
      ASSERT_NE(back, nullptr);
      EXPECT_EQ(back->nvlinks, link.nvlinks);
      EXPECT_EQ(back->level, link.level);
    }
  }
}

TEST(DiscoverTest, LinksToAnNvSwitchAreNotPeerLinksAndLevelsCanBeOverridden) {
  FakeMachine machine(testing::TwoGpuMachine(
      "nvswitch gpu=0 links=18\nnvswitch gpu=1 links=18\ntopology gpu=0 peer=1 level=PHB\n"));
  auto gpus = Discover(FakeOptions(machine));
  ASSERT_TRUE(gpus.ok()) << gpus.status();
  EXPECT_EQ((*gpus)[0].Peer(1)->nvlinks, 0);
  EXPECT_EQ((*gpus)[0].Peer(1)->level, TopologyLevel::kHostBridge);
  // Counted apart, they link every two GPUs on the switches as the less connected one allows.
  EXPECT_EQ((*gpus)[0].nvswitch_links, 18);
  EXPECT_EQ((*gpus)[1].nvswitch_links, 18);
  EXPECT_EQ(NvLinkMatrix(*gpus), (std::vector<std::vector<int>>{{0, 18}, {18, 0}}));
}

TEST(DiscoverTest, TheNvLinkMatrixOfADgx1IsItsCubeMesh) {
  FakeMachine machine(testing::Dgx1Machine());
  auto gpus = Discover(FakeOptions(machine));
  ASSERT_TRUE(gpus.ok()) << gpus.status();
  std::vector<std::vector<int>> links = NvLinkMatrix(*gpus);
  ASSERT_EQ(links.size(), 8u);
  EXPECT_EQ(links[0], (std::vector<int>{0, 1, 1, 2, 2, 0, 0, 0}));
  EXPECT_EQ(links[6], (std::vector<int>{0, 0, 1, 0, 1, 2, 0, 2}));
  for (const GpuDevice& gpu : *gpus) EXPECT_EQ(gpu.nvswitch_links, 0);
}

TEST(DiscoverTest, MissingLibrarySaysNoDriver) {
  DiscoverOptions options;
  options.nvml_library = "/nonexistent/libnvidia-ml.so.1";
  auto gpus = Discover(options);
  ASSERT_FALSE(gpus.ok());
  EXPECT_EQ(gpus.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(std::string(gpus.status().message()).rfind(
                "no NVIDIA driver found: /nonexistent/libnvidia-ml.so.1 could not be loaded (", 0),
            0u)
      << gpus.status();
}

TEST(DiscoverTest, DriverNotLoadedSaysNoDriver) {
  FakeMachine machine("init_error 9\ngpu\n");
  auto gpus = Discover(FakeOptions(machine));
  ASSERT_FALSE(gpus.ok());
  EXPECT_EQ(gpus.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(std::string(gpus.status().message()),
            "no NVIDIA driver found: nvmlInit_v2 failed: Driver Not Loaded (NVML error 9)");
}

TEST(DiscoverTest, OtherInitFailuresAreReported) {
  FakeMachine machine("init_error 4\n");
  auto gpus = Discover(FakeOptions(machine));
  ASSERT_FALSE(gpus.ok());
  EXPECT_EQ(std::string(gpus.status().message()),
            "NVML could not be initialised: nvmlInit_v2 failed: Insufficient Permissions (NVML "
            "error 4)");
}

TEST(DiscoverTest, ALostGpuFailsDiscoveryNamingIt) {
  FakeMachine machine(testing::TwoGpuMachine());
  machine.AppendEvent("lost 1");
  auto gpus = Discover(FakeOptions(machine));
  ASSERT_FALSE(gpus.ok());
  EXPECT_EQ(std::string(gpus.status().message()),
            "GPU 1: nvmlDeviceGetMemoryInfo: GPU is lost (NVML error 15)");
}

TEST(DiscoverTest, DriverRootFindsTheLibraryInTheDriversFolders) {
  FakeMachine machine("gpu\n");
  std::string root = machine.dir() + "/driver";
  std::filesystem::create_directories(root + "/usr/lib64");
  std::filesystem::copy_file(FakeNvmlLibrary(), root + "/usr/lib64/libnvidia-ml.so.1");
  EXPECT_EQ(ResolveNvmlLibrary("libnvidia-ml.so.1", root), root + "/usr/lib64/libnvidia-ml.so.1");
  EXPECT_EQ(ResolveNvmlLibrary("libnvidia-ml.so.1", "/"), "libnvidia-ml.so.1");
  EXPECT_EQ(ResolveNvmlLibrary("/opt/x.so", root), "/opt/x.so");
  DiscoverOptions options = FakeOptions(machine);
  options.nvml_library = "libnvidia-ml.so.1";
  options.driver_root = root;
  auto gpus = Discover(options);
  ASSERT_TRUE(gpus.ok()) << gpus.status();
  EXPECT_EQ(gpus->size(), 1u);
}

TEST(DiscoverTest, InventoryReportNamesEachGpuAndTheTopology) {
  FakeMachine machine(testing::TwoGpuMachine("nvlink gpu=0 peer=1 links=18\n"));
  auto system = DiscoverSystem(FakeOptions(machine));
  ASSERT_TRUE(system.ok()) << system.status();
  std::string report = FormatInventory(*system);
  EXPECT_NE(report.find("driver 550.107.02, CUDA 12.4, 2 GPUs"), std::string::npos) << report;
  EXPECT_NE(report.find("GPU 0: NVIDIA H100 80GB HBM3 (GPU-00000000-0000-4000-8000-000000000000)"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("memory 81559 MiB, compute capability 9.0, PCI 0000:18:00.0"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("MIG disabled"), std::string::npos) << report;
  EXPECT_NE(report.find("NV18"), std::string::npos) << report;
}

TEST(DiscoverTest, NormalizeBusIdGivesTheSysfsName) {
  EXPECT_EQ(NormalizeBusId("00000000:3B:00.0"), "0000:3b:00.0");
  EXPECT_EQ(NormalizeBusId("0000:3b:00.0"), "0000:3b:00.0");
}

}  // namespace
}  // namespace muster::gpu
