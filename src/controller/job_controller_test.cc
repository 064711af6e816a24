// The job controller against a real embedded API server (port 0, temporary data directory),
// through the client layer: in-process (LocalTransport) for most tests, and over HTTP for the
// basic flow. Nothing else runs: a test "scheduler" admits PodGroups (phase Inqueue) and a test
// "kubelet" moves pods through their phases, so each test decides what the cluster does.

#include "controller/job_controller.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "api/time.h"
#include "apiserver/apiserver.h"
#include "apiserver/local_transport.h"
#include "apiserver/testing/test_server.h"
#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "client/http_transport.h"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/metric_family.h"
#include "prometheus/registry.h"

namespace muster::controller {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

enum class Via { kInProcess, kHttp };

const json::value* Walk(const json::value* cur, const std::string_view* key,
                        const std::string_view* end) {
  for (; key != end && cur != nullptr; ++key) {
    if (cur->is_array()) {
      size_t i = std::stoul(std::string(*key));
      if (i >= cur->get_array().size()) return nullptr;
      cur = &cur->get_array()[i];
    } else if (cur->is_object()) {
      cur = cur->get_object().if_contains(*key);
    } else {
      return nullptr;
    }
  }
  return cur;
}

// Objects are walked in place (a json::value made from one would be a temporary copy).
const json::value* Find(const json::object& o, std::initializer_list<std::string_view> path) {
  if (path.size() == 0) return nullptr;
  return Walk(o.if_contains(*path.begin()), path.begin() + 1, path.end());
}
const json::value* Find(const json::value& v, std::initializer_list<std::string_view> path) {
  return Walk(&v, path.begin(), path.end());
}

template <class T>
std::string Str(const T& v, std::initializer_list<std::string_view> path) {
  const json::value* f = Find(v, path);
  return f != nullptr && f->is_string() ? std::string(f->get_string()) : std::string();
}

template <class T>
int64_t Int(const T& v, std::initializer_list<std::string_view> path) {
  const json::value* f = Find(v, path);
  return f != nullptr && f->is_number() ? f->to_number<int64_t>() : 0;
}

std::string Name(const json::object& o) { return Str(o, {"metadata", "name"}); }

std::string EnvOf(const json::object& pod, std::string_view name) {
  const json::value* env = Find(pod, {"spec", "containers", "0", "env"});
  if (env == nullptr) return "<none>";
  for (const json::value& e : env->get_array()) {
    if (Str(e, {"name"}) == name) {
      const json::value* v = e.get_object().if_contains("value");
      return v != nullptr ? std::string(v->get_string()) : "<valueFrom>";
    }
  }
  return "<none>";
}

// A Job like the seed's gang job (tests/e2e/manifests/tensorflow-job.yaml), trimmed to what the
// controller reads, with extra spec fields merged in.
json::object JobObject(std::string_view name, int replicas, std::string_view extra_spec = "{}") {
  json::object job = json::parse(fmt::format(R"({{
    "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
    "metadata": {{"name": "{}"}},
    "spec": {{"minAvailable": {}, "schedulerName": "volcano", "queue": "default",
      "tasks": [{{"replicas": {}, "name": "trainer", "template": {{"spec": {{
        "restartPolicy": "Never",
        "containers": [{{"name": "trainer", "image": "akash202k/tf-volcano-demo:v1",
          "command": ["python", "train.py"],
          "resources": {{"requests": {{"cpu": "2", "nvidia.com/gpu": 1}},
                         "limits": {{"cpu": "2", "nvidia.com/gpu": 1}}}}}}]}}}}}}]}}}})",
                                             name, replicas, replicas))
                         .as_object();
  const json::value extra = json::parse(extra_spec);
  for (const auto& [k, v] : extra.as_object()) job["spec"].as_object()[k] = v;
  return job;
}

class JobControllerTest : public ::testing::TestWithParam<Via> {
 protected:
  void SetUp() override {
    dir_ = apiserver::testing::MakeTempDir("controller");
    auto server = apiserver::testing::StartTestServer(dir_);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    // The test's own client is always in-process; the controller's follows the parameter.
    api_ = std::make_unique<client::Client>(std::make_shared<apiserver::LocalTransport>(*server_));
    std::shared_ptr<client::Transport> transport;
    if (GetParam() == Via::kInProcess) {
      transport = std::make_shared<apiserver::LocalTransport>(*server_);
    } else {
      auto config = client::LoadKubeconfig(server_->kubeconfig_path());
      ASSERT_TRUE(config.ok()) << config.status();
      auto http = client::MakeHttpTransport(*config);
      ASSERT_TRUE(http.ok()) << http.status();
      transport = *http;
    }
    controller_client_ = std::make_unique<client::Client>(transport);
  }

