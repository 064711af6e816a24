#pragma once

// Object lifecycle the API server owns: deletion (immediate, graceful for bound pods, held by
// finalizers), namespace termination, ownerReference garbage collection (deleting a Volcano
// Job removes its PodGroup and pods; custom resources are owners and dependents like any kind),
// and the removal of a deleted CustomResourceDefinition's custom resources. Runs as a background
// controller over the store.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "apiserver/descriptors/resources.h"
#include "boost/json/object.hpp"
#include "store/store.h"

namespace muster::apiserver {

class ResourceRegistry;

struct DeleteOptions {
  std::optional<int64_t> grace_period_seconds;   // DeleteOptions.gracePeriodSeconds
  std::string propagation_policy;                // Background (default), Foreground, Orphan
  std::optional<int64_t> precondition_revision;  // preconditions.resourceVersion
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
// now. A second delete of a marked object may only shorten a pending grace period (0 deletes
// now unless finalizers hold it); otherwise it changes nothing (empty ops, result = live).
// propagation_policy Orphan / Foreground adds the "orphan" / "foregroundDeletion" finalizer that
// Lifecycle then works off; Background removes both. A CustomResourceDefinition gets kube's
// "customresourcecleanup.apiextensions.k8s.io" finalizer and its Terminating condition: it stays
// until Lifecycle has deleted its custom resources. Ops carry expected_revision = live.revision
// (on Aborted from Commit, re-read and plan again). dry_run returns the plan without ops.
// Errors (messages are kube's / Volcano's text, ready to show):
//   Aborted             precondition_revision differs: "Precondition failed: ResourceVersion in
//                       precondition: 5, ResourceVersion in object meta: 7"
//   FailedPrecondition  the queues default and root ("admission webhook
//                       \"validatequeue.volcano.sh\" denied the request: `default` queue can not
//                       be deleted", 400 upstream) and the namespaces default, kube-system,
//                       kube-public, kube-node-lease ("namespaces \"default\" is forbidden: this
//                       namespace may not be deleted", 403 Forbidden upstream)
//   InvalidArgument     an unknown propagation_policy (422 upstream)
absl::StatusOr<DeletePlan> PlanDelete(const ResourceInfo& resource, const store::Object& live,
                                      const DeleteOptions& options, int64_t now_unix);

struct LifecycleOptions {
  // How often the thread looks at the store's revision; a pass runs when it moved, when a
  // graceful deletion falls due, and at least every `max_idle`.
  std::chrono::milliseconds poll_interval{200};
  std::chrono::milliseconds max_idle{5000};
  // A pass lists the whole store, so on a large, busy store it is costly (tens of ms at 40,000
  // objects): after a pass that took d, the next one starts no sooner than d * pass_spacing
  // later, which keeps the thread to about 1 / (1 + pass_spacing) of a core.
  int pass_spacing = 9;
};

// Background controller: deletes dependents whose owners are gone (by ownerReferences uid),
// empties and then removes Terminating namespaces, removes marked objects whose finalizers are
// all gone, and completes graceful pod deletions whose grace period expired when no node agent
// confirmed them. It also does the garbage collector's part of the Orphan and Foreground
// propagation policies (the "orphan" and "foregroundDeletion" finalizers).
//
// Every pass works from a fresh listing of every stored resource of the registry (the compiled-in
// table and the custom resources of established CRDs, followed through a ResourceRegistry of its
// own); writes carry
// the revision they were planned against, so a concurrent change makes the write fail and the
// next pass plan again. Before deleting a dependent for a missing owner it reads the owner
// directly (listing is not atomic across resources). Owners of kinds the registry does not serve
// are never taken to be missing.
//
// Thread-safety: RunOnce may be called from any thread; passes are serialised.
class Lifecycle {
 public:
  explicit Lifecycle(store::Store& store, LifecycleOptions options = {});
  ~Lifecycle();  // calls Stop()
  // ResourceExhausted when its thread cannot be made.
  absl::Status Start();
  void Stop();  // idempotent; joins the thread
  // One pass of every duty, synchronously (tests, and the thread's loop body). Returns nothing;
  // failed writes are retried by later passes.
  void RunOnce(int64_t now_unix);

 private:
  struct Cache;  // parsed summaries of stored objects, reused while their revision holds

  void Loop();
  // A marked CRD holding the cleanup finalizer: its custom resources deleted (each as a DELETE
  // would), and once none is left the finalizer removed, so that the CRD goes. Returns whether
  // the CRD was released.
  bool CleanUpCustomResources(const store::Object& crd, int64_t now_unix);

  store::Store& store_;
  std::unique_ptr<ResourceRegistry> registry_;
  LifecycleOptions options_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex wake_mu_;
  std::condition_variable wake_;
  std::mutex run_mu_;             // serialises passes
  std::unique_ptr<Cache> cache_;  // guarded by run_mu_
  int64_t next_due_unix_ = 0;     // guarded by run_mu_; earliest pending graceful deadline
};

}  // namespace muster::apiserver
