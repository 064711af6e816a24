#pragma once

// What every controller of src/controller is to the process that runs it (`muster up`'s
// LocalCluster, `muster controller`, the tests): informers over the objects it follows, and
// workers that sync one object at a time from a work queue, as the kube-controller-manager and
// vc-controller-manager controllers it follows do. A controller's header declares its options and
// the function that makes one (NewJobController, NewPodGroupController, ...); its implementation
// stays in its .cc. Thread-safety: Start, Stop and WaitIdle may be called from any thread, not
// concurrently with each other.

#include <chrono>
#include <initializer_list>
#include <string_view>

#include "absl/status/status.h"
#include "client/informer.h"

namespace muster::controller {

class Controller {
 public:
  // Sync timeout for Start() without one.
  static constexpr std::chrono::milliseconds kSyncTimeout{30000};

  virtual ~Controller() = default;  // stops first

  // Starts the watches, waits until their first lists are in (DeadlineExceeded after
  // `sync_timeout`, the controller then stopped) and starts the workers; every object present is
  // synced once. Idempotent once it has succeeded.
  virtual absl::Status Start(std::chrono::milliseconds sync_timeout) = 0;
  absl::Status Start() { return Start(kSyncTimeout); }
  // Stops the watches and workers; an object being synced finishes first. Idempotent.
  virtual void Stop() = 0;
  // Waits until nothing is queued or being synced (retries and rechecks scheduled for later do
  // not count); false on timeout. For tests and orderly shutdowns.
  virtual bool WaitIdle(std::chrono::milliseconds timeout) = 0;
};

// Starts `informers` in order, then waits until each has its first list in, until `deadline` at
// most: what a controller's Start does with its watches. A watch that cannot start is that error;
// one that has not synced by then is DeadlineExceeded "<who>: the <plural> watch did not sync
// within <sync_timeout> ms". The caller stops the controller on an error.
absl::Status StartInformers(std::string_view who,
                            std::initializer_list<client::Informer*> informers,
                            std::chrono::steady_clock::time_point deadline,
                            std::chrono::milliseconds sync_timeout);

}  // namespace muster::controller
