#pragma once

// The Volcano Queue controller (vc-controller-manager's queue controller, pkg/controllers/queue
// in volcano-sh/volcano), running against any API server through a client::Client beside the
// JobController. It does what Volcano's does, which on a Kubernetes cluster nobody else does
// (`muster up`'s API server does part of it on admission):
//   - makes the `default` and `root` Queues when they are missing (default_queues.h);
//   - syncs every queue as it comes, as its parent changes and as a PodGroup naming it comes,
//     changes phase or goes: a queue without status.state gets Open, one without spec.parent
//     gets `root`; a Closing queue becomes Closed once its last PodGroup is gone;
//   - carries out OpenQueue and CloseQueue Commands (`vcctl queue operate`, or kubectl) whose
//     target is a Queue, through the state machine of queue_state.h, hierarchy included:
//     closing a queue closes its children (volcano.sh/closed-by-parent), opening it reopens
//     them, and a child does not open under a closed parent;
//   - counts each queue's PodGroups by phase into Volcano's gauges
//     volcano_queue_pod_group_{inqueue,pending,running,unknown,completed}_count{queue_name}
//     (QueueControllerOptions::metrics), as Volcano 1.16's controller does. It does not write
//     them into the Queue's status: Volcano 1.16's does not either; muster's scheduler writes
//     status.pending, running, inqueue, unknown, completed and allocated each cycle.
// status.state is written with a merge patch of the status subresource (only `state`),
// spec.parent and the closed-by-parent annotation with merge patches of the Queue. The scheduler
// then admits nothing new of a queue that is not Open.
//
// It watches Queues, PodGroups (to know which queues still have some, and their phases) and
// Commands (command_watch.h). Queue requests are handled one at a time; a failed one is retried
// with backoff and dropped with a Warning event after kQueueMaxRequeues retries, as Volcano's.
//
// Lifecycle: construct, Start(), Stop() (or destroy). The Client must outlive the controller.
// Thread-safety: Start, Stop and WaitIdle may be called from any thread.

#include <chrono>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "client/client.h"
#include "controller/controller.h"

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace muster::controller {

struct QueueControllerOptions {
  std::chrono::milliseconds backoff_base{5};
  std::chrono::milliseconds backoff_max{30000};
  // Events' source.component, as vc-controller-manager's recorder names itself.
  std::string component = "vc-controller-manager";
  // When set, the PodGroup gauges by phase are registered here.
  std::shared_ptr<prometheus::Registry> metrics;
};

// The queue controller: `default` and `root` are made if missing, every queue present is synced
// once at Start, and every Command present for a queue is taken.
std::unique_ptr<Controller> NewQueueController(client::Client& client,
                                               QueueControllerOptions options = {});

}  // namespace muster::controller
