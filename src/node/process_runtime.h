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
// Exec runs a command beside a container (`kubectl exec`) the same way, with pipes or a
// pseudo-terminal for its streams handed to the caller instead of the log. Attach taps a running
// container: what it writes from then on goes also to a pipe of the caller's, and a container
// started with a stdin pipe (ContainerLaunch::stdin_pipe) takes input from it.
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

  // A command beside a container: its environment and working directory, a process group of
  // its own (with `tty`, a session whose controlling terminal is a new pseudo-terminal), reaped,
  // killed with its group (Kill) and reported (on_exit) as a container is. Errors as Start's.
  struct ExecLaunch {
    std::vector<std::string> argv;
    std::vector<std::string> env;
    std::string working_dir;
    bool tty = false;
    bool use_stdin = false;
    bool use_stdout = false;
    bool use_stderr = false;
    // The container's namespaces, which the command enters too (its /etc/hosts, host name).
    PodIsolationPlan isolation;
  };
  // The caller's ends, each -1 where not asked for: stdin's write end, stdout's and stderr's
  // read ends. With a tty, stdout is the terminal's master (the command's stdout and stderr),
  // stdin a duplicate of it, and `terminal` one more, for resizing (TIOCSWINSZ).
  struct ExecStreams {
    ContainerId id = 0;
    int stdin_fd = -1;
    int stdout_fd = -1;
    int stderr_fd = -1;
    int terminal = -1;
  };
  absl::StatusOr<ExecStreams> Exec(const ExecLaunch& launch, ExitCallback on_exit);

  // Taps a running container: `output_fd` (the caller's read end) gets what it writes from now
  // on, stdout and stderr as one stream, until it ends; a reader that falls a pipe's buffer
  // behind is cut off (its pipe closed). `stdin_fd` (with `use_stdin`) is a duplicate of the
  // container's stdin pipe, -1 when it has none. NotFound when the container is not running.
  struct Attachment {
    int stdin_fd = -1;
    int output_fd = -1;
  };
  absl::StatusOr<Attachment> Attach(ContainerId id, bool use_stdin, bool use_output);
  // Closes the runtime's end of a container's stdin pipe (stdinOnce, once an attach let go).
  void CloseStdin(ContainerId id);

 private:
  struct Proc {
    pid_t pid = 0;
    int stdin_write = -1;  // a container's stdin pipe
    ExitCallback on_exit;
    std::optional<std::chrono::steady_clock::time_point> kill_at;  // SIGKILL due
  };

  // A running container's output on its way to the log: the pipe's read end (non-blocking) and
  // the log. Only the monitor thread touches these.
  struct LogCopy {
    int read_fd = -1;
    common::ContainerLogWriter log;
  };

  // A fork+exec prepared by Start or Exec and run by the monitor thread.
  struct Spawn {
    std::string path;
    std::vector<char*> argv, envp;  // pointing into the launch
    const char* working_dir = nullptr;
    // The pod's namespaces (pointing into the launch); kNone: the machine's.
    const PodIsolationPlan* isolation = nullptr;
    int child_stdin = -1, child_stdout = -1, child_stderr = -1;  // the child's 0, 1 and 2
    bool tty = false;  // a new session, child_stdin its controlling terminal
    std::vector<int> child_ends;  // the child's descriptors: RunSpawn closes them once forked
    int error_read = -1, error_write = -1;  // RunSpawn closes the write end
    int output_read = -1;  // a container's output pipe, which the log copy takes; -1 for an exec
    int stdin_write = -1;  // a container's stdin pipe, kept for attach
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
  // Hands `spawn` to the monitor and waits for the fork; the id, or why it did not run.
  absl::StatusOr<ContainerId> RunOnMonitor(Spawn& spawn, const std::string& command);

  void Monitor();
  static void RunSpawn(Spawn& spawn);
  // Wakes the monitor from waiting on the output pipes (it also looks every poll_interval).
  void Wake() const;
  // Monitor thread, without mu_: waits up to `timeout` for output and copies what came.
  void PollOutput(std::chrono::milliseconds timeout);
  // Copies what the pipe holds now to the log, up to a bound: kMore when the bound was reached,
  // kClosed once the pipe has ended (nothing more will come).
  enum class CopyResult { kEmpty, kMore, kClosed };
  CopyResult CopyOutput(ContainerId id, LogCopy& copy);
  // Writes `data` to the container's attached readers, cutting off those that cannot take it.
  void Fanout(ContainerId id, std::string_view data);
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
  std::mutex attach_mu_;  // after mu_ where both are held
  std::map<ContainerId, std::vector<int>> attached_;  // attached readers' write ends
};

}  // namespace muster::node
