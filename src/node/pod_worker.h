#pragma once

// PodWorker: the kubelet's life cycle of one pod bound to a node, over a Runtime.
//
// - Admission: the pod's devices (NodeResources: GPUs, MIG devices, time-slicing replicas, each
//   nvidia.com/* resource its containers ask for); a pod the node cannot serve fails with reason
//   UnexpectedAdmissionError, as the kubelet's device manager reports it. Then its effective
//   requests (containers summed, at least each init container, plus overhead) must fit beside
//   the pods admitted before; one that does not fails with reason OutOf<resource> and message
//   "Pod was rejected: Node didn't have enough resource: ...", as the kubelet's predicate
//   admission reports it.
// - Init containers run one after the other, each to success, before the app containers start.
// - restartPolicy: Always restarts every ended container, OnFailure those that failed, Never none;
//   restarts back off as the kubelet's do (the first at once, then `backoff_initial` doubling up
//   to `backoff_max`, reset after a container ran for twice `backoff_max`), shown as waiting
//   CrashLoopBackOff with the ended run in lastState.
// - Phase follows the kubelet's getPhase: Pending until every app container has started once,
//   then Running, and Succeeded or Failed once every container has stopped for good.
// - Status has the kubelet's shape: conditions Initialized, Ready and ContainersReady (with
//   "containers with unready status: [a b]"), PodScheduled and other conditions kept as found,
//   containerStatuses with waiting/running/terminated (exitCode, reason Completed/Error/
//   StartError), restartCount, lastState, startTime, hostIP(s), podIP(s).
// - Deletion (deletionTimestamp): containers get SIGTERM, SIGKILL after the pod's
//   deletionGracePeriodSeconds, nothing starts again, and once all have stopped Sync asks for the
//   deletion to be confirmed (gracePeriodSeconds=0).
// - A pod that already has a status from an earlier agent (a restart of `muster up`) is adopted:
//   Succeeded and Failed pods stay as they are; the others' requests count on the node without
//   being checked again (they were admitted); restart counts and start times carry over;
//   simulated containers that were running resume with the time they had left; process containers
//   that were running are gone, reported as ContainerStatusUnknown (exit 137) and restarted as
//   their restartPolicy says.
//
// Process containers (process runtime) get their environment, volumes and working directory as
// described in docs/cluster-file.md ("What a process container sees"); simulated containers use
// the annotations muster.dev/run-seconds and muster.dev/exit-code. Both are built in
// container_launch.h; the life cycle is pod_worker.cc, the status pod_status.cc.
//
// Thread-safety: none; the pod manager calls a worker from one thread at a time.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "api/gpu_indices.h"
#include "boost/json/object.hpp"
#include "node/node_resources.h"
#include "node/runtime.h"

namespace muster::node {

struct LaunchResult;  // container_launch.h
class PodNetwork;     // pod_network.h

inline constexpr char kRunSecondsAnnotation[] = "muster.dev/run-seconds";
inline constexpr char kExitCodeAnnotation[] = "muster.dev/exit-code";

struct PodWorkerOptions {
  // Process containers work in <data_dir>/pods/<ns>/<pod>/<container> and log to
  // <data_dir>/logs/<ns>/<pod>/<container>.log.
  std::string data_dir;
  std::chrono::milliseconds backoff_initial{10000};
  std::chrono::milliseconds backoff_max{300000};
  // How soon a container that could not be set up (a ConfigMap missing, a bad annotation) is
  // tried again.
  std::chrono::milliseconds setup_retry{2000};
};

// A kubelet event about the pod ("Started", "Killing", "BackOff", ...).
struct PodEvent {
  std::string type = "Normal";  // or "Warning"
  std::string reason;
  std::string message;
};

struct PodWorkerHooks {
  // A ConfigMap or Secret (volumes, env valueFrom, envFrom) by resource ("configmaps" or
  // "secrets"), namespace and name; NotFound when there is none (container_launch.h's
  // ObjectGetter).
  std::function<absl::StatusOr<boost::json::object>(std::string_view resource,
                                                    const std::string& ns, const std::string& name)>
      get_object;
  // Handed to Runtime::Start: must route the exit back to this worker's OnExit on its thread.
  Runtime::ExitCallback on_exit;
  // Process nodes: where the pod gets its address and names, published while it runs
  // (pod_network.h); it must outlive the worker. Null: the node's next address (NodeResources).
  PodNetwork* network = nullptr;
};

class PodWorker {
 public:
  using Clock = std::chrono::steady_clock;

