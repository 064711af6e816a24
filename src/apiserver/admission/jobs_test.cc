#include "apiserver/admission/admission_test_util.h"

// Volcano Job admission: mutatejob.volcano.sh (jobs_mutate.cc) and validatejob.volcano.sh
// (jobs_validate.cc).

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "api/patch.h"
#include "boost/json.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::apiserver::admission_test {
namespace {

// --- Volcano Jobs --------------------------------------------------------------------------------

TEST_F(AdmissionTest, JobDefaults) {
  json::object job = Job(kTwoTasks);
  job["status"] = Obj(R"({"state":{"phase":"Running"}})");
  job = Created(Jobs(), job);
  const json::object& spec = job["spec"].as_object();
  EXPECT_EQ(spec.at("queue"), "default");
  EXPECT_EQ(spec.at("schedulerName"), "volcano");
  EXPECT_EQ(spec.at("maxRetry"), 3);
  EXPECT_EQ(spec.at("minAvailable"), 3);
  const json::array& tasks = spec.at("tasks").as_array();
  EXPECT_EQ(tasks[0].at("name"), "default0");
  EXPECT_EQ(tasks[1].at("name"), "default1");
  EXPECT_EQ(tasks[0].at("minAvailable"), 1);
  EXPECT_EQ(tasks[1].at("minAvailable"), 2);
  EXPECT_EQ(tasks[1].at("template").at("spec").at("schedulerName"), "volcano");
  EXPECT_FALSE(job.contains("status"));
}

TEST_F(AdmissionTest, JobMinAvailableFromTaskMinimums) {
  json::object job = Created(Jobs(), Job(R"({"schedulerName":"other","tasks":[
      {"name":"w","replicas":4,"minAvailable":2,
       "template":{"spec":{"schedulerName":"mine","containers":[{"name":"w","image":"i"}]}}}]})"));
  EXPECT_EQ(job["spec"].at("minAvailable"), 2);
  EXPECT_EQ(job["spec"].at("tasks").at(0).at("template").at("spec").at("schedulerName"), "mine");
}

TEST_F(AdmissionTest, JobNegativeMinAvailable) {
  json::object job = Job(R"({"minAvailable":-1,"tasks":[{"name":"a","replicas":1,
      "template":{"spec":{"containers":[{"name":"c","image":"i"}]}}}]})");
  auto err = Create(Jobs(), job);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->code, 400);
  EXPECT_EQ(err->reason, "");
  EXPECT_EQ(err->message, JobDenied("job 'minAvailable' must be >= 0."));
}

TEST_F(AdmissionTest, JobMinAvailableAboveReplicas) {
  json::object job = Job(R"({"minAvailable":5,"tasks":[{"name":"a","replicas":2,
      "template":{"spec":{"containers":[{"name":"c","image":"i"}]}}}]})");
  auto err = Create(Jobs(), job);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message,
            JobDenied("job 'minAvailable' should not be greater than total replicas in tasks;"));
}

TEST_F(AdmissionTest, JobNegativeReplicas) {
  json::object job = Job(R"({"minAvailable":1,"tasks":[
      {"name":"a","replicas":-1,"minAvailable":-1,
       "template":{"spec":{"containers":[{"name":"c","image":"i"}]}}},
      {"name":"b","replicas":2,"template":{"spec":{"containers":[{"name":"c","image":"i"}]}}}]})");
  auto err = Create(Jobs(), job);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message, JobDenied("'replicas' < 0 in task: a;"));
}

TEST_F(AdmissionTest, JobTaskMinAvailableAboveReplicas) {
  json::object job = Job(R"({"minAvailable":1,"tasks":[{"name":"a","replicas":1,"minAvailable":3,
      "template":{"spec":{"containers":[{"name":"c","image":"i"}]}}}]})");
  auto err = Create(Jobs(), job);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message,
            JobDenied("'minAvailable' is greater than 'replicas' in task: a, job: j"));
}

TEST_F(AdmissionTest, JobDuplicatedTaskName) {
  json::object job = Job(R"({"tasks":[
      {"name":"a","replicas":1,"template":{"spec":{"containers":[{"name":"c","image":"i"}]}}},
      {"name":"a","replicas":1,"template":{"spec":{"containers":[{"name":"c","image":"i"}]}}}]})");
  auto err = Create(Jobs(), job);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message, JobDenied("duplicated task name a;"));
}

TEST_F(AdmissionTest, JobTaskNamesAreDns1123Labels) {
  json::object job = Job(R"({"tasks":[{"name":"Master","replicas":1,
      "template":{"spec":{"containers":[{"name":"c","image":"i"}]}}}]})");
  auto err = Create(Jobs(), job);
  ASSERT_TRUE(err);
  EXPECT_THAT(err->message,
              HasSubstr("denied the request: [a lowercase RFC 1123 label must consist of lower "
                        "case alphanumeric characters or '-', and must start and end with an "
                        "alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
                        "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')];"));
}

