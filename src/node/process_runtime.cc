#include "node/process_runtime.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_split.h"
#include "common/thread.h"
#include "node/json_access.h"

namespace muster::node {

namespace {

// strerror in Go's style ("no such file or directory"), as runc's messages read.
std::string ErrnoText(int err) {
  std::string text = std::strerror(err);
  if (!text.empty()) text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
  return text;
}

bool IsExecutableFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// argv[0] as execve needs it: unchanged when it has a '/', else searched in the PATH of `env`.
absl::StatusOr<std::string> ResolveExecutable(const std::string& name,
                                              const std::vector<std::string>& env) {
  if (name.find('/') != std::string::npos) return name;
  std::string path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  for (const std::string& entry : env) {
    if (entry.rfind("PATH=", 0) == 0) path = entry.substr(5);
  }
  for (absl::string_view dir : absl::StrSplit(path, ':')) {
    std::string candidate = Cat(dir.empty() ? std::string(".") : std::string(dir), "/", name);
    if (IsExecutableFile(candidate)) return candidate;
  }
  return absl::NotFoundError(
      Cat("exec: \"", name, "\": executable file not found in $PATH"));
}

std::vector<char*> CStrings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const std::string& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

ContainerExit ExitFromWaitStatus(int status) {
  ContainerExit exit;
  if (WIFEXITED(status)) {
    exit.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    exit.signal = WTERMSIG(status);
    exit.exit_code = 128 + exit.signal;
  }
  exit.finished_at = std::chrono::system_clock::now();
  return exit;
}

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() { Reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int Release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void Reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

// What a child that could not exec writes to the error pipe. `step` points into the program's
// read-only data, the same in parent and child.
struct ChildFailure {
  int err = 0;
  const char* step = nullptr;  // a step of the pod's namespaces; null: the exec itself
};

// Runs in the forked child: only async-signal-safe calls until execve.
[[noreturn]] void ExecChild(pid_t parent, const char* path, char* const argv[], char* const envp[],
                            const char* working_dir, const PodIsolationPlan& isolation, int in_fd,
                            int out_fd, int err_fd, bool tty, int error_fd, int max_fd) {
  auto fail = [&](int err, const char* step = nullptr) {
    const ChildFailure failure{err, step};
    (void)!::write(error_fd, &failure, sizeof(failure));
    ::_exit(127);
  };
  if (tty) {
    // A session of its own whose controlling terminal is the pseudo-terminal (as a container
    // runtime's exec -t): job control and the terminal's signals work in it.
    if (::setsid() < 0 || ::ioctl(in_fd, TIOCSCTTY, 0) < 0) fail(errno);
  } else {
    ::setpgid(0, 0);
  }
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(137);  // the agent is already gone
  for (int sig = 1; sig < NSIG; ++sig) ::signal(sig, SIG_DFL);
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  const char* step = nullptr;
  if (int err = EnterPodIsolation(isolation, &step); err != 0) fail(err, step);
  if (::chdir(working_dir) != 0) fail(errno);
  if (::dup2(in_fd, 0) < 0 || ::dup2(out_fd, 1) < 0 || ::dup2(err_fd, 2) < 0) fail(errno);
  if (error_fd != 3) {
    if (::dup2(error_fd, 3) < 0) fail(errno);
    error_fd = 3;
  }
  ::fcntl(3, F_SETFD, FD_CLOEXEC);
  if (::close_range(4, ~0U, 0) != 0) {
    for (int fd = 4; fd < max_fd; ++fd) ::close(fd);
  }
  ::execve(path, argv, envp);
  fail(errno);
  ::_exit(127);
}

int MaxFd() {
  struct rlimit files;
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY) {
    return static_cast<int>(std::min<rlim_t>(files.rlim_cur, 1 << 20));
  }
  return 65536;
}

}  // namespace

ProcessRuntime::ProcessRuntime() : ProcessRuntime(Options{}) {}

ProcessRuntime::ProcessRuntime(Options options) : options_(options) {
  // Without it the monitor still looks at the pipes every poll_interval.
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  // Without its monitor no exit would be seen: every Start then says why it cannot run.
  monitor_started_ = common::StartThread(monitor_, "the process runtime", [this] { Monitor(); });
}

ProcessRuntime::~ProcessRuntime() {
  Shutdown(std::chrono::milliseconds(0));
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void ProcessRuntime::Wake() const {
  if (wake_fd_ < 0) return;
  const uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof(one));
}

absl::StatusOr<ContainerId> ProcessRuntime::Start(const ContainerLaunch& launch,
                                                  ExitCallback on_exit) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shutting_down_) return absl::FailedPreconditionError("the runtime is shut down");
  }
  if (!monitor_started_.ok()) return monitor_started_;
  if (launch.argv.empty() || launch.argv[0].empty()) {
    return absl::InvalidArgumentError("no command to run");
  }
  std::error_code ec;
  std::filesystem::create_directories(launch.working_dir, ec);
  if (ec) {
    return absl::InternalError(
        Cat("creating working directory ", launch.working_dir, ": ", ec.message()));
  }
  std::filesystem::create_directories(std::filesystem::path(launch.log_path).parent_path(), ec);
  if (ec) {
    return absl::InternalError(Cat("creating log directory for ", launch.log_path, ": ",
                                            ec.message()));
  }
  absl::StatusOr<std::string> path = ResolveExecutable(launch.argv[0], launch.env);
  if (!path.ok()) return path.status();

  absl::StatusOr<common::ContainerLogWriter> log = common::ContainerLogWriter::Open(
      launch.log_path, launch.truncate_log, launch.log_run_id, std::chrono::system_clock::now());
  if (!log.ok()) return log.status();
  Fd null_fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (null_fd.get() < 0) return absl::InternalError("opening /dev/null: " + ErrnoText(errno));
  int pipe_fds[2];
  // The container's stdout and stderr: one pipe, so that their lines interleave as written. Only
  // the monitor's end is non-blocking.
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return absl::InternalError("pipe: " + ErrnoText(errno));
  Fd output_read(pipe_fds[0]);
  Fd output_write(pipe_fds[1]);
  ::fcntl(output_read.get(), F_SETFL, ::fcntl(output_read.get(), F_GETFL) | O_NONBLOCK);
  Fd stdin_read, stdin_write;
  if (launch.stdin_pipe) {
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return absl::InternalError("pipe: " + ErrnoText(errno));
    stdin_read.Reset(pipe_fds[0]);
    stdin_write.Reset(pipe_fds[1]);
  }

  Spawn spawn;
  spawn.path = *path;
  spawn.argv = CStrings(launch.argv);
  spawn.envp = CStrings(launch.env);
  spawn.working_dir = launch.working_dir.c_str();
  spawn.isolation = &launch.isolation;
  spawn.child_stdin = launch.stdin_pipe ? stdin_read.get() : null_fd.get();
  spawn.child_stdout = spawn.child_stderr = output_write.get();
  spawn.child_ends = {output_write.Release()};  // RunSpawn closes them
  if (launch.stdin_pipe) spawn.child_ends.push_back(stdin_read.Release());
  spawn.output_read = output_read.get();
  spawn.stdin_write = stdin_write.get();
  spawn.log = std::move(*log);
  spawn.on_exit = std::move(on_exit);
  spawn.max_fd = MaxFd();
  absl::StatusOr<ContainerId> id = RunOnMonitor(spawn, launch.argv[0]);
  if (id.ok()) {
    (void)output_read.Release();  // the monitor copies from it now
    (void)stdin_write.Release();  // kept with the container
  }
  return id;
}