  // `pod` is never null; the worker only reads it (it may be the informer's own state).
  PodWorker(std::shared_ptr<const boost::json::object> pod, NodeResources& node, Runtime& runtime,
            const PodWorkerOptions& options, PodWorkerHooks hooks);
  ~PodWorker();  // releases the pod's GPUs and requests; running containers are the runtime's

  PodWorker(const PodWorker&) = delete;
  PodWorker& operator=(const PodWorker&) = delete;

  // A newer version of the same pod (same uid). Returns whether anything the worker acts on
  // changed (deletion, annotations); status-only changes return false.
  bool Update(std::shared_ptr<const boost::json::object> pod);
  // A container ended (delivered through PodWorkerHooks::on_exit).
  void OnExit(ContainerId id, const ContainerExit& exit);
  // The pod is gone from the API (deleted without waiting for this agent): stop everything.
  void Orphan();

  struct SyncResult {
    std::vector<PodEvent> events;
    std::optional<Clock::time_point> wake_at;  // call Sync again by then
    bool confirm_deletion = false;  // deletion requested and every container has stopped
  };
  // Advances the pod: starts, restarts and stops containers as due.
  SyncResult Sync();

  // The pod status as the kubelet would write it now (the whole .status object).
  [[nodiscard]] boost::json::object Status() const;

  [[nodiscard]] const std::string& uid() const { return uid_; }
  [[nodiscard]] const std::string& ns() const { return ns_; }
  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] const std::string& phase() const { return phase_; }
  [[nodiscard]] bool deleting() const { return deleting_ || orphaned_; }
  // Containers started and not yet ended.
  [[nodiscard]] int running_containers() const;

  // A container's current run, for exec and attach (node/pod_streams.h): nullopt when the pod
  // has no container of that name; `id` is set while it runs.
  struct ContainerRun {
    std::optional<ContainerId> id;
    std::shared_ptr<const ContainerLaunch> launch;  // how it was started (null before)
  };
  [[nodiscard]] std::optional<ContainerRun> Run(std::string_view container) const;

  // Removes the pod's working directories and logs (process runtime); call once it is gone.
  void RemoveFiles() const;

 private:
  struct Container;

  void AdoptContainer(Container& c, const boost::json::object& status,
                      std::chrono::system_clock::time_point now_wall);
  // Admission (devices, then requests); false when the pod was rejected.
  bool Admit(SyncResult& result);
  // Starts or restarts `c` when it is due, else asks to be woken then.
  void AdvanceContainer(Container& c, Clock::time_point now, SyncResult& result);
  void StartContainer(Container& c, SyncResult& result);
  void ContainerEnded(Container& c, const ContainerExit& exit, const std::string& reason,
                      const std::string& message);
  // Whether `c` (ended) is to run again under the restart policy.
  bool WillRestart(const Container& c) const;
  void KillAll(SyncResult& result);
  [[nodiscard]] LaunchResult BuildLaunch(const Container& c) const;
  void Adopt(const boost::json::object& status);
  // The pod's address and names: published while it runs, withdrawn once it ends or is deleted.
  void SyncNetwork();
  // pod_status.cc
  [[nodiscard]] std::string ComputePhase() const;
  void SetCondition(const std::string& type, bool status, const std::string& reason,
                    const std::string& message);
  void UpdateConditions();
  [[nodiscard]] boost::json::object ContainerStatus(const Container& c) const;

  std::shared_ptr<const boost::json::object> pod_;  // the latest version seen, shared
  NodeResources& node_;
  Runtime& runtime_;
  const PodWorkerOptions& options_;
  PodWorkerHooks hooks_;

  std::string ns_, name_, uid_;
  std::string restart_policy_;
  std::vector<std::unique_ptr<Container>> init_;
  std::vector<std::unique_ptr<Container>> app_;
  api::ResourceList requests_;  // effective requests, admitted on the node

  bool deleting_ = false;
  bool orphaned_ = false;
  bool admitted_ = false;
  bool terminal_ = false;  // Succeeded or Failed: nothing runs again
  bool init_failed_ = false;
  std::string phase_ = "Pending";
  std::string reason_, message_;  // pod-level (admission failures)
  std::string start_time_;
  std::string pod_ip_;
  // Our conditions: type -> (status, lastTransitionTime, reason, message).
  struct ConditionState {
    bool status = false;
    std::string time, reason, message;
  };
  std::map<std::string, ConditionState> conditions_;
  std::optional<boost::json::object> frozen_status_;  // adopted terminal pods keep theirs
  std::string last_setup_warning_;
};

}  // namespace muster::node
