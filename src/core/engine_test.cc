// End-to-end tests of one or a few scheduling cycles: a cluster built from objects, Session::Run
// with a volcano-scheduler.conf, and the CycleResult a user would see (binds, evictions, PodGroup
// status, pod conditions and events). These are the session's own (task order's last tie-break,
// PodGroup phases at close); each plugin's and each action's are beside it (<name>_test.cc). The
// harness is core/testing/harness.h.

#include "core/testing/harness.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::core {
namespace {

using test::AddGang;
using test::Binds;
using test::Group;
using test::Harness;
using test::MakePod;
using test::MakePodGroup;
using test::N;
using test::Phase;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;

TEST(TaskOrderTest, NameIndexDecidesAmongEquals) {
  Harness h;
  h.Add(N("n1").Cpu("2").Obj());
  h.Add(MakePodGroup("ns", "pg").Obj());
  for (const char* name : {"pg-10", "pg-2", "pg-1"}) {
    h.Add(MakePod("ns", name).Group("pg").Req("cpu", "1").Obj());
  }
  EXPECT_THAT(Binds(h.Run()), ElementsAre(Pair("ns/pg-1", "n1"), Pair("ns/pg-2", "n1")));
}

// --- PodGroup phases at close ------------------------------------------------------------------

// One group in each phase close can give: the cluster PhasesAtClose runs a cycle over.
void AddOneGroupOfEachPhase(Harness& h) {
  h.Add(N("n1").Cpu("4").Obj());
  // Running: enough placed this cycle.
  AddGang(h, "fits", 2, 2, 0);
  // Inqueue: admitted, does not fit.
  h.Add(MakePodGroup("ns", "toobig").Obj());
  h.Add(MakePod("ns", "toobig-1").Group("toobig").Req("cpu", "64").Obj());
  // Pending: not admitted.
  h.Add(MakePodGroup("ns", "notadmitted").MinResources("cpu", "100").Obj());
  h.Add(MakePod("ns", "notadmitted-1").Group("notadmitted").Req("cpu", "1").Obj());
  // Completed: every pod succeeded.
  h.Add(MakePodGroup("ns", "done").Phase("Running").Obj());
  h.Add(MakePod("ns", "done-1")
            .Group("done")
            .Req("cpu", "1")
            .NodeName("n1")
            .Phase("Succeeded")
            .Obj());
  // Unknown: some pods run, but the gang minimum is no longer met and the rest cannot fit.
  h.Add(MakePodGroup("ns", "broken").MinMember(2).Phase("Running").Obj());
  h.Add(MakePod("ns", "broken-1").Group("broken").Req("cpu", "1").RunningOn("n1").Obj());
  h.Add(MakePod("ns", "broken-2").Group("broken").Req("cpu", "64").Obj());
}

TEST(PodGroupPhaseTest, PhasesAtClose) {
  Harness h;
  AddOneGroupOfEachPhase(h);
  CycleResult r = h.Run();
  EXPECT_EQ(Phase(r, "ns/fits"), "Running");
  EXPECT_EQ(Phase(r, "ns/toobig"), "Inqueue");
  EXPECT_EQ(Phase(r, "ns/notadmitted"), "Pending");
  EXPECT_EQ(Phase(r, "ns/done"), "Completed");
  EXPECT_EQ(Phase(r, "ns/broken"), "Unknown");
  const auto* broken = Group(r, "ns/broken");
  EXPECT_EQ(broken->running, 1);
  const auto* done = Group(r, "ns/done");
  EXPECT_EQ(done->succeeded, 1);
  // The phase sticks in the cluster for the next cycle: admitted groups are not admitted again.
  EXPECT_EQ(h.cluster().FindJob("ns/toobig")->phase, PodGroupPhase::kInqueue);
  EXPECT_EQ(h.cluster().FindJob("ns/fits")->phase, PodGroupPhase::kRunning);
}

TEST(PodGroupPhaseTest, WithoutDiagnosticsTheSameCycleDecidesTheSame) {
  // Binds, phases and condition types as with diagnostics; no events, pod conditions or
  // condition texts.
  Harness loud, quiet;
  AddOneGroupOfEachPhase(loud);
  AddOneGroupOfEachPhase(quiet);
  CycleResult r = loud.Run();
  SessionOptions options;
  options.diagnostics = false;
  CycleResult q = quiet.Run(DefaultSchedulerConf(), options);
  EXPECT_EQ(Binds(q), Binds(r));
  ASSERT_EQ(q.pod_groups.size(), r.pod_groups.size());
  for (const auto& st : r.pod_groups) {
    SCOPED_TRACE(st.pod_group);
    const auto* other = Group(q, st.pod_group);
    ASSERT_NE(other, nullptr);
    EXPECT_EQ(other->phase, st.phase);
    ASSERT_EQ(other->condition.has_value(), st.condition.has_value());
    if (st.condition) {
      EXPECT_EQ(other->condition->type, st.condition->type);
      EXPECT_EQ(other->condition->message, "");
    }
  }
  EXPECT_THAT(q.events, IsEmpty());
  EXPECT_THAT(q.pod_conditions, IsEmpty());
  EXPECT_FALSE(r.events.empty());
}

}  // namespace
}  // namespace muster::core