absl::StatusOr<ContainerId> ProcessRuntime::RunOnMonitor(Spawn& spawn,
                                                         const std::string& command) {
  // The child reports a failed execve through this close-on-exec pipe.
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    for (int fd : spawn.child_ends) ::close(fd);
    return absl::InternalError("pipe: " + ErrnoText(errno));
  }
  Fd error_read(pipe_fds[0]);
  spawn.error_read = error_read.get();
  spawn.error_write = pipe_fds[1];  // RunSpawn closes it
  absl::Status refused;
  {
    // The monitor thread forks: PR_SET_PDEATHSIG follows the thread that forked, and the
    // monitor lives exactly as long as the runtime has children.
    std::unique_lock<std::mutex> lock(mu_);
    if (shutting_down_) {
      refused = absl::FailedPreconditionError("the runtime is shut down");
    } else {
      spawns_.push_back(&spawn);
      changed_.notify_all();
      Wake();
      spawned_.wait(lock, [&] { return spawn.done; });
    }
  }
  if (!refused.ok()) {
    ::close(spawn.error_write);
    for (int fd : spawn.child_ends) ::close(fd);
    return refused;
  }
  if (spawn.fork_errno != 0) {
    return absl::ResourceExhaustedError("fork: " + ErrnoText(spawn.fork_errno));
  }
  if (spawn.isolation_step != nullptr) {
    return absl::FailedPreconditionError(
        Cat("pod namespaces (", PodIsolationName(spawn.isolation->isolation),
            "): ", spawn.isolation_step, ": ", ErrnoText(spawn.exec_errno)));
  }
  if (spawn.exec_errno != 0) {
    return absl::FailedPreconditionError(
        Cat("exec: \"", command, "\": ", ErrnoText(spawn.exec_errno)));
  }
  return spawn.id;
}

