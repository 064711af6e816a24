// The Volcano Queue's state machine (queue_state.h), after Volcano's
// pkg/controllers/queue/state/{open,closed,closing,unknown}.go and queue_controller_action.go
// (syncQueue, openQueue, closeQueue and their hierarchical parts).

#include "controller/queue_state.h"

#include "fmt/format.h"

namespace muster::controller {
namespace {

bool ClosedOrClosing(std::string_view state) {
  return state == kQueueClosed || state == kQueueClosing;
}

const QueueFacts* FindQueueFacts(const std::vector<QueueFacts>& queues, std::string_view name) {
  for (const QueueFacts& q : queues) {
    if (q.name == name) return &q;
  }
  return nullptr;
}

// A lister's NotFound, as client-go words it for the queue resource.
std::string QueueListerNotFound(std::string_view name) {
  return fmt::format("queue.scheduling.volcano.sh \"{}\" not found", name);
}

// handleQueue's wrapping of what a state's Execute returned.
std::string ExecuteFailed(const QueueFacts& queue, std::string_view action, std::string_view event,
                          std::string_view why) {
  return fmt::format("sync queue {} failed for {}, event is {}, action is {}", queue.name, why,
                     event, action);
}

// SyncQueue(queue, state `target`): updateQueueParent, the state, syncHierarchicalQueue.
void PlanSync(const QueueFacts& queue, std::string_view action, std::string_view event,
              const std::string& target, const std::vector<QueueFacts>& queues, QueuePlan& plan) {
  std::string parent = queue.parent;
  if (queue.name != kRootQueueName && parent.empty()) {
    plan.set_parent_root = true;
    parent = kRootQueueName;
  }
  plan.state = target;
  if (queue.name == kRootQueueName) return;
  const QueueFacts* up = FindQueueFacts(queues, parent);
  if (up == nullptr) {
    plan.error = ExecuteFailed(queue, action, event, QueueListerNotFound(parent));
    return;
  }
  if (ClosedOrClosing(up->state)) {
    if (!ClosedOrClosing(target)) {
      if (queue.closed_by_parent != "true") plan.closed_by_parent = "true";
      plan.then = kCloseQueueAction;
    }
  } else if (up->state == kQueueOpen) {
    if (ClosedOrClosing(target) && queue.closed_by_parent == "true") plan.then = kOpenQueueAction;
  }
}

// OpenQueue(queue): openHierarchicalQueue, the state Open, the mark "false".
void PlanOpen(const QueueFacts& queue, std::string_view action, std::string_view event,
              const std::vector<QueueFacts>& queues, QueuePlan& plan) {
  if (!queue.parent.empty() && queue.parent != kRootQueueName) {
    const QueueFacts* up = FindQueueFacts(queues, queue.parent);
    if (up == nullptr) {
      plan.error = ExecuteFailed(queue, action, event,
                                 fmt::format("Failed to get parent queue {} of queue {}: {}",
                                             queue.parent, queue.name,
                                             QueueListerNotFound(queue.parent)));
      return;
    }
    if (ClosedOrClosing(up->state)) {
      plan.error = ExecuteFailed(
          queue, action, event,
          fmt::format("Failed to open queue {} because its parent queue {} is closing or closed. "
                      "Open the parent queue first.",
                      queue.name, queue.parent));
      return;
    }
  }
  for (const QueueFacts& child : queues) {
    if (child.name != queue.name && child.parent == queue.name &&
        child.closed_by_parent == "true") {
      plan.open_children.push_back(child.name);
    }
  }
  plan.state = kQueueOpen;
  if (queue.closed_by_parent != "false") plan.closed_by_parent = "false";
}

// CloseQueue(queue, state `target`): closeHierarchicalQueue, the state, its event.
void PlanClose(const QueueFacts& queue, const std::string& target,
               const std::vector<QueueFacts>& queues, QueuePlan& plan) {
  if (queue.name == kRootQueueName) return;  // "Root queue cannot be closed"
  for (const QueueFacts& child : queues) {
    if (child.name == queue.name || child.parent != queue.name || ClosedOrClosing(child.state)) {
      continue;
    }
    if (child.closed_by_parent != "true") plan.mark_children.push_back(child.name);
    plan.close_children.push_back(child.name);
  }
  plan.state = target;
  if (plan.state != queue.state) {
    plan.events.push_back({"Normal", kCloseQueueAction, "Close queue succeed"});
  }
}

}  // namespace

QueuePlan PlanQueueAction(const QueueFacts& queue, std::string_view action, std::string_view event,
                          bool has_pod_groups, const std::vector<QueueFacts>& queues) {
  QueuePlan plan;
  plan.state = queue.state;
  const std::string_view state = queue.state;
  const bool open = state.empty() || state == kQueueOpen;
  if (!open && state != kQueueClosed && state != kQueueClosing && state != kQueueUnknown) {
    plan.error = fmt::format("queue {} state {} is invalid", queue.name, state);
    return plan;
  }
  const std::string drained = has_pod_groups ? kQueueClosing : kQueueClosed;
  if (action == kOpenQueueAction) {
    if (open) {
      PlanSync(queue, action, event, kQueueOpen, queues, plan);
    } else {
      PlanOpen(queue, action, event, queues, plan);
    }
  } else if (action == kCloseQueueAction) {
    if (open || state == kQueueUnknown) {
      PlanClose(queue, drained, queues, plan);
    } else {
      PlanSync(queue, action, event, state == kQueueClosing ? drained : kQueueClosed, queues,
               plan);
    }
  } else {
    std::string target = std::string(state);
    if (open) {
      target = kQueueOpen;
    } else if (state == kQueueClosing) {
      target = drained;
    }
    PlanSync(queue, action, event, target, queues, plan);
  }
  return plan;
}

bool QueuePlanIsIdle(const QueueFacts& queue, const QueuePlan& plan) {
  return !plan.set_parent_root && plan.mark_children.empty() && plan.close_children.empty() &&
         plan.open_children.empty() && plan.state == queue.state && plan.events.empty() &&
         !plan.closed_by_parent && plan.then.empty() && plan.error.empty();
}

std::string QueueRequestDroppedMessage(std::string_view action, std::string_view error) {
  return fmt::format("{} queue failed for {}", action, error);
}

}  // namespace muster::controller
