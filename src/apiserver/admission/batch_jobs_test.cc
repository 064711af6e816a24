#include "apiserver/admission/admission_test_util.h"

// Admission of batch/v1 Jobs and CronJobs (batch_jobs.cc, cronjobs.cc): kube's defaults, the
// generated selector, and validation with kube's messages.

#include <optional>
#include <string>
#include <string_view>

#include "boost/json.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::apiserver::admission_test {
namespace {

// A Job as the create handler hands it to admission (uid already set).
json::object BatchJob(std::string_view spec) {
  json::object job = Obj(R"({"apiVersion":"batch/v1","kind":"Job",
      "metadata":{"name":"pi","namespace":"default","uid":"u-1"}})");
  job["spec"] = json::parse(spec);
  return job;
}

constexpr std::string_view kPiSpec = R"({"template":{"spec":{"restartPolicy":"Never",
    "containers":[{"name":"pi","image":"perl","command":["perl"]}]}}})";

TEST_F(AdmissionTest, BatchJobDefaultsAndGeneratedSelector) {
  json::object job = Created(BatchJobs(), BatchJob(kPiSpec));
  const json::object& spec = job["spec"].as_object();
  EXPECT_EQ(spec.at("parallelism"), 1);
  EXPECT_EQ(spec.at("completions"), 1);
  EXPECT_EQ(spec.at("backoffLimit"), 6);
  EXPECT_EQ(spec.at("completionMode"), "NonIndexed");
  EXPECT_EQ(spec.at("suspend"), false);
  EXPECT_EQ(spec.at("manualSelector"), false);
  EXPECT_EQ(spec.at("podReplacementPolicy"), "TerminatingOrFailed");
  EXPECT_EQ(json::serialize(spec.at("selector")),
            R"({"matchLabels":{"batch.kubernetes.io/controller-uid":"u-1"}})");
  const json::object& labels = spec.at("template").at("metadata").at("labels").as_object();
  EXPECT_EQ(labels.at("batch.kubernetes.io/controller-uid"), "u-1");
  EXPECT_EQ(labels.at("batch.kubernetes.io/job-name"), "pi");
  EXPECT_EQ(labels.at("controller-uid"), "u-1");
  EXPECT_EQ(labels.at("job-name"), "pi");
  EXPECT_EQ(job["metadata"].at("labels"), labels);
  EXPECT_EQ(spec.at("template").at("spec").at("schedulerName"), "default-scheduler");
}

TEST_F(AdmissionTest, BatchJobParallelismAloneLeavesCompletionsUnset) {
  json::object job = Created(BatchJobs(), BatchJob(R"({"parallelism":3,"backoffLimitPerIndex":1,
      "completionMode":"Indexed","completions":3,"template":{"spec":{"restartPolicy":"Never",
      "containers":[{"name":"c","image":"i"}]}}})"));
  EXPECT_EQ(job["spec"].at("backoffLimit"), 2147483647);
  json::object work_queue = Created(BatchJobs(), BatchJob(R"({"parallelism":3,
      "template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"i"}]}}})"));
  EXPECT_FALSE(work_queue["spec"].as_object().contains("completions"));
}

TEST_F(AdmissionTest, BatchJobNegativeCompletionsNamesTheField) {
  json::object job = BatchJob(R"({"completions":-1,"template":{"spec":{"restartPolicy":"Never",
      "containers":[{"name":"pi","image":"perl"}]}}})");
  std::optional<ApiError> err = Create(BatchJobs(), job);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->code, 422);
  EXPECT_EQ(err->message,
            "Job.batch \"pi\" is invalid: spec.completions: Invalid value: -1: must be greater "
            "than or equal to 0");
  ASSERT_EQ(err->causes.size(), 1u);
  EXPECT_EQ(err->causes[0].field, "spec.completions");
}