void ProcessRuntime::RunSpawn(Spawn& spawn) {
  const PodIsolationPlan machine;  // made before the fork: the child only reads it
  const PodIsolationPlan& isolation = spawn.isolation != nullptr ? *spawn.isolation : machine;
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  auto close_child_ends = [&spawn] {
    ::close(spawn.error_write);
    spawn.error_write = -1;
    // The child's now: a pipe ends when the child's writers do.
    for (int fd : spawn.child_ends) ::close(fd);
    spawn.child_ends.clear();
  };
  if (pid < 0) {
    spawn.fork_errno = errno;
    close_child_ends();
    return;
  }
  if (pid == 0) {
    ExecChild(parent, spawn.path.c_str(), spawn.argv.data(), spawn.envp.data(), spawn.working_dir,
              isolation, spawn.child_stdin, spawn.child_stdout, spawn.child_stderr,
              spawn.tty, spawn.error_write, spawn.max_fd);
  }
  // Also here, so that a Kill right after Start reaches the group; not for a new session, which
  // setsid cannot make of a process that already leads a group.
  if (!spawn.tty) ::setpgid(pid, pid);
  close_child_ends();
  ChildFailure failure;
  ssize_t n;
  do {
    n = ::read(spawn.error_read, &failure, sizeof(failure));
  } while (n < 0 && errno == EINTR);
  if (n == static_cast<ssize_t>(sizeof(failure))) {
    int status;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    spawn.exec_errno = failure.err == 0 ? EINVAL : failure.err;
    spawn.isolation_step = failure.step;
    return;
  }
  spawn.pid = pid;
}

void ProcessRuntime::Kill(ContainerId id, std::chrono::milliseconds grace) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = procs_.find(id);
  if (it == procs_.end()) return;
  Proc& proc = it->second;
  if (grace.count() <= 0) {
    ::kill(-proc.pid, SIGKILL);
    proc.kill_at = std::chrono::steady_clock::now();
    return;
  }
  const auto due = std::chrono::steady_clock::now() + grace;
  if (!proc.kill_at) {
    ::kill(-proc.pid, SIGTERM);
    proc.kill_at = due;
  } else if (due < *proc.kill_at) {
    proc.kill_at = due;
  }
  changed_.notify_all();
  Wake();
}

