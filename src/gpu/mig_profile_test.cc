#include "gpu/mig_profile.h"

#include "gpu/nvml_api.h"
#include "gtest/gtest.h"

namespace muster::gpu {
namespace {

// The names nvidia-smi and NVIDIA's plugin give these MIG devices (NVIDIA's MIG user guide,
// "Supported MIG Profiles"), from the memory NVML reports.
TEST(MigProfileTest, NamesMatchNvidiaOnRealBoards) {
  const uint64_t a100_40 = 40960 * kMiB;
  EXPECT_EQ(MigProfileName(1, 1, 4864, a100_40, 0), "1g.5gb");
  EXPECT_EQ(MigProfileName(2, 2, 9856, a100_40, 1), "2g.10gb");
  EXPECT_EQ(MigProfileName(3, 3, 19968, a100_40, 2), "3g.20gb");
  EXPECT_EQ(MigProfileName(7, 7, 40192, a100_40, 4), "7g.40gb");

  const uint64_t h100_80 = 81559 * kMiB;
  EXPECT_EQ(MigProfileName(1, 1, 9856, h100_80, 0), "1g.10gb");
  EXPECT_EQ(MigProfileName(1, 1, 19968, h100_80, kNvmlGpuInstanceProfile1SliceRev2), "1g.20gb");
  EXPECT_EQ(MigProfileName(3, 3, 40192, h100_80, 2), "3g.40gb");
  EXPECT_EQ(MigProfileName(7, 7, 80896, h100_80, 4), "7g.80gb");

  const uint64_t h200 = 143771 * kMiB;
  EXPECT_EQ(MigProfileName(1, 1, 16384, h200, 0), "1g.18gb");
  EXPECT_EQ(MigProfileName(2, 2, 33280, h200, 1), "2g.35gb");
  EXPECT_EQ(MigProfileName(3, 3, 71424, h200, 2), "3g.71gb");  // 70.5 rounds up, as Go's Round
  EXPECT_EQ(MigProfileName(7, 7, 143360, h200, 4), "7g.141gb");

  const uint64_t a30 = 24576 * kMiB;
  EXPECT_EQ(MigProfileName(1, 1, 5836, a30, 0), "1g.6gb");
  EXPECT_EQ(MigProfileName(4, 4, 24062, a30, 3), "4g.24gb");
}

TEST(MigProfileTest, ComputeInstancesSmallerThanTheirGpuInstanceGetAPrefix) {
  EXPECT_EQ(MigProfileName(2, 1, 19968, 81920 * kMiB, 1), "1c.2g.20gb");
  EXPECT_EQ(MigProfileName(7, 3, 81408, 81920 * kMiB, 4), "3c.7g.80gb");
}

TEST(MigProfileTest, ProfileVariantsGetNvidiasSuffixes) {
  const uint64_t a100_80 = 81920 * kMiB;
  EXPECT_EQ(MigProfileName(1, 1, 9728, a100_80, kNvmlGpuInstanceProfile1SliceRev1), "1g.10gb+me");
  EXPECT_EQ(MigProfileName(1, 1, 9728, a100_80, kNvmlGpuInstanceProfile1SliceAllMe),
            "1g.10gb+me.all");
  EXPECT_EQ(MigProfileName(1, 1, 9728, a100_80, kNvmlGpuInstanceProfile1SliceGfx), "1g.10gb+gfx");
  EXPECT_EQ(MigProfileName(1, 1, 9728, a100_80, kNvmlGpuInstanceProfile1SliceNoMe), "1g.10gb-me");
  EXPECT_EQ(MigProfileName(1, 1, 9728, a100_80, kUnknownGpuInstanceProfile), "1g.10gb");
}

TEST(MigProfileTest, MemoryIsRoundedUpToEighthsOfTheBoard) {
  EXPECT_EQ(MigMemorySizeGb(81920 * kMiB, 1), 10u);       // anything up to an eighth
  EXPECT_EQ(MigMemorySizeGb(81920 * kMiB, 10241), 20u);   // just over an eighth
  EXPECT_EQ(MigMemorySizeGb(0, 10), 0u);
}

}  // namespace
}  // namespace muster::gpu
