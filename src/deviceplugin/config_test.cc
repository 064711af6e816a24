#include "deviceplugin/config.h"

#include <cstdio>
#include <fstream>

#include "gtest/gtest.h"

namespace muster::deviceplugin {
namespace {

std::string Message(const absl::Status& status) { return std::string(status.message()); }

TEST(ConfigTest, DefaultsAreNvidias) {
  auto config = ParseConfig("", "c.yaml");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->mig_strategy, MigStrategy::kNone);
  EXPECT_TRUE(config->fail_on_init_error);
  EXPECT_EQ(config->nvidia_driver_root, "/");
  EXPECT_EQ(config->DevRoot(), "/");
  EXPECT_FALSE(config->pass_device_specs);
  EXPECT_TRUE(config->device_list_strategy.envvar);
  EXPECT_FALSE(config->device_list_strategy.volume_mounts);
  EXPECT_EQ(config->device_id_strategy, DeviceIdStrategy::kUuid);
  EXPECT_EQ(config->cdi_annotation_prefix, "cdi.k8s.io/");
  EXPECT_EQ(config->ReplicasOf("nvidia.com/gpu"), 1);
}

TEST(ConfigTest, ReadsEveryKeyOfNvidiasFormat) {
  auto config = ParseConfig(R"(version: v1
flags:
  migStrategy: mixed
  failOnInitError: false
  nvidiaDriverRoot: /run/nvidia/driver
  nvidiaDevRoot: /
  mpsRoot: /run/nvidia/mps
  gdrcopyEnabled: true
  gdsEnabled: true
  mofedEnabled: true
  useNodeFeatureAPI: false
  deviceDiscoveryStrategy: auto
  plugin:
    passDeviceSpecs: true
    deviceListStrategy: [envvar, cdi-cri]
    deviceIDStrategy: index
    cdiAnnotationPrefix: cdi.example.com/
    nvidiaCTKPath: /usr/bin/nvidia-ctk
    containerDriverRoot: /driver-root
    sharedDevicesAllocationPolicy: packed
  gfd:
    oneshot: true
    noTimestamp: true
    sleepInterval: 2m
    outputFile: /tmp/gfd
    machineTypeFile: /tmp/machine
sharing:
  timeSlicing:
    renameByDefault: true
    failRequestsGreaterThanOne: true
    resources:
    - name: nvidia.com/gpu
      replicas: 10
    - name: nvidia.com/mig-1g.10gb
      replicas: 2
      devices: all
resources: {}
imex:
  channelIDs: []
  required: false
)",
                            "c.yaml");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->mig_strategy, MigStrategy::kMixed);
  EXPECT_FALSE(config->fail_on_init_error);
  EXPECT_EQ(config->nvidia_driver_root, "/run/nvidia/driver");
  EXPECT_EQ(config->DevRoot(), "/");
  EXPECT_TRUE(config->gdrcopy_enabled);
  EXPECT_TRUE(config->gds_enabled);
  EXPECT_TRUE(config->mofed_enabled);
  EXPECT_TRUE(config->pass_device_specs);
  EXPECT_TRUE(config->device_list_strategy.envvar);
  EXPECT_TRUE(config->device_list_strategy.cdi_cri);
  EXPECT_FALSE(config->device_list_strategy.cdi_annotations);
  EXPECT_EQ(config->device_id_strategy, DeviceIdStrategy::kIndex);
  EXPECT_EQ(config->cdi_annotation_prefix, "cdi.example.com/");
  EXPECT_EQ(config->shared_allocation_policy, SharedAllocationPolicy::kPacked);
  EXPECT_TRUE(config->gfd.oneshot);
  EXPECT_TRUE(config->gfd.no_timestamp);
  EXPECT_EQ(config->gfd.sleep_interval, std::chrono::seconds(120));
  EXPECT_EQ(config->gfd.output_file, "/tmp/gfd");
  EXPECT_EQ(config->gfd.machine_type_file, "/tmp/machine");
  EXPECT_TRUE(config->time_slicing.rename_by_default);
  EXPECT_TRUE(config->time_slicing.fail_requests_greater_than_one);
  EXPECT_EQ(config->ReplicasOf("nvidia.com/gpu"), 10);
  EXPECT_EQ(config->ReplicasOf("nvidia.com/mig-1g.10gb"), 2);
  EXPECT_EQ(config->ReplicasOf("nvidia.com/mig-2g.20gb"), 1);
}

