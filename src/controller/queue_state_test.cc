// The Volcano Queue's state machine (queue_state.h): states, the hierarchy's closing and
// reopening, spec.parent defaulting, and the failures that are retried.

#include "controller/queue_state.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::controller {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

const QueueFacts kOpenRoot{"root", "", "Open", std::nullopt};

// The plan for queue `team` (parent root, which is Open) in `state`.
QueuePlan PlanForTeam(std::string_view state, std::string_view action, bool has_pod_groups) {
  QueueFacts team{"team", "root", std::string(state), std::nullopt};
  return PlanQueueAction(team, action, kOutOfSyncEvent, has_pod_groups, {kOpenRoot, team});
}

std::string NextQueueState(std::string_view state, std::string_view action, bool has_pod_groups) {
  return PlanForTeam(state, action, has_pod_groups).state;
}

const PlannedEvent kClosedEvent{"Normal", "CloseQueue", "Close queue succeed"};

TEST(QueueStateTest, CloseQueueClosesAtOnceOrOnceThePodGroupsAreGone) {
  EXPECT_EQ(NextQueueState("Open", kCloseQueueAction, false), "Closed");
  EXPECT_EQ(NextQueueState("Open", kCloseQueueAction, true), "Closing");
  EXPECT_EQ(NextQueueState("", kCloseQueueAction, true), "Closing");  // no state yet: open
  // Closing waits for its PodGroups, on a sync or another CloseQueue.
  EXPECT_EQ(NextQueueState("Closing", kSyncQueueAction, true), "Closing");
  EXPECT_EQ(NextQueueState("Closing", kSyncQueueAction, false), "Closed");
  EXPECT_EQ(NextQueueState("Closing", kCloseQueueAction, false), "Closed");
  EXPECT_EQ(NextQueueState("Closed", kCloseQueueAction, true), "Closed");
  EXPECT_EQ(NextQueueState("Closed", kSyncQueueAction, true), "Closed");
}

TEST(QueueStateTest, OpenQueueOpensFromAnyState) {
  for (std::string_view state : {"", "Open", "Closing", "Closed", "Unknown"}) {
    QueuePlan plan = PlanForTeam(state, kOpenQueueAction, true);
    EXPECT_EQ(plan.state, "Open") << state;
    EXPECT_THAT(plan.events, IsEmpty()) << state;
    EXPECT_EQ(plan.error, "") << state;
  }
}

// On a cluster a new queue has no status.state until the controller's first sync gives it Open.
TEST(QueueStateTest, SyncOpensANewQueueAndLeavesClosedAndUnknownOnesAsTheyAre) {
  EXPECT_EQ(NextQueueState("", kSyncQueueAction, false), "Open");
  EXPECT_EQ(NextQueueState("Open", kSyncQueueAction, true), "Open");
  EXPECT_EQ(NextQueueState("Closed", kSyncQueueAction, false), "Closed");
  EXPECT_EQ(NextQueueState("Unknown", kSyncQueueAction, false), "Unknown");
  EXPECT_EQ(NextQueueState("Unknown", kCloseQueueAction, true), "Closing");
}

TEST(QueueStateTest, ClosingAnOpenQueueIsRecordedOnIt) {
  EXPECT_THAT(PlanForTeam("Open", kCloseQueueAction, false).events, ElementsAre(kClosedEvent));
  EXPECT_THAT(PlanForTeam("Open", kCloseQueueAction, true).events, ElementsAre(kClosedEvent));
  // Already closing or closed: no change, no event.
  EXPECT_THAT(PlanForTeam("Closing", kCloseQueueAction, false).events, IsEmpty());
  EXPECT_THAT(PlanForTeam("Closed", kCloseQueueAction, false).events, IsEmpty());
}

TEST(QueueStateTest, TheRootQueueIsNeverClosed) {
  QueuePlan plan = PlanQueueAction(kOpenRoot, kCloseQueueAction, kCommandIssuedEvent, false,
                                   {kOpenRoot, {"team", "root", "Open", std::nullopt}});
  EXPECT_EQ(plan.state, "Open");
  EXPECT_THAT(plan.events, IsEmpty());
  EXPECT_THAT(plan.close_children, IsEmpty());
  EXPECT_TRUE(QueuePlanIsIdle(kOpenRoot, plan));
}

TEST(QueueStateTest, AStateVolcanoHasNoNameForIsLeftAloneAndTheRequestFails) {
  QueuePlan plan = PlanForTeam("Draining", kOpenQueueAction, false);
  EXPECT_EQ(plan.state, "Draining");
  EXPECT_EQ(plan.error, "queue team state Draining is invalid");
  EXPECT_EQ(NextQueueState("Draining", kCloseQueueAction, false), "Draining");
}

