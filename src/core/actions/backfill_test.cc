// backfill (backfill.cc) through scheduling cycles: best-effort pods are placed by backfill
// alone.

#include "core/testing/harness.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::core {
namespace {

using test::Binds;
using test::Harness;
using test::kNoBackfillConf;
using test::MakePod;
using test::MakePodGroup;
using test::MustParse;
using test::N;
using test::Phase;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;

TEST(BackfillTest, BestEffortPodsArePlacedOnlyByBackfill) {
  auto run = [](const SchedulerConf& conf) {
    Harness h;
    h.Add(N("n1").Obj());
    h.Add(MakePod("other", "hog").Req("cpu", "4").Req("memory", "8Gi").RunningOn("n1").Obj());
    h.Add(MakePodGroup("ns", "pg").Obj());
    h.Add(MakePod("ns", "be").Group("pg").Obj());  // no requests
    return h.Run(conf);
  };
  CycleResult r = run(DefaultSchedulerConf());
  EXPECT_THAT(Binds(r), ElementsAre(Pair("ns/be", "n1")));  // a full node still takes it
  EXPECT_EQ(Phase(r, "ns/pg"), "Running");
  r = run(MustParse(kNoBackfillConf));
  EXPECT_THAT(Binds(r), IsEmpty());
}

}  // namespace
}  // namespace muster::core
