// Volcano Commands against a real embedded API server, in-process: the job controller suspends
// and resumes Jobs (AbortJob, ResumeJob), the queue controller closes and opens Queues
// (CloseQueue, OpenQueue), each deleting the Command it takes and recording it as Volcano does.
// A test "scheduler" admits PodGroups and a test "kubelet" runs pods, as in job_controller_test.

#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "apiserver/apiserver.h"
#include "apiserver/local_transport.h"
#include "apiserver/testing/test_server.h"
#include "boost/json/parse.hpp"
#include "controller/job_controller.h"
#include "controller/queue_controller.h"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::controller {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;
using ::testing::IsEmpty;

std::string CommandTestStr(const json::object& o, std::initializer_list<std::string_view> path) {
  const json::object* cur = &o;
  std::string_view last;
  for (auto it = path.begin(); it != path.end(); ++it) {
    if (std::next(it) == path.end()) {
      last = *it;
      break;
    }
    const json::value* next = cur->if_contains(*it);
    if (next == nullptr || !next->is_object()) return "";
    cur = &next->get_object();
  }
  const json::value* v = cur->if_contains(last);
  return v != nullptr && v->is_string() ? std::string(v->get_string()) : "";
}

bool CommandTestEventually(const std::function<bool()>& condition) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return condition();
}

class CommandsControllerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = apiserver::testing::MakeTempDir("commands");
    auto server = apiserver::testing::StartTestServer(dir_);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    api_ = std::make_unique<client::Client>(std::make_shared<apiserver::LocalTransport>(*server_));
  }

  void TearDown() override {
    stop_fakes_ = true;
    for (std::thread& t : fakes_) t.join();
    queue_controller_.reset();
    job_controller_.reset();
    apiserver::testing::StopTestServer(server_, dir_);
  }

  void StartJobController() {
    JobControllerOptions options;
    options.workers = 2;
    job_controller_ = NewJobController(*api_, options);
    ASSERT_TRUE(job_controller_->Start(10s).ok());
  }

  void StartQueueController() {
    queue_controller_ = NewQueueController(*api_);
    ASSERT_TRUE(queue_controller_->Start(10s).ok());
  }

  // The test scheduler admits every pending PodGroup; the test kubelet runs every pending pod.
  void RunEverything() {
    fakes_.emplace_back([this] {
      while (!stop_fakes_) {
        if (auto groups = api_->List(client::PodGroups(), "default"); groups.ok()) {
          for (json::object& pg : groups->items) {
            if (CommandTestStr(pg, {"status", "phase"}) != "Pending") continue;
            pg["status"] = json::object{{"phase", "Inqueue"}};
            (void)api_->UpdateStatus(client::PodGroups(), std::move(pg));
          }
        }
        if (auto pods = api_->List(client::Pods(), "default"); pods.ok()) {
          for (json::object& pod : pods->items) {
            if (CommandTestStr(pod, {"status", "phase"}) != "Pending" ||
                pod["metadata"].as_object().contains("deletionTimestamp")) {
              continue;
            }
            pod["status"] = json::object{{"phase", "Running"}};
            (void)api_->UpdateStatus(client::Pods(), std::move(pod));
          }
        }
        std::this_thread::sleep_for(10ms);
      }
    });
  }

  json::object Create(const client::Resource& resource, std::string_view ns, std::string text) {
    auto created = api_->Create(resource, ns, json::parse(text).as_object());
    EXPECT_TRUE(created.ok()) << created.status();
    return created.ok() ? *created : json::object();
  }

  json::object CreateJob(std::string_view name, int replicas) {
    return Create(client::VolcanoJobs(), "default", fmt::format(R"({{
      "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {{"name": "{}"}},
      "spec": {{"minAvailable": {}, "schedulerName": "volcano", "queue": "default",
        "tasks": [{{"replicas": {}, "name": "worker", "template": {{"spec": {{
          "containers": [{{"name": "w", "image": "busybox"}}]}}}}}}]}}}})",
                                                                name, replicas, replicas));
  }

  // A Command as vcctl creates it: named after its target and action, the target its
  // controller reference.
  void Issue(std::string_view action, const client::Resource& kind, const json::object& target) {
    const std::string name = CommandTestStr(target, {"metadata", "name"});
    Create(client::Commands(), "default", fmt::format(R"({{
      "apiVersion": "bus.volcano.sh/v1alpha1", "kind": "Command",
      "metadata": {{"name": "{}-{}"}}, "action": "{}",
      "target": {{"apiVersion": "{}", "kind": "{}", "name": "{}", "uid": "{}",
                  "controller": true, "blockOwnerDeletion": true}}}})",
                                                      name, Lower(action), action,
                                                      kind.ApiVersion(), kind.kind, name,
                                                      CommandTestStr(target, {"metadata", "uid"})));
  }

  static std::string Lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
  }

  size_t CommandsLeft() {
    auto list = api_->List(client::Commands(), "default");
    return list.ok() ? list->items.size() : 999;
  }

  std::string JobPhase(std::string_view name) {
    auto job = api_->Get(client::VolcanoJobs(), "default", name);
    return job.ok() ? CommandTestStr(*job, {"status", "state", "phase"}) : "<gone>";
  }

  size_t RunningPods(std::string_view job) {
    auto list = api_->List(client::Pods(), "default",
                           {fmt::format("volcano.sh/job-name={}", job), ""});
    size_t n = 0;
    if (!list.ok()) return n;
    for (const json::object& pod : list->items) {
      if (CommandTestStr(pod, {"status", "phase"}) == "Running") ++n;
    }
    return n;
  }

  size_t PodGroups() {
    auto list = api_->List(client::PodGroups(), "default");
    return list.ok() ? list->items.size() : 999;
  }

  std::string QueueState(std::string_view name) {
    auto queue = api_->Get(client::Queues(), "", name);
    return queue.ok() ? CommandTestStr(*queue, {"status", "state"}) : "<gone>";
  }

  // "reason: message" of the events about the object of that kind and name.
  std::vector<std::string> EventsAbout(std::string_view kind, std::string_view name) {
    std::vector<std::string> out;
    auto list = api_->List(client::Events(), "default");
    if (!list.ok()) return out;
    for (const json::object& e : list->items) {
      if (CommandTestStr(e, {"involvedObject", "kind"}) == kind &&
          CommandTestStr(e, {"involvedObject", "name"}) == name) {
        out.push_back(CommandTestStr(e, {"reason"}) + ": " + CommandTestStr(e, {"message"}));
      }
    }
    return out;
  }

  std::string dir_;
  std::unique_ptr<apiserver::ApiServer> server_;
  std::unique_ptr<client::Client> api_;
  std::unique_ptr<Controller> job_controller_;
  std::unique_ptr<Controller> queue_controller_;
  std::atomic<bool> stop_fakes_{false};
  std::vector<std::thread> fakes_;
};

