#include "deviceplugin/labels.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "deviceplugin/testing/gpus.h"
#include "gtest/gtest.h"

namespace muster::deviceplugin {
namespace {

using testing::MakeGpu;
using testing::MakeMig;
using testing::MakeSystem;

LabelInputs Inputs() { return {"PowerEdge XE9680", 1700000000}; }

TEST(LabelsTest, GpuAndDriverLabelsAsGfdWritesThem) {
  Labels labels = GfdLabels(MakeSystem({MakeGpu(0), MakeGpu(1)}), PluginConfig{}, Inputs());
  Labels want = {
      {"nvidia.com/cuda.driver-version.full", "550.107.02"},
      {"nvidia.com/cuda.driver-version.major", "550"},
      {"nvidia.com/cuda.driver-version.minor", "107"},
      {"nvidia.com/cuda.driver-version.revision", "02"},
      {"nvidia.com/cuda.driver.major", "550"},
      {"nvidia.com/cuda.driver.minor", "107"},
      {"nvidia.com/cuda.driver.rev", "02"},
      {"nvidia.com/cuda.runtime-version.full", "12.4"},
      {"nvidia.com/cuda.runtime-version.major", "12"},
      {"nvidia.com/cuda.runtime-version.minor", "4"},
      {"nvidia.com/cuda.runtime.major", "12"},
      {"nvidia.com/cuda.runtime.minor", "4"},
      {"nvidia.com/gfd.timestamp", "1700000000"},
      {"nvidia.com/gpu.compute.major", "9"},
      {"nvidia.com/gpu.compute.minor", "0"},
      {"nvidia.com/gpu.count", "2"},
      {"nvidia.com/gpu.family", "hopper"},
      {"nvidia.com/gpu.machine", "PowerEdge-XE9680"},
      {"nvidia.com/gpu.memory", "81559"},
      {"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"},
      {"nvidia.com/gpu.replicas", "1"},
      {"nvidia.com/gpu.sharing-strategy", "none"},
      {"nvidia.com/mig.capable", "true"},
      {"nvidia.com/mig.strategy", "none"},
      {"nvidia.com/mps.capable", "false"},
  };
  EXPECT_EQ(labels, want);
}

TEST(LabelsTest, TimeSlicingMarksTheProductSharedUnlessRenamed) {
  PluginConfig config;
  config.time_slicing.resources.push_back({"nvidia.com/gpu", 4});
  Labels labels = GfdLabels(MakeSystem({MakeGpu(0)}), config, Inputs());
  EXPECT_EQ(labels["nvidia.com/gpu.product"], "NVIDIA-H100-80GB-HBM3-SHARED");
  EXPECT_EQ(labels["nvidia.com/gpu.replicas"], "4");
  EXPECT_EQ(labels["nvidia.com/gpu.sharing-strategy"], "time-slicing");
  config.time_slicing.rename_by_default = true;
  EXPECT_EQ(GfdLabels(MakeSystem({MakeGpu(0)}), config, Inputs())["nvidia.com/gpu.product"],
            "NVIDIA-H100-80GB-HBM3");
}

gpu::GpuSystem MigSystem() {
  gpu::GpuDevice a = MakeGpu(0);
  a.mig_enabled = true;
  a.mig_devices = {MakeMig(0, 0, "1g.10gb", 7), MakeMig(0, 1, "1g.10gb", 8)};
  gpu::GpuDevice b = MakeGpu(1);
  b.mig_enabled = true;
  b.mig_devices = {MakeMig(1, 0, "1g.10gb", 9)};
  return MakeSystem({a, b});
}

TEST(LabelsTest, MigSingleDescribesTheMigDevices) {
  PluginConfig config;
  config.mig_strategy = MigStrategy::kSingle;
  Labels labels = GfdLabels(MigSystem(), config, Inputs());
  EXPECT_EQ(labels["nvidia.com/gpu.product"], "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb");
  EXPECT_EQ(labels["nvidia.com/gpu.count"], "3");
  EXPECT_EQ(labels["nvidia.com/gpu.memory"], "9856");
  EXPECT_EQ(labels["nvidia.com/gpu.multiprocessors"], "16");
  EXPECT_EQ(labels["nvidia.com/gpu.slices.gi"], "1");
  EXPECT_EQ(labels["nvidia.com/gpu.slices.ci"], "1");
  EXPECT_EQ(labels["nvidia.com/gpu.engines.decoder"], "1");
  EXPECT_EQ(labels["nvidia.com/mig.strategy"], "single");
}

TEST(LabelsTest, MigMixedLabelsEachProfile) {
  PluginConfig config;
  config.mig_strategy = MigStrategy::kMixed;
  Labels labels = GfdLabels(MigSystem(), config, Inputs());
  EXPECT_EQ(labels["nvidia.com/gpu.product"], "NVIDIA-H100-80GB-HBM3");
  EXPECT_EQ(labels["nvidia.com/gpu.count"], "2");
  EXPECT_EQ(labels["nvidia.com/mig-1g.10gb.count"], "3");
  EXPECT_EQ(labels["nvidia.com/mig-1g.10gb.memory"], "9856");
  EXPECT_EQ(labels["nvidia.com/mig-1g.10gb.engines.copy"], "1");
  EXPECT_EQ(labels["nvidia.com/mig-1g.10gb.replicas"], "1");
  EXPECT_EQ(labels.count("nvidia.com/gpu.multiprocessors"), 0u);
}

TEST(LabelsTest, NoTimestampAndUnknownMachine) {
  Labels labels = GfdLabels(MakeSystem({MakeGpu(0)}), PluginConfig{}, {"", std::nullopt});
  EXPECT_EQ(labels.count("nvidia.com/gfd.timestamp"), 0u);
  EXPECT_EQ(labels["nvidia.com/gpu.machine"], "unknown");
}

TEST(LabelsTest, FamiliesByComputeCapability) {
  EXPECT_EQ(GpuFamily(7, 0), "volta");
  EXPECT_EQ(GpuFamily(7, 5), "turing");
  EXPECT_EQ(GpuFamily(8, 0), "ampere");
  EXPECT_EQ(GpuFamily(8, 6), "ampere");
  EXPECT_EQ(GpuFamily(8, 9), "ada-lovelace");
  EXPECT_EQ(GpuFamily(9, 0), "hopper");
  EXPECT_EQ(GpuFamily(10, 0), "blackwell");
  EXPECT_EQ(GpuFamily(12, 0), "blackwell");
  EXPECT_EQ(GpuFamily(4, 0), "undefined");
}

TEST(LabelsTest, ValuesAreSanitized) {
  EXPECT_EQ(SanitizeLabelValue("NVIDIA A100 (80GB)"), "NVIDIA-A100--80GB");
  EXPECT_EQ(SanitizeLabelValue(std::string(70, 'a')).size(), 63u);
  EXPECT_EQ(SanitizeLabelValue("-x-"), "x");
}

TEST(LabelsTest, FeaturesFileHasOneLabelPerLineAndIsReplaced) {
  std::string path = ::testing::TempDir() + "/dp-labels/features.d/gfd";
  ASSERT_TRUE(WriteFeaturesFile(path, {{"nvidia.com/gpu.count", "2"}, {"nvidia.com/a", "b"}}).ok());
  ASSERT_TRUE(WriteFeaturesFile(path, {{"nvidia.com/gpu.count", "8"}}).ok());
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "nvidia.com/gpu.count=8\n");
  std::filesystem::remove_all(::testing::TempDir() + "/dp-labels");
}

TEST(LabelsTest, NodePatchIsAMergePatchOfTheLabels) {
  EXPECT_EQ(NodeLabelsPatch({{"nvidia.com/gpu.count", "2"}, {"nvidia.com/gpu.product", "A\"B"}}),
            R"({"metadata":{"labels":{"nvidia.com/gpu.count":"2","nvidia.com/gpu.product":"A\"B"}}})");
  // With the GPUs' NVLinks beside them.
  EXPECT_EQ(NodeLabelsPatch({{"nvidia.com/gpu.count", "2"}},
                            {{"muster.dev/gpu-topology", "v1;gpus=2;nvlink=0-1:18"}}),
            R"({"metadata":{"labels":{"nvidia.com/gpu.count":"2"},)"
            R"("annotations":{"muster.dev/gpu-topology":"v1;gpus=2;nvlink=0-1:18"}}})");
}

}  // namespace
}  // namespace muster::deviceplugin
