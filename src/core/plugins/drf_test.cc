// drf (drf.cc) through a scheduling cycle: the job with the lower dominant share goes first.

#include <string>
#include <utility>

#include "core/testing/harness.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::core {
namespace {

using test::BindMap;
using test::Binds;
using test::CountWithPrefix;
using test::Harness;
using test::MakePod;
using test::MakePodGroup;
using test::MustParse;
using test::N;

// The default conf without drf (to show what drf changes).
constexpr char kNoDrfConf[] = R"(
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: overcommit}, {name: predicates}, {name: proportion}, {name: nodeorder}]
)";

// Jobs a (3 running) and b (1 running), each with 4 more 1-cpu pods, on an 8-cpu node.
BindMap RunDrfCase(const SchedulerConf& conf) {
  Harness h;
  h.Add(N("n1").Cpu("8").Memory("16Gi").Obj());
  for (auto [pg, running] : {std::pair{"a", 3}, std::pair{"b", 1}}) {
    h.Add(MakePodGroup("ns", pg).Phase("Running").Obj());
    for (int i = 0; i < running + 4; ++i) {
      auto pod = MakePod("ns", std::string(pg) + "-" + std::to_string(i)).Group(pg).Req("cpu", "1");
      if (i < running) pod.RunningOn("n1");
      h.Add(pod.Obj());
    }
  }
  return Binds(h.Run(conf));
}

TEST(DrfTest, LowerDominantShareGoesFirst) {
  BindMap drf = RunDrfCase(DefaultSchedulerConf());
  EXPECT_EQ(CountWithPrefix(drf, "ns/b-"), 3);  // b: 1/8 -> 4/8, a: 3/8 -> 4/8
  EXPECT_EQ(CountWithPrefix(drf, "ns/a-"), 1);
  BindMap plain = RunDrfCase(MustParse(kNoDrfConf));
  EXPECT_EQ(CountWithPrefix(plain, "ns/a-"), 4);  // creation, then uid: a first every time
  EXPECT_EQ(CountWithPrefix(plain, "ns/b-"), 0);
}

}  // namespace
}  // namespace muster::core