TEST(ConfigTest, BadValuesNameFileLineAndKey) {
  struct Case {
    std::string text;
    std::string error;
  };
  const Case cases[] = {
      {"version: v1\nflags:\n  migStrategy: bogus\n",
       "c.yaml:3: flags.migStrategy: unknown MIG strategy \"bogus\"; use none, single or mixed"},
      {"version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n"
       "      replicas: 1\n",
       "c.yaml:6: sharing.timeSlicing.resources[0].replicas: must be at least 2, got 1"},
      {"version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n",
       "c.yaml:5: sharing.timeSlicing.resources[0]: missing replicas"},
      {"version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: example.com/fpga\n"
       "      replicas: 4\n",
       "c.yaml:5: sharing.timeSlicing.resources[0].name: \"example.com/fpga\" is not a resource "
       "this plugin serves"},
      {"version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - {name: nvidia.com/gpu, "
       "replicas: 2}\n    - {name: nvidia.com/gpu, replicas: 3}\n",
       "c.yaml:6: sharing.timeSlicing.resources[1].name: nvidia.com/gpu is listed twice"},
      {"version: v1\nsharing:\n  mps:\n    resources: []\n",
       "c.yaml:4: sharing.mps: MPS is not supported by muster's device plugin"},
      {"version: v1\nflags:\n  plugin:\n    deviceListStrategy: tape\n",
       "c.yaml:4: flags.plugin.deviceListStrategy: unknown device list strategy \"tape\""},
      {"version: v1\nflags:\n  plugin:\n    deviceIDStrategy: serial\n",
       "unknown device ID strategy \"serial\"; use uuid or index"},
      {"version: v1\nflags:\n  failOnInitError: maybe\n",
       "c.yaml:3: flags.failOnInitError: must be true or false"},
      {"version: v1\nflags:\n  migStrategi: none\n",
       "c.yaml:3: flags.migStrategi: unknown key; known keys here: deviceDiscoveryStrategy"},
      {"version: v2\n", "c.yaml:1: version: unsupported version \"v2\"; the only version is v1"},
      {"flags: {}\n", "c.yaml: missing version (the only version is v1)"},
      {"version: v1\nflags: [a\n", "c.yaml:3: malformed YAML"},
      {"version: v1\nflags:\n  gfd:\n    sleepInterval: soon\n",
       "c.yaml:4: flags.gfd.sleepInterval: \"soon\" is not a duration of at least 1s"},
      {"version: v1\nresources:\n  gpus:\n  - pattern: \"*\"\n    name: gpu-a\n",
       "resources.gpus: renaming resources is disabled"},
      {"version: v1\nimex:\n  channelIDs: [0]\n", "imex.channelIDs: IMEX channels are not supported"},
      {"- a\n- b\n", "c.yaml:1: the file must be a mapping"},
  };
  for (const Case& c : cases) {
    auto config = ParseConfig(c.text, "c.yaml");
    ASSERT_FALSE(config.ok()) << c.text;
    EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(Message(config.status()).find(c.error), std::string::npos)
        << "got: " << Message(config.status()) << "\nwanted: " << c.error;
  }
}

TEST(ConfigTest, FlagsOverrideTheFile) {
  std::string path = ::testing::TempDir() + "/dp-config.yaml";
  std::ofstream(path) << "version: v1\nflags:\n  migStrategy: single\n  plugin:\n"
                         "    deviceIDStrategy: index\n";
  ConfigOverrides overrides;
  auto from_file = LoadConfig(path, overrides);
  ASSERT_TRUE(from_file.ok()) << from_file.status();
  EXPECT_EQ(from_file->mig_strategy, MigStrategy::kSingle);
  EXPECT_EQ(from_file->device_id_strategy, DeviceIdStrategy::kIndex);

  overrides.mig_strategy = "mixed";
  overrides.device_list_strategy = std::vector<std::string>{"volume-mounts"};
  overrides.fail_on_init_error = false;
  auto merged = LoadConfig(path, overrides);
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_EQ(merged->mig_strategy, MigStrategy::kMixed);
  EXPECT_EQ(merged->device_id_strategy, DeviceIdStrategy::kIndex);  // not overridden
  EXPECT_FALSE(merged->device_list_strategy.envvar);
  EXPECT_TRUE(merged->device_list_strategy.volume_mounts);
  EXPECT_FALSE(merged->fail_on_init_error);
  std::remove(path.c_str());
}

TEST(ConfigTest, BadFlagValuesNameTheFlag) {
  ConfigOverrides overrides;
  overrides.mig_strategy = "all";
  auto config = LoadConfig("", overrides);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(Message(config.status()),
            "--mig-strategy (MIG_STRATEGY): unknown MIG strategy \"all\"; use none, single or "
            "mixed");
}

TEST(ConfigTest, UnreadableFileIsAnError) {
  auto config = LoadConfig("/nonexistent/config.yaml", {});
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(Message(config.status()), "config file /nonexistent/config.yaml: cannot be read");
}

}  // namespace
}  // namespace muster::deviceplugin
