#include "gpu/mig_profile.h"

#include <cmath>

#include "fmt/format.h"
#include "gpu/nvml_api.h"

namespace muster::gpu {

uint64_t MigMemorySizeGb(uint64_t parent_memory_bytes, uint64_t mig_memory_mib) {
  if (parent_memory_bytes == 0) return 0;
  constexpr uint64_t kGiB = kMiB * 1024;
  double fraction = static_cast<double>(mig_memory_mib * kMiB) /
                    static_cast<double>(parent_memory_bytes);
  fraction = std::ceil(fraction * 8) / 8;
  auto total_gb = static_cast<double>((parent_memory_bytes + kGiB - 1) / kGiB);
  return static_cast<uint64_t>(std::llround(fraction * total_gb));
}

std::string MigProfileName(unsigned gpu_instance_slices, unsigned compute_instance_slices,
                           uint64_t mig_memory_mib, uint64_t parent_memory_bytes,
                           unsigned gpu_instance_profile_id) {
  std::string suffix;
  switch (gpu_instance_profile_id) {
    case kNvmlGpuInstanceProfile1SliceRev1:
    case kNvmlGpuInstanceProfile2SliceRev1:
      suffix = "+me";
      break;
    case kNvmlGpuInstanceProfile1SliceAllMe:
    case kNvmlGpuInstanceProfile2SliceAllMe:
      suffix = "+me.all";
      break;
    case kNvmlGpuInstanceProfile1SliceGfx:
    case kNvmlGpuInstanceProfile2SliceGfx:
    case kNvmlGpuInstanceProfile4SliceGfx:
      suffix = "+gfx";
      break;
    case kNvmlGpuInstanceProfile1SliceNoMe:
    case kNvmlGpuInstanceProfile2SliceNoMe:
      suffix = "-me";
      break;
    default:
      break;
  }
  uint64_t gb = MigMemorySizeGb(parent_memory_bytes, mig_memory_mib);
  if (compute_instance_slices == gpu_instance_slices || compute_instance_slices == 0) {
    return fmt::format("{}g.{}gb{}", gpu_instance_slices, gb, suffix);
  }
  return fmt::format("{}c.{}g.{}gb{}", compute_instance_slices, gpu_instance_slices, gb, suffix);
}

}  // namespace muster::gpu
