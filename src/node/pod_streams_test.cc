// kubectl exec and attach as the node side serves them: ProcessRuntime::Exec and Attach with
// real processes (environment, working directory, exit codes, stdin, a pseudo-terminal and its
// size), and NodePodStreams over a PodManager running a process pod and a simulated one (the
// container's own environment, the refusals a client sees).

#include "node/pod_streams.h"

#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "boost/json/parse.hpp"
#include "common/files.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "node/simulated_runtime.h"

namespace muster::node {
namespace {

namespace json = boost::json;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

// Everything `fd` gives until its end (EOF, or EIO from a terminal whose last user has gone),
// waiting at most 10 s in all; closes it.
std::string ReadToEnd(int fd) {
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    char buffer[4096];
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n > 0) {
      out.append(buffer, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;
  }
  ::close(fd);
  return out;
}

void WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    ASSERT_GT(n, 0);
    data.remove_prefix(static_cast<size_t>(n));
  }
}

// Exit codes by id, as the runtime reports them.
class ExitCodes {
 public:
  Runtime::ExitCallback Callback() {
    return [this](ContainerId id, const ContainerExit& exit) {
      std::lock_guard<std::mutex> lock(mu_);
      codes_[id] = exit.exit_code;
      cv_.notify_all();
    };
  }
  std::optional<int> Wait(ContainerId id) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, 10s, [&] { return codes_.count(id) != 0; });
    auto it = codes_.find(id);
    return it == codes_.end() ? std::nullopt : std::optional<int>(it->second);
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<ContainerId, int> codes_;
};

class ExecRuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::signal(SIGPIPE, SIG_IGN);  // as `muster` runs (cmd/process.h)
    char dir[] = "/tmp/muster-exec-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    dir_ = dir;
  }
  void TearDown() override {
    runtime_.Shutdown(0ms);
    std::filesystem::remove_all(dir_);
  }
  ProcessRuntime::ExecLaunch Command(const std::string& script) {
    ProcessRuntime::ExecLaunch launch;
    launch.argv = {"sh", "-c", script};
    launch.env = {"PATH=/usr/bin:/bin", "X=from-the-pod"};
    launch.working_dir = dir_;
    launch.use_stdout = true;
    launch.use_stderr = true;
    return launch;
  }

  std::string dir_;
  ProcessRuntime runtime_;
  ExitCodes exits_;
};

TEST_F(ExecRuntimeTest, RunsWithTheGivenEnvironmentAndDirectoryAndReportsTheExitCode) {
  auto streams = runtime_.Exec(Command("echo $X; pwd; echo oops >&2; exit 3"), exits_.Callback());
  ASSERT_TRUE(streams.ok()) << streams.status();
  EXPECT_EQ(streams->stdin_fd, -1);
  EXPECT_EQ(ReadToEnd(streams->stdout_fd), "from-the-pod\n" + dir_ + "\n");
  EXPECT_EQ(ReadToEnd(streams->stderr_fd), "oops\n");
  EXPECT_EQ(exits_.Wait(streams->id), 3);
}

TEST_F(ExecRuntimeTest, StdinIsAPipeTheCallerEnds) {
  ProcessRuntime::ExecLaunch launch = Command("tr a-z A-Z");
  launch.use_stdin = true;
  auto streams = runtime_.Exec(launch, exits_.Callback());
  ASSERT_TRUE(streams.ok()) << streams.status();
  WriteAll(streams->stdin_fd, "piped in\n");
  ::close(streams->stdin_fd);
  EXPECT_EQ(ReadToEnd(streams->stdout_fd), "PIPED IN\n");
  ::close(streams->stderr_fd);
  EXPECT_EQ(exits_.Wait(streams->id), 0);
}

TEST_F(ExecRuntimeTest, ATtyIsAControllingTerminalWhoseSizeTheCallerSets) {
  ProcessRuntime::ExecLaunch launch = Command("read line; tty; stty size; echo \"<$line>\"");
  launch.tty = true;
  launch.use_stdin = true;
  launch.use_stderr = false;
  auto streams = runtime_.Exec(launch, exits_.Callback());
  ASSERT_TRUE(streams.ok()) << streams.status();
  EXPECT_EQ(streams->stderr_fd, -1);
  ASSERT_GE(streams->terminal, 0);
  struct winsize size = {};
  size.ws_row = 40;
  size.ws_col = 120;
  ASSERT_EQ(::ioctl(streams->terminal, TIOCSWINSZ, &size), 0);
  WriteAll(streams->stdin_fd, "typed\n");
  const std::string out = ReadToEnd(streams->stdout_fd);
  EXPECT_THAT(out, HasSubstr("/dev/pts/"));
  EXPECT_THAT(out, HasSubstr("40 120"));
  EXPECT_THAT(out, HasSubstr("<typed>"));
  EXPECT_EQ(exits_.Wait(streams->id), 0);
  ::close(streams->stdin_fd);
  ::close(streams->terminal);
}