TEST_F(CommandsControllerTest, SuspendedJobLosesItsPodsAndRunsAgainWhenResumed) {
  StartJobController();
  RunEverything();
  json::object job = CreateJob("train", 2);
  ASSERT_TRUE(CommandTestEventually([&] { return JobPhase("train") == "Running"; }));

  Issue("AbortJob", client::VolcanoJobs(), job);
  EXPECT_TRUE(CommandTestEventually([&] { return JobPhase("train") == "Aborted"; }))
      << JobPhase("train");
  EXPECT_EQ(RunningPods("train"), 0u);
  EXPECT_EQ(PodGroups(), 0u);  // Volcano's killJob removes it with the pods
  EXPECT_EQ(CommandsLeft(), 0u);
  // Events are recorded in the background: wait for them.
  const std::string issued =
      "CommandIssued: Start to execute command AbortJob, and clean it up to make sure executed "
      "not more than once.";
  const std::string executed = "ExecuteAction: Start to execute action AbortJob";
  EXPECT_TRUE(CommandTestEventually([&] {
    std::vector<std::string> events = EventsAbout("Job", "train");
    return std::find(events.begin(), events.end(), issued) != events.end() &&
           std::find(events.begin(), events.end(), executed) != events.end();
  })) << ::testing::PrintToString(EventsAbout("Job", "train"));

  Issue("ResumeJob", client::VolcanoJobs(), job);
  EXPECT_TRUE(CommandTestEventually(
      [&] { return JobPhase("train") == "Running" && RunningPods("train") == 2; }))
      << JobPhase("train");
  EXPECT_EQ(PodGroups(), 1u);
  EXPECT_EQ(CommandsLeft(), 0u);
  auto resumed = api_->Get(client::VolcanoJobs(), "default", "train");
  ASSERT_TRUE(resumed.ok());
  EXPECT_EQ(resumed->at("status").at("retryCount").to_number<int>(), 1);
}

// A Command issued while no controller ran is taken when it starts.
TEST_F(CommandsControllerTest, CommandsWaitingAtStartAreTaken) {
  json::object job = CreateJob("early", 1);
  Issue("TerminateJob", client::VolcanoJobs(), job);
  StartJobController();
  EXPECT_TRUE(CommandTestEventually([&] { return JobPhase("early") == "Terminated"; }))
      << JobPhase("early");
  EXPECT_EQ(CommandsLeft(), 0u);
}

TEST_F(CommandsControllerTest, QueueClosesOnceItsPodGroupsAreGoneAndOpensAgain) {
  StartJobController();
  StartQueueController();
  json::object queue = Create(client::Queues(), "", R"({"apiVersion":
      "scheduling.volcano.sh/v1beta1","kind":"Queue","metadata":{"name":"team"},
      "spec":{"weight":1}})");
  Create(client::PodGroups(), "default", R"({"apiVersion":"scheduling.volcano.sh/v1beta1",
      "kind":"PodGroup","metadata":{"name":"pg"},"spec":{"minMember":1,"queue":"team"}})");

  Issue("CloseQueue", client::Queues(), queue);
  EXPECT_TRUE(CommandTestEventually([&] { return QueueState("team") == "Closing"; }))
      << QueueState("team");
  EXPECT_EQ(CommandsLeft(), 0u);
  EXPECT_TRUE(CommandTestEventually([&] {
    std::vector<std::string> events = EventsAbout("Queue", "team");
    return std::find(events.begin(), events.end(), "CloseQueue: Close queue succeed") !=
           events.end();
  })) << ::testing::PrintToString(EventsAbout("Queue", "team"));

  ASSERT_TRUE(api_->Delete(client::PodGroups(), "default", "pg").ok());
  EXPECT_TRUE(CommandTestEventually([&] { return QueueState("team") == "Closed"; }))
      << QueueState("team");

  Issue("OpenQueue", client::Queues(), queue);
  EXPECT_TRUE(CommandTestEventually([&] { return QueueState("team") == "Open"; }))
      << QueueState("team");
  // Without PodGroups a queue closes at once.
  Issue("CloseQueue", client::Queues(), queue);
  EXPECT_TRUE(CommandTestEventually([&] { return QueueState("team") == "Closed"; }))
      << QueueState("team");
}

// Forwards to another transport, but holds back by `delay` every event of the watches whose path
// has `part`: an object's add then reaches the controller after the Command issued right behind it.
class SlowWatchTransport : public client::Transport {
 public:
  SlowWatchTransport(std::shared_ptr<client::Transport> inner, std::string part,
                     std::chrono::milliseconds delay)
      : inner_(std::move(inner)), part_(std::move(part)), delay_(delay) {}
  absl::StatusOr<client::Response> Do(const client::Request& r) override { return inner_->Do(r); }
  absl::StatusOr<client::Response> Stream(const client::Request& r,
                                          const std::function<bool(std::string_view)>& on_line,
                                          const std::atomic<bool>& stop) override {
    if (r.path.find(part_) == std::string::npos) {
      return inner_->Stream(r, on_line, stop);
    }
    return inner_->Stream(
        r,
        [this, &on_line](std::string_view line) {
          std::this_thread::sleep_for(delay_);
          return on_line(line);
        },
        stop);
  }

