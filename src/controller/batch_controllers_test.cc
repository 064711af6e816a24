// The batch/v1 Job and CronJob controllers against a real embedded API server (in-process, port
// 0, temporary data directory), with nothing else running: the test plays the kubelet.

#include <atomic>
#include <ctime>
#include <set>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "api/model.h"
#include "api/time.h"
#include "apiserver/apiserver.h"
#include "apiserver/local_transport.h"
#include "apiserver/testing/test_server.h"
#include "boost/json.hpp"
#include "controller/batch_job.h"
#include "controller/batch_job_controller.h"
#include "controller/cronjob_controller.h"
#include "gtest/gtest.h"

namespace muster::controller {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

bool Eventually(const std::function<bool()>& done, std::chrono::milliseconds timeout = 20s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return done();
}

std::string At(const json::value& v, std::initializer_list<std::string_view> path) {
  const json::value* cur = &v;
  for (std::string_view p : path) {
    const json::object* o = cur->if_object();
    cur = o == nullptr ? nullptr : o->if_contains(p);
    if (cur == nullptr) return "";
  }
  if (cur->is_string()) return std::string(cur->get_string());
  return json::serialize(*cur);
}

class BatchControllersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = apiserver::testing::MakeTempDir("batchcontrollers");
    auto server = apiserver::testing::StartTestServer(dir_);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    api_ = std::make_unique<client::Client>(std::make_shared<apiserver::LocalTransport>(*server_));
  }

  void TearDown() override {
    if (jobs_) jobs_->Stop();
    if (cronjobs_) cronjobs_->Stop();
    jobs_.reset();
    cronjobs_.reset();
    apiserver::testing::StopTestServer(server_, dir_);
  }

  std::vector<json::object> PodsOf(const std::string& job_uid) {
    std::vector<json::object> out;
    auto listed = api_->List(client::Pods(), "default");
    if (!listed.ok()) return out;
    for (json::object& p : listed->items) {
      if (BatchJobOwnerUid(p) == job_uid) out.push_back(std::move(p));
    }
    return out;
  }

  // The kubelet's part: the pod ran and exited with `code`.
  void Finish(json::object pod, int code) {
    const std::string now = api::FormatUnixTime(std::time(nullptr));
    pod["status"] = json::object{
        {"phase", code == 0 ? "Succeeded" : "Failed"},
        {"containerStatuses",
         json::array{json::object{
             {"name", "main"},
             {"restartCount", 0},
             {"state", json::object{{"terminated", json::object{{"exitCode", code},
                                                                {"finishedAt", now}}}}}}}}};
    auto written = api_->UpdateStatus(client::Pods(), pod);
    ASSERT_TRUE(written.ok()) << written.status();
  }

  json::object GetJob(const std::string& name) {
    auto job = api_->Get(client::BatchJobs(), "default", name);
    return job.ok() ? *job : json::object{};
  }

  std::string dir_;
  std::unique_ptr<apiserver::ApiServer> server_;
  std::unique_ptr<client::Client> api_;
  std::unique_ptr<Controller> jobs_;
  std::unique_ptr<Controller> cronjobs_;
};

