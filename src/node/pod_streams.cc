#include "node/pod_streams.h"

#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <utility>

#include "node/json_access.h"

namespace muster::node {

namespace {

// When a command beside a container has ended, as its exit callback learns it, for whichever
// comes first of the callback and the client's OnExit.
class ExitNotice {
 public:
  void Set(int code) {
    std::function<void(int)> done;
    {
      std::lock_guard<std::mutex> lock(mu_);
      code_ = code;
      done = std::move(done_);
    }
    if (done) done(code);
  }
  void OnExit(std::function<void(int)> done) {
    std::optional<int> code;
    {
      std::lock_guard<std::mutex> lock(mu_);
      code = code_;
      if (!code) done_ = std::move(done);
    }
    if (code) done(*code);
  }
  [[nodiscard]] bool Ended() {
    std::lock_guard<std::mutex> lock(mu_);
    return code_.has_value();
  }

 private:
  std::mutex mu_;
  std::optional<int> code_;
  std::function<void(int)> done_;
};

class ExecSession final : public common::PodStreamSession {
 public:
  ExecSession(std::shared_ptr<NodePodStreams::Shared> shared, ContainerId id, int terminal,
              std::shared_ptr<ExitNotice> exit)
      : shared_(std::move(shared)), id_(id), terminal_(terminal), exit_(std::move(exit)) {}
  ~ExecSession() override {
    // A command whose client has gone is not left running.
    if (!exit_->Ended()) {
      std::lock_guard<std::mutex> lock(shared_->mu);
      if (shared_->runtime != nullptr) shared_->runtime->Kill(id_, std::chrono::milliseconds(0));
    }
    if (terminal_ >= 0) ::close(terminal_);
    for (int fd : {stdin_fd, stdout_fd, stderr_fd}) {
      if (fd >= 0) ::close(fd);
    }
  }
  void Resize(uint16_t width, uint16_t height) override {
    if (terminal_ < 0) return;
    struct winsize size = {};
    size.ws_col = width;
    size.ws_row = height;
    ::ioctl(terminal_, TIOCSWINSZ, &size);
  }
  void OnExit(std::function<void(int)> done) override { exit_->OnExit(std::move(done)); }

 private:
  std::shared_ptr<NodePodStreams::Shared> shared_;
  ContainerId id_;
  int terminal_;
  std::shared_ptr<ExitNotice> exit_;
};

class AttachSession final : public common::PodStreamSession {
 public:
  AttachSession(std::shared_ptr<NodePodStreams::Shared> shared, ContainerId id, bool stdin_once)
      : shared_(std::move(shared)), id_(id), stdin_once_(stdin_once) {}
  ~AttachSession() override {
    for (int fd : {stdin_fd, stdout_fd, stderr_fd}) {
      if (fd >= 0) ::close(fd);
    }
  }
  void Resize(uint16_t, uint16_t) override {}
  void StdinClosed() override {
    if (!stdin_once_) return;
    std::lock_guard<std::mutex> lock(shared_->mu);
    if (shared_->runtime != nullptr) shared_->runtime->CloseStdin(id_);
  }
  // The attach ends with the container's output (its pipe closes when the container ends).
  void OnExit(std::function<void(int)> done) override { done(0); }

