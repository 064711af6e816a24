#include "gpu/nvml.h"

#include <dlfcn.h>
#include <unistd.h>

#include <array>
#include <utility>

#include "fmt/format.h"

namespace muster::gpu {

struct Nvml::Functions {
  NvmlInitFn init = nullptr;
  NvmlShutdownFn shutdown = nullptr;
  NvmlErrorStringFn error_string = nullptr;
  NvmlSystemGetDriverVersionFn system_driver_version = nullptr;
  NvmlSystemGetCudaDriverVersionFn system_cuda_driver_version = nullptr;
  NvmlDeviceGetCountFn device_count = nullptr;
  NvmlDeviceGetHandleByIndexFn handle_by_index = nullptr;
  NvmlDeviceGetHandleByUuidFn handle_by_uuid = nullptr;
  NvmlDeviceGetStringFn uuid = nullptr;
  NvmlDeviceGetStringFn name = nullptr;
  NvmlDeviceGetUintFn minor_number = nullptr;
  NvmlDeviceGetMemoryInfoFn memory_info = nullptr;
  NvmlDeviceGetPciInfoFn pci_info = nullptr;
  NvmlDeviceGetCudaComputeCapabilityFn compute_capability = nullptr;
  NvmlDeviceGetTopologyCommonAncestorFn common_ancestor = nullptr;
  NvmlDeviceGetNvLinkStateFn nvlink_state = nullptr;
  NvmlDeviceGetNvLinkRemotePciInfoFn nvlink_remote_pci = nullptr;
  NvmlDeviceGetMigModeFn mig_mode = nullptr;
  NvmlDeviceGetUintFn max_mig_device_count = nullptr;
  NvmlDeviceGetMigDeviceHandleByIndexFn mig_handle_by_index = nullptr;
  NvmlDeviceGetUintFn gpu_instance_id = nullptr;
  NvmlDeviceGetUintFn compute_instance_id = nullptr;
  NvmlDeviceGetAttributesFn attributes = nullptr;
  NvmlDeviceGetGpuInstanceByIdFn gpu_instance_by_id = nullptr;
  NvmlGpuInstanceGetInfoFn gpu_instance_info = nullptr;
  NvmlEventSetCreateFn event_set_create = nullptr;
  NvmlDeviceGetSupportedEventTypesFn supported_event_types = nullptr;
  NvmlDeviceRegisterEventsFn register_events = nullptr;
  NvmlEventSetWaitFn event_set_wait = nullptr;
  NvmlEventSetFreeFn event_set_free = nullptr;
};

namespace {

template <typename Fn>
void Resolve(void* handle, const char* symbol, Fn& out) {
  out = reinterpret_cast<Fn>(dlsym(handle, symbol));
}

std::string CString(const char* buffer, size_t size) {
  size_t length = 0;
  while (length < size && buffer[length] != '\0') ++length;
  return std::string(buffer, length);
}

}  // namespace

std::string ResolveNvmlLibrary(std::string_view library, std::string_view driver_root) {
  if (library != kDefaultNvmlLibrary || driver_root.empty() || driver_root == "/") {
    return std::string(library);
  }
  std::string root(driver_root);
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  static constexpr std::array<std::string_view, 6> kFolders = {
      "/usr/lib64",       "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
      "/lib64",           "/lib/x86_64-linux-gnu",     "/lib/aarch64-linux-gnu"};
  for (std::string_view folder : kFolders) {
    std::string candidate = fmt::format("{}{}/{}", root, folder, library);
    if (access(candidate.c_str(), R_OK) == 0) return candidate;
  }
  return std::string(library);
}

Nvml::Nvml(void* handle, std::string library, std::unique_ptr<Functions> functions)
    : handle_(handle), library_(std::move(library)), fn_(std::move(functions)) {}

Nvml::~Nvml() {
  if (fn_->shutdown != nullptr) fn_->shutdown();
  dlclose(handle_);
}

absl::StatusOr<std::shared_ptr<Nvml>> Nvml::Load(const std::string& library) {
  dlerror();
  void* handle = dlopen(library.c_str(), RTLD_LAZY | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return absl::FailedPreconditionError(
        fmt::format("no NVIDIA driver found: {} could not be loaded ({})", library,
                    why != nullptr ? why : "unknown dlopen error"));
  }
  auto fn = std::make_unique<Functions>();
  Resolve(handle, "nvmlInit_v2", fn->init);
  Resolve(handle, "nvmlShutdown", fn->shutdown);
  Resolve(handle, "nvmlErrorString", fn->error_string);
  Resolve(handle, "nvmlSystemGetDriverVersion", fn->system_driver_version);
  Resolve(handle, "nvmlSystemGetCudaDriverVersion_v2", fn->system_cuda_driver_version);
  Resolve(handle, "nvmlDeviceGetCount_v2", fn->device_count);
  Resolve(handle, "nvmlDeviceGetHandleByIndex_v2", fn->handle_by_index);
  Resolve(handle, "nvmlDeviceGetHandleByUUID", fn->handle_by_uuid);
  Resolve(handle, "nvmlDeviceGetUUID", fn->uuid);
  Resolve(handle, "nvmlDeviceGetName", fn->name);
  Resolve(handle, "nvmlDeviceGetMinorNumber", fn->minor_number);
  Resolve(handle, "nvmlDeviceGetMemoryInfo", fn->memory_info);
  Resolve(handle, "nvmlDeviceGetPciInfo_v3", fn->pci_info);
  Resolve(handle, "nvmlDeviceGetCudaComputeCapability", fn->compute_capability);
  Resolve(handle, "nvmlDeviceGetTopologyCommonAncestor", fn->common_ancestor);
  Resolve(handle, "nvmlDeviceGetNvLinkState", fn->nvlink_state);
  Resolve(handle, "nvmlDeviceGetNvLinkRemotePciInfo_v2", fn->nvlink_remote_pci);
  Resolve(handle, "nvmlDeviceGetMigMode", fn->mig_mode);
  Resolve(handle, "nvmlDeviceGetMaxMigDeviceCount", fn->max_mig_device_count);
  Resolve(handle, "nvmlDeviceGetMigDeviceHandleByIndex", fn->mig_handle_by_index);
  Resolve(handle, "nvmlDeviceGetGpuInstanceId", fn->gpu_instance_id);
  Resolve(handle, "nvmlDeviceGetComputeInstanceId", fn->compute_instance_id);
  Resolve(handle, "nvmlDeviceGetAttributes_v2", fn->attributes);
  Resolve(handle, "nvmlDeviceGetGpuInstanceById", fn->gpu_instance_by_id);
  Resolve(handle, "nvmlGpuInstanceGetInfo", fn->gpu_instance_info);
  Resolve(handle, "nvmlEventSetCreate", fn->event_set_create);
  Resolve(handle, "nvmlDeviceGetSupportedEventTypes", fn->supported_event_types);
  Resolve(handle, "nvmlDeviceRegisterEvents", fn->register_events);
  Resolve(handle, "nvmlEventSetWait_v2", fn->event_set_wait);
  Resolve(handle, "nvmlEventSetFree", fn->event_set_free);

  // The calls every discovery needs; the rest answer Unimplemented when missing.
  const std::pair<const char*, const void*> required[] = {
      {"nvmlInit_v2", reinterpret_cast<const void*>(fn->init)},
      {"nvmlShutdown", reinterpret_cast<const void*>(fn->shutdown)},
      {"nvmlErrorString", reinterpret_cast<const void*>(fn->error_string)},
      {"nvmlDeviceGetCount_v2", reinterpret_cast<const void*>(fn->device_count)},
      {"nvmlDeviceGetHandleByIndex_v2", reinterpret_cast<const void*>(fn->handle_by_index)},
      {"nvmlDeviceGetUUID", reinterpret_cast<const void*>(fn->uuid)},
      {"nvmlDeviceGetName", reinterpret_cast<const void*>(fn->name)},
      {"nvmlDeviceGetMemoryInfo", reinterpret_cast<const void*>(fn->memory_info)},
  };
  for (const auto& [symbol, address] : required) {
    if (address == nullptr) {
      dlclose(handle);
      return absl::FailedPreconditionError(fmt::format(
          "{} is not a usable NVML library: it has no {} (driver too old?)", library, symbol));
    }
  }
  nvmlReturn_t result = fn->init();
  if (result != NVML_SUCCESS) {
    std::string why = fn->error_string(result) != nullptr ? fn->error_string(result) : "";
    dlclose(handle);
    if (result == NVML_ERROR_DRIVER_NOT_LOADED || result == NVML_ERROR_LIBRARY_NOT_FOUND) {
      return absl::FailedPreconditionError(
          fmt::format("no NVIDIA driver found: nvmlInit_v2 failed: {} (NVML error {})", why,
                      result));
    }
    return absl::InternalError(
        fmt::format("NVML could not be initialised: nvmlInit_v2 failed: {} (NVML error {})",
                    why, result));
  }
  return std::shared_ptr<Nvml>(new Nvml(handle, library, std::move(fn)));
}

absl::Status Nvml::Check(nvmlReturn_t result, std::string_view function) const {
  if (result == NVML_SUCCESS) return absl::OkStatus();
  const char* text = fn_->error_string(result);
  std::string message = fmt::format("{}: {} (NVML error {})", function,
                                    text != nullptr ? text : "unknown error", result);
  switch (result) {
    case NVML_ERROR_NOT_SUPPORTED:
    case NVML_ERROR_FUNCTION_NOT_FOUND:
      return absl::UnimplementedError(message);
    case NVML_ERROR_NOT_FOUND:
      return absl::NotFoundError(message);
    case NVML_ERROR_INVALID_ARGUMENT:
      return absl::InvalidArgumentError(message);
    case NVML_ERROR_TIMEOUT:
      return absl::DeadlineExceededError(message);
    case NVML_ERROR_GPU_IS_LOST:
    case NVML_ERROR_RESET_REQUIRED:
      return absl::UnavailableError(message);
    default:
      return absl::InternalError(message);
  }
}

namespace {
absl::Status Missing(std::string_view function) {
  return absl::UnimplementedError(fmt::format("{}: not in this NVML library", function));
}
}  // namespace

#define MUSTER_NVML_REQUIRE(field, name) \
  if (fn_->field == nullptr) return Missing(name)

absl::StatusOr<std::string> Nvml::SystemDriverVersion() const {
  MUSTER_NVML_REQUIRE(system_driver_version, "nvmlSystemGetDriverVersion");
  char buffer[kNvmlSystemDriverVersionBufferSize] = {};
  if (auto s = Check(fn_->system_driver_version(buffer, sizeof buffer),
                     "nvmlSystemGetDriverVersion");
      !s.ok()) {
    return s;
  }
  return CString(buffer, sizeof buffer);
}

absl::StatusOr<int> Nvml::SystemCudaDriverVersion() const {
  MUSTER_NVML_REQUIRE(system_cuda_driver_version, "nvmlSystemGetCudaDriverVersion_v2");
  int version = 0;
  if (auto s = Check(fn_->system_cuda_driver_version(&version),
                     "nvmlSystemGetCudaDriverVersion_v2");
      !s.ok()) {
    return s;
  }
  return version;
}

absl::StatusOr<unsigned> Nvml::DeviceCount() const {
  unsigned count = 0;
  if (auto s = Check(fn_->device_count(&count), "nvmlDeviceGetCount_v2"); !s.ok()) return s;
  return count;
}

absl::StatusOr<nvmlDevice_t> Nvml::DeviceByIndex(unsigned index) const {
  nvmlDevice_t device = nullptr;
  if (auto s = Check(fn_->handle_by_index(index, &device), "nvmlDeviceGetHandleByIndex_v2");
      !s.ok()) {
    return s;
  }
  return device;
}

absl::StatusOr<nvmlDevice_t> Nvml::DeviceByUuid(const std::string& uuid) const {
  MUSTER_NVML_REQUIRE(handle_by_uuid, "nvmlDeviceGetHandleByUUID");
  nvmlDevice_t device = nullptr;
  if (auto s = Check(fn_->handle_by_uuid(uuid.c_str(), &device), "nvmlDeviceGetHandleByUUID");
      !s.ok()) {
    return s;
  }
  return device;
}

absl::StatusOr<std::string> Nvml::Uuid(nvmlDevice_t device) const {
  char buffer[kNvmlDeviceUuidV2BufferSize] = {};
  if (auto s = Check(fn_->uuid(device, buffer, sizeof buffer), "nvmlDeviceGetUUID"); !s.ok()) {
    return s;
  }
  return CString(buffer, sizeof buffer);
}

absl::StatusOr<std::string> Nvml::Name(nvmlDevice_t device) const {
  char buffer[kNvmlDeviceNameV2BufferSize] = {};
  if (auto s = Check(fn_->name(device, buffer, sizeof buffer), "nvmlDeviceGetName"); !s.ok()) {
    return s;
  }
  return CString(buffer, sizeof buffer);
}

absl::StatusOr<unsigned> Nvml::MinorNumber(nvmlDevice_t device) const {
  MUSTER_NVML_REQUIRE(minor_number, "nvmlDeviceGetMinorNumber");
  unsigned minor = 0;
  if (auto s = Check(fn_->minor_number(device, &minor), "nvmlDeviceGetMinorNumber"); !s.ok()) {
    return s;
  }
  return minor;
}

absl::StatusOr<uint64_t> Nvml::MemoryTotal(nvmlDevice_t device) const {
  nvmlMemory_t memory = {};
  if (auto s = Check(fn_->memory_info(device, &memory), "nvmlDeviceGetMemoryInfo"); !s.ok()) {
    return s;
  }
  return static_cast<uint64_t>(memory.total);
}

absl::StatusOr<PciInfo> Nvml::Pci(nvmlDevice_t device) const {
  MUSTER_NVML_REQUIRE(pci_info, "nvmlDeviceGetPciInfo_v3");
  nvmlPciInfo_t info = {};
  if (auto s = Check(fn_->pci_info(device, &info), "nvmlDeviceGetPciInfo_v3"); !s.ok()) return s;
  return PciInfo{CString(info.busId, sizeof info.busId)};
}

absl::StatusOr<std::pair<int, int>> Nvml::ComputeCapability(nvmlDevice_t device) const {
  MUSTER_NVML_REQUIRE(compute_capability, "nvmlDeviceGetCudaComputeCapability");
  int major = 0;
  int minor = 0;
  if (auto s = Check(fn_->compute_capability(device, &major, &minor),
                     "nvmlDeviceGetCudaComputeCapability");
      !s.ok()) {
    return s;
  }
  return std::make_pair(major, minor);
}

absl::StatusOr<nvmlGpuTopologyLevel_t> Nvml::CommonAncestor(nvmlDevice_t a,
                                                             nvmlDevice_t b) const {
  MUSTER_NVML_REQUIRE(common_ancestor, "nvmlDeviceGetTopologyCommonAncestor");
  nvmlGpuTopologyLevel_t level = NVML_TOPOLOGY_SYSTEM;
  if (auto s = Check(fn_->common_ancestor(a, b, &level), "nvmlDeviceGetTopologyCommonAncestor");
      !s.ok()) {
    return s;
  }
  return level;
}

absl::StatusOr<bool> Nvml::NvLinkActive(nvmlDevice_t device, unsigned link) const {
  MUSTER_NVML_REQUIRE(nvlink_state, "nvmlDeviceGetNvLinkState");
  nvmlEnableState_t state = NVML_FEATURE_DISABLED;
  if (auto s = Check(fn_->nvlink_state(device, link, &state), "nvmlDeviceGetNvLinkState");
      !s.ok()) {
    return s;
  }
  return state == NVML_FEATURE_ENABLED;
}

absl::StatusOr<PciInfo> Nvml::NvLinkRemotePci(nvmlDevice_t device, unsigned link) const {
  MUSTER_NVML_REQUIRE(nvlink_remote_pci, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
  nvmlPciInfo_t info = {};
  if (auto s = Check(fn_->nvlink_remote_pci(device, link, &info),
                     "nvmlDeviceGetNvLinkRemotePciInfo_v2");
      !s.ok()) {
    return s;
  }
  return PciInfo{CString(info.busId, sizeof info.busId)};
}

absl::StatusOr<bool> Nvml::MigEnabled(nvmlDevice_t device) const {
  MUSTER_NVML_REQUIRE(mig_mode, "nvmlDeviceGetMigMode");
  unsigned current = 0;
  unsigned pending = 0;
  if (auto s = Check(fn_->mig_mode(device, &current, &pending), "nvmlDeviceGetMigMode");
      !s.ok()) {
    return s;
  }
  return current == kNvmlDeviceMigEnable;
}

absl::StatusOr<unsigned> Nvml::MaxMigDeviceCount(nvmlDevice_t device) const {
  MUSTER_NVML_REQUIRE(max_mig_device_count, "nvmlDeviceGetMaxMigDeviceCount");
  unsigned count = 0;
  if (auto s = Check(fn_->max_mig_device_count(device, &count), "nvmlDeviceGetMaxMigDeviceCount");
      !s.ok()) {
    return s;
  }
  return count;
}

absl::StatusOr<nvmlDevice_t> Nvml::MigDeviceByIndex(nvmlDevice_t device, unsigned index) const {
  MUSTER_NVML_REQUIRE(mig_handle_by_index, "nvmlDeviceGetMigDeviceHandleByIndex");
  nvmlDevice_t mig = nullptr;
  if (auto s = Check(fn_->mig_handle_by_index(device, index, &mig),
                     "nvmlDeviceGetMigDeviceHandleByIndex");
      !s.ok()) {
    return s;
  }
  return mig;
}

absl::StatusOr<unsigned> Nvml::GpuInstanceId(nvmlDevice_t mig) const {
  MUSTER_NVML_REQUIRE(gpu_instance_id, "nvmlDeviceGetGpuInstanceId");
  unsigned id = 0;
  if (auto s = Check(fn_->gpu_instance_id(mig, &id), "nvmlDeviceGetGpuInstanceId"); !s.ok()) {
    return s;
  }
  return id;
}

absl::StatusOr<unsigned> Nvml::ComputeInstanceId(nvmlDevice_t mig) const {
  MUSTER_NVML_REQUIRE(compute_instance_id, "nvmlDeviceGetComputeInstanceId");
  unsigned id = 0;
  if (auto s = Check(fn_->compute_instance_id(mig, &id), "nvmlDeviceGetComputeInstanceId");
      !s.ok()) {
    return s;
  }
  return id;
}

absl::StatusOr<nvmlDeviceAttributes_t> Nvml::Attributes(nvmlDevice_t mig) const {
  MUSTER_NVML_REQUIRE(attributes, "nvmlDeviceGetAttributes_v2");
  nvmlDeviceAttributes_t attributes = {};
  if (auto s = Check(fn_->attributes(mig, &attributes), "nvmlDeviceGetAttributes_v2"); !s.ok()) {
    return s;
  }
  return attributes;
}

absl::StatusOr<unsigned> Nvml::GpuInstanceProfileId(nvmlDevice_t device, unsigned gi_id) const {
  MUSTER_NVML_REQUIRE(gpu_instance_by_id, "nvmlDeviceGetGpuInstanceById");
  MUSTER_NVML_REQUIRE(gpu_instance_info, "nvmlGpuInstanceGetInfo");
  nvmlGpuInstance_t instance = nullptr;
  if (auto s = Check(fn_->gpu_instance_by_id(device, gi_id, &instance),
                     "nvmlDeviceGetGpuInstanceById");
      !s.ok()) {
    return s;
  }
  nvmlGpuInstanceInfo_t info = {};
  if (auto s = Check(fn_->gpu_instance_info(instance, &info), "nvmlGpuInstanceGetInfo"); !s.ok()) {
    return s;
  }
  return info.profileId;
}

absl::StatusOr<nvmlEventSet_t> Nvml::EventSetCreate() const {
  MUSTER_NVML_REQUIRE(event_set_create, "nvmlEventSetCreate");
  nvmlEventSet_t set = nullptr;
  if (auto s = Check(fn_->event_set_create(&set), "nvmlEventSetCreate"); !s.ok()) return s;
  return set;
}

absl::StatusOr<uint64_t> Nvml::SupportedEventTypes(nvmlDevice_t device) const {
  MUSTER_NVML_REQUIRE(supported_event_types, "nvmlDeviceGetSupportedEventTypes");
  unsigned long long types = 0;
  if (auto s = Check(fn_->supported_event_types(device, &types),
                     "nvmlDeviceGetSupportedEventTypes");
      !s.ok()) {
    return s;
  }
  return static_cast<uint64_t>(types);
}

absl::Status Nvml::RegisterEvents(nvmlDevice_t device, uint64_t types, nvmlEventSet_t set) const {
  MUSTER_NVML_REQUIRE(register_events, "nvmlDeviceRegisterEvents");
  return Check(fn_->register_events(device, types, set), "nvmlDeviceRegisterEvents");
}

absl::StatusOr<EventData> Nvml::EventSetWait(nvmlEventSet_t set, unsigned timeout_ms) const {
  MUSTER_NVML_REQUIRE(event_set_wait, "nvmlEventSetWait_v2");
  nvmlEventData_t data = {};
  if (auto s = Check(fn_->event_set_wait(set, &data, timeout_ms), "nvmlEventSetWait_v2");
      !s.ok()) {
    return s;
  }
  return EventData{data.device, data.eventType, data.eventData, data.gpuInstanceId,
                   data.computeInstanceId};
}

void Nvml::EventSetFree(nvmlEventSet_t set) const {
  if (fn_->event_set_free != nullptr && set != nullptr) fn_->event_set_free(set);
}

#undef MUSTER_NVML_REQUIRE

}  // namespace muster::gpu