  void TearDown() override {
    stop_fakes_ = true;
    for (std::thread& t : fakes_) t.join();
    if (controller_) controller_->Stop();
    controller_.reset();
    apiserver::testing::StopTestServer(server_, dir_);
  }

  void StartController(JobControllerOptions options = {}) {
    options.workers = 2;
    controller_ = NewJobController(*controller_client_, options);
    ASSERT_TRUE(controller_->Start(10s).ok());
  }

  // The test scheduler: every PodGroup that has not been admitted becomes Inqueue.
  void AdmitPodGroups() {
    fakes_.emplace_back([this] {
      while (!stop_fakes_) {
        auto list = api_->List(client::PodGroups(), "");
        if (list.ok()) {
          for (json::object& pg : list->items) {
            std::string phase = Str(pg, {"status", "phase"});
            if (phase.empty() || phase == "Pending") SetPodGroupPhase(pg, "Inqueue");
          }
        }
        std::this_thread::sleep_for(10ms);
      }
    });
  }

  // The test kubelet: pending pods start running.
  void RunPods() {
    fakes_.emplace_back([this] {
      while (!stop_fakes_) {
        auto list = api_->List(client::Pods(), "default");
        if (list.ok()) {
          for (json::object& pod : list->items) {
            if (Str(pod, {"status", "phase"}) == "Pending" &&
                Find(pod, {"metadata", "deletionTimestamp"}) == nullptr) {
              SetPodPhase(Name(pod), "Running").IgnoreError();
            }
          }
        }
        std::this_thread::sleep_for(10ms);
      }
    });
  }

  void SetPodGroupPhase(json::object pg, std::string_view phase,
                        std::string_view unschedulable = {}) {
    json::object status{{"phase", phase}};
    if (!unschedulable.empty()) {
      status["conditions"] = json::array{json::object{{"type", "Unschedulable"},
                                                      {"status", "True"},
                                                      {"reason", "NotEnoughResources"},
                                                      {"message", unschedulable}}};
    }
    pg["status"] = std::move(status);
    (void)api_->UpdateStatus(client::PodGroups(), std::move(pg));
  }

  absl::Status SetPodPhase(const std::string& name, std::string_view phase, int exit_code = 0) {
    auto pod = api_->Get(client::Pods(), "default", name);
    if (!pod.ok()) return pod.status();
    json::object state;
    if (phase == "Running") {
      state["running"] = json::object{{"startedAt", "2024-05-01T12:00:00Z"}};
    } else if (phase == "Succeeded" || phase == "Failed") {
      state["terminated"] = json::object{{"exitCode", exit_code}};
    }
    (*pod)["status"] = json::object{
        {"phase", phase},
        {"containerStatuses",
         json::array{json::object{{"name", "trainer"}, {"restartCount", 0}, {"state", state}}}}};
    return api_->UpdateStatus(client::Pods(), *std::move(pod)).status();
  }

  json::object CreateJob(json::object job) {
    auto created = api_->Create(client::VolcanoJobs(), "default", std::move(job));
    EXPECT_TRUE(created.ok()) << created.status();
    return created.ok() ? *created : json::object();
  }

  std::optional<json::object> GetJob(std::string_view name) {
    auto job = api_->Get(client::VolcanoJobs(), "default", name);
    if (!job.ok()) return std::nullopt;
    return *job;
  }

  std::string JobPhase(std::string_view name) {
    auto job = GetJob(name);
    return job ? Str(*job, {"status", "state", "phase"}) : "<gone>";
  }

  std::vector<json::object> JobPods(std::string_view job) {
    auto list =
        api_->List(client::Pods(), "default", {fmt::format("volcano.sh/job-name={}", job), ""});
    return list.ok() ? list->items : std::vector<json::object>{};
  }

  std::set<std::string> PodNames(std::string_view job, bool live_only = true) {
    std::set<std::string> names;
    for (const json::object& p : JobPods(job)) {
      if (live_only && Find(p, {"metadata", "deletionTimestamp"}) != nullptr) continue;
      names.insert(Name(p));
    }
    return names;
  }

  std::vector<json::object> JobEvents(std::string_view job) {
    std::vector<json::object> out;
    auto list = api_->List(client::Events(), "default");
    if (!list.ok()) return out;
    for (json::object& e : list->items) {
      if (Str(e, {"involvedObject", "kind"}) == "Job" &&
          Str(e, {"involvedObject", "name"}) == job) {
        out.push_back(std::move(e));
      }
    }
    return out;
  }

