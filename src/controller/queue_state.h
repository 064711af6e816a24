#pragma once

// The Volcano Queue's state machine (vc-controller-manager's queue controller,
// pkg/controllers/queue/state/*.go and queue_controller_action.go in volcano-sh/volcano), as a
// pure function: a queue's status.state, what happened (a Command's OpenQueue or CloseQueue, or a
// sync when the queue or one of its PodGroups came or went) and whether any PodGroup still names
// the queue give its next state and the events to record.
//
// Rationale. A queue is closed in two steps so that what it runs may finish: CloseQueue makes it
// Closing while PodGroups remain, and Closed once none does; OpenQueue opens it from any state.
// The scheduler admits (enqueues) and places nothing of a queue that is not Open (core enqueue
// and proportion), and the Job and PodGroup webhooks refuse new ones there (apiserver/admission).
//   - "", Open --CloseQueue--> Closing (PodGroups remain) or Closed; --sync--> Open
//   - Closing  --CloseQueue, sync--> Closed once no PodGroup remains
//   - Closed   --sync, CloseQueue--> Closed
//   - Unknown  --CloseQueue--> Closing or Closed; --sync--> Unknown
//   - any      --OpenQueue--> Open
// The root queue is never closed (closeHierarchicalQueue). A state Volcano has no name for is left
// as it is (NewState gives no state to act in).
// Not done: the closing of a closed queue's children and their reopening with their parent
// (volcano.sh/closed-by-parent).
//
// Determinism: the same inputs give the same plan.

#include <string>
#include <string_view>
#include <vector>

#include "controller/job_state.h"

namespace muster::controller {

// Queue states (scheduling/v1beta1 QueueState).
inline constexpr char kQueueOpen[] = "Open";
inline constexpr char kQueueClosed[] = "Closed";
inline constexpr char kQueueClosing[] = "Closing";
inline constexpr char kQueueUnknown[] = "Unknown";

// Actions on queues (bus/v1alpha1 Action).
inline constexpr char kOpenQueueAction[] = "OpenQueue";
inline constexpr char kCloseQueueAction[] = "CloseQueue";
inline constexpr char kSyncQueueAction[] = "SyncQueue";

struct QueuePlan {
  std::string state;  // status.state to have; written only when it differs from the current one
  std::vector<PlannedEvent> events;  // on the Queue

  bool operator==(const QueuePlan&) const = default;
};

// The plan for `action` (kOpenQueueAction, kCloseQueueAction, anything else a sync) on the queue
// `name` whose status.state is `state`, while `has_pod_groups` PodGroups name it.
QueuePlan PlanQueueAction(std::string_view name, std::string_view state, std::string_view action,
                          bool has_pod_groups);

}  // namespace muster::controller
