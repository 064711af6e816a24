// overcommit (overcommit.cc) through the enqueue action: a pod group is admitted while its
// minResources fit the cluster's resources times overcommit-factor, less what is in use.

#include <string>

#include "core/testing/harness.h"
#include "gtest/gtest.h"

namespace muster::core {
namespace {

using test::Harness;
using test::MakeNode;
using test::MakePodGroup;
using test::Phase;

// The phase an 8-cpu pod group reaches on a 10-cpu cluster with the given factor.
std::string PhaseWithFactor(const std::string& factor) {
  Harness h;
  h.Add(MakeNode("n1").Cpu("10").Memory("16Gi").Obj());
  h.Add(MakePodGroup("ns", "pg").MinResources("cpu", "8").Phase("Pending").Obj());
  return Phase(h.Run("actions: \"enqueue\"\ntiers:\n- plugins:\n  - name: overcommit\n"
                     "    arguments: {overcommit-factor: " + factor + "}\n"),
               "ns/pg");
}

TEST(OvercommitTest, AdmitsWhatFitsTheOvercommittedCluster) {
  EXPECT_EQ(PhaseWithFactor("1.2"), "Inqueue");  // 8 of 12
  EXPECT_EQ(PhaseWithFactor("0.8"), "Inqueue");  // below 1: the default 1.2 applies
  EXPECT_EQ(PhaseWithFactor("0.5"), "Inqueue");  // likewise, not 5 cpu
}

TEST(OvercommitTest, RejectsWhatExceedsIt) {
  Harness h;
  h.Add(MakeNode("n1").Cpu("10").Memory("16Gi").Obj());
  h.Add(MakePodGroup("ns", "pg").MinResources("cpu", "13").Phase("Pending").Obj());
  CycleResult r = h.Run(
      "actions: \"enqueue\"\ntiers:\n- plugins:\n  - name: overcommit\n"
      "    arguments: {overcommit-factor: 1.2}\n");
  EXPECT_NE(Phase(r, "ns/pg"), "Inqueue");
}

}  // namespace
}  // namespace muster::core
