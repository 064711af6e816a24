#pragma once

// A container runtime as the pod workers (pod_worker.h) drive it: start one container, ask it to
// stop, learn when it ended. Two implementations: ProcessRuntime (process_runtime.h) runs the
// command as a process group on this machine; SimulatedRuntime (simulated_runtime.h) only keeps
// time. Restart policy, back-off, init ordering and pod status are the pod worker's, the same for
// both.

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "node/pod_isolation.h"

namespace muster::node {

using ContainerId = uint64_t;

// Everything a runtime needs to start one container.
struct ContainerLaunch {
  std::string description;  // "default/pod-1/main", for messages

  // Process runtime. argv[0] is looked up in the PATH of `env` when it has no '/'.
  std::vector<std::string> argv;
  std::vector<std::string> env;  // the whole environment, "NAME=value"
  std::string working_dir;       // created when missing
  std::string log_path;          // stdout and stderr are appended here (created with its folder)
  bool truncate_log = false;     // start the log afresh (a new pod, not a restart)
  // Names this run in the log's index (common/container_log.h): the containerID the pod status
  // gives it, by which the API server finds the run's output (`kubectl logs --previous`).
  std::string log_run_id;
  // The pod's own /etc/hosts and host name (pod_network.h, pod_isolation.h); kNone: the
  // machine's.
  PodIsolationPlan isolation;
  // The container's `stdin: true`: its stdin is a pipe the runtime keeps open for `kubectl
  // attach -i` (else /dev/null); `stdinOnce` closes it when the first attach lets go of it.
  bool stdin_pipe = false;
  bool stdin_once = false;

  // Simulated runtime: the container exits with `exit_code` after `run_seconds` (negative: runs
  // until stopped).
  double run_seconds = -1;
  int exit_code = 0;
};

// How a container ended.
struct ContainerExit {
  int exit_code = 0;  // 128 + N when killed by signal N, as container runtimes report it
  int signal = 0;     // N when killed by a signal
  std::chrono::system_clock::time_point finished_at;
};

class Runtime {
 public:
  // Called once per started container when it has ended, from a runtime thread (never from
  // inside Start or Kill).
  using ExitCallback = std::function<void(ContainerId, const ContainerExit&)>;

  virtual ~Runtime() = default;

  // Starts a container. A container that cannot start at all (no such executable, no permission)
  // is an error whose message says why in the container runtime's words
  // (`exec: "train": executable file not found in $PATH`); no callback follows.
  virtual absl::StatusOr<ContainerId> Start(const ContainerLaunch& launch,
                                            ExitCallback on_exit) = 0;

  // Asks a container to stop: SIGTERM to its process group now, SIGKILL once `grace` has passed
  // (at once when it is zero). Idempotent; a shorter grace than a pending one takes over. The
  // exit callback reports the end as usual. Unknown or ended ids are ignored.
  virtual void Kill(ContainerId id, std::chrono::milliseconds grace) = 0;

  // Stops every container (SIGTERM, SIGKILL after `grace`) and waits until all have ended and
  // been reaped. No callbacks run for them, nor after it returns; Start fails afterwards.
  // Idempotent.
  virtual void Shutdown(std::chrono::milliseconds grace) = 0;

  // Containers started and not yet ended.
  [[nodiscard]] virtual size_t Running() const = 0;
};

}  // namespace muster::node