TEST_F(BatchControllersTest, IndexedGangJobRunsToCompleteAndItsPodsLoseTheFinalizer) {
  jobs_ = NewBatchJobController(*api_);
  ASSERT_TRUE(jobs_->Start().ok());
  auto created = api_->Create(client::BatchJobs(), "default", json::parse(R"({
      "metadata":{"name":"train","annotations":{"scheduling.volcano.sh/group-min-member":"3"}},
      "spec":{"completionMode":"Indexed","completions":3,"parallelism":3,
        "template":{"spec":{"schedulerName":"volcano","restartPolicy":"Never",
          "containers":[{"name":"main","image":"i","command":["true"],
            "resources":{"requests":{"cpu":"1"}}}]}}}})").as_object());
  ASSERT_TRUE(created.ok()) << created.status();
  const std::string uid = At(*created, {"metadata", "uid"});

  ASSERT_TRUE(Eventually([&] { return PodsOf(uid).size() == 3; }));
  std::set<std::string> indexes;
  for (const json::object& pod : PodsOf(uid)) {
    indexes.insert(At(pod, {"metadata", "annotations", kCompletionIndexKey}));
    EXPECT_EQ(At(pod, {"metadata", "finalizers"}), R"(["batch.kubernetes.io/job-tracking"])");
    EXPECT_EQ(At(pod, {"metadata", "annotations", api::kGroupNameAnnotation}), "podgroup-" + uid);
    EXPECT_EQ(At(pod, {"spec", "hostname"}),
              "train-" + At(pod, {"metadata", "labels", kCompletionIndexKey}));
  }
  EXPECT_EQ(indexes, (std::set<std::string>{"0", "1", "2"}));
  auto group = api_->Get(client::PodGroups(), "default", "podgroup-" + uid);
  ASSERT_TRUE(group.ok()) << group.status();
  EXPECT_EQ(At(*group, {"spec", "minMember"}), "3");
  EXPECT_EQ(At(*group, {"spec", "minResources", "cpu"}), "3");
  EXPECT_EQ(At(*group, {"metadata", "ownerReferences"}),
            R"([{"apiVersion":"batch/v1","kind":"Job","name":"train","uid":")" + uid +
                R"(","controller":true,"blockOwnerDeletion":true}])");
  ASSERT_TRUE(jobs_->WaitIdle(20s));
  EXPECT_EQ(PodsOf(uid).size(), 3u);  // no pod made twice

  for (const json::object& pod : PodsOf(uid)) Finish(pod, 0);
  ASSERT_TRUE(Eventually([&] {
    return At(GetJob("train"), {"status", "conditions"}).find(R"("type":"Complete")") !=
           std::string::npos;
  }));
  const json::object job = GetJob("train");
  EXPECT_EQ(At(job, {"status", "succeeded"}), "3");
  EXPECT_EQ(At(job, {"status", "completedIndexes"}), "0-2");
  EXPECT_FALSE(At(job, {"status", "completionTime"}).empty());
  ASSERT_TRUE(Eventually([&] {
    for (const json::object& pod : PodsOf(uid)) {
      if (!At(pod, {"metadata", "finalizers"}).empty()) return false;
    }
    return true;
  }));
  auto events = api_->List(client::Events(), "default");
  ASSERT_TRUE(events.ok());
  int created_events = 0;
  bool completed = false;
  for (const json::object& e : events->items) {
    if (At(e, {"involvedObject", "uid"}) != uid) continue;
    if (At(e, {"reason"}) == "SuccessfulCreate") ++created_events;
    if (At(e, {"reason"}) == "Completed" && At(e, {"message"}) == "Job completed") {
      completed = true;
    }
  }
  EXPECT_EQ(created_events, 3);
  EXPECT_TRUE(completed);
}

TEST_F(BatchControllersTest, FailedPodsPastTheBackoffLimitFailTheJob) {
  BatchJobControllerOptions options;
  options.pod_failure_backoff_seconds = 0;
  jobs_ = NewBatchJobController(*api_, options);
  ASSERT_TRUE(jobs_->Start().ok());
  auto created = api_->Create(client::BatchJobs(), "default", json::parse(R"({
      "metadata":{"name":"flaky"},"spec":{"backoffLimit":1,"template":{"spec":{
      "restartPolicy":"Never","containers":[{"name":"main","image":"i"}]}}}})").as_object());
  ASSERT_TRUE(created.ok()) << created.status();
  const std::string uid = At(*created, {"metadata", "uid"});
  for (size_t n = 1; n <= 2; ++n) {
    ASSERT_TRUE(Eventually([&] { return PodsOf(uid).size() == n; })) << n;
    for (const json::object& pod : PodsOf(uid)) {
      if (At(pod, {"status", "phase"}) != "Failed") Finish(pod, 1);
    }
  }
  ASSERT_TRUE(Eventually([&] {
    return At(GetJob("flaky"), {"status", "conditions"})
               .find(R"("reason":"BackoffLimitExceeded")") != std::string::npos;
  }));
  EXPECT_EQ(At(GetJob("flaky"), {"status", "failed"}), "2");
  ASSERT_TRUE(jobs_->WaitIdle(20s));
  EXPECT_EQ(PodsOf(uid).size(), 2u);
}

