#pragma once

// MIG profile names as NVIDIA derives them (go-nvlib pkg/nvlib/device/mig_profile.go), so that
// resource names (nvidia.com/mig-1g.10gb) and labels match NVIDIA's plugin and GFD exactly.

#include <cstdint>
#include <string>

namespace muster::gpu {

// Bytes in a MiB, the unit NVML reports MIG and framebuffer memory in.
inline constexpr uint64_t kMiB = 1024ULL * 1024;

// The "<GB>gb" part: the MIG device's share of the parent's memory rounded up to eighths, times
// the parent's memory in whole GiB (rounded up), rounded to the nearest integer.
uint64_t MigMemorySizeGb(uint64_t parent_memory_bytes, uint64_t mig_memory_mib);

inline constexpr unsigned kUnknownGpuInstanceProfile = 0xFFFFFFFFu;

// "<G>g.<GB>gb", or "<C>c.<G>g.<GB>gb" when the compute instance has fewer slices than its GPU
// instance, plus the suffix that the GPU instance profile id implies ("+me", "+me.all", "+gfx",
// "-me"); kUnknownGpuInstanceProfile adds none.
std::string MigProfileName(unsigned gpu_instance_slices, unsigned compute_instance_slices,
                           uint64_t mig_memory_mib, uint64_t parent_memory_bytes,
                           unsigned gpu_instance_profile_id);

}  // namespace muster::gpu