  static bool Eventually(const std::function<bool()>& condition,
                         std::chrono::milliseconds timeout = 10s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (condition()) return true;
      std::this_thread::sleep_for(10ms);
    }
    return condition();
  }

  std::string dir_;
  std::unique_ptr<apiserver::ApiServer> server_;
  std::unique_ptr<client::Client> api_;
  std::unique_ptr<client::Client> controller_client_;
  std::unique_ptr<Controller> controller_;
  std::atomic<bool> stop_fakes_{false};
  std::vector<std::thread> fakes_;
};

// --- The basic flow, over both transports -------------------------------------------------------

TEST_P(JobControllerTest, PodGroupFirstThenPodsOnceItIsInqueue) {
  StartController();
  json::object job = CreateJob(JobObject("gang-tf-job", 2));
  const std::string uid = Str(job, {"metadata", "uid"});
  const std::string pg_name = "gang-tf-job-" + uid;

  std::optional<json::object> pg;
  ASSERT_TRUE(Eventually([&] {
    auto got = api_->Get(client::PodGroups(), "default", pg_name);
    if (got.ok()) pg = *got;
    return got.ok();
  }));
  EXPECT_EQ(Int(*pg, {"spec", "minMember"}), 2);
  EXPECT_EQ(Int(*pg, {"spec", "minTaskMember", "trainer"}), 2);
  EXPECT_EQ(Str(*pg, {"spec", "queue"}), "default");
  EXPECT_EQ(Str(*pg, {"spec", "minResources", "nvidia.com/gpu"}), "2");
  EXPECT_EQ(Str(*pg, {"metadata", "ownerReferences", "0", "uid"}), uid);
  ASSERT_TRUE(Eventually([&] { return JobPhase("gang-tf-job") == "Pending"; }));

  // Not admitted yet: no pods, however long we wait.
  SetPodGroupPhase(*pg, "Pending", "2/2 tasks in gang unschedulable: pod group is not ready");
  ASSERT_TRUE(controller_->WaitIdle(5s));
  std::this_thread::sleep_for(100ms);
  ASSERT_TRUE(controller_->WaitIdle(5s));
  EXPECT_THAT(PodNames("gang-tf-job"), IsEmpty());
  ASSERT_TRUE(Eventually([&] {
    for (const json::object& e : JobEvents("gang-tf-job")) {
      if (Str(e, {"reason"}) == "PodGroupPending") return true;
    }
    return false;
  }));

  pg = *api_->Get(client::PodGroups(), "default", pg_name);
  SetPodGroupPhase(*pg, "Inqueue");
  ASSERT_TRUE(Eventually([&] { return PodNames("gang-tf-job").size() == 2; }));
  EXPECT_THAT(PodNames("gang-tf-job"),
              UnorderedElementsAre("gang-tf-job-trainer-0", "gang-tf-job-trainer-1"));
  for (const json::object& pod : JobPods("gang-tf-job")) {
    const std::string index = Name(pod).substr(Name(pod).size() - 1);
    EXPECT_EQ(Str(pod, {"metadata", "labels", "volcano.sh/job-name"}), "gang-tf-job");
    EXPECT_EQ(Str(pod, {"metadata", "labels", "volcano.sh/task-spec"}), "trainer");
    EXPECT_EQ(Str(pod, {"metadata", "labels", "volcano.sh/task-index"}), index);
    EXPECT_EQ(Str(pod, {"metadata", "annotations", "scheduling.k8s.io/group-name"}), pg_name);
    EXPECT_EQ(Str(pod, {"metadata", "annotations", "volcano.sh/job-version"}), "0");
    EXPECT_EQ(Str(pod, {"metadata", "annotations", "volcano.sh/queue-name"}), "default");
    EXPECT_EQ(Str(pod, {"spec", "schedulerName"}), "volcano");
    EXPECT_EQ(Str(pod, {"metadata", "ownerReferences", "0", "kind"}), "Job");
    EXPECT_EQ(Find(pod, {"metadata", "ownerReferences", "0", "controller"})->as_bool(), true);
  }
  ASSERT_TRUE(Eventually([&] { return Int(*GetJob("gang-tf-job"), {"status", "pending"}) == 2; }));

  // Both start: the Job runs.
  ASSERT_TRUE(SetPodPhase("gang-tf-job-trainer-0", "Running").ok());
  ASSERT_TRUE(SetPodPhase("gang-tf-job-trainer-1", "Running").ok());
  ASSERT_TRUE(Eventually([&] { return JobPhase("gang-tf-job") == "Running"; }));
  json::object running = *GetJob("gang-tf-job");
  EXPECT_EQ(Int(running, {"status", "running"}), 2);
  EXPECT_EQ(Int(running, {"status", "minAvailable"}), 2);
  EXPECT_EQ(Int(running, {"status", "taskStatusCount", "trainer", "phase", "Running"}), 2);
  EXPECT_EQ(Str(running, {"status", "conditions", "0", "status"}), "Pending");
  EXPECT_EQ(Str(running, {"status", "conditions", "1", "status"}), "Running");
  EXPECT_NE(Str(running, {"status", "runningDuration"}), "");
}