 private:
  std::shared_ptr<client::Transport> inner_;
  std::string part_;
  std::chrono::milliseconds delay_;
};

// A Command issued right after its Job is created may overtake the Job's add (each comes through
// a watch of its own): it is carried out all the same, never dropped as a Command for no Job.
TEST_F(CommandsControllerTest, ACommandThatOvertakesItsJobsAddIsCarriedOut) {
  client::Client slow(std::make_shared<SlowWatchTransport>(
      std::make_shared<apiserver::LocalTransport>(*server_), "/batch.volcano.sh/", 500ms));
  JobControllerOptions options;
  options.workers = 2;
  job_controller_ = NewJobController(slow, options);
  ASSERT_TRUE(job_controller_->Start(10s).ok());
  Issue("AbortJob", client::VolcanoJobs(), CreateJob("late", 1));
  EXPECT_TRUE(CommandTestEventually([&] { return JobPhase("late") == "Aborted"; }))
      << JobPhase("late");
  job_controller_.reset();  // before `slow` goes
}

// The same for a queue: a CloseQueue issued right after the Queue was created is carried out.
TEST_F(CommandsControllerTest, ACommandThatOvertakesItsQueuesAddIsCarriedOut) {
  client::Client slow(std::make_shared<SlowWatchTransport>(
      std::make_shared<apiserver::LocalTransport>(*server_), "/queues", 500ms));
  queue_controller_ = NewQueueController(slow);
  ASSERT_TRUE(queue_controller_->Start(10s).ok());
  json::object queue = Create(client::Queues(), "", R"({"apiVersion":
      "scheduling.volcano.sh/v1beta1","kind":"Queue","metadata":{"name":"late"},
      "spec":{"weight":1}})");
  Issue("CloseQueue", client::Queues(), queue);
  EXPECT_TRUE(CommandTestEventually([&] { return QueueState("late") == "Closed"; }))
      << QueueState("late");
  queue_controller_.reset();  // before `slow` goes
}

// Each controller takes only the Commands for its kind: the job controller leaves a queue's.
TEST_F(CommandsControllerTest, TheJobControllerLeavesQueueCommandsToTheQueueController) {
  StartJobController();
  json::object queue = Create(client::Queues(), "", R"({"apiVersion":
      "scheduling.volcano.sh/v1beta1","kind":"Queue","metadata":{"name":"team"},
      "spec":{"weight":1}})");
  Issue("CloseQueue", client::Queues(), queue);
  // The watch delivers Commands in order: once the Job's, issued next, is taken, the queue's
  // has been seen.
  Issue("AbortJob", client::VolcanoJobs(), CreateJob("train", 1));
  EXPECT_TRUE(CommandTestEventually([&] { return JobPhase("train") == "Aborted"; }));
  ASSERT_TRUE(job_controller_->WaitIdle(10s));
  auto left = api_->List(client::Commands(), "default");
  ASSERT_TRUE(left.ok());
  ASSERT_EQ(left->items.size(), 1u);
  EXPECT_EQ(CommandTestStr(left->items[0], {"metadata", "name"}), "team-closequeue");
  EXPECT_EQ(QueueState("team"), "Open");

  StartQueueController();
  EXPECT_TRUE(CommandTestEventually([&] { return QueueState("team") == "Closed"; }))
      << QueueState("team");
  EXPECT_EQ(CommandsLeft(), 0u);
}

}  // namespace
}  // namespace muster::controller
