#include "controller/queue_state.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::controller {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::string NextQueueState(std::string_view state, std::string_view action, bool has_pod_groups) {
  return PlanQueueAction("team", state, action, has_pod_groups).state;
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
    QueuePlan plan = PlanQueueAction("team", state, kOpenQueueAction, true);
    EXPECT_EQ(plan.state, "Open") << state;
    EXPECT_THAT(plan.events, IsEmpty()) << state;
  }
}

TEST(QueueStateTest, SyncLeavesOpenClosedAndUnknownQueuesAsTheyAre) {
  EXPECT_EQ(NextQueueState("", kSyncQueueAction, false), "Open");
  EXPECT_EQ(NextQueueState("Open", kSyncQueueAction, true), "Open");
  EXPECT_EQ(NextQueueState("Closed", kSyncQueueAction, false), "Closed");
  EXPECT_EQ(NextQueueState("Unknown", kSyncQueueAction, false), "Unknown");
  EXPECT_EQ(NextQueueState("Unknown", kCloseQueueAction, true), "Closing");
}

TEST(QueueStateTest, ClosingAnOpenQueueIsRecordedOnIt) {
  EXPECT_THAT(PlanQueueAction("team", "Open", kCloseQueueAction, false).events,
              ElementsAre(kClosedEvent));
  EXPECT_THAT(PlanQueueAction("team", "Open", kCloseQueueAction, true).events,
              ElementsAre(kClosedEvent));
  // Already closing or closed: no change, no event.
  EXPECT_THAT(PlanQueueAction("team", "Closing", kCloseQueueAction, false).events, IsEmpty());
  EXPECT_THAT(PlanQueueAction("team", "Closed", kCloseQueueAction, false).events, IsEmpty());
}

TEST(QueueStateTest, TheRootQueueIsNeverClosed) {
  QueuePlan plan = PlanQueueAction("root", "Open", kCloseQueueAction, false);
  EXPECT_EQ(plan.state, "Open");
  EXPECT_THAT(plan.events, IsEmpty());
}

TEST(QueueStateTest, AStateVolcanoHasNoNameForIsLeftAlone) {
  EXPECT_EQ(NextQueueState("Draining", kOpenQueueAction, false), "Draining");
  EXPECT_EQ(NextQueueState("Draining", kCloseQueueAction, false), "Draining");
}

}  // namespace
}  // namespace muster::controller
