// nvlink (nvlink.cc) through scheduling cycles on DGX-1 nodes (GPUs 0-3 and 4-7 fully linked by
// NVLink, each GPU linked to one of the other four): the GPUs a multi-GPU pod is given, and the
// nodes a gang's pods go to, with the plugin and without it.

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "api/gpu_topology.h"
#include "core/testing/harness.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::core {
namespace {

using test::Binds;
using test::Harness;
using test::MakeNode;
using test::MakePod;
using test::MakePodGroup;
using ::testing::_;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

constexpr char kCubeMeshAnnotation[] =
    "v1;gpus=8;nvlink=0-1:1,0-2:1,0-3:2,0-4:2,1-2:2,1-3:1,1-5:2,2-3:2,2-6:1,3-7:1,4-5:1,4-6:1,"
    "4-7:2,5-6:2,5-7:1,6-7:2";

// The default conf's node plugins, with nvlink or without.
constexpr char kNvLinkConf[] = R"(
actions: "enqueue, allocate"
tiers:
- plugins: [{name: priority}, {name: gang}]
- plugins: [{name: predicates}, {name: nodeorder}, {name: nvlink}]
)";
constexpr char kWithoutNvLinkConf[] = R"(
actions: "enqueue, allocate"
tiers:
- plugins: [{name: priority}, {name: gang}]
- plugins: [{name: predicates}, {name: nodeorder}]
)";

api::Node Dgx1(const std::string& name, const std::string& topology = kCubeMeshAnnotation) {
  return MakeNode(name)
      .Cpu("64")
      .Memory("256Gi")
      .Gpus(8)
      .Annotation(api::kGpuTopologyAnnotation, topology)
      .Obj();
}

// A running pod holding `gpus` ("0,4") of `node`.
api::Pod Holding(const std::string& name, const std::string& node, const std::string& gpus,
                 int count) {
  return MakePod("other", name)
      .RunningOn(node)
      .Gpus(count)
      .Annotation(api::kGpuIndicesAnnotation, gpus)
      .Obj();
}

// The GPUs each bound pod was given, by pod.
std::map<std::string, std::vector<int>> GpusOf(const CycleResult& r) {
  std::map<std::string, std::vector<int>> out;
  for (const CycleResult::Bind& b : r.binds) out[b.pod] = b.gpus;
  return out;
}

CycleResult RunOneFourGpuPod(std::string_view conf, const std::vector<api::Pod>& held) {
  Harness h;
  h.Add(Dgx1("dgx"));
  for (const api::Pod& p : held) h.Add(p);
  h.Add(MakePodGroup("ns", "pg").Obj());
  h.Add(MakePod("ns", "p").Group("pg").Req("cpu", "1").Gpus(4).Obj());
  return h.Run(conf);
}

TEST(NvLinkTest, AFourGpuPodGetsAFullyLinkedQuad) {
  // GPU 0 taken: the lowest four free (1-4) share 5 NVLinks, GPUs 4-7 share 9.
  const std::vector<api::Pod> held = {Holding("one", "dgx", "0", 1)};
  EXPECT_THAT(GpusOf(RunOneFourGpuPod(kNvLinkConf, held)),
              ElementsAre(Pair("ns/p", ElementsAre(4, 5, 6, 7))));
  EXPECT_THAT(GpusOf(RunOneFourGpuPod(kWithoutNvLinkConf, held)),
              ElementsAre(Pair("ns/p", ElementsAre(1, 2, 3, 4))));
  // All free: the first quad.
  EXPECT_THAT(GpusOf(RunOneFourGpuPod(kNvLinkConf, {})),
              ElementsAre(Pair("ns/p", ElementsAre(0, 1, 2, 3))));
}