// kubectl delete job: the garbage collector deletes the pod, which its finalizer would keep
// forever unless the controller lets it go.
TEST_F(BatchControllersTest, PodsOfADeletedJobAreLetGo) {
  jobs_ = NewBatchJobController(*api_);
  ASSERT_TRUE(jobs_->Start().ok());
  auto created = api_->Create(client::BatchJobs(), "default", json::parse(R"({
      "metadata":{"name":"gone"},"spec":{"template":{"spec":{
      "restartPolicy":"Never","containers":[{"name":"main","image":"i"}]}}}})").as_object());
  ASSERT_TRUE(created.ok()) << created.status();
  const std::string uid = At(*created, {"metadata", "uid"});
  ASSERT_TRUE(Eventually([&] { return PodsOf(uid).size() == 1; }));
  const std::string pod = At(PodsOf(uid)[0], {"metadata", "name"});
  client::DeleteOptions background;
  background.propagation_policy = "Background";
  ASSERT_TRUE(api_->Delete(client::BatchJobs(), "default", "gone", background).ok());
  ASSERT_TRUE(Eventually([&] {
    return absl::IsNotFound(api_->Get(client::Pods(), "default", pod).status());
  }));
}

TEST_F(BatchControllersTest, CronJobFiresOnScheduleByTheControllersClock) {
  // Shared with the controller's threads, which may read it until TearDown stops them.
  auto now = std::make_shared<std::atomic<int64_t>>(std::time(nullptr));
  CronJobControllerOptions options;
  options.now_unix = [now] { return now->load(); };
  options.local_zone = absl::UTCTimeZone();
  cronjobs_ = NewCronJobController(*api_, options);
  ASSERT_TRUE(cronjobs_->Start().ok());
  auto created = api_->Create(client::CronJobs(), "default", json::parse(R"({
      "metadata":{"name":"tick"},"spec":{"schedule":"*/1 * * * *","jobTemplate":{"spec":{
      "template":{"spec":{"restartPolicy":"Never",
      "containers":[{"name":"main","image":"i"}]}}}}}})").as_object());
  ASSERT_TRUE(created.ok()) << created.status();
  ASSERT_TRUE(cronjobs_->WaitIdle(20s));
  const int64_t created_at =
      api::ParseUnixTime(At(*created, {"metadata", "creationTimestamp"})).value_or(0);
  const int64_t first = (created_at / 60 + 1) * 60;  // the next whole minute
  if (now->load() < first) {
    auto none = api_->List(client::BatchJobs(), "default");
    ASSERT_TRUE(none.ok());
    EXPECT_TRUE(none->items.empty());  // not before its time
  }
  *now = first + 5;
  // Any change of the CronJob syncs it again, now past its first schedule time by the clock.
  auto touched = api_->Patch(client::CronJobs(), "default", "tick", client::PatchType::kMerge,
                             R"({"metadata":{"annotations":{"touched":"1"}}})");
  ASSERT_TRUE(touched.ok()) << touched.status();
  const std::string name = "tick-" + std::to_string(first / 60);
  ASSERT_TRUE(Eventually([&] { return api_->Get(client::BatchJobs(), "default", name).ok(); }));
  auto job = api_->Get(client::BatchJobs(), "default", name);
  EXPECT_NE(At(*job, {"metadata", "ownerReferences"}).find(At(*created, {"metadata", "uid"})),
            std::string::npos);
  ASSERT_TRUE(Eventually([&] {
    auto cj = api_->Get(client::CronJobs(), "default", "tick");
    return cj.ok() && At(*cj, {"status", "lastScheduleTime"}) == api::FormatUnixTime(first) &&
           At(*cj, {"status", "active"}).find(name) != std::string::npos;
  }));
}

}  // namespace
}  // namespace muster::controller