ProcessRuntime::CopyResult ProcessRuntime::CopyOutput(ContainerId id, LogCopy& copy) {
  // A bounded amount per call, so that a chatty container cannot hold up reaping and kills.
  constexpr int kMaxReads = 16;
  char buffer[1 << 16];
  for (int i = 0; i < kMaxReads; ++i) {
    const ssize_t n = ::read(copy.read_fd, buffer, sizeof(buffer));
    if (n > 0) {
      const std::string_view data(buffer, static_cast<size_t>(n));
      // A write error (a full disk) loses this output; the container goes on regardless.
      (void)copy.log.Append(data, std::chrono::system_clock::now());
      Fanout(id, data);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return CopyResult::kEmpty;
    return CopyResult::kClosed;  // end of output, or a broken pipe
  }
  return CopyResult::kMore;
}

void ProcessRuntime::Fanout(ContainerId id, std::string_view data) {
  std::lock_guard<std::mutex> lock(attach_mu_);
  auto it = attached_.find(id);
  if (it == attached_.end()) return;
  std::vector<int>& readers = it->second;
  for (auto r = readers.begin(); r != readers.end();) {
    size_t done = 0;
    while (done < data.size()) {
      const ssize_t n = ::write(*r, data.data() + done, data.size() - done);
      if (n > 0) {
        done += static_cast<size_t>(n);
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else {
        break;  // full (the reader is too slow) or gone
      }
    }
    if (done == data.size()) {
      ++r;
      continue;
    }
    ::close(*r);
    r = readers.erase(r);
  }
  if (readers.empty()) attached_.erase(it);
}

void ProcessRuntime::PollOutput(std::chrono::milliseconds timeout) {
  std::vector<pollfd> fds;
  std::vector<ContainerId> ids;
  fds.reserve(log_copies_.size() + 1);
  if (wake_fd_ >= 0) fds.push_back(pollfd{wake_fd_, POLLIN, 0});
  for (auto& [id, copy] : log_copies_) {
    fds.push_back(pollfd{copy.read_fd, POLLIN, 0});
    ids.push_back(id);
  }
  if (::poll(fds.data(), fds.size(), static_cast<int>(timeout.count())) <= 0) return;
  size_t first = 0;
  if (wake_fd_ >= 0) {
    uint64_t count;
    if (fds[0].revents != 0) (void)!::read(wake_fd_, &count, sizeof(count));
    first = 1;
  }
  for (size_t i = first; i < fds.size(); ++i) {
    if (fds[i].revents == 0) continue;
    auto it = log_copies_.find(ids[i - first]);
    if (it == log_copies_.end()) continue;
    if (CopyOutput(it->first, it->second) == CopyResult::kClosed) {
      // Every writer closed the pipe (or it broke): nothing more will come.
      ::close(it->second.read_fd);
      log_copies_.erase(it);
    }
  }
}

void ProcessRuntime::FinishOutput(ContainerId id) {
  if (auto it = log_copies_.find(id); it != log_copies_.end()) {
    // The group is dead: what it wrote is in the pipe. A process that left the group and still
    // holds the pipe open keeps nothing from being read now, and what it writes later is lost.
    while (CopyOutput(id, it->second) == CopyResult::kMore) {
    }
    ::close(it->second.read_fd);
    log_copies_.erase(it);
  }
  // Attached readers see the end.
  std::lock_guard<std::mutex> lock(attach_mu_);
  if (auto a = attached_.find(id); a != attached_.end()) {
    for (int fd : a->second) ::close(fd);
    attached_.erase(a);
  }
}

void ProcessRuntime::Monitor() {
  // A write to an attached reader that has gone is EPIPE here, not a signal to the process.
  // (Children get an empty mask: ExecChild.)
  sigset_t pipe_signal;
  ::sigemptyset(&pipe_signal);
  ::sigaddset(&pipe_signal, SIGPIPE);
  ::pthread_sigmask(SIG_BLOCK, &pipe_signal, nullptr);
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    while (!spawns_.empty()) {
      Spawn* spawn = spawns_.front();
      spawns_.pop_front();
      lock.unlock();
      RunSpawn(*spawn);
      lock.lock();
      if (spawn->pid > 0) {
        spawn->id = next_id_++;
        Proc& proc = procs_[spawn->id];
        proc.pid = spawn->pid;
        proc.stdin_write = spawn->stdin_write;
        proc.on_exit = std::move(spawn->on_exit);
        if (spawn->output_read >= 0) {
          log_copies_.emplace(spawn->id, LogCopy{spawn->output_read, std::move(*spawn->log)});
        }
        if (shutting_down_) {
          ::kill(-proc.pid, SIGKILL);
          proc.kill_at = std::chrono::steady_clock::now();
        }
      }
      spawn->done = true;
      spawned_.notify_all();
    }
    if (procs_.empty()) {
      if (stop_monitor_) {
        for (auto& [id, copy] : log_copies_) ::close(copy.read_fd);  // none: each was finished
        log_copies_.clear();
        return;
      }
      changed_.wait(lock, [this] { return stop_monitor_ || !procs_.empty() || !spawns_.empty(); });
      continue;
    }
    std::vector<std::pair<ExitCallback, std::pair<ContainerId, ContainerExit>>> ended;
    std::vector<ContainerId> reaped;
    const auto now = std::chrono::steady_clock::now();
    for (auto it = procs_.begin(); it != procs_.end();) {
      Proc& proc = it->second;
      siginfo_t info;
      info.si_pid = 0;
      // WNOWAIT first: while the main process is an unreaped zombie its pid (the group id)
      // cannot be reused, so the group can be killed safely before reaping.
      int r = ::waitid(P_PID, static_cast<id_t>(proc.pid), &info, WEXITED | WNOHANG | WNOWAIT);
      if (r == 0 && info.si_pid == proc.pid) {
        ::kill(-proc.pid, SIGKILL);  // whatever the container left behind
        int status = 0;
        ContainerExit exit;
        if (::waitpid(proc.pid, &status, 0) == proc.pid) {
          exit = ExitFromWaitStatus(status);
        } else {
          exit.exit_code = 255;
          exit.finished_at = std::chrono::system_clock::now();
        }
        if (!shutting_down_ && proc.on_exit) {
          ended.emplace_back(std::move(proc.on_exit), std::make_pair(it->first, exit));
        }
        reaped.push_back(it->first);
        if (proc.stdin_write >= 0) ::close(proc.stdin_write);
        it = procs_.erase(it);
        continue;
      }
      if (r != 0 && errno == ECHILD) {
        // Reaped elsewhere (a waitpid(-1) in this process); its exit status is lost.
        ContainerExit exit;
        exit.exit_code = 255;
        exit.finished_at = std::chrono::system_clock::now();
        if (!shutting_down_ && proc.on_exit) {
          ended.emplace_back(std::move(proc.on_exit), std::make_pair(it->first, exit));
        }
        reaped.push_back(it->first);
        if (proc.stdin_write >= 0) ::close(proc.stdin_write);
        it = procs_.erase(it);
        continue;
      }
      if (proc.kill_at && now >= *proc.kill_at) ::kill(-proc.pid, SIGKILL);
      ++it;
    }
    if (!reaped.empty()) {
      // Their output is in the log before anyone hears they ended (Shutdown included).
      lock.unlock();
      for (ContainerId id : reaped) FinishOutput(id);
      lock.lock();
    }
    if (!ended.empty() || procs_.empty()) changed_.notify_all();
    if (!ended.empty()) {
      lock.unlock();
      for (auto& [callback, args] : ended) callback(args.first, args.second);
      lock.lock();
      continue;
    }
    if (!spawns_.empty()) continue;
    if (log_copies_.empty()) {
      changed_.wait_for(lock, options_.poll_interval);
    } else {
      lock.unlock();
      PollOutput(options_.poll_interval);
      lock.lock();
    }
  }
}

void ProcessRuntime::Shutdown(std::chrono::milliseconds grace) {
  std::lock_guard<std::mutex> serial(shutdown_mu_);
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (!monitor_.joinable()) return;
    shutting_down_ = true;
    const auto due = std::chrono::steady_clock::now() + grace;
    for (auto& [id, proc] : procs_) {
      if (grace.count() <= 0) {
        ::kill(-proc.pid, SIGKILL);
        proc.kill_at = std::chrono::steady_clock::now();
      } else {
        ::kill(-proc.pid, SIGTERM);
        if (!proc.kill_at || due < *proc.kill_at) proc.kill_at = due;
      }
    }
    changed_.notify_all();
    Wake();
    changed_.wait(lock, [this] { return procs_.empty(); });
    stop_monitor_ = true;
    changed_.notify_all();
  }
  monitor_.join();
}