INSTANTIATE_TEST_SUITE_P(Transports, JobControllerTest,
                         ::testing::Values(Via::kInProcess, Via::kHttp), [](const auto& info) {
                           return info.param == Via::kInProcess ? "InProcess" : "Http";
                         });

// --- Lifecycle (in-process) ---------------------------------------------------------------------

class JobLifecycleTest : public JobControllerTest {};
INSTANTIATE_TEST_SUITE_P(InProcess, JobLifecycleTest, ::testing::Values(Via::kInProcess),
                         [](const auto&) { return "InProcess"; });

TEST_P(JobLifecycleTest, FailedPodRestartsTheJobUntilMaxRetryThenFailed) {
  AdmitPodGroups();
  RunPods();
  StartController();
  CreateJob(JobObject("retry", 2, R"({"maxRetry": 2,
      "policies": [{"event": "PodFailed", "action": "RestartJob"}]})"));

  for (int attempt = 1; attempt <= 2; ++attempt) {
    SCOPED_TRACE(fmt::format("failure {}", attempt));
    ASSERT_TRUE(Eventually([&] {
      if (PodNames("retry").size() != 2) return false;
      for (const json::object& p : JobPods("retry")) {
        if (Str(p, {"status", "phase"}) != "Running") return false;
      }
      return JobPhase("retry") == "Running";
    })) << [&] {
      std::string state = "job: " + json::serialize(*GetJob("retry")) + "\npods:";
      for (const json::object& p : JobPods("retry")) state += "\n  " + json::serialize(p);
      auto groups = api_->List(client::PodGroups(), "default");
      if (groups.ok()) {
        for (const json::object& g : groups->items) state += "\npodgroup: " + json::serialize(g);
      }
      return state;
    }();
    json::object job = *GetJob("retry");
    EXPECT_EQ(Int(job, {"status", "retryCount"}), attempt - 1);
    const int64_t version = Int(job, {"status", "version"});
    for (const json::object& p : JobPods("retry")) {
      EXPECT_EQ(Str(p, {"metadata", "annotations", "volcano.sh/job-version"}),
                std::to_string(version));
    }
    ASSERT_TRUE(SetPodPhase("retry-trainer-0", "Failed", 1).ok());
    if (attempt < 2) {
      // Killed and started again: a new version of the pods.
      ASSERT_TRUE(Eventually([&] {
        auto j = GetJob("retry");
        return j && Int(*j, {"status", "retryCount"}) == attempt &&
               Int(*j, {"status", "version"}) > version;
      }));
    }
  }
  ASSERT_TRUE(Eventually([&] { return JobPhase("retry") == "Failed"; }));
  json::object failed = *GetJob("retry");
  EXPECT_EQ(Int(failed, {"status", "retryCount"}), 2);
  // The last retry keeps the failed pod; the running one is killed.
  ASSERT_TRUE(Eventually([&] { return PodNames("retry").size() == 1; }));
  EXPECT_THAT(PodNames("retry"), ElementsAre("retry-trainer-0"));
  absl::StatusOr<Job> decoded = DecodeJob(failed);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  std::vector<std::string> phases;
  for (const JobCondition& c : decoded->status.conditions) phases.push_back(c.status);
  EXPECT_THAT(phases, ElementsAre("Pending", "Running", "Restarting", "Pending", "Running",
                                  "Restarting", "Failed"));
  int restarts = 0;
  for (const json::object& e : JobEvents("retry")) {
    if (Str(e, {"reason"}) == "ExecuteAction") {
      EXPECT_EQ(Str(e, {"message"}), "Start to execute action RestartJob");
      EXPECT_EQ(Str(e, {"source", "component"}), "vc-controller-manager");
      ++restarts;
    }
  }
  EXPECT_EQ(restarts, 2);
}

