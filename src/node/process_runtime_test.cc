#include "node/process_runtime.h"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/files.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "node/simulated_runtime.h"

namespace muster::node {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

// Children of this process, zombies included, from /proc.
std::vector<pid_t> ChildrenOfThisProcess() {
  std::vector<pid_t> out;
  DIR* dir = ::opendir("/proc");
  if (dir == nullptr) return out;
  while (dirent* e = ::readdir(dir)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    std::string stat = common::ReadFile("/proc/" + std::string(e->d_name) + "/stat").value_or("");
    size_t paren = stat.rfind(')');
    if (paren == std::string::npos) continue;
    std::istringstream fields(stat.substr(paren + 2));
    char state;
    long ppid;
    fields >> state >> ppid;
    if (ppid == ::getpid()) out.push_back(static_cast<pid_t>(pid));
  }
  ::closedir(dir);
  return out;
}

bool GroupAlive(pid_t pgid) { return ::kill(-pgid, 0) == 0 || errno != ESRCH; }

// Collects exit callbacks.
class Exits {
 public:
  Runtime::ExitCallback Callback() {
    return [this](ContainerId id, const ContainerExit& exit) {
      std::lock_guard<std::mutex> lock(mu_);
      exits_.emplace_back(id, exit);
      cv_.notify_all();
    };
  }
  std::optional<ContainerExit> Wait(ContainerId id, std::chrono::milliseconds timeout = 10s) {
    std::unique_lock<std::mutex> lock(mu_);
    std::optional<ContainerExit> found;
    cv_.wait_for(lock, timeout, [&] {
      for (const auto& [i, e] : exits_) {
        if (i == id) found = e;
      }
      return found.has_value();
    });
    return found;
  }
  size_t Count() {
    std::lock_guard<std::mutex> lock(mu_);
    return exits_.size();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::pair<ContainerId, ContainerExit>> exits_;
};

class ProcessRuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/muster-runtime-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    dir_ = dir;
  }
  void TearDown() override {
    runtime_.Shutdown(0ms);
    std::filesystem::remove_all(dir_);
  }

  ContainerLaunch Shell(const std::string& script, const std::string& name = "c") {
    ContainerLaunch launch;
    launch.description = "test/" + name;
    launch.argv = {"sh", "-c", script};
    launch.env = {"PATH=/usr/bin:/bin", "FOO=bar"};
    launch.working_dir = dir_ + "/work/" + name;
    launch.log_path = dir_ + "/logs/" + name + ".log";
    return launch;
  }

  std::string dir_;
  ProcessRuntime runtime_;
  Exits exits_;
};

TEST_F(ProcessRuntimeTest, RunsInItsDirectoryWithItsEnvironmentAndLogsBothStreams) {
  auto id = runtime_.Start(Shell("echo out; echo err >&2; echo FOO=$FOO; echo HOME=$HOME; pwd"),
                           exits_.Callback());
  ASSERT_TRUE(id.ok()) << id.status();
  auto exit = exits_.Wait(*id);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->exit_code, 0);
  EXPECT_EQ(exit->signal, 0);
  // Exactly the given environment: HOME is not inherited.
  EXPECT_EQ(common::ReadFile(dir_ + "/logs/c.log").value_or(""),
            "out\nerr\nFOO=bar\nHOME=\n" + dir_ + "/work/c\n");
}

TEST_F(ProcessRuntimeTest, LogsAppendUnlessTruncated) {
  for (int i = 0; i < 2; ++i) {
    auto id = runtime_.Start(Shell("echo run"), exits_.Callback());
    ASSERT_TRUE(id.ok());
    ASSERT_TRUE(exits_.Wait(*id));
  }
  EXPECT_EQ(common::ReadFile(dir_ + "/logs/c.log").value_or(""), "run\nrun\n");
  ContainerLaunch fresh = Shell("echo fresh");
  fresh.truncate_log = true;
  auto id = runtime_.Start(fresh, exits_.Callback());
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(exits_.Wait(*id));
  EXPECT_EQ(common::ReadFile(dir_ + "/logs/c.log").value_or(""), "fresh\n");
}

