#pragma once

// Node labels compatible with NVIDIA's GPU Feature Discovery (docs/gpu-feature-discovery,
// internal/lm), so that nodeSelectors and affinities written for GFD keep working:
//   nvidia.com/cuda.driver-version.{major,minor,revision,full}, cuda.runtime-version.{major,
//   minor,full} (and the deprecated cuda.driver.*, cuda.runtime.*), gpu.product (spaces -> '-',
//   "-SHARED" when replicated and not renamed, "-MIG-<profile>" under MIG single), gpu.count,
//   gpu.replicas, gpu.sharing-strategy, gpu.memory (MiB), gpu.family, gpu.compute.{major,minor},
//   gpu.machine, mig.capable, mig.strategy, mps.capable, gfd.timestamp; under MIG single
//   gpu.multiprocessors, gpu.slices.{gi,ci}, gpu.engines.*; under mixed the same per profile as
//   nvidia.com/mig-<profile>.{count,memory,multiprocessors,slices.*,engines.*,replicas}.
// Written as an NFD features file (key=value lines) and, where a kubeconfig is given, patched onto
// the Node by the caller.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "deviceplugin/config.h"
#include "deviceplugin/resources.h"
#include "gpu/device.h"

namespace muster::deviceplugin {

using Labels = std::map<std::string, std::string>;

struct LabelInputs {
  std::string machine_type;          // content of the machine type file; "" -> "unknown"
  std::optional<int64_t> timestamp;  // unix seconds for gfd.timestamp; none omits it
};

// GFD's family for a compute capability: kepler .. ampere (8.0-8.8), ada-lovelace (8.9),
// hopper (9.x), blackwell (10.x, 12.x), rubin (13.x); "undefined" otherwise.
std::string GpuFamily(int compute_major, int compute_minor);

// A label value: characters outside [A-Za-z0-9._-] become '-', at most 63 characters, starting
// and ending alphanumeric.
std::string SanitizeLabelValue(const std::string& value);

Labels GfdLabels(const gpu::GpuSystem& system, const PluginConfig& config,
                 const LabelInputs& inputs);

// Writes `labels` as key=value lines to `path`, atomically (a temporary file renamed over it).
absl::Status WriteFeaturesFile(const std::string& path, const Labels& labels);

// {"metadata":{"labels":{...},"annotations":{...}}}: a merge patch that sets `labels` and
// `annotations` on a Node (no "annotations" when there are none).
std::string NodeLabelsPatch(const Labels& labels, const Labels& annotations = {});

}  // namespace muster::deviceplugin