TEST_F(AdmissionTest, BatchJobRestartPolicyMustBeNeverOrOnFailure) {
  json::object job = BatchJob(R"({"template":{"spec":{"containers":[{"name":"c","image":"i"}]}}})");
  std::optional<ApiError> err = Create(BatchJobs(), job);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message,
            "Job.batch \"pi\" is invalid: spec.template.spec.restartPolicy: Required value: valid "
            "values: \"OnFailure\", \"Never\"");
}

TEST_F(AdmissionTest, BatchJobIndexedNeedsCompletionsAndPerIndexLimitNeedsIndexed) {
  json::object job = BatchJob(R"({"completionMode":"Indexed","parallelism":2,
      "template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"i"}]}}})");
  std::optional<ApiError> err = Create(BatchJobs(), job);
  ASSERT_TRUE(err);
  EXPECT_THAT(err->message,
              HasSubstr("spec.completions: Required value: when completion mode is Indexed"));
  json::object per_index = BatchJob(R"({"backoffLimitPerIndex":1,"template":{"spec":{
      "restartPolicy":"Never","containers":[{"name":"c","image":"i"}]}}})");
  err = Create(BatchJobs(), per_index);
  ASSERT_TRUE(err);
  EXPECT_THAT(err->message, HasSubstr("spec.backoffLimitPerIndex: Invalid value: 1: requires "
                                      "indexed completion mode"));
}

TEST_F(AdmissionTest, BatchJobPodFailurePolicyRules) {
  json::object job = BatchJob(R"({"podFailurePolicy":{"rules":[
      {"action":"FailJob","onExitCodes":{"operator":"In","values":[0,3]}},
      {"action":"Ignore"}]},
      "template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"i"}]}}})");
  std::optional<ApiError> err = Create(BatchJobs(), job);
  ASSERT_TRUE(err);
  EXPECT_THAT(err->message, HasSubstr("spec.podFailurePolicy.rules[0].onExitCodes.values[0]: "
                                      "Invalid value: 0: must not be 0 for the In operator"));
  EXPECT_THAT(err->message, HasSubstr("specifying one of OnExitCodes and OnPodConditions is "
                                      "required"));
}

TEST_F(AdmissionTest, BatchJobTemplateAndCompletionsAreImmutable) {
  json::object job = Created(BatchJobs(), BatchJob(kPiSpec));
  json::object changed = job;
  changed["spec"].as_object()["template"].as_object()["spec"].as_object()["containers"]
      .as_array()[0].as_object()["image"] = "perl:2";
  std::optional<ApiError> err = Update(BatchJobs(), job, changed);
  ASSERT_TRUE(err);
  EXPECT_THAT(err->message, StartsWith("Job.batch \"pi\" is invalid: spec.template: Invalid "
                                       "value: "));
  EXPECT_THAT(err->message, HasSubstr("field is immutable"));

  json::object more = job;
  more["spec"].as_object()["completions"] = 3;
  err = Update(BatchJobs(), job, more);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message,
            "Job.batch \"pi\" is invalid: spec.completions: Invalid value: 3: field is immutable");

  json::object wider = job;
  wider["spec"].as_object()["parallelism"] = 4;
  wider["spec"].as_object()["suspend"] = true;
  EXPECT_FALSE(Update(BatchJobs(), job, wider).has_value());
}

TEST_F(AdmissionTest, SuspendedJobNeverStartedMayMoveItsPods) {
  json::object job = Created(BatchJobs(), BatchJob(R"({"suspend":true,"template":{"spec":{
      "restartPolicy":"Never","containers":[{"name":"c","image":"i"}]}}})"));
  json::object moved = job;
  moved["spec"].as_object()["template"].as_object()["spec"].as_object()["nodeSelector"] =
      json::object{{"zone", "b"}};
  EXPECT_FALSE(Update(BatchJobs(), job, moved).has_value());
  json::object started = job;
  started["status"] = json::object{{"startTime", "2024-01-01T00:00:00Z"}};
  std::optional<ApiError> err = Update(BatchJobs(), started, moved);
  ASSERT_TRUE(err);
  EXPECT_THAT(err->message, HasSubstr("field is immutable"));
}

