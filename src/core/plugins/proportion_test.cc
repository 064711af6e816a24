// proportion (proportion.cc) through whole scheduling cycles: queues share the cluster by
// weight, and a queue's capability caps what it places.

#include <string>

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
using test::MakeQueue;
using test::N;

// Two queues, each with one job of four 1-cpu pods (minMember 1), on one 4-cpu node.
BindMap RunTwoQueues(int w1, int w2) {
  Harness h;
  h.Add(N("n1").Obj());
  h.Add(MakeQueue("q1").Weight(w1).Obj());
  h.Add(MakeQueue("q2").Weight(w2).Obj());
  for (const char* q : {"q1", "q2"}) {
    std::string pg = std::string("job-") + q;
    h.Add(MakePodGroup("ns", pg).Queue(q).Obj());
    for (int i = 1; i <= 4; ++i) {
      h.Add(MakePod("ns", pg + "-" + std::to_string(i)).Group(pg).Req("cpu", "1").Obj());
    }
  }
  return Binds(h.Run());
}

TEST(ProportionTest, QueuesShareByWeight) {
  BindMap even = RunTwoQueues(1, 1);
  EXPECT_EQ(CountWithPrefix(even, "ns/job-q1-"), 2);
  EXPECT_EQ(CountWithPrefix(even, "ns/job-q2-"), 2);
  BindMap skewed = RunTwoQueues(3, 1);
  EXPECT_EQ(CountWithPrefix(skewed, "ns/job-q1-"), 3);
  EXPECT_EQ(CountWithPrefix(skewed, "ns/job-q2-"), 1);
}

TEST(ProportionTest, QueueCapabilityCapsPlacement) {
  Harness h;
  h.Add(N("n1").Cpu("8").Obj());
  h.Add(MakeQueue("q").Capability("cpu", "2").Obj());
  h.Add(MakePodGroup("ns", "pg").Queue("q").Obj());
  for (int i = 1; i <= 4; ++i) {
    h.Add(MakePod("ns", "pg-" + std::to_string(i)).Group("pg").Req("cpu", "1").Obj());
  }
  CycleResult r = h.Run();
  EXPECT_EQ(r.binds.size(), 2u);
}

}  // namespace
}  // namespace muster::core
