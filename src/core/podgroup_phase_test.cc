// Tests for the PodGroup phase mapping (podgroup_phase.h).

#include "core/podgroup_phase.h"

#include <string>

#include "core/cluster.h"
#include "core/testing/builders.h"
#include "gtest/gtest.h"

namespace muster::core {
namespace {

using test::MakePodGroup;

TEST(PodGroupPhaseMapping, EachVolcanoNameRoundTrips) {
  for (std::string_view name : {"Pending", "Inqueue", "Running", "Unknown", "Completed"}) {
    PodGroupPhase phase = ParsePodGroupPhase(name);
    EXPECT_NE(phase, PodGroupPhase::kOther) << name;
    EXPECT_EQ(PodGroupPhaseName(phase), name);
  }
  EXPECT_EQ(ParsePodGroupPhase("Inqueue"), PodGroupPhase::kInqueue);
  EXPECT_EQ(ParsePodGroupPhase("Completed"), PodGroupPhase::kCompleted);
}

TEST(PodGroupPhaseMapping, AnyOtherTextIsOtherAndHasNoName) {
  for (std::string_view text : {"", "pending", "Pending ", "Scheduling", "Failed"}) {
    EXPECT_EQ(ParsePodGroupPhase(text), PodGroupPhase::kOther) << text;
  }
  EXPECT_EQ(PodGroupPhaseName(PodGroupPhase::kOther), "");
}

TEST(PodGroupPhaseMapping, JobKeepsTheTextOfAPhaseItHasNoNameFor) {
  JobInfo j;
  j.SetPhaseText("Scheduling");
  EXPECT_EQ(j.phase, PodGroupPhase::kOther);
  EXPECT_EQ(j.PhaseText(), "Scheduling");
  EXPECT_FALSE(j.IsPending());
  j.SetPhaseText("Running");
  EXPECT_EQ(j.phase, PodGroupPhase::kRunning);
  EXPECT_EQ(j.PhaseText(), "Running");
  j.phase = PodGroupPhase::kInqueue;
  EXPECT_EQ(j.PhaseText(), "Inqueue");
}

TEST(PodGroupPhaseMapping, ClusterPassesAnUnknownPhaseThroughAndReadsNoneAsPending) {
  Cluster c;
  c.UpsertPodGroup(MakePodGroup("ns", "odd").Phase("Suspended").Obj());
  c.UpsertPodGroup(MakePodGroup("ns", "bare").Obj());
  const JobInfo* odd = c.FindJob("ns/odd");
  ASSERT_NE(odd, nullptr);
  EXPECT_EQ(odd->phase, PodGroupPhase::kOther);
  EXPECT_EQ(odd->PhaseText(), "Suspended");
  const JobInfo* bare = c.FindJob("ns/bare");
  ASSERT_NE(bare, nullptr);
  EXPECT_EQ(bare->phase, PodGroupPhase::kPending);
  EXPECT_TRUE(bare->IsPending());
}

}  // namespace
}  // namespace muster::core