TEST_F(ExecRuntimeTest, NoSuchExecutableIsNotFound) {
  auto streams = runtime_.Exec(
      [&] {
        auto l = Command("");
        l.argv = {"no-such-command-here"};
        return l;
      }(),
      exits_.Callback());
  ASSERT_FALSE(streams.ok());
  EXPECT_THAT(std::string(streams.status().message()),
              HasSubstr("executable file not found in $PATH"));
}

TEST_F(ExecRuntimeTest, KillEndsTheCommandsGroup) {
  auto streams = runtime_.Exec(Command("sleep 60 & sleep 60"), exits_.Callback());
  ASSERT_TRUE(streams.ok()) << streams.status();
  runtime_.Kill(streams->id, 0ms);
  EXPECT_EQ(exits_.Wait(streams->id), 128 + SIGKILL);
  // Every writer of the pipes is gone: the background sleep too.
  EXPECT_EQ(ReadToEnd(streams->stdout_fd), "");
  ::close(streams->stderr_fd);
}

TEST_F(ExecRuntimeTest, AttachFeedsStdinAndSeesTheOutputThatFollows) {
  ContainerLaunch launch;
  launch.argv = {"sh", "-c", "echo before; read line; echo \"got $line\""};
  launch.env = {"PATH=/usr/bin:/bin"};
  launch.working_dir = dir_ + "/work";
  launch.log_path = dir_ + "/c.log";
  launch.stdin_pipe = true;
  auto id = runtime_.Start(launch, exits_.Callback());
  ASSERT_TRUE(id.ok()) << id.status();
  auto attached = runtime_.Attach(*id, /*use_stdin=*/true, /*use_output=*/true);
  ASSERT_TRUE(attached.ok()) << attached.status();
  ASSERT_GE(attached->stdin_fd, 0);
  WriteAll(attached->stdin_fd, "hi\n");
  ::close(attached->stdin_fd);
  // What came before the attach may or may not be seen; what follows is, and the end.
  EXPECT_THAT(ReadToEnd(attached->output_fd), HasSubstr("got hi\n"));
  EXPECT_EQ(exits_.Wait(*id), 0);
  EXPECT_EQ(common::ReadFile(dir_ + "/c.log").value_or(""), "before\ngot hi\n");
  EXPECT_FALSE(runtime_.Attach(*id, true, true).ok());  // no longer running
}

TEST_F(ExecRuntimeTest, AContainerWithoutStdinGivesAnAttachNone) {
  ContainerLaunch launch;
  launch.argv = {"sh", "-c", "read line; echo \"[$line]\"; sleep 0.2"};
  launch.env = {"PATH=/usr/bin:/bin"};
  launch.working_dir = dir_ + "/work";
  launch.log_path = dir_ + "/c.log";
  auto id = runtime_.Start(launch, exits_.Callback());
  ASSERT_TRUE(id.ok()) << id.status();
  auto attached = runtime_.Attach(*id, /*use_stdin=*/true, /*use_output=*/false);
  ASSERT_TRUE(attached.ok()) << attached.status();
  EXPECT_EQ(attached->stdin_fd, -1);
  EXPECT_EQ(attached->output_fd, -1);
  EXPECT_EQ(exits_.Wait(*id), 0);
  EXPECT_EQ(common::ReadFile(dir_ + "/c.log").value_or(""), "[]\n");  // stdin was /dev/null
}

// --- NodePodStreams over a pod manager -----------------------------------------------------------