TEST_P(JobLifecycleTest, AllPodsSucceededCompletesAndTtlDeletesTheJob) {
  AdmitPodGroups();
  RunPods();
  StartController();
  CreateJob(JobObject("done", 2, R"({"ttlSecondsAfterFinished": 1})"));
  ASSERT_TRUE(Eventually([&] { return JobPhase("done") == "Running"; }));
  ASSERT_TRUE(SetPodPhase("done-trainer-0", "Succeeded").ok());
  ASSERT_TRUE(Eventually([&] { return Int(*GetJob("done"), {"status", "succeeded"}) == 1; }));
  EXPECT_EQ(JobPhase("done"), "Running");
  ASSERT_TRUE(SetPodPhase("done-trainer-1", "Succeeded").ok());
  ASSERT_TRUE(Eventually([&] { return JobPhase("done") == "Completed"; }));
  std::optional<Clock::time_point> finished =
      api::ParseTime(Str(*GetJob("done"), {"status", "state", "lastTransitionTime"}));
  ASSERT_TRUE(finished.has_value());
  // Completed pods are kept until the Job goes.
  EXPECT_EQ(PodNames("done").size(), 2u);
  ASSERT_TRUE(Eventually([&] { return !GetJob("done").has_value(); }, 15s));
  // Not before the TTL has passed since the Job finished.
  EXPECT_GE(Clock::now(), *finished + 1s);
  ASSERT_TRUE(Eventually([&] { return PodNames("done", false).empty(); }, 15s));
}

// A completed Job deleted and made again under its name is another Job (another uid): it gets its
// own PodGroup and pods and runs to completion, and never counts the pods the deleted run left,
// which are still there until the API server collects them. Twenty times over, as a user's
// delete-and-apply loop goes; before pods were told apart by their owner's uid, about every other
// run showed Completed at once with no pods of its own.
TEST_P(JobLifecycleTest, ResubmittedJobRunsAgainAndNeverCountsTheDeletedRunsPods) {
  AdmitPodGroups();
  RunPods();
  StartController();
  auto running_pods_of = [&](const std::string& uid) {
    int running = 0;
    for (const json::object& pod : JobPods("again")) {
      const json::value* refs = Find(pod, {"metadata", "ownerReferences"});
      const bool own = refs != nullptr && refs->is_array() && !refs->get_array().empty() &&
                       Str(refs->get_array()[0], {"uid"}) == uid;
      if (own && Str(pod, {"status", "phase"}) == "Running") ++running;
    }
    return running;
  };
  for (int run = 0; run < 20; ++run) {
    SCOPED_TRACE(fmt::format("run {}", run));
    const json::object job = CreateJob(JobObject("again", 2));
    const std::string uid = Str(job, {"metadata", "uid"});
    ASSERT_FALSE(uid.empty());
    ASSERT_TRUE(Eventually([&] { return running_pods_of(uid) == 2; }))
        << "the Job is " << JobPhase("again") << " with " << running_pods_of(uid)
        << " pods of its own running";
    EXPECT_TRUE(api_->Get(client::PodGroups(), "default", "again-" + uid).ok());
    ASSERT_TRUE(Eventually([&] { return JobPhase("again") == "Running"; }))
        << "the Job is " << JobPhase("again");
    EXPECT_EQ(Int(*GetJob("again"), {"status", "succeeded"}), 0);
    ASSERT_TRUE(SetPodPhase("again-trainer-0", "Succeeded").ok());
    ASSERT_TRUE(SetPodPhase("again-trainer-1", "Succeeded").ok());
    ASSERT_TRUE(Eventually([&] { return JobPhase("again") == "Completed"; }));
    EXPECT_EQ(Int(*GetJob("again"), {"status", "succeeded"}), 2);
    ASSERT_TRUE(api_->Delete(client::VolcanoJobs(), "default", "again").ok());
    ASSERT_TRUE(Eventually([&] { return !GetJob("again").has_value(); }));
  }
}

TEST_P(JobLifecycleTest, DeletingTheJobRemovesItsPodsAndPodGroup) {
  AdmitPodGroups();
  StartController();
  json::object job = CreateJob(JobObject("gone", 3));
  ASSERT_TRUE(Eventually([&] { return PodNames("gone").size() == 3; }));
  ASSERT_TRUE(api_->Delete(client::VolcanoJobs(), "default", "gone").ok());
  ASSERT_TRUE(Eventually([&] { return PodNames("gone", false).empty(); }, 15s));
  ASSERT_TRUE(Eventually(
      [&] {
        return absl::IsNotFound(
            api_->Get(client::PodGroups(), "default", "gone-" + Str(job, {"metadata", "uid"}))
                .status());
      },
      15s));
  // The controller does not bring anything back.
  ASSERT_TRUE(controller_->WaitIdle(5s));
  EXPECT_THAT(PodNames("gone", false), IsEmpty());
}

