#include "core/resources.h"

#include <string>

#include "core/actions/feasible_nodes.h"
#include "core/cluster.h"
#include "core/testing/builders.h"
#include "gtest/gtest.h"

namespace muster::core {
namespace {

using test::List;
using test::MakePod;
using test::R;

int64_t Milli(std::string_view q) { return test::Q(q).MilliValue(); }

// --- names ------------------------------------------------------------------------------------

TEST(ResourceNamesTest, WellKnownIdsAndInterning) {
  EXPECT_EQ(ResourceNames::Id("cpu"), kCpu);
  EXPECT_EQ(ResourceNames::Id("memory"), kMemory);
  EXPECT_EQ(ResourceNames::Id("nvidia.com/gpu"), kGpu);
  ResourceId a = ResourceNames::Id("example.com/resources-test-a");
  EXPECT_GT(a, kGpu);
  EXPECT_EQ(ResourceNames::Id("example.com/resources-test-a"), a);
  EXPECT_EQ(ResourceNames::Name(a), "example.com/resources-test-a");
  EXPECT_EQ(ResourceNames::Name(-1), "?");
  EXPECT_EQ(ResourceNames::Name(ResourceNames::Count()), "?");
}

// --- construction and arithmetic --------------------------------------------------------------

TEST(ResourcesTest, FromListKeepsMilliUnitsAndDropsPods) {
  Resources r = R({{"cpu", "1500m"}, {"memory", "2Gi"}, {"pods", "110"}, {"nvidia.com/gpu", "4"}});
  EXPECT_EQ(r.Get(kCpu), 1500);
  EXPECT_EQ(r.Get(kMemory), Milli("2Gi"));
  EXPECT_EQ(r.Get(kGpu), 4000);
  EXPECT_EQ(r.Get(ResourceNames::Id("pods")), 0);
  EXPECT_EQ(r.ToString(), "cpu 1500m, memory 2Gi, nvidia.com/gpu 4");
}

TEST(ResourcesTest, MissingDimensionsReadAsZero) {
  Resources empty;
  EXPECT_EQ(empty.Get(kCpu), 0);
  EXPECT_EQ(empty.Get(1000), 0);
  EXPECT_TRUE(empty.IsEmpty());
  EXPECT_EQ(empty.ToString(), "<empty>");
  EXPECT_EQ(empty, R({{"cpu", "0"}, {"memory", "0"}}));
}

TEST(ResourcesTest, AddAndSubAcrossDifferentDimensions) {
  ResourceId ext = ResourceNames::Id("example.com/resources-test-b");
  Resources a = R({{"cpu", "1"}});
  Resources b = R({{"memory", "1Gi"}, {"example.com/resources-test-b", "3"}});
  a.Add(b);
  EXPECT_EQ(a.Get(kCpu), 1000);
  EXPECT_EQ(a.Get(kMemory), Milli("1Gi"));
  EXPECT_EQ(a.Get(ext), 3000);
  a.Sub(R({{"cpu", "250m"}, {"example.com/resources-test-b", "3"}}));
  EXPECT_EQ(a.Get(kCpu), 750);
  EXPECT_EQ(a.Get(ext), 0);
  // Sub may go negative; IsEmpty treats non-positive as empty.
  Resources c = R({{"cpu", "1"}});
  c.Sub(R({{"cpu", "2"}}));
  EXPECT_EQ(c.Get(kCpu), -1000);
  EXPECT_TRUE(c.IsEmpty());
  EXPECT_FALSE(R({{"memory", "1"}}).IsEmpty());
}

TEST(ResourcesTest, EqualityIgnoresTrailingZeroDimensions) {
  Resources a = R({{"cpu", "1"}});
  Resources b = R({{"cpu", "1"}, {"nvidia.com/gpu", "0"}});
  EXPECT_EQ(a, b);
  EXPECT_FALSE(a == R({{"cpu", "1"}, {"nvidia.com/gpu", "1"}}));
}

TEST(ResourcesTest, MinAndMaxAreDimensionWise) {
  Resources a = R({{"cpu", "4"}, {"memory", "1Gi"}});
  Resources b = R({{"cpu", "2"}, {"memory", "2Gi"}, {"nvidia.com/gpu", "1"}});
  Resources lo = a;
  lo.Min(b);
  EXPECT_EQ(lo, R({{"cpu", "2"}, {"memory", "1Gi"}}));
  Resources hi = a;
  hi.Max(b);
  EXPECT_EQ(hi, R({{"cpu", "4"}, {"memory", "2Gi"}, {"nvidia.com/gpu", "1"}}));
}

// --- comparisons ------------------------------------------------------------------------------

TEST(ResourcesTest, LessEqualComparesEveryDimension) {
  Resources node = R({{"cpu", "4"}, {"memory", "8Gi"}});
  EXPECT_TRUE(R({{"cpu", "4"}, {"memory", "8Gi"}}).LessEqual(node));
  EXPECT_TRUE(R({{"cpu", "1"}}).LessEqual(node));
  EXPECT_TRUE(Resources().LessEqual(node));
  EXPECT_FALSE(R({{"cpu", "4001m"}}).LessEqual(node));
  EXPECT_FALSE(R({{"memory", "9Gi"}}).LessEqual(node));
  // A dimension the other side lacks counts as zero there.
  EXPECT_FALSE(R({{"cpu", "1"}, {"nvidia.com/gpu", "1"}}).LessEqual(node));
  EXPECT_TRUE(R({{"cpu", "1"}, {"nvidia.com/gpu", "0"}}).LessEqual(node));
}

TEST(ResourcesTest, LessEqualInComparesOnlyRequestedDimensions) {
  Resources used = R({{"cpu", "2"}, {"memory", "10Gi"}});
  Resources cap = R({{"cpu", "4"}, {"memory", "1Gi"}});
  EXPECT_FALSE(used.LessEqual(cap));
  EXPECT_TRUE(used.LessEqualIn(cap, R({{"cpu", "1"}})));
  EXPECT_FALSE(used.LessEqualIn(cap, R({{"cpu", "1"}, {"memory", "1"}})));
  EXPECT_FALSE(used.LessEqualIn(cap, R({{"memory", "1"}})));
  // Empty dims compare nothing.
  EXPECT_TRUE(used.LessEqualIn(cap, Resources()));
  // A requested dimension the capacity lacks is zero there.
  EXPECT_FALSE(R({{"nvidia.com/gpu", "1"}}).LessEqualIn(cap, R({{"nvidia.com/gpu", "1"}})));
}

TEST(ResourcesTest, LessPartlyFindsAnySmallerDimension) {
  Resources a = R({{"cpu", "1"}, {"memory", "8Gi"}});
  EXPECT_TRUE(a.LessPartly(R({{"cpu", "2"}, {"memory", "1Gi"}})));
  EXPECT_FALSE(a.LessPartly(R({{"cpu", "1"}, {"memory", "1Gi"}})));
  EXPECT_TRUE(Resources().LessPartly(R({{"nvidia.com/gpu", "1"}})));
}

TEST(ResourcesTest, FirstExceedingIsCpuThenMemoryThenById) {
  Resources node = R({{"cpu", "1"}, {"memory", "1Gi"}, {"nvidia.com/gpu", "1"}});
  EXPECT_EQ(R({{"cpu", "2"}, {"memory", "2Gi"}, {"nvidia.com/gpu", "2"}}).FirstExceeding(node),
            kCpu);
  EXPECT_EQ(R({{"cpu", "1"}, {"memory", "2Gi"}, {"nvidia.com/gpu", "2"}}).FirstExceeding(node),
            kMemory);
  EXPECT_EQ(R({{"nvidia.com/gpu", "2"}}).FirstExceeding(node), kGpu);
  EXPECT_EQ(R({{"cpu", "1"}, {"memory", "1Gi"}}).FirstExceeding(node), -1);
  ResourceId ext = ResourceNames::Id("example.com/resources-test-c");
  EXPECT_EQ(R({{"example.com/resources-test-c", "1"}}).FirstExceeding(node), ext);
}

TEST(ResourcesTest, InsufficientReasonNamesTheFirstExceededResource) {
  Resources node = R({{"cpu", "1"}, {"memory", "1Gi"}});
  EXPECT_EQ(InsufficientReason(R({{"cpu", "2"}, {"memory", "2Gi"}}), node), "Insufficient cpu");
  EXPECT_EQ(InsufficientReason(R({{"memory", "2Gi"}}), node), "Insufficient memory");
  EXPECT_EQ(InsufficientReason(R({{"nvidia.com/gpu", "1"}}), node), "Insufficient nvidia.com/gpu");
  EXPECT_EQ(InsufficientReason(R({{"cpu", "1"}}), node), "");
}

// --- PodRequests: Kubernetes' effective request ----------------------------------------------

TEST(PodRequestsTest, ContainersAreSummed) {
  api::Pod pod = MakePod("ns", "p")
                     .Req("cpu", "500m")
                     .Req("memory", "1Gi")
                     .Container({{"cpu", "250m"}, {"memory", "512Mi"}})
                     .Container({{"cpu", "1"}})
                     .Obj();
  EXPECT_EQ(PodRequests(pod), R({{"cpu", "1750m"}, {"memory", "1536Mi"}}));
}

TEST(PodRequestsTest, InitContainersAreMaxedPerResourceNotSummed) {
  api::Pod pod = MakePod("ns", "p")
                     .Req("cpu", "1")
                     .Req("memory", "1Gi")
                     .InitReq({{"cpu", "3"}, {"memory", "256Mi"}})
                     .InitReq({{"cpu", "2"}, {"memory", "512Mi"}})
                     .Obj();
  // cpu: max(1, 3, 2) = 3 (not 1+3+2); memory: max(1Gi, 256Mi, 512Mi) = 1Gi.
  EXPECT_EQ(PodRequests(pod), R({{"cpu", "3"}, {"memory", "1Gi"}}));
}

TEST(PodRequestsTest, InitContainerOnlyResourceCounts) {
  api::Pod pod = MakePod("ns", "p").Req("cpu", "1").InitReq("nvidia.com/gpu", "1").Obj();
  EXPECT_EQ(PodRequests(pod), R({{"cpu", "1"}, {"nvidia.com/gpu", "1"}}));
}

TEST(PodRequestsTest, OverheadIsAddedAfterTheInitMax) {
  api::Pod pod = MakePod("ns", "p")
                     .Req("cpu", "1")
                     .InitReq("cpu", "2")
                     .Overhead("cpu", "100m")
                     .Overhead("memory", "64Mi")
                     .Obj();
  EXPECT_EQ(PodRequests(pod), R({{"cpu", "2100m"}, {"memory", "64Mi"}}));
}

TEST(PodRequestsTest, LimitWithoutRequestIsRequestedAtTheLimit) {
  api::Pod pod = MakePod("ns", "p")
                     .Req("cpu", "500m")
                     .Limit("cpu", "2")       // request given: the request counts
                     .Limit("memory", "1Gi")  // limit only: requested at the limit
                     .Gpus(2)                 // nvidia.com/gpu in limits only
                     .Obj();
  EXPECT_EQ(PodRequests(pod), R({{"cpu", "500m"}, {"memory", "1Gi"}, {"nvidia.com/gpu", "2"}}));
}

TEST(PodRequestsTest, PodsResourceIsNotARequest) {
  api::Pod pod = MakePod("ns", "p").Req("cpu", "1").Req("pods", "1").Obj();
  EXPECT_EQ(PodRequests(pod), R({{"cpu", "1"}}));
}

TEST(PodRequestsTest, NoRequestsIsEmpty) {
  EXPECT_TRUE(PodRequests(MakePod("ns", "p").Obj()).IsEmpty());
  EXPECT_TRUE(PodRequests(MakePod("ns", "p").Req("cpu", "0").Obj()).IsEmpty());
}

}  // namespace
}  // namespace muster::core