TEST(NvLinkTest, APairTakesTwoNvLinksAndOneGpuPodsKeepTheLowest) {
  Harness h;
  h.Add(Dgx1("dgx"));
  h.Add(Holding("zero-two", "dgx", "0,2", 2));
  h.Add(MakePodGroup("ns", "pair").Obj());
  h.Add(MakePod("ns", "pair").Group("pair").Req("cpu", "1").Gpus(2).Obj());
  h.Add(MakePodGroup("ns", "single").Obj());
  h.Add(MakePod("ns", "single").Group("single").Req("cpu", "1").Gpus(1).Obj());
  // Free 1, 3-7: 1-3 has one NVLink, 1-5 two; a single GPU is the engine's lowest free one.
  EXPECT_THAT(GpusOf(h.Run(kNvLinkConf)),
              UnorderedElementsAre(Pair("ns/pair", ElementsAre(1, 5)),
                                   Pair("ns/single", ElementsAre(3))));
}

void AddThreeBusyDgx1s(Harness& h) {
  h.Add(Dgx1("dgx-a")).Add(Dgx1("dgx-b")).Add(Dgx1("dgx-c"));
  h.Add(Holding("a", "dgx-a", "0,4", 2));        // 6 free, no linked quad among them
  h.Add(Holding("b", "dgx-b", "0,1,2,3", 4));    // 4-7 free
  h.Add(Holding("c", "dgx-c", "4,5,6,7", 4));    // 0-3 free
  h.Add(MakePodGroup("ns", "gang").MinMember(2).Obj());
  for (const char* name : {"gang-1", "gang-2"}) {
    h.Add(MakePod("ns", name).Group("gang").Req("cpu", "1").Gpus(4).Obj());
  }
}

TEST(NvLinkTest, AGangGoesWhereLinkedQuadsAreFree) {
  Harness h;
  AddThreeBusyDgx1s(h);
  CycleResult r = h.Run(kNvLinkConf);
  EXPECT_THAT(Binds(r),
              UnorderedElementsAre(Pair("ns/gang-1", "dgx-b"), Pair("ns/gang-2", "dgx-c")));
  EXPECT_THAT(GpusOf(r), UnorderedElementsAre(Pair("ns/gang-1", ElementsAre(4, 5, 6, 7)),
                                              Pair("ns/gang-2", ElementsAre(0, 1, 2, 3))));
  // Without the plugin the nodes tie and the first, with the most GPUs free, takes a pod.
  Harness without;
  AddThreeBusyDgx1s(without);
  test::BindMap plain = Binds(without.Run(kWithoutNvLinkConf));
  EXPECT_EQ(plain.size(), 2u);
  EXPECT_THAT(plain, Contains(Pair(_, "dgx-a")));
}

TEST(NvLinkTest, ATopologyThatDoesNotMatchTheNodeIsIgnored) {
  for (const std::string& topology : {
           std::string("v1;gpus=16;nvlink=0-1:2"),     // not this node's 8 GPUs
           std::string("v9;gpus=8;nvlink=4-5:2"),      // not a version the scheduler reads
           std::string("v1;gpus=8;nvlink="),           // no NVLinks at all
       }) {
    Harness h;
    h.Add(Dgx1("dgx", topology));
    h.Add(Holding("one", "dgx", "0", 1));
    h.Add(MakePodGroup("ns", "pg").Obj());
    h.Add(MakePod("ns", "p").Group("pg").Req("cpu", "1").Gpus(4).Obj());
    EXPECT_THAT(GpusOf(h.Run(kNvLinkConf)), ElementsAre(Pair("ns/p", ElementsAre(1, 2, 3, 4))))
        << topology;
  }
}

TEST(NvLinkTest, TheSameClusterGivesTheSameGpus) {
  std::vector<std::map<std::string, std::vector<int>>> runs;
  for (int i = 0; i < 3; ++i) {
    Harness h;
    AddThreeBusyDgx1s(h);
    runs.push_back(GpusOf(h.Run(kNvLinkConf)));
  }
  EXPECT_EQ(runs[0], runs[1]);
  EXPECT_EQ(runs[1], runs[2]);
}

}  // namespace
}  // namespace muster::core