size_t ProcessRuntime::Running() const {
  std::lock_guard<std::mutex> lock(mu_);
  return procs_.size();
}

std::optional<pid_t> ProcessRuntime::Pid(ContainerId id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = procs_.find(id);
  if (it == procs_.end()) return std::nullopt;
  return it->second.pid;
}

absl::StatusOr<ProcessRuntime::ExecStreams> ProcessRuntime::Exec(const ExecLaunch& launch,
                                                                 ExitCallback on_exit) {
  if (!monitor_started_.ok()) return monitor_started_;
  if (launch.argv.empty() || launch.argv[0].empty()) {
    return absl::InvalidArgumentError("no command to run");
  }
  absl::StatusOr<std::string> path = ResolveExecutable(launch.argv[0], launch.env);
  if (!path.ok()) return path.status();
  // Every descriptor is owned here until the spawn has taken the child's ends.
  Fd null_in(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  Fd null_out(::open("/dev/null", O_WRONLY | O_CLOEXEC));
  if (null_in.get() < 0 || null_out.get() < 0) {
    return absl::InternalError("opening /dev/null: " + ErrnoText(errno));
  }
  Fd mine[3];       // the caller's ends: stdin's write end, stdout's and stderr's read ends
  Fd theirs[3];     // the child's ends
  Fd terminal;      // a tty's master, for resizing
  if (launch.tty) {
    Fd master(::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC));
    char name[128];
    if (master.get() < 0 || ::grantpt(master.get()) != 0 || ::unlockpt(master.get()) != 0 ||
        ::ptsname_r(master.get(), name, sizeof(name)) != 0) {
      return absl::InternalError("pseudo-terminal: " + ErrnoText(errno));
    }
    theirs[0].Reset(::open(name, O_RDWR | O_NOCTTY | O_CLOEXEC));
    if (theirs[0].get() < 0) return absl::InternalError("pseudo-terminal: " + ErrnoText(errno));
    struct winsize size = {};
    size.ws_row = 24;
    size.ws_col = 80;
    ::ioctl(master.get(), TIOCSWINSZ, &size);
    if (launch.use_stdin) mine[0].Reset(::fcntl(master.get(), F_DUPFD_CLOEXEC, 0));
    terminal.Reset(::fcntl(master.get(), F_DUPFD_CLOEXEC, 0));
    mine[1].Reset(master.Release());
  } else {
    const bool wanted[3] = {launch.use_stdin, launch.use_stdout, launch.use_stderr};
    for (int i = 0; i < 3; ++i) {
      if (!wanted[i]) continue;
      int fds[2];
      if (::pipe2(fds, O_CLOEXEC) != 0) return absl::InternalError("pipe: " + ErrnoText(errno));
      mine[i].Reset(i == 0 ? fds[1] : fds[0]);
      theirs[i].Reset(i == 0 ? fds[0] : fds[1]);
    }
  }
  Spawn spawn;
  spawn.path = *path;
  spawn.argv = CStrings(launch.argv);
  spawn.envp = CStrings(launch.env);
  spawn.working_dir = launch.working_dir.c_str();
  spawn.isolation = &launch.isolation;
  spawn.tty = launch.tty;
  if (launch.tty) {
    spawn.child_stdin = spawn.child_stdout = spawn.child_stderr = theirs[0].get();
  } else {
    spawn.child_stdin = theirs[0].get() >= 0 ? theirs[0].get() : null_in.get();
    spawn.child_stdout = theirs[1].get() >= 0 ? theirs[1].get() : null_out.get();
    spawn.child_stderr = theirs[2].get() >= 0 ? theirs[2].get() : null_out.get();
  }
  for (Fd& fd : theirs) {
    if (fd.get() >= 0) spawn.child_ends.push_back(fd.Release());  // RunSpawn closes them
  }
  spawn.on_exit = std::move(on_exit);
  spawn.max_fd = MaxFd();
  absl::StatusOr<ContainerId> id = RunOnMonitor(spawn, launch.argv[0]);
  if (!id.ok()) return id.status();
  ExecStreams streams;
  streams.id = *id;
  streams.stdin_fd = mine[0].Release();
  streams.stdout_fd = mine[1].Release();
  streams.stderr_fd = mine[2].Release();
  streams.terminal = terminal.Release();
  return streams;
}

