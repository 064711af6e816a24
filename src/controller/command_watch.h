#pragma once

// How the job and queue controllers take Volcano Commands (command.h), as vc-controller-manager's
// do (pkg/controllers/job: addCommand, processNextCommand; pkg/controllers/queue: handleCommand):
// an informer on bus.volcano.sh/v1alpha1 commands in every namespace passes those the
// controller is for (`accepts`) to a work queue; each is deleted (with its uid as precondition)
// and, once this delete has succeeded, handed to `on_taken`. A Command someone else deleted
// first is not carried out, so that a Command is carried out at most once; a delete the server
// refuses otherwise is retried with backoff. Commands present when the watch starts are taken
// too.
//
// Lifecycle: construct, Start(), WaitForSync(), Stop() (or destroy). The Client must outlive it.
// Thread-safety: Start, Stop, WaitForSync and WaitIdle may be called from any thread; `on_taken`
// runs on the work queue's thread, one Command at a time.

#include <chrono>
#include <functional>
#include <memory>

#include "absl/status/status.h"
#include "client/client.h"
#include "controller/command.h"

namespace muster::controller {

class CommandWatch {
 public:
  struct Options {
    std::function<bool(const Command&)> accepts;
    std::function<void(const Command&)> on_taken;
    std::chrono::milliseconds backoff_base{5};
    std::chrono::milliseconds backoff_max{30000};
  };

  CommandWatch(client::Client& client, Options options);
  ~CommandWatch();  // Stop()

  CommandWatch(const CommandWatch&) = delete;
  CommandWatch& operator=(const CommandWatch&) = delete;

  // Starts the watch and the work queue's thread; ResourceExhausted when a thread cannot be made
  // (then nothing runs).
  absl::Status Start();
  // Whether the first list is in; false on timeout.
  bool WaitForSync(std::chrono::milliseconds timeout) const;
  // Stops the watch and the work queue; a Command being taken finishes first. Idempotent.
  void Stop();
  // Waits until no Command is queued or being taken (retries scheduled for later do not count).
  bool WaitIdle(std::chrono::milliseconds timeout);

  struct State;

 private:
  std::unique_ptr<State> state_;
};

}  // namespace muster::controller