TEST_F(AdmissionTest, JobWithoutTasks) {
  json::object job = Job(R"({"tasks":[]})");
  auto err = Create(Jobs(), job);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message, JobDenied("No task specified in job spec"));
}

TEST_F(AdmissionTest, JobPolicyEventsAndActions) {
  json::object job = Job(R"({"policies":[{"event":"PodExploded","action":"RestartJob"}],
      "tasks":[{"name":"a","replicas":1,
      "template":{"spec":{"containers":[{"name":"c","image":"i"}]}}}]})");
  auto err = Create(Jobs(), job);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message,
            JobDenied("1 error occurred:\n\t* spec.policies: Invalid value: \"PodExploded\": "
                      "invalid policy event\n\n valid events are [* PodPending PodFailed "
                      "PodEvicted Unknown TaskCompleted TaskFailed JobUpdated], valid actions "
                      "are [AbortJob RestartJob RestartTask RestartPod RestartPartition "
                      "TerminateJob CompleteJob ResumeJob];"));

  json::object bad_action = Job(R"({"tasks":[{"name":"a","replicas":1,
      "policies":[{"event":"PodFailed","action":"Explode"}],
      "template":{"spec":{"containers":[{"name":"c","image":"i"}]}}}]})");
  err = Create(Jobs(), bad_action);
  ASSERT_TRUE(err);
  EXPECT_THAT(err->message, HasSubstr("spec.tasks.policies: Invalid value: \"Explode\": invalid "
                                      "policy action"));
}

TEST_F(AdmissionTest, JobQueueMustExistAndBeOpen) {
  json::object missing = Job(R"({"queue":"q","tasks":[{"name":"a","replicas":1,
      "template":{"spec":{"containers":[{"name":"c","image":"i"}]}}}]})");
  auto err = Create(Jobs(), missing);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message,
            JobDenied("unable to find job queue: queues.scheduling.volcano.sh \"q\" not found"));

  json::object closed = Job(R"({"queue":"closed","tasks":[{"name":"a","replicas":1,
      "template":{"spec":{"containers":[{"name":"c","image":"i"}]}}}]})");
  err = Create(Jobs(), closed);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message, JobDenied("can only submit job to queue with state `Open`, queue "
                                    "`closed` status is `Closed`"));
}

TEST_F(AdmissionTest, JobGoesToALeafQueueOnly) {
  store_.Put(Queues(), Obj(R"({"apiVersion":"scheduling.volcano.sh/v1beta1","kind":"Queue",
      "metadata":{"name":"org"},"spec":{"weight":1},"status":{"state":"Open"}})"));
  store_.Put(Queues(), Obj(R"({"apiVersion":"scheduling.volcano.sh/v1beta1","kind":"Queue",
      "metadata":{"name":"team"},"spec":{"weight":1,"parent":"org"},"status":{"state":"Open"}})"));
  json::object inner = Job(R"({"queue":"org","tasks":[{"name":"a","replicas":1,
      "template":{"spec":{"containers":[{"name":"c","image":"i"}]}}}]})");
  auto err = Create(Jobs(), inner);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->code, 400);
  EXPECT_EQ(err->message,
            JobDenied("can only submit job to leaf queue, queue `org` has 1 child queues;"));
  json::object leaf = Job(R"({"queue":"team","tasks":[{"name":"a","replicas":1,
      "template":{"spec":{"containers":[{"name":"c","image":"i"}]}}}]})");
  EXPECT_FALSE(Create(Jobs(), leaf).has_value());
}

TEST_F(AdmissionTest, JobTaskTemplatesAreValidatedAsPodTemplates) {
  json::object job = Job(R"({"tasks":[{"name":"a","replicas":1,
      "template":{"spec":{"containers":[{"name":"c"}]}}}]})");
  auto err = Create(Jobs(), job);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message,
            JobDenied("spec.task[0].template.spec.containers[0].image: Required value."));
}

TEST_F(AdmissionTest, JobNetworkTopologyFollowsTheCrdSchema) {
  json::object job = Job(R"({"networkTopology":{"mode":"loose"},"tasks":[{"name":"a",
      "replicas":1,"template":{"spec":{"containers":[{"name":"c","image":"i"}]}}}]})");
  auto err = Create(Jobs(), job);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->code, 422);
  EXPECT_EQ(err->message,
            "Job.batch.volcano.sh \"j\" is invalid: spec.networkTopology.mode: Unsupported "
            "value: \"loose\": supported values: \"hard\", \"soft\"");
}

TEST_F(AdmissionTest, JobFieldTypesFollowTheCrdSchema) {
  json::object job = Job(R"({"tasks":[{"name":"a","replicas":"3",
      "template":{"spec":{"containers":[{"name":"c","image":"i"}]}}}]})");
  auto err = Create(Jobs(), job);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->code, 422);
  EXPECT_EQ(err->message,
            "Job.batch.volcano.sh \"j\" is invalid: spec.tasks[0].replicas: Invalid value: "
            "\"string\": spec.tasks[0].replicas in body must be of type integer: \"string\"");
}