TEST_P(JobLifecycleTest, TaskCompletedCompletesTheJobAndKillsTheRest) {
  AdmitPodGroups();
  RunPods();
  StartController();
  json::object job = JobObject("mw", 1, R"({"minAvailable": 3})");
  json::array& tasks = job["spec"].as_object()["tasks"].as_array();
  tasks[0].as_object()["name"] = "master";
  tasks[0].as_object()["policies"] =
      json::parse(R"([{"event": "TaskCompleted", "action": "CompleteJob"}])");
  json::value worker = tasks[0];
  worker.as_object()["name"] = "worker";
  worker.as_object()["replicas"] = 2;
  worker.as_object().erase("policies");
  tasks.push_back(worker);
  CreateJob(job);
  ASSERT_TRUE(Eventually([&] { return JobPhase("mw") == "Running"; }));
  ASSERT_TRUE(SetPodPhase("mw-master-0", "Succeeded").ok());
  ASSERT_TRUE(Eventually([&] { return JobPhase("mw") == "Completed"; }));
  EXPECT_THAT(PodNames("mw", false), ElementsAre("mw-master-0"));
  json::object done = *GetJob("mw");
  EXPECT_EQ(Int(done, {"status", "succeeded"}), 1);
}

TEST_P(JobLifecycleTest, PluginsGiveEnvHostsAndTheHeadlessService) {
  AdmitPodGroups();
  StartController();
  json::object job = JobObject("pt", 1, R"({"minAvailable": 3,
      "plugins": {"env": [], "svc": [], "pytorch": ["--master=master", "--worker=worker"]}})");
  json::array& tasks = job["spec"].as_object()["tasks"].as_array();
  tasks[0].as_object()["name"] = "master";
  json::value worker = tasks[0];
  worker.as_object()["name"] = "worker";
  worker.as_object()["replicas"] = 2;
  tasks.push_back(worker);
  CreateJob(job);
  ASSERT_TRUE(Eventually([&] { return PodNames("pt").size() == 3; }));

  for (const json::object& pod : JobPods("pt")) {
    const std::string name = Name(pod);
    SCOPED_TRACE(name);
    const std::string index = name.substr(name.size() - 1);
    EXPECT_EQ(EnvOf(pod, "VC_TASK_INDEX"), index);
    EXPECT_EQ(EnvOf(pod, "VK_TASK_INDEX"), index);
    EXPECT_EQ(EnvOf(pod, "MASTER_ADDR"), "pt-master-0.pt");
    EXPECT_EQ(EnvOf(pod, "MASTER_PORT"), "23456");
    EXPECT_EQ(EnvOf(pod, "WORLD_SIZE"), "3");
    EXPECT_EQ(EnvOf(pod, "RANK"),
              name == "pt-master-0" ? "0" : std::to_string(std::stoi(index) + 1));
    EXPECT_EQ(EnvOf(pod, "VC_WORKER_HOSTS"), "<valueFrom>");
    EXPECT_EQ(Str(pod, {"spec", "hostname"}), name);
    EXPECT_EQ(Str(pod, {"spec", "subdomain"}), "pt");
    EXPECT_EQ(Str(pod, {"spec", "volumes", "0", "configMap", "name"}), "pt-svc");
  }
  auto cm =
      api_->Get(client::Resource{"", "v1", "configmaps", "ConfigMap", true}, "default", "pt-svc");
  ASSERT_TRUE(cm.ok()) << cm.status();
  EXPECT_EQ(Str(*cm, {"data", "worker.host"}), "pt-worker-0.pt\npt-worker-1.pt");
  EXPECT_EQ(Str(*cm, {"data", "VC_MASTER_HOSTS"}), "pt-master-0.pt");
  EXPECT_EQ(Str(*cm, {"data", "VC_WORKER_NUM"}), "2");
  auto svc = api_->Get(client::Services(), "default", "pt");
  ASSERT_TRUE(svc.ok()) << svc.status();
  EXPECT_EQ(Str(*svc, {"spec", "clusterIP"}), "None");
  EXPECT_EQ(Str(*svc, {"spec", "selector", "volcano.sh/job-name"}), "pt");
  json::object stored = *GetJob("pt");
  EXPECT_EQ(Str(stored, {"status", "controlledResources", "plugin-svc"}), "svc");

  // kubectl sees them.
  std::string command =
      fmt::format("kubectl --kubeconfig {} get svc,cm -o name 2>&1", server_->kubeconfig_path());
  FILE* out = ::popen(command.c_str(), "r");
  ASSERT_NE(out, nullptr);
  std::string text;
  char buf[512];
  while (size_t n = std::fread(buf, 1, sizeof buf, out)) text.append(buf, n);
  EXPECT_EQ(WEXITSTATUS(::pclose(out)), 0) << text;
  EXPECT_THAT(text, HasSubstr("service/pt"));
  EXPECT_THAT(text, HasSubstr("configmap/pt-svc"));

  // Deleting the Job takes the Service and ConfigMap with it.
  ASSERT_TRUE(api_->Delete(client::VolcanoJobs(), "default", "pt").ok());
  ASSERT_TRUE(Eventually(
      [&] { return absl::IsNotFound(api_->Get(client::Services(), "default", "pt").status()); },
      15s));
}