// More than a pipe holds, then an exit: all of it is in the log when the exit is reported, and
// the index names the run and times its lines.
TEST_F(ProcessRuntimeTest, OutputIsAllInTheLogWhenTheExitIsReportedAndTheIndexTimesIt) {
  ContainerLaunch launch = Shell("yes 0123456789abcdef | head -n 20000; echo last >&2");
  launch.log_run_id = "muster://uid-c-0";
  const auto before = std::chrono::system_clock::now();
  auto id = runtime_.Start(launch, exits_.Callback());
  ASSERT_TRUE(id.ok()) << id.status();
  ASSERT_TRUE(exits_.Wait(*id));
  const auto after = std::chrono::system_clock::now();
  const std::string log = common::ReadFile(dir_ + "/logs/c.log").value_or("");
  EXPECT_EQ(log.size(), 20000u * 17 + 5);
  EXPECT_THAT(log, ::testing::EndsWith("0123456789abcdef\nlast\n"));

  common::ContainerLogIndex index;
  index.Append(common::ReadFile(common::ContainerLogIndexPath(dir_ + "/logs/c.log")).value_or(""));
  ASSERT_EQ(index.runs().size(), 1u);
  EXPECT_EQ(index.runs()[0].id, "muster://uid-c-0");
  const auto nanos = [](std::chrono::system_clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  };
  for (int64_t line : {int64_t{0}, int64_t{17 * 10000}, static_cast<int64_t>(log.size()) - 5}) {
    std::optional<int64_t> at = index.LineTime(line);
    ASSERT_TRUE(at.has_value()) << line;
    EXPECT_GE(*at, nanos(before)) << line;
    EXPECT_LE(*at, nanos(after)) << line;
  }
}

TEST_F(ProcessRuntimeTest, EachStartIsARunInTheIndex) {
  for (const char* run : {"run-0", "run-1"}) {
    ContainerLaunch launch = Shell("echo run");
    launch.log_run_id = run;
    auto id = runtime_.Start(launch, exits_.Callback());
    ASSERT_TRUE(id.ok());
    ASSERT_TRUE(exits_.Wait(*id));
  }
  common::ContainerLogIndex index;
  index.Append(common::ReadFile(common::ContainerLogIndexPath(dir_ + "/logs/c.log")).value_or(""));
  ASSERT_EQ(index.runs().size(), 2u);
  EXPECT_EQ(index.runs()[0].id, "run-0");
  EXPECT_EQ(index.runs()[0].end, 4);
  EXPECT_EQ(index.runs()[1].id, "run-1");
  EXPECT_EQ(index.runs()[1].begin, 4);
}

TEST_F(ProcessRuntimeTest, ExitCodesAndSignals) {
  auto three = runtime_.Start(Shell("exit 3", "three"), exits_.Callback());
  auto killed = runtime_.Start(Shell("kill -9 $$", "killed"), exits_.Callback());
  ASSERT_TRUE(three.ok());
  ASSERT_TRUE(killed.ok());
  auto e3 = exits_.Wait(*three);
  auto e9 = exits_.Wait(*killed);
  ASSERT_TRUE(e3 && e9);
  EXPECT_EQ(e3->exit_code, 3);
  EXPECT_EQ(e3->signal, 0);
  EXPECT_EQ(e9->exit_code, 137);
  EXPECT_EQ(e9->signal, 9);
}

TEST_F(ProcessRuntimeTest, CommandsThatCannotStartSayWhy) {
  ContainerLaunch missing = Shell("");
  missing.argv = {"no-such-command-muster"};
  auto a = runtime_.Start(missing, exits_.Callback());
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(std::string(a.status().message()),
            "exec: \"no-such-command-muster\": executable file not found in $PATH");

  const std::string script = dir_ + "/not-executable.sh";
  std::ofstream(script) << "echo hi\n";
  ContainerLaunch denied = Shell("");
  denied.argv = {script};
  auto b = runtime_.Start(denied, exits_.Callback());
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(std::string(b.status().message()), "exec: \"" + script + "\": permission denied");

  ContainerLaunch empty = Shell("");
  empty.argv.clear();
  EXPECT_FALSE(runtime_.Start(empty, exits_.Callback()).ok());
  EXPECT_EQ(runtime_.Running(), 0u);
  EXPECT_EQ(exits_.Count(), 0u);
  EXPECT_TRUE(ChildrenOfThisProcess().empty());
}