TEST_F(AdmissionTest, JobUpdatesMayScaleOnly) {
  json::object old = Created(Jobs(), Job(kTwoTasks));
  json::object scaled = old;
  json::object& spec = scaled["spec"].as_object();
  spec["minAvailable"] = 2;
  spec["priorityClassName"] = "high";
  spec["tasks"].as_array()[1].as_object()["replicas"] = 5;
  EXPECT_FALSE(Update(Jobs(), old, scaled));

  json::object moved = old;
  moved["spec"].as_object()["queue"] = "closed";
  auto err = Update(Jobs(), old, moved);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message, JobDenied("job updates may not change fields other than "
                                    "`minAvailable`, `tasks[*].replicas under spec`"));

  json::object shrunk = old;
  shrunk["spec"].as_object()["minAvailable"] = 1;
  shrunk["spec"].as_object()["tasks"].as_array().pop_back();
  err = Update(Jobs(), old, shrunk);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message, JobDenied("job updates may not add or remove tasks"));

  json::object negative = old;
  negative["spec"].as_object()["tasks"].as_array()[0].as_object()["replicas"] = -1;
  err = Update(Jobs(), old, negative);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message, JobDenied("'replicas' must be >= 0 in task: default0"));

  // The status subresource is not the webhook's.
  json::object status = old;
  status["spec"].as_object()["queue"] = "elsewhere";
  EXPECT_FALSE(Update(Jobs(), old, status, "status"));
}

// `kubectl apply` of an unchanged manifest sends a custom resource a JSON merge patch whose
// `tasks` list is the manifest's, without what creation defaulted into it (task minAvailable,
// template.spec.schedulerName). The update must be allowed and store the same spec again, while a
// real change of a template field is still refused.
TEST_F(AdmissionTest, JobReapplyOfUnchangedManifestIsAllowed) {
  constexpr std::string_view kManifestSpec = R"({"minAvailable":2,"schedulerName":"volcano",
      "tasks":[{"replicas":2,"name":"trainer","template":{"spec":{"containers":[
        {"name":"trainer","image":"tf:v1"}]}}},
       {"replicas":1,"template":{"spec":{"hostNetwork":true,"containers":[
        {"name":"ps","image":"tf:v1"}]}}}]})";
  const json::object created = Created(Jobs(), Job(kManifestSpec));
  const json::object& created_spec = created.at("spec").as_object();
  ASSERT_EQ(created_spec.at("tasks").at(0).at("template").at("spec").at("schedulerName"),
            "volcano");

  auto apply = [&](std::string_view tasks) {
    absl::StatusOr<json::value> patched = api::ApplyMergePatch(
        created, json::parse(std::string(R"({"spec":{"tasks":)") + std::string(tasks) + "}}"));
    EXPECT_TRUE(patched.ok()) << patched.status();
    return patched->as_object();
  };
  const std::string manifest_tasks =
      json::serialize(json::parse(kManifestSpec).as_object().at("tasks"));

  json::object reapplied = apply(manifest_tasks);
  auto err = Update(Jobs(), created, reapplied);
  EXPECT_FALSE(err) << err->message;
  EXPECT_EQ(reapplied.at("spec"), json::value(created_spec));

  json::object new_image = apply(R"([{"replicas":2,"name":"trainer","template":{"spec":{
      "containers":[{"name":"trainer","image":"tf:v2"}]}}},{"replicas":1,"template":{"spec":{
      "hostNetwork":true,"containers":[{"name":"ps","image":"tf:v1"}]}}}])");
  err = Update(Jobs(), created, new_image);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message, JobDenied("job updates may not change fields other than "
                                    "`minAvailable`, `tasks[*].replicas under spec`"));

  json::object other_scheduler = apply(R"([{"replicas":2,"name":"trainer","template":{"spec":{
      "schedulerName":"default-scheduler","containers":[{"name":"trainer","image":"tf:v1"}]}}},
      {"replicas":1,"template":{"spec":{"hostNetwork":true,"containers":[
      {"name":"ps","image":"tf:v1"}]}}}])");
  err = Update(Jobs(), created, other_scheduler);
  ASSERT_TRUE(err);
  EXPECT_THAT(err->message, HasSubstr("job updates may not change fields other than"));

  // Scaling through a re-apply is still allowed, and the task minimum follows the replicas as it
  // did at creation.
  json::object scaled = apply(R"([{"replicas":3,"name":"trainer","template":{"spec":{
      "containers":[{"name":"trainer","image":"tf:v1"}]}}},{"replicas":1,"template":{"spec":{
      "hostNetwork":true,"containers":[{"name":"ps","image":"tf:v1"}]}}}])");
  err = Update(Jobs(), created, scaled);
  EXPECT_FALSE(err) << err->message;
  EXPECT_EQ(scaled.at("spec").at("tasks").at(0).at("minAvailable"), 3);
}

}  // namespace
}  // namespace muster::apiserver::admission_test
