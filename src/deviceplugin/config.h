#pragma once

// The device plugin's configuration, in NVIDIA's `version: v1` config file format
// (NVIDIA/k8s-device-plugin api/config/v1) so that existing files keep working, plus flags and
// environment variables. Precedence, as NVIDIA's: command-line flag > environment variable >
// config file > default. docs/device-plugin.md lists every key.
//
//   version: v1
//   flags:
//     migStrategy: none | single | mixed
//     failOnInitError: true
//     nvidiaDriverRoot: /            nvidiaDevRoot: (driver root)
//     gdrcopyEnabled / gdsEnabled / mofedEnabled: false
//     plugin:
//       passDeviceSpecs: false
//       deviceListStrategy: envvar   (or a list of envvar, volume-mounts, cdi-annotations, cdi-cri)
//       deviceIDStrategy: uuid | index
//       cdiAnnotationPrefix: cdi.k8s.io/
//       sharedDevicesAllocationPolicy: distributed | packed
//     gfd: {oneshot, noTimestamp, sleepInterval, outputFile, machineTypeFile}
//   sharing:
//     timeSlicing:
//       renameByDefault: false
//       failRequestsGreaterThanOne: false
//       resources: [{name: nvidia.com/gpu, replicas: 10}]
//
// Malformed files, unknown keys, unknown values and replicas below 2 are errors that name the
// file, the line and the key. Keys NVIDIA's plugin accepts but muster does not act on
// (mpsRoot, nvidiaCTKPath, containerDriverRoot, useNodeFeatureAPI, resources, imex without
// channels) are accepted and documented as such; sharing.mps is refused.

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace muster::deviceplugin {

enum class MigStrategy { kNone, kSingle, kMixed };
enum class DeviceIdStrategy { kUuid, kIndex };
enum class SharedAllocationPolicy { kDistributed, kPacked };

std::string_view MigStrategyName(MigStrategy strategy);

struct DeviceListStrategies {
  bool envvar = true;
  bool volume_mounts = false;
  bool cdi_annotations = false;
  bool cdi_cri = false;
};

struct ReplicatedResource {
  std::string name;  // "nvidia.com/gpu" or "nvidia.com/mig-<profile>"
  int replicas = 2;
};

struct TimeSlicing {
  bool rename_by_default = false;  // advertise <name>.shared
  bool fail_requests_greater_than_one = false;
  std::vector<ReplicatedResource> resources;
};

struct GfdConfig {
  bool oneshot = false;
  bool no_timestamp = false;
  std::chrono::seconds sleep_interval{60};
  std::string output_file;  // NFD features file; "" writes none
  std::string machine_type_file = "/sys/class/dmi/id/product_name";
};

struct PluginConfig {
  MigStrategy mig_strategy = MigStrategy::kNone;
  bool fail_on_init_error = true;
  std::string nvidia_driver_root = "/";
  std::string nvidia_dev_root;  // "" = the driver root
  bool gdrcopy_enabled = false;
  bool gds_enabled = false;
  bool mofed_enabled = false;
  bool pass_device_specs = false;
  DeviceListStrategies device_list_strategy;
  DeviceIdStrategy device_id_strategy = DeviceIdStrategy::kUuid;
  std::string cdi_annotation_prefix = "cdi.k8s.io/";
  SharedAllocationPolicy shared_allocation_policy = SharedAllocationPolicy::kDistributed;
  TimeSlicing time_slicing;
  GfdConfig gfd;

  // The dev root, defaulted to the driver root.
  [[nodiscard]] std::string DevRoot() const;
  // Replicas of `resource` (1 when not shared).
  [[nodiscard]] int ReplicasOf(const std::string& resource) const;
};

// Values from flags and environment variables; set ones override the file.
struct ConfigOverrides {
  std::optional<std::string> mig_strategy;
  std::optional<bool> fail_on_init_error;
  std::optional<std::string> nvidia_driver_root;
  std::optional<std::string> nvidia_dev_root;
  std::optional<bool> gdrcopy_enabled;
  std::optional<bool> gds_enabled;
  std::optional<bool> mofed_enabled;
  std::optional<bool> pass_device_specs;
  std::optional<std::vector<std::string>> device_list_strategy;
  std::optional<std::string> device_id_strategy;
  std::optional<std::string> cdi_annotation_prefix;
  std::optional<std::string> shared_allocation_policy;
};

// Parses a config file's text; `source` names it in errors ("config.yaml").
absl::StatusOr<PluginConfig> ParseConfig(const std::string& text, const std::string& source);
// Reads and parses `path` ("" gives the defaults), then applies `overrides`. Errors name the file
// or the flag at fault.
absl::StatusOr<PluginConfig> LoadConfig(const std::string& path, const ConfigOverrides& overrides);

}  // namespace muster::deviceplugin