TEST_F(ProcessRuntimeTest, KillSendsSigtermThenSigkillAfterTheGracePeriod) {
  // Ignores SIGTERM (says so in its log) and keeps running.
  auto stubborn = runtime_.Start(
      Shell("trap 'echo got TERM' TERM; echo ready; while true; do sleep 0.05; done"),
      exits_.Callback());
  ASSERT_TRUE(stubborn.ok());
  const std::string log = dir_ + "/logs/c.log";
  for (int i = 0;
       i < 200 && common::ReadFile(log).value_or("").find("ready") == std::string::npos; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  const auto start = std::chrono::steady_clock::now();
  runtime_.Kill(*stubborn, 600ms);
  auto exit = exits_.Wait(*stubborn);
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->exit_code, 137);
  EXPECT_GE(took, 600ms);
  EXPECT_THAT(common::ReadFile(log).value_or(""), HasSubstr("got TERM"));

  // One that ends on SIGTERM does so at once, well before its grace period.
  auto polite = runtime_.Start(Shell("exec sleep 30", "polite"), exits_.Callback());
  ASSERT_TRUE(polite.ok());
  const auto start2 = std::chrono::steady_clock::now();
  runtime_.Kill(*polite, 20s);
  auto exit2 = exits_.Wait(*polite);
  ASSERT_TRUE(exit2.has_value());
  EXPECT_EQ(exit2->exit_code, 143);
  EXPECT_EQ(exit2->signal, 15);
  EXPECT_LT(std::chrono::steady_clock::now() - start2, 5s);
}

TEST_F(ProcessRuntimeTest, WhatAContainerLeavesBehindIsKilled) {
  // The main process exits while a background child of it still runs.
  auto id = runtime_.Start(Shell("sleep 30 & sleep 0.3; exit 0"), exits_.Callback());
  ASSERT_TRUE(id.ok());
  auto pid = runtime_.Pid(*id);
  ASSERT_TRUE(pid.has_value());
  ASSERT_TRUE(exits_.Wait(*id));
  bool gone = false;
  for (int i = 0; i < 200 && !gone; ++i) {
    gone = !GroupAlive(*pid);
    if (!gone) std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(gone) << "process group " << *pid << " outlived its container";
}

TEST_F(ProcessRuntimeTest, ShutdownStopsEverythingAndLeavesNoZombies) {
  std::vector<pid_t> groups;
  for (int i = 0; i < 3; ++i) {
    auto id = runtime_.Start(
        Shell(i == 0 ? "trap '' TERM; sleep 30 & sleep 30; wait" : "sleep 30 & sleep 30",
              "c" + std::to_string(i)),
        exits_.Callback());
    ASSERT_TRUE(id.ok());
    groups.push_back(*runtime_.Pid(*id));
  }
  // A container that already ended and was reaped.
  auto quick = runtime_.Start(Shell("true", "quick"), exits_.Callback());
  ASSERT_TRUE(quick.ok());
  ASSERT_TRUE(exits_.Wait(*quick));
  EXPECT_EQ(runtime_.Running(), 3u);

  runtime_.Shutdown(300ms);
  EXPECT_EQ(runtime_.Running(), 0u);
  EXPECT_EQ(exits_.Count(), 1u);  // no callbacks for what Shutdown stopped
  EXPECT_TRUE(ChildrenOfThisProcess().empty());
  for (pid_t g : groups) {
    bool gone = false;
    for (int i = 0; i < 200 && !gone; ++i) {
      gone = !GroupAlive(g);
      if (!gone) std::this_thread::sleep_for(10ms);
    }
    EXPECT_TRUE(gone) << "process group " << g << " survived Shutdown";
  }
  EXPECT_FALSE(runtime_.Start(Shell("true"), exits_.Callback()).ok());
}

TEST(SimulatedRuntimeTest, KeepsTimeAndExitsWithTheGivenCode) {
  SimulatedRuntime runtime;
  Exits exits;
  ContainerLaunch quick;
  quick.run_seconds = 0.1;
  quick.exit_code = 3;
  ContainerLaunch forever;  // run_seconds < 0
  const auto start = std::chrono::steady_clock::now();
  auto a = runtime.Start(quick, exits.Callback());
  auto b = runtime.Start(forever, exits.Callback());
  auto c = runtime.Start(forever, exits.Callback());
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  auto ea = exits.Wait(*a);
  ASSERT_TRUE(ea);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 100ms);
  EXPECT_EQ(ea->exit_code, 3);
  EXPECT_FALSE(exits.Wait(*b, 200ms));  // still running
  runtime.Kill(*b, 1s);
  runtime.Kill(*c, 0ms);
  auto eb = exits.Wait(*b);
  auto ec = exits.Wait(*c);
  ASSERT_TRUE(eb && ec);
  EXPECT_EQ(eb->exit_code, 143);
  EXPECT_EQ(ec->exit_code, 137);
  EXPECT_EQ(runtime.Running(), 0u);
  auto d = runtime.Start(forever, exits.Callback());
  ASSERT_TRUE(d.ok());
  runtime.Shutdown(0ms);
  EXPECT_EQ(exits.Count(), 3u);
  EXPECT_FALSE(runtime.Start(forever, exits.Callback()).ok());
}

}  // namespace
}  // namespace muster::node
