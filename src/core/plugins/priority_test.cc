// priority (priority.cc) through scheduling cycles: higher-priority jobs, and within a job
// higher-priority tasks, go first.

#include "core/testing/harness.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::core {
namespace {

using test::Binds;
using test::Harness;
using test::MakePod;
using test::MakePodGroup;
using test::MakePriorityClass;
using test::N;
using ::testing::ElementsAre;
using ::testing::Pair;

TEST(PriorityTest, HigherPriorityJobGoesFirst) {
  Harness h;
  h.Add(N("n1").Cpu("1").Obj());
  h.Add(MakePriorityClass("high", 100));
  h.Add(MakePodGroup("ns", "a").Obj());
  h.Add(MakePod("ns", "a-1").Group("a").Req("cpu", "1").Obj());
  h.Add(MakePodGroup("ns", "b").PriorityClass("high").Obj());
  h.Add(MakePod("ns", "b-1").Group("b").Req("cpu", "1").Obj());
  EXPECT_THAT(Binds(h.Run()), ElementsAre(Pair("ns/b-1", "n1")));

  Harness same;  // without the class, uid order: a first
  same.Add(N("n1").Cpu("1").Obj());
  same.Add(MakePodGroup("ns", "a").Obj());
  same.Add(MakePod("ns", "a-1").Group("a").Req("cpu", "1").Obj());
  same.Add(MakePodGroup("ns", "b").Obj());
  same.Add(MakePod("ns", "b-1").Group("b").Req("cpu", "1").Obj());
  EXPECT_THAT(Binds(same.Run()), ElementsAre(Pair("ns/a-1", "n1")));
}

TEST(PriorityTest, HigherPriorityTaskGoesFirstWithinAJob) {
  Harness h;
  h.Add(N("n1").Cpu("2").Obj());
  h.Add(MakePodGroup("ns", "pg").Obj());
  h.Add(MakePod("ns", "pg-1").Group("pg").Priority(1).Req("cpu", "1").Obj());
  h.Add(MakePod("ns", "pg-2").Group("pg").Priority(10).Req("cpu", "1").Obj());
  h.Add(MakePod("ns", "pg-3").Group("pg").Priority(5).Req("cpu", "1").Obj());
  EXPECT_THAT(Binds(h.Run()), ElementsAre(Pair("ns/pg-2", "n1"), Pair("ns/pg-3", "n1")));
}

}  // namespace
}  // namespace muster::core