// updateQueueParent: a queue without spec.parent is root's child, written so on its first sync;
// the root queue itself has none.
TEST(QueueStateTest, ASyncGivesAQueueWithoutParentTheParentRoot) {
  QueueFacts fresh{"team", "", "", std::nullopt};
  QueuePlan plan = PlanQueueAction(fresh, kSyncQueueAction, kOutOfSyncEvent, false,
                                   {kOpenRoot, fresh});
  EXPECT_TRUE(plan.set_parent_root);
  EXPECT_EQ(plan.state, "Open");
  EXPECT_EQ(plan.error, "");
  QueueFacts root{"root", "", "", std::nullopt};
  plan = PlanQueueAction(root, kSyncQueueAction, kOutOfSyncEvent, false, {root});
  EXPECT_FALSE(plan.set_parent_root);
  EXPECT_EQ(plan.state, "Open");
  // A queue that names its parent keeps it; one already Open with root as parent needs nothing.
  QueueFacts settled{"team", "root", "Open", std::nullopt};
  EXPECT_TRUE(QueuePlanIsIdle(settled, PlanQueueAction(settled, kSyncQueueAction,
                                                       kOutOfSyncEvent, false,
                                                       {kOpenRoot, settled})));
}

// A parent that is not there fails the sync after its state is written (syncHierarchicalQueue
// reads the parent last), with handleQueue's words.
TEST(QueueStateTest, AMissingParentFailsTheSync) {
  QueueFacts orphan{"team", "org", "", std::nullopt};
  QueuePlan plan = PlanQueueAction(orphan, kSyncQueueAction, kOutOfSyncEvent, false, {kOpenRoot});
  EXPECT_EQ(plan.state, "Open");
  EXPECT_EQ(plan.error,
            "sync queue team failed for queue.scheduling.volcano.sh \"org\" not found, event is "
            "OutOfSync, action is SyncQueue");
  EXPECT_EQ(QueueRequestDroppedMessage(kSyncQueueAction, "x"), "SyncQueue queue failed for x");
}

// closeHierarchicalQueue: closing org marks its open children closed-by-parent and closes them;
// a child closed already is left alone.
TEST(QueueStateTest, ClosingAParentClosesItsOpenChildren) {
  const QueueFacts org{"org", "root", "Open", std::nullopt};
  const std::vector<QueueFacts> tree = {
      kOpenRoot,
      org,
      {"team-a", "org", "Open", std::nullopt},
      {"team-b", "org", "Closed", std::nullopt},
      {"team-c", "org", "Open", "true"},
      {"lab", "root", "Open", std::nullopt},
  };
  QueuePlan plan = PlanQueueAction(org, kCloseQueueAction, kCommandIssuedEvent, false, tree);
  EXPECT_EQ(plan.state, "Closed");
  EXPECT_THAT(plan.mark_children, ElementsAre("team-a"));
  EXPECT_THAT(plan.close_children, ElementsAre("team-a", "team-c"));
  EXPECT_THAT(plan.events, ElementsAre(kClosedEvent));
}

// openHierarchicalQueue: opening org reopens what its closing closed, and marks org itself
// "false"; a child cannot open while its parent is closed.
TEST(QueueStateTest, OpeningAParentReopensWhatItsClosingClosed) {
  const QueueFacts org{"org", "root", "Closed", std::nullopt};
  const QueueFacts team_a{"team-a", "org", "Closed", "true"};
  const std::vector<QueueFacts> tree = {kOpenRoot, org, team_a,
                                        {"team-b", "org", "Closed", std::nullopt}};
  QueuePlan plan = PlanQueueAction(org, kOpenQueueAction, kCommandIssuedEvent, false, tree);
  EXPECT_EQ(plan.state, "Open");
  EXPECT_THAT(plan.open_children, ElementsAre("team-a"));
  EXPECT_EQ(plan.closed_by_parent, "false");
  EXPECT_EQ(plan.error, "");

  plan = PlanQueueAction(team_a, kOpenQueueAction, "", false, tree);
  EXPECT_EQ(plan.state, "Closed");
  EXPECT_FALSE(plan.closed_by_parent);
  EXPECT_EQ(plan.error,
            "sync queue team-a failed for Failed to open queue team-a because its parent queue "
            "org is closing or closed. Open the parent queue first., event is , action is "
            "OpenQueue");
}

// syncHierarchicalQueue: a queue synced under a closed parent is marked and closed; one its
// parent closed is reopened on a sync once the parent is Open; one closed by its own Command is
// not.
TEST(QueueStateTest, ASyncFollowsTheParentsState) {
  const QueueFacts team{"team", "org", "Open", std::nullopt};
  QueuePlan plan = PlanQueueAction(team, kSyncQueueAction, kOutOfSyncEvent, true,
                                   {kOpenRoot, {"org", "root", "Closing", std::nullopt}, team});
  EXPECT_EQ(plan.closed_by_parent, "true");
  EXPECT_EQ(plan.then, kCloseQueueAction);

  const std::vector<QueueFacts> open_org = {kOpenRoot, {"org", "root", "Open", "false"}};
  QueueFacts closed_by_org{"team", "org", "Closed", "true"};
  plan = PlanQueueAction(closed_by_org, kSyncQueueAction, kOutOfSyncEvent, false, open_org);
  EXPECT_EQ(plan.then, kOpenQueueAction);
  QueueFacts closed_by_itself{"team", "org", "Closed", std::nullopt};
  plan = PlanQueueAction(closed_by_itself, kSyncQueueAction, kOutOfSyncEvent, false, open_org);
  EXPECT_TRUE(QueuePlanIsIdle(closed_by_itself, plan));
}

}  // namespace
}  // namespace muster::controller
