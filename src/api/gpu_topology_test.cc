// The muster.dev/gpu-topology codec (gpu_topology.h): what the device plugin and the node agents
// write is what the scheduler reads back, and malformed values are refused naming the part.

#include "api/gpu_topology.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::api {
namespace {

using ::testing::HasSubstr;

// DGX-1's hybrid cube-mesh (V100): GPUs 0-3 and 4-7 fully linked, each linked to one of the
// other quad.
constexpr char kDgx1Topology[] =
    "v1;gpus=8;nvlink=0-1:1,0-2:1,0-3:2,0-4:2,1-2:2,1-3:1,1-5:2,2-3:2,2-6:1,3-7:1,4-5:1,4-6:1,"
    "4-7:2,5-6:2,5-7:1,6-7:2";

TEST(GpuTopologyTest, ADgx1RoundTrips) {
  auto topology = ParseGpuTopology(kDgx1Topology);
  ASSERT_TRUE(topology.ok()) << topology.status();
  EXPECT_EQ(topology->gpus(), 8);
  EXPECT_EQ(topology->NvLinks(0, 3), 2);
  EXPECT_EQ(topology->NvLinks(3, 0), 2);
  EXPECT_EQ(topology->NvLinks(2, 6), 1);
  EXPECT_EQ(topology->NvLinks(0, 5), 0);  // not listed: PCIe only
  EXPECT_EQ(topology->NvLinks(0, 0), 0);
  EXPECT_EQ(topology->NvLinks(0, 8), 0);  // outside the node
  EXPECT_TRUE(topology->HasNvLinks());
  EXPECT_EQ(FormatGpuTopology(*topology), kDgx1Topology);
}

TEST(GpuTopologyTest, PairsMayComeInAnyOrderAndNoneIsNoNvLink) {
  auto reversed = ParseGpuTopology("v1;gpus=4;nvlink=3-2:4,1-0:4");
  ASSERT_TRUE(reversed.ok()) << reversed.status();
  EXPECT_EQ(FormatGpuTopology(*reversed), "v1;gpus=4;nvlink=0-1:4,2-3:4");
  auto none = ParseGpuTopology("v1;gpus=2;nvlink=");
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_FALSE(none->HasNvLinks());
  EXPECT_EQ(*none, GpuTopology(2));
  EXPECT_EQ(FormatGpuTopology(GpuTopology(2)), "v1;gpus=2;nvlink=");
}

TEST(GpuTopologyTest, MalformedValuesNameThePart) {
  struct Case {
    const char* text;
    const char* message;
  };
  for (const Case& c : {
           Case{"v2;gpus=8;nvlink=", "\"v2\" is not a version this scheduler reads"},
           Case{"", "\"\" is not a version this scheduler reads"},
           Case{"v1;gpus=8", "expected v1;gpus=N;nvlink=A-B:LINKS,..."},
           Case{"v1;nvlink=;gpus=8", "expected v1;gpus=N;nvlink=A-B:LINKS,..."},
           Case{"v1;gpus=8;nvlink=;x=1", "expected v1;gpus=N;nvlink=A-B:LINKS,..."},
           Case{"v1;gpus=0;nvlink=", "gpus: \"0\" is not a number of GPUs from 1 to 1024"},
           Case{"v1;gpus=-1;nvlink=", "gpus: \"-1\" is not a number of GPUs from 1 to 1024"},
           Case{"v1;gpus=8;nvlink=0-9:1",
                "nvlink: \"0-9:1\": GPU 9 is out of range (gpus=8, so 0 to 7)"},
           Case{"v1;gpus=8;nvlink=0-1:1,1-0:2",
                "nvlink: \"1-0:2\": GPUs 0 and 1 are given twice (first with 1 NVLinks"},
           Case{"v1;gpus=8;nvlink=3-3:1", "nvlink: \"3-3:1\": a GPU is not linked to itself"},
           Case{"v1;gpus=8;nvlink=0-1:0", "nvlink: \"0-1:0\": 0 NVLinks; give 1 to 1000"},
           Case{"v1;gpus=8;nvlink=0-1", "nvlink: \"0-1\" is not A-B:LINKS"},
           Case{"v1;gpus=8;nvlink=0-1:1,", "nvlink: \"\" is not A-B:LINKS"},
           Case{"v1;gpus=8;nvlink=+0-1:1", "nvlink: \"+0-1:1\" is not A-B:LINKS"},
       }) {
    auto parsed = ParseGpuTopology(c.text);
    ASSERT_FALSE(parsed.ok()) << c.text;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << c.text;
    EXPECT_THAT(std::string(parsed.status().message()), HasSubstr(c.message)) << c.text;
  }
}

TEST(GpuTopologyTest, AMatrixMustBeSquareSymmetricAndWithoutSelfLinks) {
  auto good = GpuTopology::FromMatrix({{0, 2, 0}, {2, 0, 1}, {0, 1, 0}});
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_EQ(FormatGpuTopology(*good), "v1;gpus=3;nvlink=0-1:2,1-2:1");
  auto asymmetric = GpuTopology::FromMatrix({{0, 1}, {2, 0}});
  ASSERT_FALSE(asymmetric.ok());
  EXPECT_EQ(std::string(asymmetric.status().message()),
            "[1][0]: 2 NVLinks, but [0][1] says 1 (links are the same both ways)");
  auto ragged = GpuTopology::FromMatrix({{0, 1}, {1}});
  ASSERT_FALSE(ragged.ok());
  EXPECT_EQ(std::string(ragged.status().message()),
            "[1]: 1 entries, but there are 2 GPUs (one per GPU)");
  auto self = GpuTopology::FromMatrix({{4, 0}, {0, 0}});
  ASSERT_FALSE(self.ok());
  EXPECT_EQ(std::string(self.status().message()),
            "[0][0]: 4 NVLinks from GPU 0 to itself; give 0");
  EXPECT_EQ(GpuTopologyValue({{0, 2, 0}, {2, 0, 1}, {0, 1, 0}}), "v1;gpus=3;nvlink=0-1:2,1-2:1");
  EXPECT_EQ(GpuTopologyValue({{0, 1}, {2, 0}}), "");  // refused: nothing published
  EXPECT_EQ(GpuTopologyValue({{0, 0}, {0, 0}}), "");  // no NVLink: nothing to say
  auto negative = GpuTopology::FromMatrix({{0, -1}, {-1, 0}});
  ASSERT_FALSE(negative.ok());
  EXPECT_EQ(std::string(negative.status().message()), "[0][1]: -1 NVLinks; give 0 to 1000");
}

}  // namespace
}  // namespace muster::api