// --- CronJobs --------------------------------------------------------------------------------------

json::object Cron(std::string_view spec, std::string_view name = "hello") {
  json::object cj = Obj(R"({"apiVersion":"batch/v1","kind":"CronJob",
      "metadata":{"namespace":"default","uid":"c-1"}})");
  cj["metadata"].as_object()["name"] = name;
  cj["spec"] = json::parse(spec);
  return cj;
}

constexpr std::string_view kTemplate = R"("jobTemplate":{"spec":{"template":{"spec":{
    "restartPolicy":"OnFailure","containers":[{"name":"c","image":"busybox"}]}}}})";

TEST_F(AdmissionTest, CronJobDefaults) {
  json::object cj =
      Created(CronJobs(), Cron(std::string(R"({"schedule":"*/1 * * * *",)") +
                               std::string(kTemplate) + "}"));
  const json::object& spec = cj["spec"].as_object();
  EXPECT_EQ(spec.at("concurrencyPolicy"), "Allow");
  EXPECT_EQ(spec.at("suspend"), false);
  EXPECT_EQ(spec.at("successfulJobsHistoryLimit"), 3);
  EXPECT_EQ(spec.at("failedJobsHistoryLimit"), 1);
  EXPECT_FALSE(spec.at("jobTemplate").at("spec").as_object().contains("backoffLimit"));
  EXPECT_EQ(spec.at("jobTemplate").at("spec").at("template").at("spec").at("dnsPolicy"),
            "ClusterFirst");
  Created(CronJobs(), Cron(std::string(R"({"schedule":"@hourly","timeZone":"Europe/Paris",)") +
                           std::string(kTemplate) + "}"));
}

TEST_F(AdmissionTest, CronJobScheduleAndTimeZoneAreChecked) {
  json::object bad = Cron(std::string(R"({"schedule":"61 * * * *",)") + std::string(kTemplate) +
                          "}");
  std::optional<ApiError> err = Create(CronJobs(), bad);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message,
            "CronJob.batch \"hello\" is invalid: spec.schedule: Invalid value: \"61 * * * *\": end "
            "of range (61) above maximum (59): 61");
  json::object zone = Cron(std::string(R"({"schedule":"@daily","timeZone":"Mars/Base",)") +
                           std::string(kTemplate) + "}");
  err = Create(CronJobs(), zone);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message,
            "CronJob.batch \"hello\" is invalid: spec.timeZone: Invalid value: \"Mars/Base\": "
            "unknown time zone Mars/Base");
  json::object tz = Cron(std::string(R"({"schedule":"TZ=UTC 0 * * * *",)") +
                         std::string(kTemplate) + "}");
  err = Create(CronJobs(), tz);
  ASSERT_TRUE(err);
  EXPECT_THAT(err->message, HasSubstr("cannot use TZ or CRON_TZ in schedule, use timeZone field "
                                      "instead"));
  json::object policy = Cron(std::string(R"({"schedule":"@daily","concurrencyPolicy":"Never",)") +
                             std::string(kTemplate) + "}");
  err = Create(CronJobs(), policy);
  ASSERT_TRUE(err);
  EXPECT_THAT(err->message, HasSubstr("spec.concurrencyPolicy: Unsupported value: \"Never\": "
                                      "supported values: \"Allow\", \"Forbid\", \"Replace\""));
}

TEST_F(AdmissionTest, CronJobNamesLeaveRoomForTheJobSuffix) {
  json::object cj = Cron(std::string(R"({"schedule":"@daily",)") + std::string(kTemplate) + "}",
                         std::string(53, 'a'));
  std::optional<ApiError> err = Create(CronJobs(), cj);
  ASSERT_TRUE(err);
  EXPECT_THAT(err->message, HasSubstr("metadata.name: Invalid value: \"" + std::string(53, 'a') +
                                      "\": must be no more than 52 characters"));
}

}  // namespace
}  // namespace muster::apiserver::admission_test
