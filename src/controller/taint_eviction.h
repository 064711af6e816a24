#pragma once

// The taint eviction controller: kube-controller-manager's (k8s.io/kubernetes
// pkg/controller/tainteviction/taint_eviction.go, the "taint manager"), which deletes the pods of
// a node with a NoExecute taint they do not tolerate:
//   - a pod that does not tolerate every NoExecute taint of its node is deleted at once;
//   - a pod whose tolerations of them carry tolerationSeconds is deleted once the least of them
//     has passed since the pod was first seen tolerating them (kube keeps that start while the
//     pod stays on a NoExecute-tainted node, so adding a taint does not restart the clock);
//   - a pod that tolerates them all without tolerationSeconds stays; so does every pod once the
//     taints are gone, its pending deletion cancelled (event "Cancelling deletion of Pod NS/NAME").
// Before a deletion it records kube's Normal event TaintManagerEviction "Marking for deletion Pod
// NS/NAME" (component taint-eviction-controller) and gives the pod the DisruptionTarget
// condition (reason DeletionByTaintManager), so that the Volcano job controller sees it evicted;
// the deletion is an ordinary one (a bound pod's node agent stops it and confirms).
//
// `muster up` runs it (cmd/cluster.h). Lifecycle: construct, Start(), Stop() (or destroy). The
// Client must outlive the controller. Thread-safety: Start, Stop and WaitIdle may be called from
// any thread.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "api/model.h"
#include "client/client.h"
#include "controller/controller.h"

namespace muster::controller {

// What the taint manager does with a pod on a node (processPodOnNode).
struct TaintVerdict {
  enum class Kind {
    kKeep,        // no NoExecute taint, or all tolerated for ever
    kEvictNow,    // a NoExecute taint is not tolerated (or tolerated for 0 s or less)
    kEvictAfter,  // all tolerated, the least tolerationSeconds being `after_seconds`
  };
  Kind kind = Kind::kKeep;
  int64_t after_seconds = 0;

  bool operator==(const TaintVerdict&) const = default;
};

// v1helper.GetMatchingTolerations over the node's NoExecute taints (for each, the first toleration
// that tolerates it) and getMinTolerationTime over the tolerations used.
TaintVerdict JudgeNoExecuteTaints(const std::vector<api::Taint>& node_taints,
                                  const std::vector<api::Toleration>& tolerations);

struct TaintEvictionControllerOptions {
  int workers = 2;
  std::chrono::milliseconds backoff_base{5};
  std::chrono::milliseconds backoff_max{30000};
  // The clock deadlines are kept on; steady_clock when unset (tests may move it).
  std::function<std::chrono::steady_clock::time_point()> now;
};

// The taint eviction controller: every bound pod is looked at once at Start.
std::unique_ptr<Controller> NewTaintEvictionController(client::Client& client,
                                                       TaintEvictionControllerOptions options = {});

}  // namespace muster::controller
