#pragma once

// The Volcano Queue's state machine (vc-controller-manager's queue controller,
// pkg/controllers/queue/state/*.go and queue_controller_action.go in volcano-sh/volcano), as a
// pure function: a queue, the queues around it, what happened (a Command's OpenQueue or
// CloseQueue, or a sync when the queue or one of its PodGroups came, changed phase or went) and
// whether any PodGroup still names the queue give what the controller writes and asks next.
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
// A state Volcano has no name for is left as it is, and the request fails ("queue q state s is
// invalid"), as NewState gives no state to act in.
//
// What Volcano's controller does beside the state, which on a cluster without muster's API
// server nobody else does:
//   - every sync gives a queue without spec.parent the parent `root` (updateQueueParent);
//   - closing a queue closes its open children, each marked volcano.sh/closed-by-parent: "true"
//     (closeHierarchicalQueue); the root queue is never closed;
//   - opening a queue fails while its parent (other than root) is Closing or Closed, and
//     reopens the children its closing closed; the opened queue is marked closed-by-parent:
//     "false" (openHierarchicalQueue, openQueue);
//   - a sync closes a queue whose parent is Closing or Closed (marking it), and reopens one its
//     parent closed once the parent is Open again (syncHierarchicalQueue); a missing parent fails
//     the sync after its writes.
// A failed request is retried; after kQueueMaxRequeues retries it is dropped with a Warning event
// (handleQueueErr, with vc-controller-manager's --max-requeue-num default).
//
// Determinism: the same inputs give the same plan (children in the order `queues` lists them).

#include <optional>
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

// Why a queue request was made is a bus/v1alpha1 Event of job_state.h: kCommandIssuedEvent for
// a Command, kOutOfSyncEvent for a watch; a request the controller makes itself (a child closed
// with its parent) names none.

inline constexpr char kRootQueueName[] = "root";
inline constexpr char kClosedByParentAnnotation[] = "volcano.sh/closed-by-parent";
// Retries of a failed queue request before it is dropped (vc-controller-manager's
// --max-requeue-num default).
inline constexpr int kQueueMaxRequeues = 15;

// What the controller knows of a queue.
struct QueueFacts {
  std::string name;
  std::string parent;  // spec.parent; "" for none
  std::string state;   // status.state
  std::optional<std::string> closed_by_parent;  // the volcano.sh/closed-by-parent annotation

  bool operator==(const QueueFacts&) const = default;
};

// What to do, in this order: spec.parent, the children's marks and requests, status.state, the
// events, this queue's mark, its next request. Then, when `error` is set, the request failed.
struct QueuePlan {
  bool set_parent_root = false;             // write spec.parent: root
  std::vector<std::string> mark_children;   // annotate closed-by-parent: "true"
  std::vector<std::string> close_children;  // a CloseQueue request each
  std::vector<std::string> open_children;   // an OpenQueue request each
  std::string state;                        // status.state to have
  std::vector<PlannedEvent> events;         // on the queue
  std::optional<std::string> closed_by_parent;  // this queue's annotation to write
  std::string then;                         // this queue's next request ("": none)
  std::string error;                        // handleQueue's error; "" when the request succeeds

  bool operator==(const QueuePlan&) const = default;
};

// The plan for `action` (kOpenQueueAction, kCloseQueueAction, anything else a sync), made for
// `event`, on `queue`, while `has_pod_groups` PodGroups name it; `queues` is every queue known
// (its parent and children among them; `queue` itself may be there too).
QueuePlan PlanQueueAction(const QueueFacts& queue, std::string_view action, std::string_view event,
                          bool has_pod_groups, const std::vector<QueueFacts>& queues);

// True when carrying out `plan` on `queue` writes and asks nothing and fails not.
bool QueuePlanIsIdle(const QueueFacts& queue, const QueuePlan& plan);

// The Warning event's message when a request is dropped after its retries (handleQueueErr).
std::string QueueRequestDroppedMessage(std::string_view action, std::string_view error);

}  // namespace muster::controller
