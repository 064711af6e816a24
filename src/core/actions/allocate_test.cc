// allocate (allocate.cc) through scheduling cycles: its strictOrder argument (strict FIFO per
// queue) and the checking of its arguments when the conf is read.

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "core/testing/harness.h"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::core {
namespace {

using test::AddBlockedGang;
using test::AllocateConf;
using test::At;
using test::Binds;
using test::Harness;
using test::MakePod;
using test::MakePodGroup;
using test::MakeQueue;
using test::N;
using ::testing::_;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

TEST(AllocateStrictOrderTest, NothingGoesAheadOfAHeadThatDoesNotFit) {
  auto run = [](std::string_view arguments) {
    Harness h;
    AddBlockedGang(h, {{"c", 1, ""}});
    return Binds(h.Run(AllocateConf(arguments)));
  };
  EXPECT_THAT(run("{strictOrder: true}"), IsEmpty());
  EXPECT_THAT(run("{strictOrder: false}"), ElementsAre(Pair("ns/c-1", "n2")));
  EXPECT_THAT(run("{}"), ElementsAre(Pair("ns/c-1", "n2")));

  // Once A is gone the head binds, and what follows it too while it fits.
  Harness h;
  AddBlockedGang(h, {{"c", 1, ""}});
  h.Remove("ns/a-1");
  EXPECT_THAT(Binds(h.Run(AllocateConf("{strictOrder: true}"))),
              UnorderedElementsAre(Pair("ns/g-1", _), Pair("ns/g-2", _)));
}

TEST(AllocateStrictOrderTest, AJobEnqueueHasNotAdmittedHoldsItsPlace) {
  // As EnqueueTest.MinResourcesAboveQueueCapabilityStaysPending, in strict order: big, first,
  // stays Pending and small, which fits, waits behind it.
  auto run = [](bool strict) {
    Harness h;
    h.Add(N("n1").Cpu("16").Obj());
    h.Add(MakeQueue("q").Capability("cpu", "2").Obj());
    h.Add(MakePodGroup("ns", "big").Queue("q").MinResources("cpu", "4").Created(At(0)).Obj());
    h.Add(MakePod("ns", "big-1").Group("big").Req("cpu", "1").Obj());
    h.Add(MakePodGroup("ns", "small").Queue("q").MinResources("cpu", "2").Created(At(1)).Obj());
    h.Add(MakePod("ns", "small-1").Group("small").Req("cpu", "1").Obj());
    SchedulerConf conf = DefaultSchedulerConf();
    if (strict) conf.configurations["allocate"]["strictOrder"] = "true";
    return Binds(h.Run(conf));
  };
  EXPECT_THAT(run(false), ElementsAre(Pair("ns/small-1", "n1")));
  EXPECT_THAT(run(true), IsEmpty());
}

TEST(AllocateStrictOrderTest, BadArgumentsAreRejectedWhenTheConfIsRead) {
  for (const char* arguments :
       {"{strictOrder: maybe}", "{reserveGpus: -1}", "{reserveGpus: x}", "{reserveAfter: soon}"}) {
    absl::StatusOr<SchedulerConf> conf = ParseSchedulerConf(fmt::format(R"(
actions: "allocate"
configurations:
- name: allocate
  arguments: {}
)",
                                                                        arguments));
    EXPECT_FALSE(conf.ok()) << arguments;
    EXPECT_THAT(std::string(conf.status().message()),
                ::testing::HasSubstr("configuration \"allocate\": "))
        << arguments;
  }
}

}  // namespace
}  // namespace muster::core
