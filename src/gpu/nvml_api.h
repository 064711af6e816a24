#pragma once

// The part of NVML's C API that muster uses, declared here so that the build needs no CUDA or
// driver headers: types, constants and function signatures as the public nvml.h (NVML API 12/13)
// defines them. Only the versioned entry points are named (the header's macros map nvmlInit to
// nvmlInit_v2 and so on); they are resolved at run time with dlsym (gpu/nvml.h) and, in tests,
// implemented by the fake library (gpu/fake/fake_nvml.cc) with these same declarations.

#include <cstdint>

extern "C" {

typedef struct nvmlDevice_st* nvmlDevice_t;
typedef struct nvmlEventSet_st* nvmlEventSet_t;
typedef struct nvmlGpuInstance_st* nvmlGpuInstance_t;
typedef int nvmlReturn_t;

enum : nvmlReturn_t {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_TIMEOUT = 10,
  NVML_ERROR_LIBRARY_NOT_FOUND = 12,
  NVML_ERROR_FUNCTION_NOT_FOUND = 13,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_RESET_REQUIRED = 16,
  NVML_ERROR_UNKNOWN = 999,
};

// Buffer sizes from nvml.h.
constexpr unsigned kNvmlDeviceUuidV2BufferSize = 96;
constexpr unsigned kNvmlDeviceNameV2BufferSize = 96;
constexpr unsigned kNvmlSystemDriverVersionBufferSize = 80;
constexpr unsigned kNvmlDevicePciBusIdBufferSize = 32;
constexpr unsigned kNvmlDevicePciBusIdBufferV2Size = 16;
// NVML_NVLINK_MAX_LINKS is 36 in API 13 (18 before): links past the driver's count answer
// INVALID_ARGUMENT and are skipped.
constexpr unsigned kNvmlNvLinkMaxLinks = 36;
// gpuInstanceId / computeInstanceId of an event that concerns the whole GPU.
constexpr unsigned kNvmlValueNotAvailable = 0xFFFFFFFFu;

typedef struct nvmlPciInfo_st {
  char busIdLegacy[kNvmlDevicePciBusIdBufferV2Size];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[kNvmlDevicePciBusIdBufferSize];  // "%08X:%02X:%02X.0"
} nvmlPciInfo_t;

typedef struct nvmlMemory_st {
  unsigned long long total;  // bytes
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_t;

typedef struct nvmlEventData_st {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;  // the XID for XidCriticalError events (999: unknown)
  unsigned int gpuInstanceId;    // kNvmlValueNotAvailable when the event is for the whole GPU
  unsigned int computeInstanceId;
} nvmlEventData_t;

typedef struct nvmlDeviceAttributes_st {
  unsigned int multiprocessorCount;
  unsigned int sharedCopyEngineCount;
  unsigned int sharedDecoderCount;
  unsigned int sharedEncoderCount;
  unsigned int sharedJpegCount;
  unsigned int sharedOfaCount;
  unsigned int gpuInstanceSliceCount;
  unsigned int computeInstanceSliceCount;
  unsigned long long memorySizeMB;  // MiB
} nvmlDeviceAttributes_t;

typedef struct nvmlGpuInstancePlacement_st {
  unsigned int start;
  unsigned int size;
} nvmlGpuInstancePlacement_t;

typedef struct nvmlGpuInstanceInfo_st {
  nvmlDevice_t device;
  unsigned int id;
  unsigned int profileId;  // NVML_GPU_INSTANCE_PROFILE_*
  nvmlGpuInstancePlacement_t placement;
} nvmlGpuInstanceInfo_t;

typedef enum nvmlGpuLevel_enum {
  NVML_TOPOLOGY_INTERNAL = 0,
  NVML_TOPOLOGY_SINGLE = 10,
  NVML_TOPOLOGY_MULTIPLE = 20,
  NVML_TOPOLOGY_HOSTBRIDGE = 30,
  NVML_TOPOLOGY_NODE = 40,
  NVML_TOPOLOGY_SYSTEM = 50,
} nvmlGpuTopologyLevel_t;

typedef enum nvmlEnableState_enum {
  NVML_FEATURE_DISABLED = 0,
  NVML_FEATURE_ENABLED = 1,
} nvmlEnableState_t;

constexpr unsigned kNvmlDeviceMigEnable = 1;

// Event type bits.
constexpr unsigned long long kNvmlEventTypeSingleBitEccError = 0x1ULL;
constexpr unsigned long long kNvmlEventTypeDoubleBitEccError = 0x2ULL;
constexpr unsigned long long kNvmlEventTypeXidCriticalError = 0x8ULL;

// GPU instance profile ids (NVML_GPU_INSTANCE_PROFILE_*); the ids past 6 are the variants whose
// names carry a media-engine or graphics suffix.
constexpr unsigned kNvmlGpuInstanceProfile1SliceRev1 = 7;   // +me
constexpr unsigned kNvmlGpuInstanceProfile2SliceRev1 = 8;   // +me
constexpr unsigned kNvmlGpuInstanceProfile1SliceRev2 = 9;   // 1g with 2/8 of the memory
constexpr unsigned kNvmlGpuInstanceProfile1SliceGfx = 10;   // +gfx
constexpr unsigned kNvmlGpuInstanceProfile2SliceGfx = 11;   // +gfx
constexpr unsigned kNvmlGpuInstanceProfile4SliceGfx = 12;   // +gfx
constexpr unsigned kNvmlGpuInstanceProfile1SliceNoMe = 13;  // -me
constexpr unsigned kNvmlGpuInstanceProfile2SliceNoMe = 14;  // -me
constexpr unsigned kNvmlGpuInstanceProfile1SliceAllMe = 15; // +me.all
constexpr unsigned kNvmlGpuInstanceProfile2SliceAllMe = 16; // +me.all

// Signatures of the entry points, for dlsym.
using NvmlInitFn = nvmlReturn_t (*)();
using NvmlShutdownFn = nvmlReturn_t (*)();
using NvmlErrorStringFn = const char* (*)(nvmlReturn_t);
using NvmlSystemGetDriverVersionFn = nvmlReturn_t (*)(char*, unsigned);
using NvmlSystemGetCudaDriverVersionFn = nvmlReturn_t (*)(int*);
using NvmlDeviceGetCountFn = nvmlReturn_t (*)(unsigned*);
using NvmlDeviceGetHandleByIndexFn = nvmlReturn_t (*)(unsigned, nvmlDevice_t*);
using NvmlDeviceGetHandleByUuidFn = nvmlReturn_t (*)(const char*, nvmlDevice_t*);
// GetUUID, GetName.
using NvmlDeviceGetStringFn = nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned);
// GetMinorNumber, GetMaxMigDeviceCount, GetGpuInstanceId, GetComputeInstanceId.
using NvmlDeviceGetUintFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned*);
using NvmlDeviceGetMemoryInfoFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_t*);
using NvmlDeviceGetPciInfoFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlPciInfo_t*);
using NvmlDeviceGetCudaComputeCapabilityFn = nvmlReturn_t (*)(nvmlDevice_t, int*, int*);
using NvmlDeviceGetTopologyCommonAncestorFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlDevice_t,
                                                                nvmlGpuTopologyLevel_t*);
using NvmlDeviceGetNvLinkStateFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned, nvmlEnableState_t*);
using NvmlDeviceGetNvLinkRemotePciInfoFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned,
                                                             nvmlPciInfo_t*);
using NvmlDeviceGetMigModeFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned*, unsigned*);
using NvmlDeviceGetMigDeviceHandleByIndexFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned,
                                                                nvmlDevice_t*);
using NvmlDeviceGetAttributesFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlDeviceAttributes_t*);
using NvmlDeviceGetGpuInstanceByIdFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned,
                                                         nvmlGpuInstance_t*);
using NvmlGpuInstanceGetInfoFn = nvmlReturn_t (*)(nvmlGpuInstance_t, nvmlGpuInstanceInfo_t*);
using NvmlEventSetCreateFn = nvmlReturn_t (*)(nvmlEventSet_t*);
using NvmlDeviceGetSupportedEventTypesFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned long long*);
using NvmlDeviceRegisterEventsFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned long long,
                                                    nvmlEventSet_t);
using NvmlEventSetWaitFn = nvmlReturn_t (*)(nvmlEventSet_t, nvmlEventData_t*, unsigned);
using NvmlEventSetFreeFn = nvmlReturn_t (*)(nvmlEventSet_t);

}  // extern "C"
