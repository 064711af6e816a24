#pragma once

// The Volcano Queue controller's state part (vc-controller-manager's queue controller,
// pkg/controllers/queue in volcano-sh/volcano), running against any API server through a
// client::Client beside the JobController: OpenQueue and CloseQueue Commands (`vcctl queue
// operate`, or kubectl) whose target is a Queue move its status.state through the state machine
// of queue_state.h, and a Closing queue becomes Closed once the last PodGroup that names it is
// gone. The state is written with a merge patch of the status subresource (only `state`: the
// scheduler writes the counters and `allocated`); the scheduler then admits nothing new of a
// queue that is not Open.
//
// It watches Queues, PodGroups (to know which queues still have some) and Commands
// (command_watch.h). Queue requests are handled one at a time; a refused write is retried with
// backoff.
//
// Lifecycle: construct, Start(), Stop() (or destroy). The Client must outlive the controller.
// Thread-safety: Start, Stop and WaitIdle may be called from any thread.

#include <chrono>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "client/client.h"
#include "controller/controller.h"

namespace muster::controller {

struct QueueControllerOptions {
  std::chrono::milliseconds backoff_base{5};
  std::chrono::milliseconds backoff_max{30000};
  // Events' source.component, as vc-controller-manager's recorder names itself.
  std::string component = "vc-controller-manager";
};

// The queue controller: every queue present is synced once at Start, and every Command present
// for a queue is taken.
std::unique_ptr<Controller> NewQueueController(client::Client& client,
                                               QueueControllerOptions options = {});

}  // namespace muster::controller
