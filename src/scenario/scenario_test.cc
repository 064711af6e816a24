// Scenario files (scenario.h): expect.gpuIndices, the GPUs a bound pod was given, checked as the
// conformance runner checks binds, and refused when it is not a list of GPU indices.

#include "scenario/scenario.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::scenario {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

// One DGX-1 with GPU 0 taken and a 4-GPU pod, under nvlink; `expect` appended.
std::string FourGpuPodOnADgx1(const std::string& expect) {
  return R"(name: test/four-gpus
schedulerConf: |
  actions: "enqueue, allocate"
  tiers:
  - plugins: [{name: priority}, {name: gang}]
  - plugins: [{name: predicates}, {name: nodeorder}, {name: nvlink}]
objects:
- {apiVersion: v1, kind: Node,
   metadata: {name: dgx, annotations: {muster.dev/gpu-topology: "v1;gpus=8;nvlink=0-1:1,0-2:1,0-3:2,0-4:2,1-2:2,1-3:1,1-5:2,2-3:2,2-6:1,3-7:1,4-5:1,4-6:1,4-7:2,5-6:2,5-7:1,6-7:2"}},
   status: {allocatable: {cpu: "64", memory: 256Gi, pods: "110", nvidia.com/gpu: "8"}}}
- {apiVersion: v1, kind: Pod,
   metadata: {name: one, namespace: other, annotations: {muster.dev/gpu-indices: "0"}},
   spec: {nodeName: dgx, containers: [{name: c, resources: {limits: {nvidia.com/gpu: "1"}}}]},
   status: {phase: Running}}
- {apiVersion: scheduling.volcano.sh/v1beta1, kind: PodGroup, metadata: {name: pg, namespace: ns},
   spec: {minMember: 1}}
- {apiVersion: v1, kind: Pod,
   metadata: {name: p, namespace: ns, annotations: {scheduling.k8s.io/group-name: pg}},
   spec: {schedulerName: volcano,
          containers: [{name: c, resources: {limits: {nvidia.com/gpu: "4"}}}]},
   status: {phase: Pending}}
expect:
  binds: {ns/p: dgx}
)" + expect;
}

TEST(ScenarioTest, GpuIndicesAreTheGpusTheBindCarried) {
  auto scenario = ParseScenario(FourGpuPodOnADgx1("  gpuIndices: {ns/p: \"4,5,6,7\"}\n"), "f.yaml");
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  EXPECT_THAT(scenario->expect.gpu_indices, ElementsAre(Pair("ns/p", "4,5,6,7")));
  auto outcome = RunScenario(*scenario);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_THAT(outcome->gpu_indices, ElementsAre(Pair("ns/p", "4,5,6,7")));
  EXPECT_THAT(Compare(scenario->expect, *outcome), ElementsAre());

  scenario->expect.gpu_indices = {{"ns/p", "0,1,2,3"}, {"ns/q", "0"}};
  EXPECT_THAT(Compare(scenario->expect, *outcome),
              ElementsAre("gpuIndices: ns/p should be given GPUs 0,1,2,3, got 4,5,6,7",
                          "gpuIndices: ns/q should be given GPUs 0, got <no GPUs>"));
}

TEST(ScenarioTest, GpuIndicesThatAreNoListAreRefusedNamingThePod) {
  auto scenario = ParseScenario(FourGpuPodOnADgx1("  gpuIndices: {ns/p: \"4-7\"}\n"), "f.yaml");
  ASSERT_FALSE(scenario.ok());
  EXPECT_THAT(std::string(scenario.status().message()),
              HasSubstr("expect.gpuIndices.ns/p: \"4-7\" is not a list of GPU indices such as "
                        "\"0,3\""));
}

}  // namespace
}  // namespace muster::scenario
