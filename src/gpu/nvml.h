#pragma once

// NVML loaded at run time: dlopen("libnvidia-ml.so.1") (or a given path), dlsym of the versioned
// entry points, nvmlInit_v2. The build needs no CUDA headers or driver; a machine without the
// driver gets a clear "no NVIDIA driver found" error. Tests load the project's fake library
// (gpu/fake/) through this same code.
//
// Each wrapper returns the NVML result as an absl::Status: NOT_SUPPORTED -> Unimplemented,
// NOT_FOUND -> NotFound, INVALID_ARGUMENT -> InvalidArgument, TIMEOUT -> DeadlineExceeded,
// GPU_IS_LOST / RESET_REQUIRED -> Unavailable, anything else -> Internal; the message names the
// function and NVML's own error string. Entry points a driver lacks (older drivers have no MIG
// calls) answer Unimplemented.
//
// Thread-safety: NVML is thread-safe; an Nvml is immutable after Load and may be shared.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gpu/nvml_api.h"

namespace muster::gpu {

inline constexpr std::string_view kDefaultNvmlLibrary = "libnvidia-ml.so.1";

// The library to dlopen: `library` itself when it names a path or differs from the default;
// otherwise, when `driver_root` is not "/", the first of the driver's usual library folders under
// it that holds libnvidia-ml.so.1 (a driver installed in a container at /run/nvidia/driver), and
// the bare soname (the loader's search path) when none does.
std::string ResolveNvmlLibrary(std::string_view library, std::string_view driver_root);

struct PciInfo {
  std::string bus_id;  // NVML's form, "00000000:18:00.0"
};

struct EventData {
  nvmlDevice_t device = nullptr;
  uint64_t event_type = 0;
  uint64_t xid = 0;
  unsigned gpu_instance_id = kNvmlValueNotAvailable;
  unsigned compute_instance_id = kNvmlValueNotAvailable;
};

class Nvml {
 public:
  // dlopens `library` (see ResolveNvmlLibrary), resolves the entry points and initialises NVML.
  // FailedPrecondition "no NVIDIA driver found: ..." when the library cannot be loaded or the
  // driver is not loaded; other init failures are Internal.
  static absl::StatusOr<std::shared_ptr<Nvml>> Load(const std::string& library);
  ~Nvml();  // nvmlShutdown, dlclose
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  const std::string& library() const { return library_; }

  absl::StatusOr<std::string> SystemDriverVersion() const;
  absl::StatusOr<int> SystemCudaDriverVersion() const;  // 12040 for CUDA 12.4
  absl::StatusOr<unsigned> DeviceCount() const;
  absl::StatusOr<nvmlDevice_t> DeviceByIndex(unsigned index) const;
  absl::StatusOr<nvmlDevice_t> DeviceByUuid(const std::string& uuid) const;
  absl::StatusOr<std::string> Uuid(nvmlDevice_t device) const;
  absl::StatusOr<std::string> Name(nvmlDevice_t device) const;
  absl::StatusOr<unsigned> MinorNumber(nvmlDevice_t device) const;
  absl::StatusOr<uint64_t> MemoryTotal(nvmlDevice_t device) const;  // bytes
  absl::StatusOr<PciInfo> Pci(nvmlDevice_t device) const;
  absl::StatusOr<std::pair<int, int>> ComputeCapability(nvmlDevice_t device) const;
  absl::StatusOr<nvmlGpuTopologyLevel_t> CommonAncestor(nvmlDevice_t a, nvmlDevice_t b) const;
  absl::StatusOr<bool> NvLinkActive(nvmlDevice_t device, unsigned link) const;
  absl::StatusOr<PciInfo> NvLinkRemotePci(nvmlDevice_t device, unsigned link) const;
  absl::StatusOr<bool> MigEnabled(nvmlDevice_t device) const;  // current mode
  absl::StatusOr<unsigned> MaxMigDeviceCount(nvmlDevice_t device) const;
  absl::StatusOr<nvmlDevice_t> MigDeviceByIndex(nvmlDevice_t device, unsigned index) const;
  absl::StatusOr<unsigned> GpuInstanceId(nvmlDevice_t mig) const;
  absl::StatusOr<unsigned> ComputeInstanceId(nvmlDevice_t mig) const;
  absl::StatusOr<nvmlDeviceAttributes_t> Attributes(nvmlDevice_t mig) const;
  // The profile id of GPU instance `gi_id` on `device` (NVML_GPU_INSTANCE_PROFILE_*).
  absl::StatusOr<unsigned> GpuInstanceProfileId(nvmlDevice_t device, unsigned gi_id) const;

  absl::StatusOr<nvmlEventSet_t> EventSetCreate() const;
  absl::StatusOr<uint64_t> SupportedEventTypes(nvmlDevice_t device) const;
  absl::Status RegisterEvents(nvmlDevice_t device, uint64_t types, nvmlEventSet_t set) const;
  // DeadlineExceeded when nothing arrived within `timeout_ms`.
  absl::StatusOr<EventData> EventSetWait(nvmlEventSet_t set, unsigned timeout_ms) const;
  void EventSetFree(nvmlEventSet_t set) const;

 private:
  struct Functions;
  Nvml(void* handle, std::string library, std::unique_ptr<Functions> functions);
  absl::Status Check(nvmlReturn_t result, std::string_view function) const;

  void* handle_;
  std::string library_;
  std::unique_ptr<Functions> fn_;
};

}  // namespace muster::gpu
