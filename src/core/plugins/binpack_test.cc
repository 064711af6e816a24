// binpack (binpack.cc) through scheduling cycles: it prefers the fuller node, GPUs included.

#include <string_view>

#include "core/testing/harness.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::core {
namespace {

using test::Binds;
using test::Harness;
using test::kNoBackfillConf;
using test::MakeNode;
using test::MakePod;
using test::MakePodGroup;
using test::MustParse;
using ::testing::ElementsAre;
using ::testing::Pair;

constexpr char kBinpackConf[] = R"(
actions: "enqueue, allocate"
tiers:
- plugins: [{name: priority}, {name: gang}]
- plugins: [{name: predicates}, {name: binpack}]
)";

TEST(BinpackTest, PrefersTheFullerNode) {
  auto run = [](std::string_view conf, bool gpu) {
    Harness h;
    h.Add(MakeNode("n1").Cpu("8").Memory("16Gi").Gpus(8).Obj());
    h.Add(MakeNode("n2").Cpu("8").Memory("16Gi").Gpus(8).Obj());
    auto busy = MakePod("other", "busy").RunningOn("n2");
    auto p = MakePod("ns", "p").Group("pg");
    if (gpu) {
      busy.Gpus(4);
      p.Gpus(1);
    } else {
      busy.Req("cpu", "4").Req("memory", "8Gi");
      p.Req("cpu", "1").Req("memory", "1Gi");
    }
    h.Add(busy.Obj());
    h.Add(MakePodGroup("ns", "pg").Obj());
    h.Add(p.Obj());
    return Binds(h.Run(MustParse(conf)));
  };
  EXPECT_THAT(run(kBinpackConf, false), ElementsAre(Pair("ns/p", "n2")));
  EXPECT_THAT(run(kBinpackConf, true), ElementsAre(Pair("ns/p", "n2")));
  // The default nodeorder spreads instead.
  EXPECT_THAT(run(kNoBackfillConf, false), ElementsAre(Pair("ns/p", "n1")));
}

}  // namespace
}  // namespace muster::core
