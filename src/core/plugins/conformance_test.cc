// conformance (conformance.cc) through scheduling cycles: a kube-system pod is never a preemption
// victim while the plugin is on, and is one, like any other, once it is off.

#include <string>

#include "core/testing/harness.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::core {
namespace {

using test::Evicted;
using test::Harness;
using test::MakePod;
using test::MakePodGroup;
using test::MakePriorityClass;
using test::N;
using ::testing::IsEmpty;
using ::testing::StartsWith;

std::string PreemptConf(bool conformance) {
  return std::string(R"(
actions: "enqueue, allocate, preempt"
tiers:
- plugins: [{name: priority}, {name: gang})") +
         (conformance ? ", {name: conformance}" : "") + R"(]
- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]
)";
}

// One node full with two low-priority kube-system pods (a gang of minimum one, so gang lets one
// go); a high-priority pod waits for room.
void AddCriticalVictimCase(Harness& h) {
  h.Add(N("n1").Cpu("2").Obj());
  h.Add(MakePriorityClass("low", 10)).Add(MakePriorityClass("high", 1000));
  h.Add(MakePodGroup("kube-system", "dns").PriorityClass("low").Phase("Running").Obj());
  for (const char* name : {"dns-1", "dns-2"}) {
    h.Add(MakePod("kube-system", name).Group("dns").Priority(10).Req("cpu", "1").RunningOn("n1")
              .Obj());
  }
  h.Add(MakePodGroup("ns", "high").PriorityClass("high").Obj());
  h.Add(MakePod("ns", "high-1").Group("high").Priority(1000).Req("cpu", "1").Obj());
}

TEST(ConformanceTest, AKubeSystemPodIsNeverAPreemptionVictim) {
  Harness h;
  AddCriticalVictimCase(h);
  CycleResult r = h.Run(PreemptConf(true));
  EXPECT_THAT(Evicted(r), IsEmpty());
  EXPECT_THAT(r.pipelined, IsEmpty());
}

TEST(ConformanceTest, WithoutThePluginTheSamePodIsEvicted) {
  Harness h;
  AddCriticalVictimCase(h);
  CycleResult r = h.Run(PreemptConf(false));
  ASSERT_EQ(Evicted(r).size(), 1u);
  EXPECT_THAT(Evicted(r)[0], StartsWith("kube-system/dns-"));
}

}  // namespace
}  // namespace muster::core
