#include "controller/job.h"

#include <chrono>
#include <optional>

#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::controller {
namespace {

namespace json = boost::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

json::object Parse(std::string_view text) { return json::parse(text).as_object(); }

TEST(DecodeJobTest, ReadsSpecAsAdmissionDefaultsIt) {
  absl::StatusOr<Job> job = DecodeJob(Parse(R"({
    "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
    "metadata": {"name": "gang-tf-job", "namespace": "default", "uid": "u-1",
                 "resourceVersion": "7", "creationTimestamp": "2024-05-01T12:00:00Z",
                 "labels": {"team": "ml"}},
    "spec": {"minAvailable": 2, "schedulerName": "volcano", "queue": "ml-queue", "maxRetry": 3,
             "minSuccess": 1, "ttlSecondsAfterFinished": 60,
             "policies": [{"event": "PodFailed", "action": "RestartJob"},
                          {"events": ["PodEvicted", "Unknown"], "event": "PodEvicted",
                           "action": "AbortJob"},
                          {"exitCode": 3, "action": "CompleteJob"}],
             "plugins": {"svc": ["--publish-not-ready-addresses"], "env": []},
             "tasks": [{"name": "trainer", "replicas": 2, "minAvailable": 2,
                        "dependsOn": {"name": ["ps"], "iteration": "any"},
                        "template": {"spec": {"containers": [{"name": "t"}]}}}]}})"));
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->name, "gang-tf-job");
  EXPECT_EQ(job->uid, "u-1");
  EXPECT_EQ(job->spec.min_available, 2);
  EXPECT_EQ(job->spec.queue, "ml-queue");
  EXPECT_EQ(job->spec.min_success, 1);
  EXPECT_EQ(job->spec.ttl_seconds_after_finished, 60);
  ASSERT_EQ(job->spec.policies.size(), 3u);
  EXPECT_THAT(job->spec.policies[1].events, ElementsAre("PodEvicted", "Unknown"));
  EXPECT_EQ(job->spec.policies[2].exit_code, 3);
  EXPECT_THAT(job->spec.plugins,
              ElementsAre(Pair("env", ElementsAre()),
                          Pair("svc", ElementsAre("--publish-not-ready-addresses"))));
  ASSERT_EQ(job->spec.tasks.size(), 1u);
  EXPECT_EQ(job->spec.tasks[0].MinAvailableOrReplicas(), 2);
  EXPECT_THAT(job->spec.tasks[0].depends_on, ElementsAre("ps"));
  EXPECT_EQ(job->spec.tasks[0].depends_on_iteration, "any");
  EXPECT_TRUE(job->spec.tasks[0].pod_template.contains("spec"));
  EXPECT_EQ(job->status.phase, "");
}

TEST(DecodeJobTest, WrongTypesAreErrorsNamingTheField) {
  absl::StatusOr<Job> job = DecodeJob(Parse(
      R"({"metadata": {"name": "j", "namespace": "ns"}, "spec": {"tasks": [{"replicas": "2"}]}})"));
  ASSERT_FALSE(job.ok());
  EXPECT_THAT(std::string(job.status().message()),
              HasSubstr("Job ns/j: spec.tasks[0].replicas: expected an integer"));
  EXPECT_FALSE(DecodeJob(Parse(R"({"spec": {"minAvailable": 1.5}})")).ok());
}

TEST(JobStatusTest, EncodesAsVolcanoMarshalsAndDecodesBack) {
  JobStatus status;
  status.phase = "Running";
  status.last_transition_time = "2024-05-01T12:00:05Z";
  status.min_available = 2;
  status.running = 2;
  status.version = 1;
  status.task_status_count["trainer"]["Running"] = 2;
  status.controlled_resources["plugin-svc"] = "svc";
  status.running_duration = "5s";
  status.conditions.push_back({"Pending", "2024-05-01T12:00:00Z"});
  status.conditions.push_back({"Running", "2024-05-01T12:00:05Z"});
  json::object encoded = EncodeJobStatus(status);
  // Zero counters are omitted (omitempty), as kubectl's RUNNINGS column expects.
  EXPECT_FALSE(encoded.contains("pending"));
  EXPECT_FALSE(encoded.contains("retryCount"));
  EXPECT_EQ(json::serialize(encoded.at("taskStatusCount")),
            R"({"trainer":{"phase":{"Running":2}}})");
  EXPECT_EQ(json::serialize(encoded.at("state")),
            R"({"phase":"Running","lastTransitionTime":"2024-05-01T12:00:05Z"})");

  json::object job{{"metadata", json::object{{"name", "j"}}}, {"status", encoded}};
  absl::StatusOr<Job> decoded = DecodeJob(job);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->status, status);
}

TEST(PodInfoTest, ReadsTaskVersionExitCodeAndRestarts) {
  PodInfo info = DecodePodInfo(Parse(R"({
    "metadata": {"name": "j-t-0", "uid": "p1", "deletionTimestamp": "2024-05-01T12:00:00Z",
                 "annotations": {"volcano.sh/task-spec": "t", "volcano.sh/job-version": "4"}},
    "status": {"phase": "Failed",
               "initContainerStatuses": [{"restartCount": 1}],
               "containerStatuses": [{"restartCount": 2, "state": {"terminated": {"exitCode": 3}}},
                                     {"restartCount": 1}]}})"));
  EXPECT_EQ(info.name, "j-t-0");
  EXPECT_EQ(info.task, "t");
  EXPECT_EQ(info.version, 4);
  EXPECT_TRUE(info.terminating);
  EXPECT_EQ(info.phase, "Failed");
  EXPECT_EQ(info.restarts, 4);
  EXPECT_EQ(info.exit_code, 3);

  PodInfo bare = DecodePodInfo(Parse(R"({"metadata": {"name": "x",
      "annotations": {"volcano.sh/job-version": "v1"}}})"));
  EXPECT_FALSE(bare.version.has_value());
  EXPECT_FALSE(bare.exit_code.has_value());
  EXPECT_FALSE(bare.terminating);
}

TEST(OwnerTest, OnlyAVolcanoJobControllerCounts) {
  const json::object pod = Parse(R"({"metadata": {"ownerReferences": [
      {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "j", "uid": "u-2",
       "controller": true}]}})");
  std::optional<JobOwner> owner = ControllingJob(pod);
  ASSERT_TRUE(owner.has_value());
  EXPECT_EQ(owner->name, "j");
  EXPECT_EQ(owner->uid, "u-2");
  // The pod's own record of its owner, which tells a resubmitted Job's pods from the old run's.
  EXPECT_EQ(DecodePodInfo(pod).owner_uid, "u-2");
  EXPECT_FALSE(ControllingJob(Parse(R"({"metadata": {"ownerReferences": [
      {"apiVersion": "batch/v1", "kind": "Job", "name": "k8s-job", "uid": "u-3",
       "controller": true}]}})")));
  const json::object not_controller = Parse(R"({"metadata": {"ownerReferences": [
      {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "j", "uid": "u-2"}]}})");
  EXPECT_FALSE(ControllingJob(not_controller));
  EXPECT_EQ(DecodePodInfo(not_controller).owner_uid, "");
}


}  // namespace
}  // namespace muster::controller