absl::StatusOr<ProcessRuntime::Attachment> ProcessRuntime::Attach(ContainerId id, bool use_stdin,
                                                                  bool use_output) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = procs_.find(id);
  if (it == procs_.end()) return absl::NotFoundError("the container is not running");
  Fd in, out;
  if (use_stdin && it->second.stdin_write >= 0) {
    in.Reset(::fcntl(it->second.stdin_write, F_DUPFD_CLOEXEC, 0));
    if (in.get() < 0) return absl::InternalError("dup: " + ErrnoText(errno));
  }
  if (use_output) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return absl::InternalError("pipe: " + ErrnoText(errno));
    out.Reset(fds[0]);
    // The monitor's end: never blocks it (a reader that falls this far behind is cut off).
    ::fcntl(fds[1], F_SETFL, ::fcntl(fds[1], F_GETFL) | O_NONBLOCK);
    ::fcntl(fds[1], F_SETPIPE_SZ, 1 << 20);
    std::lock_guard<std::mutex> attach_lock(attach_mu_);
    attached_[id].push_back(fds[1]);
  }
  Attachment a;
  a.stdin_fd = in.Release();
  a.output_fd = out.Release();
  return a;
}

void ProcessRuntime::CloseStdin(ContainerId id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = procs_.find(id);
  if (it == procs_.end() || it->second.stdin_write < 0) return;
  ::close(it->second.stdin_write);
  it->second.stdin_write = -1;
}

}  // namespace muster::node