 private:
  std::shared_ptr<NodePodStreams::Shared> shared_;
  ContainerId id_;
  bool stdin_once_;
};

}  // namespace

NodePodStreams::NodePodStreams(PodManager& pods, ProcessRuntime& runtime)
    : shared_(std::make_shared<Shared>()) {
  shared_->pods = &pods;
  shared_->runtime = &runtime;
}

NodePodStreams::~NodePodStreams() { Stop(); }

void NodePodStreams::Stop() {
  std::lock_guard<std::mutex> lock(shared_->mu);
  shared_->pods = nullptr;
  shared_->runtime = nullptr;
}

// Called with shared_->mu held.
absl::StatusOr<PodManager::ContainerLookup> NodePodStreams::Find(
    const common::PodStreamRequest& request, std::string_view verb) {
  if (shared_->pods == nullptr) return absl::UnavailableError("the node agents are stopping");
  absl::StatusOr<PodManager::ContainerLookup> found =
      shared_->pods->Lookup(request.ns, request.pod, request.uid, request.container);
  if (!found.ok()) return found;
  if (found->runtime == RuntimeKind::kSimulated) {
    if (request.container.empty()) {
      return absl::FailedPreconditionError(
          Cat("pod \"", request.pod, "\" runs on muster's simulated node \"", found->node,
              "\", where nothing listens: there are no ports to forward to"));
    }
    return absl::FailedPreconditionError(
        Cat("container \"", request.container, "\" of pod \"", request.pod,
            "\" runs on muster's simulated node \"", found->node,
            "\", where nothing runs: there is no process to ", verb));
  }
  if (!request.container.empty() && (!found->run.id || !found->run.launch)) {
    // The kubelet's words for a container that is not running.
    return absl::FailedPreconditionError(Cat("container not found (\"", request.container, "\")"));
  }
  return found;
}

absl::Status NodePodStreams::Check(const common::PodStreamRequest& request) {
  std::lock_guard<std::mutex> lock(shared_->mu);
  return Find(request, "exec into").status();
}

absl::StatusOr<std::unique_ptr<common::PodStreamSession>> NodePodStreams::Exec(
    const common::PodStreamRequest& request) {
  std::lock_guard<std::mutex> lock(shared_->mu);
  absl::StatusOr<PodManager::ContainerLookup> found = Find(request, "exec into");
  if (!found.ok()) return found.status();
  const ContainerLaunch& container = *found->run.launch;
  ProcessRuntime::ExecLaunch launch;
  launch.argv = request.command;
  launch.env = container.env;
  launch.working_dir = container.working_dir;
  launch.isolation = container.isolation;
  launch.tty = request.tty;
  launch.use_stdin = request.use_stdin;
  launch.use_stdout = request.use_stdout;
  launch.use_stderr = request.use_stderr;
  auto exit = std::make_shared<ExitNotice>();
  absl::StatusOr<ProcessRuntime::ExecStreams> streams = shared_->runtime->Exec(
      launch, [exit](ContainerId, const ContainerExit& e) { exit->Set(e.exit_code); });
  if (!streams.ok()) {
    // No such executable, or not one: the client hears it as the command's failure.
    if (absl::IsNotFound(streams.status()) || absl::IsFailedPrecondition(streams.status())) {
      return absl::InvalidArgumentError(streams.status().message());
    }
    return streams.status();
  }
  auto session = std::make_unique<ExecSession>(shared_, streams->id, streams->terminal, exit);
  session->stdin_fd = streams->stdin_fd;
  session->stdout_fd = streams->stdout_fd;
  session->stderr_fd = streams->stderr_fd;
  return session;
}

absl::StatusOr<std::unique_ptr<common::PodStreamSession>> NodePodStreams::Attach(
    const common::PodStreamRequest& request) {
  std::lock_guard<std::mutex> lock(shared_->mu);
  absl::StatusOr<PodManager::ContainerLookup> found = Find(request, "attach to");
  if (!found.ok()) return found.status();
  absl::StatusOr<ProcessRuntime::Attachment> attached = shared_->runtime->Attach(
      *found->run.id, request.use_stdin, request.use_stdout || request.use_stderr);
  if (!attached.ok()) {
    return absl::FailedPreconditionError(Cat("container not found (\"", request.container, "\")"));
  }
  auto session =
      std::make_unique<AttachSession>(shared_, *found->run.id, found->run.launch->stdin_once);
  session->stdin_fd = attached->stdin_fd;
  // stdout and stderr are one stream in the runtime: it goes to stdout (or stderr when only
  // that was asked for).
  (request.use_stdout ? session->stdout_fd : session->stderr_fd) = attached->output_fd;
  return session;
}

}  // namespace muster::node
