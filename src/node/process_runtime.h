#pragma once

// ProcessRuntime: each container is a process on this machine.
//
// Start execs argv in its own process group (setpgid), in the working directory, with exactly
// the given environment, stdin from /dev/null and stdout+stderr into one pipe. The monitor thread
// copies what comes out of it to the log file as it comes, and into the log's index when each
// line came and where each run begins (common/container_log.h): what `kubectl logs`, `-f`,
// `--timestamps`, `--since` and `--previous` read through the API server. A container's output is
// all in the log before its exit callback runs. The fork happens on the monitor
// thread, and the child gets PR_SET_PDEATHSIG(SIGKILL): it dies with that thread, which lives
// until Shutdown has ended every child, so containers do not outlive an agent that is killed.
// Signal dispositions and the signal mask are reset and no descriptor of this process leaks into
// the child. An exec failure is reported by Start through a close-on-exec pipe. A launch whose
// `isolation` is not kNone enters the pod's namespaces in the child before execve
// (pod_isolation.h); a failure there is reported the same way, naming the step.
//
// One monitor thread copies the output, reaps the children (waitpid on their own pids only, never
// -1, so other children of this process are left alone), kills whatever is left in a container's
// process group once its main process has ended (as container runtimes do), and delivers SIGKILL
// when a grace period runs out. Exit codes are the process's, or 128 + N when signal N killed it.
//
// Thread-safety: every method may be called from any thread.

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/container_log.h"
#include "node/runtime.h"

namespace muster::node {

class ProcessRuntime final : public Runtime {
 public:
  struct Options {
    // How often the monitor looks for ended children while any run.
    std::chrono::milliseconds poll_interval{10};
  };

  ProcessRuntime();
  explicit ProcessRuntime(Options options);
  ~ProcessRuntime() override;  // Shutdown(0)

  ProcessRuntime(const ProcessRuntime&) = delete;
  ProcessRuntime& operator=(const ProcessRuntime&) = delete;

  absl::StatusOr<ContainerId> Start(const ContainerLaunch& launch, ExitCallback on_exit) override;
  void Kill(ContainerId id, std::chrono::milliseconds grace) override;
  void Shutdown(std::chrono::milliseconds grace) override;
  [[nodiscard]] size_t Running() const override;

  // The process (and process group) id of a running container; nullopt once it has ended.
  [[nodiscard]] std::optional<pid_t> Pid(ContainerId id) const;

 private:
  struct Proc {
    pid_t pid = 0;
    ExitCallback on_exit;
    std::optional<std::chrono::steady_clock::time_point> kill_at;  // SIGKILL due
  };

  // A running container's output on its way to the log: the pipe's read end (non-blocking) and
  // the log. Only the monitor thread touches these.
  struct LogCopy {
    int read_fd = -1;
    common::ContainerLogWriter log;
  };

  // A fork+exec prepared by Start and run by the monitor thread.
  struct Spawn {
    std::string path;
    std::vector<char*> argv, envp;  // pointing into the ContainerLaunch
    const char* working_dir = nullptr;
    const PodIsolationPlan* isolation = nullptr;  // pointing into the ContainerLaunch
    int null_fd = -1, error_read = -1, error_write = -1;
    int output_read = -1, output_write = -1;  // the output pipe; RunSpawn closes the write end
    std::optional<common::ContainerLogWriter> log;  // taken by the monitor on success
    int max_fd = 65536;
    ExitCallback on_exit;
    // Results.
    bool done = false;
    pid_t pid = -1;
    int fork_errno = 0;
    int exec_errno = 0;
    const char* isolation_step = nullptr;  // the step of the pod's namespaces that failed
    ContainerId id = 0;
  };

  void Monitor();
  static void RunSpawn(Spawn& spawn);
  // Wakes the monitor from waiting on the output pipes (it also looks every poll_interval).
  void Wake() const;
  // Monitor thread, without mu_: waits up to `timeout` for output and copies what came.
  void PollOutput(std::chrono::milliseconds timeout);
  // Copies what the pipe holds now to the log, up to a bound: kMore when the bound was reached,
  // kClosed once the pipe has ended (nothing more will come).
  enum class CopyResult { kEmpty, kMore, kClosed };
  static CopyResult CopyOutput(LogCopy& copy);
  // Copies the rest of an ended container's output and closes its pipe (monitor thread).
  void FinishOutput(ContainerId id);

  const Options options_;
  mutable std::mutex mu_;
  std::condition_variable changed_;  // procs_, spawns_ or the flags below changed
  std::condition_variable spawned_;  // a Spawn is done
  std::map<ContainerId, Proc> procs_;
  std::deque<Spawn*> spawns_;
  ContainerId next_id_ = 1;
  bool shutting_down_ = false;  // Start refuses, callbacks are dropped
  bool stop_monitor_ = false;
  std::mutex shutdown_mu_;  // serialises Shutdown
  std::thread monitor_;
  absl::Status monitor_started_;  // set once, in the constructor
  std::map<ContainerId, LogCopy> log_copies_;  // monitor thread only
  int wake_fd_ = -1;  // an eventfd the monitor polls with the pipes; -1 if none could be made
};

}  // namespace muster::node