TEST_P(JobLifecycleTest, UnsupportedPluginIsReportedOnce) {
  AdmitPodGroups();
  StartController();
  CreateJob(JobObject("rayjob", 1, R"({"plugins": {"ray": []}})"));
  ASSERT_TRUE(Eventually([&] { return PodNames("rayjob").size() == 1; }));
  ASSERT_TRUE(controller_->WaitIdle(5s));
  int warnings = 0;
  for (const json::object& e : JobEvents("rayjob")) {
    if (Str(e, {"reason"}) == "PluginError") {
      EXPECT_EQ(Str(e, {"message"}), "job plugin ray is not supported by muster; ignored");
      EXPECT_EQ(Str(e, {"type"}), "Warning");
      ++warnings;
    }
  }
  EXPECT_EQ(warnings, 1);
}

TEST_P(JobLifecycleTest, MpiJobGetsTheSshSecretMountedAndWorkerHosts) {
  AdmitPodGroups();
  StartController();
  // The Job webhook adds svc and ssh beside mpi.
  json::object job = JobObject("mj", 1, R"({"minAvailable": 3, "plugins": {"mpi": []}})");
  json::array& tasks = job["spec"].as_object()["tasks"].as_array();
  tasks[0].as_object()["name"] = "master";
  json::value worker = tasks[0];
  worker.as_object()["name"] = "worker";
  worker.as_object()["replicas"] = 2;
  tasks.push_back(worker);
  CreateJob(job);
  ASSERT_TRUE(Eventually([&] { return PodNames("mj").size() == 3; }));
  const client::Resource secrets{"", "v1", "secrets", "Secret", true};
  auto secret = api_->Get(secrets, "default", "mj-ssh");
  ASSERT_TRUE(secret.ok()) << secret.status();
  EXPECT_FALSE(Str(*secret, {"data", "id_rsa"}).empty());
  EXPECT_EQ(Str(*secret, {"data", "authorized_keys"}), Str(*secret, {"data", "id_rsa.pub"}));
  for (const json::object& pod : JobPods("mj")) {
    SCOPED_TRACE(Name(pod));
    EXPECT_EQ(EnvOf(pod, "MPI_HOST"),
              Name(pod) == "mj-master-0" ? "mj-worker-0.mj,mj-worker-1.mj" : "<none>");
    std::string mounted;
    for (const json::value& v : pod.at("spec").at("volumes").as_array()) {
      if (const json::value* s = v.as_object().if_contains("secret")) {
        mounted = s->as_object().at("secretName").as_string();
      }
    }
    EXPECT_EQ(mounted, "mj-ssh");
  }
  EXPECT_EQ(Str(*GetJob("mj"), {"status", "controlledResources", "plugin-ssh"}), "ssh");
  // Synced again and again, the Job keeps the key pair it was given.
  ASSERT_TRUE(SetPodPhase("mj-worker-0", "Running").ok());
  ASSERT_TRUE(controller_->WaitIdle(5s));
  auto later = api_->Get(secrets, "default", "mj-ssh");
  ASSERT_TRUE(later.ok()) << later.status();
  EXPECT_EQ(Str(*later, {"data", "id_rsa"}), Str(*secret, {"data", "id_rsa"}));

  ASSERT_TRUE(api_->Delete(client::VolcanoJobs(), "default", "mj").ok());
  ASSERT_TRUE(Eventually(
      [&] { return absl::IsNotFound(api_->Get(secrets, "default", "mj-ssh").status()); }, 15s));
}

TEST_P(JobLifecycleTest, ExistingJobsAreSyncedWhenTheControllerStarts) {
  AdmitPodGroups();
  CreateJob(JobObject("early", 2));
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(JobPhase("early"), "");  // nobody has looked at it yet
  StartController();
  ASSERT_TRUE(Eventually([&] { return PodNames("early").size() == 2; }));
  EXPECT_EQ(JobPhase("early"), "Pending");
}