// Keeps the phase of each pod's last status.
class PhaseSink : public PodSink {
 public:
  absl::Status WriteStatus(const PodRef& pod, const json::object& status) override {
    std::lock_guard<std::mutex> lock(mu_);
    const json::value* phase = status.if_contains("phase");
    phases_[pod.name] = phase != nullptr && phase->is_string() ? phase->as_string().c_str() : "";
    cv_.notify_all();
    return absl::OkStatus();
  }
  absl::Status ConfirmDeletion(const PodRef&) override { return absl::OkStatus(); }
  void RecordEvent(const PodRef&, const std::string&, const PodEvent&) override {}
  absl::StatusOr<json::object> GetObject(std::string_view, const std::string&,
                                         const std::string& name) override {
    return absl::NotFoundError(name);
  }
  bool WaitPhase(const std::string& pod, const std::string& phase) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, 15s, [&] { return phases_[pod] == phase; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::string> phases_;
};

class NodePodStreamsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::signal(SIGPIPE, SIG_IGN);
    char dir[] = "/tmp/muster-streams-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    dir_ = dir;
    NodeConfig proc;
    proc.name = "proc";
    proc.runtime = RuntimeKind::kProcess;
    proc.internal_ip = "127.0.0.1";
    NodeConfig sim;
    sim.name = "sim";
    sim.internal_ip = "10.1.0.1";
    sim.pod_cidr = "10.128.0.0/24";
    PodManagerOptions options;
    options.worker.data_dir = dir_;
    manager_ = std::make_unique<PodManager>(std::vector<NodeConfig>{proc, sim}, sink_, simulated_,
                                            process_, options);
    ASSERT_TRUE(manager_->Start().ok());
    streams_ = std::make_unique<NodePodStreams>(*manager_, process_);
  }
  void TearDown() override {
    streams_->Stop();
    manager_->Stop();
    process_.Shutdown(0ms);
    simulated_.Shutdown(0ms);
    std::filesystem::remove_all(dir_);
  }
  // A pod named `name` with one container "main" running `script` on `node`.
  void RunPod(const std::string& name, const std::string& node, const std::string& script) {
    json::object pod = json::parse(R"({"metadata":{"namespace":"default"},"spec":{
        "restartPolicy":"Never","containers":[{"name":"main","image":"busybox",
        "env":[{"name":"X","value":"from-the-spec"}]}]}})").as_object();
    pod["metadata"].as_object()["name"] = name;
    pod["metadata"].as_object()["uid"] = "uid-" + name;
    pod["spec"].as_object()["nodeName"] = node;
    pod["spec"].as_object()["containers"].as_array()[0].as_object()["command"] =
        json::array{"sh", "-c", script};
    manager_->Upsert(pod);
  }
  common::PodStreamRequest Request(const std::string& pod, std::vector<std::string> command) {
    common::PodStreamRequest r;
    r.ns = "default";
    r.pod = pod;
    r.uid = "uid-" + pod;
    r.container = "main";
    r.command = std::move(command);
    r.use_stdout = true;
    r.use_stderr = true;
    return r;
  }

  std::string dir_;
  PhaseSink sink_;
  ProcessRuntime process_;
  SimulatedRuntime simulated_;
  std::unique_ptr<PodManager> manager_;
  std::unique_ptr<NodePodStreams> streams_;
};

TEST_F(NodePodStreamsTest, ExecRunsInTheContainersEnvironmentAndReportsItsExitCode) {
  RunPod("p", "proc", "sleep 60");
  ASSERT_TRUE(sink_.WaitPhase("p", "Running"));
  auto session = streams_->Exec(
      Request("p", {"sh", "-c", "echo $X $HOSTNAME; test -d \"$MUSTER_ROOT\" && pwd; exit 3"}));
  ASSERT_TRUE(session.ok()) << session.status();
  std::mutex mu;
  std::condition_variable cv;
  std::optional<int> code;
  (*session)->OnExit([&](int c) {
    std::lock_guard<std::mutex> lock(mu);
    code = c;
    cv.notify_all();
  });
  const int out = std::exchange((*session)->stdout_fd, -1);
  EXPECT_EQ(ReadToEnd(out), "from-the-spec p\n" + dir_ + "/pods/default/p/main\n");
  std::unique_lock<std::mutex> lock(mu);
  cv.wait_for(lock, 10s, [&] { return code.has_value(); });
  EXPECT_EQ(code, 3);
}

TEST_F(NodePodStreamsTest, ASimulatedPodHasNothingToExecInto) {
  RunPod("s", "sim", "sleep 60");
  ASSERT_TRUE(sink_.WaitPhase("s", "Running"));
  auto session = streams_->Exec(Request("s", {"true"}));
  ASSERT_FALSE(session.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(session.status()));
  EXPECT_THAT(std::string(session.status().message()),
              HasSubstr("runs on muster's simulated node \"sim\", where nothing runs"));
  common::PodStreamRequest forward = Request("s", {});
  forward.container.clear();
  EXPECT_THAT(std::string(streams_->Check(forward).message()), HasSubstr("no ports to forward"));
}

TEST_F(NodePodStreamsTest, RefusesWhatIsNotRunningHere) {
  RunPod("done", "proc", "true");
  ASSERT_TRUE(sink_.WaitPhase("done", "Succeeded"));
  auto ended = streams_->Exec(Request("done", {"true"}));
  EXPECT_TRUE(absl::IsFailedPrecondition(ended.status()));
  EXPECT_EQ(ended.status().message(), "container not found (\"main\")");
  EXPECT_TRUE(absl::IsNotFound(streams_->Exec(Request("elsewhere", {"true"})).status()));
  RunPod("p", "proc", "sleep 60");
  ASSERT_TRUE(sink_.WaitPhase("p", "Running"));
  auto missing = streams_->Exec(Request("p", {"no-such-command-here"}));
  EXPECT_TRUE(absl::IsInvalidArgument(missing.status()));  // said after the upgrade
  streams_->Stop();
  EXPECT_TRUE(absl::IsUnavailable(streams_->Exec(Request("p", {"true"})).status()));
}

}  // namespace
}  // namespace muster::node
