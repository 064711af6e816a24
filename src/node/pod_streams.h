#pragma once

// The node agents' side of `kubectl exec`, `attach`, `cp` and `port-forward`
// (common::PodStreams): finds the pod's container through the pod manager and runs the command
// beside it through the process runtime (ProcessRuntime::Exec), with the environment and working
// directory the container itself was started with (its ContainerLaunch: env and envFrom, the
// GPU variables, MUSTER_ROOT and its volume links). Simulated nodes have nothing to exec into
// and say so.
//
// A session may outlive the agent (the API server holds it until its connection ends): after
// Stop() its kill and stdin calls go nowhere, the runtime having ended every process already.
//
// Thread-safety: every method may be called from any thread.

#include <memory>
#include <mutex>

#include "common/pod_streams.h"
#include "node/pod_manager.h"
#include "node/process_runtime.h"

namespace muster::node {

class NodePodStreams final : public common::PodStreams {
 public:
  // Both must outlive Stop().
  NodePodStreams(PodManager& pods, ProcessRuntime& runtime);
  ~NodePodStreams() override;  // Stop()

  absl::StatusOr<std::unique_ptr<common::PodStreamSession>> Exec(
      const common::PodStreamRequest& request) override;
  absl::StatusOr<std::unique_ptr<common::PodStreamSession>> Attach(
      const common::PodStreamRequest& request) override;
  absl::Status Check(const common::PodStreamRequest& request) override;

  // Refuses from now on (Unavailable) and cuts the sessions off from the runtime. Idempotent.
  void Stop();

  // What sessions share with this object, which they may outlive.
  struct Shared {
    std::mutex mu;
    PodManager* pods = nullptr;        // null once stopped
    ProcessRuntime* runtime = nullptr;
  };

 private:
  // The container's run when it can be exec'd into or attached to (or, for an empty container,
  // the pod's ports reached); otherwise the error the client sees.
  absl::StatusOr<PodManager::ContainerLookup> Find(const common::PodStreamRequest& request,
                                                   std::string_view verb);

  std::shared_ptr<Shared> shared_;
};

}  // namespace muster::node
