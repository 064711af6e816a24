#include "controller/queue_state.h"

namespace muster::controller {

QueuePlan PlanQueueAction(std::string_view name, std::string_view state, std::string_view action,
                          bool has_pod_groups) {
  QueuePlan plan;
  plan.state = std::string(state);
  const bool open = state.empty() || state == kQueueOpen;
  if (!open && state != kQueueClosed && state != kQueueClosing && state != kQueueUnknown) {
    return plan;
  }
  const std::string_view drained = has_pod_groups ? kQueueClosing : kQueueClosed;
  if (action == kOpenQueueAction) {
    plan.state = kQueueOpen;
  } else if (action == kCloseQueueAction) {
    if (open || state == kQueueUnknown) {
      // closeQueue: the root queue stays open; a queue that changes state says so.
      if (name == "root") return plan;
      plan.state = std::string(drained);
      if (plan.state != state) {
        plan.events.push_back({"Normal", kCloseQueueAction, "Close queue succeed"});
      }
    } else {
      plan.state = state == kQueueClosing ? std::string(drained) : kQueueClosed;
    }
  } else if (open) {
    plan.state = kQueueOpen;
  } else if (state == kQueueClosing) {
    plan.state = std::string(drained);
  }
  return plan;
}

}  // namespace muster::controller