// --- Metrics (JobControllerOptions::metrics) ----------------------------------------------------

// A gauge's or counter's value in `registry`; -1 when the series is absent.
double MetricValue(prometheus::Registry& registry, const std::string& name,
                   const std::string& phase = "") {
  for (const prometheus::MetricFamily& f : registry.Collect()) {
    if (f.name != name) continue;
    for (const prometheus::ClientMetric& m : f.metric) {
      const bool match =
          phase.empty() ? m.label.empty() : m.label.size() == 1 && m.label[0].value == phase;
      if (!match) continue;
      return f.type == prometheus::MetricType::Counter ? m.counter.value : m.gauge.value;
    }
  }
  return -1;
}

TEST_P(JobLifecycleTest, MetricsCountJobsByPhaseSyncsAndQueuedRequests) {
  AdmitPodGroups();
  RunPods();
  auto registry = std::make_shared<prometheus::Registry>();
  JobControllerOptions options;
  options.metrics = registry;
  StartController(options);
  auto jobs = [&](const std::string& phase) {
    return MetricValue(*registry, "muster_controller_jobs", phase);
  };
  // Every phase is there from the start.
  for (const char* phase : {"Pending", "Running", "Restarting", "Completing", "Completed",
                            "Aborting", "Aborted", "Terminating", "Terminated", "Failed"}) {
    EXPECT_EQ(jobs(phase), 0) << phase;
  }

  CreateJob(JobObject("a", 2));
  CreateJob(JobObject("b", 1));
  ASSERT_TRUE(Eventually([&] { return JobPhase("a") == "Running" && JobPhase("b") == "Running"; }))
      << "a: " << JobPhase("a") << ", b: " << JobPhase("b");
  ASSERT_TRUE(Eventually([&] { return jobs("Running") == 2; }));
  EXPECT_EQ(jobs("Pending"), 0);
  ASSERT_TRUE(controller_->WaitIdle(5s));
  EXPECT_EQ(MetricValue(*registry, "muster_controller_work_queue_depth"), 0);
  // Each Job was synced (a sync may meet a conflict and be retried, so errors are not asserted).
  EXPECT_GE(MetricValue(*registry, "muster_controller_syncs_total"), 2);

  ASSERT_TRUE(SetPodPhase("b-trainer-0", "Succeeded").ok());
  ASSERT_TRUE(Eventually([&] { return jobs("Completed") == 1; }));
  EXPECT_EQ(jobs("Running"), 1);
  ASSERT_TRUE(api_->Delete(client::VolcanoJobs(), "default", "a").ok());
  ASSERT_TRUE(Eventually([&] { return jobs("Running") == 0; }, 15s));
  EXPECT_EQ(jobs("Completed"), 1);
}

// Forwards to another transport, but every pod creation fails as an unreachable server would.
class NoPodCreatesTransport : public client::Transport {
 public:
  explicit NoPodCreatesTransport(std::shared_ptr<client::Transport> inner)
      : inner_(std::move(inner)) {}
  absl::StatusOr<client::Response> Do(const client::Request& r) override {
    if (r.method == "POST" && r.path.ends_with("/pods")) {
      return absl::UnavailableError("pod creation refused by the test");
    }
    return inner_->Do(r);
  }
  absl::StatusOr<client::Response> Stream(const client::Request& r,
                                          const std::function<bool(std::string_view)>& on_line,
                                          const std::atomic<bool>& stop) override {
    return inner_->Stream(r, on_line, stop);
  }

 private:
  std::shared_ptr<client::Transport> inner_;
};

TEST_P(JobLifecycleTest, MetricsCountSyncErrors) {
  AdmitPodGroups();
  controller_client_ = std::make_unique<client::Client>(std::make_shared<NoPodCreatesTransport>(
      std::make_shared<apiserver::LocalTransport>(*server_)));
  auto registry = std::make_shared<prometheus::Registry>();
  JobControllerOptions options;
  options.metrics = registry;
  options.backoff_base = 1ms;
  options.backoff_max = 20ms;
  StartController(options);
  CreateJob(JobObject("unlucky", 1));
  // Each sync's pods are refused: an error, retried, another error.
  ASSERT_TRUE(Eventually([&] {
    return MetricValue(*registry, "muster_controller_sync_errors_total") >= 2;
  })) << "each failed retry is an error";
  EXPECT_GE(MetricValue(*registry, "muster_controller_syncs_total"),
            MetricValue(*registry, "muster_controller_sync_errors_total"));
  EXPECT_THAT(PodNames("unlucky"), IsEmpty());
}

}  // namespace
}  // namespace muster::controller
