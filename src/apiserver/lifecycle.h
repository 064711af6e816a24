#pragma once

// Object lifecycle the API server owns: deletion (immediate, graceful for bound pods, held by
// finalizers), namespace termination, and ownerReference garbage collection (deleting a Volcano
// Job removes its PodGroup and pods). Runs as a background controller over the store.

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "apiserver/resources.h"
#include "boost/json/object.hpp"
#include "store/store.h"

namespace muster::apiserver {

struct DeleteOptions {
  std::optional<int64_t> grace_period_seconds;  // DeleteOptions.gracePeriodSeconds
  std::string propagation_policy;               // Background (default), Foreground, Orphan
  std::optional<int64_t> precondition_revision; // preconditions.resourceVersion
  bool dry_run = false;
};

// What a DELETE request does to the live object.
struct DeletePlan {
  // The ops to commit: either a delete of the object, or an update that sets
  // deletionTimestamp / deletionGracePeriodSeconds (graceful pod delete, finalizers, namespace
  // Terminating).
  std::vector<store::Op> ops;
  bool deleted_now = false;
  boost::json::object result;  // the object as the reply shows it
};

// Pods bound to a node delete gracefully (the node agent confirms with gracePeriodSeconds=0);
// objects with finalizers are only marked; namespaces go Terminating. Everything else is deleted
// now.
absl::StatusOr<DeletePlan> PlanDelete(const ResourceInfo& resource, const store::Object& live,
                                      const DeleteOptions& options, int64_t now_unix);

// Background controller: deletes dependents whose owners are gone (by ownerReferences uid),
// empties and then removes Terminating namespaces, removes marked objects whose finalizers are
// all gone, and completes graceful pod deletions whose grace period expired when no node agent
// confirmed them.
class Lifecycle {
 public:
  explicit Lifecycle(store::Store& store);
  ~Lifecycle();
  void Start();
  void Stop();  // idempotent; joins the thread
  // One pass of every duty, synchronously (tests, and the thread's loop body).
  void RunOnce(int64_t now_unix);

 private:
  store::Store& store_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace muster::apiserver
