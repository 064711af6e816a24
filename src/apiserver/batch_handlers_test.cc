// batch/v1 Jobs and CronJobs through the REST handlers, against a real store in a temporary
// directory: what `kubectl create job`, `kubectl patch job` and the Job controller's status
// writes meet.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>

#include "apiserver/handlers.h"
#include "apiserver/testing/handlers_fixture.h"
#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"

namespace muster::apiserver {
namespace {

using ::testing::HasSubstr;
namespace json = boost::json;

constexpr char kBatchJobsPath[] = "/apis/batch/v1/namespaces/default/jobs";
constexpr char kCronJobsPath[] = "/apis/batch/v1/namespaces/default/cronjobs";

class BatchHandlersTest : public testing::HandlersFixture {
 protected:
};

constexpr char kPiJob[] =
    R"({"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"pi"},"spec":{"template":)"
    R"({"spec":{"restartPolicy":"Never","containers":[{"name":"pi","image":"perl"}]}}}})";

TEST_F(BatchHandlersTest, CreatedJobIsDefaultedWithItsGeneratedSelector) {
  auto created = Call("POST", kBatchJobsPath, kPiJob);
  ASSERT_EQ(created.status, 201) << created.body;
  json::value job = Body(created);
  const std::string uid(job.at("metadata").at("uid").as_string());
  EXPECT_EQ(job.at("spec").at("selector").at("matchLabels").at(
                "batch.kubernetes.io/controller-uid").as_string(),
            uid);
  EXPECT_EQ(job.at("spec").at("backoffLimit"), 6);
  EXPECT_EQ(json::serialize(job.at("status")), "{}");
  EXPECT_EQ(job.at("metadata").at("labels").at("job-name"), "pi");
}

TEST_F(BatchHandlersTest, NegativeCompletionsAre422NamingTheFieldAndNothingIsStored) {
  auto refused = Call("POST", kBatchJobsPath,
                      R"({"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"bad"},)"
                      R"("spec":{"completions":-1,"template":{"spec":{"restartPolicy":"Never",)"
                      R"("containers":[{"name":"c","image":"i"}]}}}})");
  ASSERT_EQ(refused.status, 422) << refused.body;
  json::value status = Body(refused);
  EXPECT_EQ(status.at("reason"), "Invalid");
  EXPECT_EQ(status.at("details").at("kind"), "Job");
  EXPECT_EQ(status.at("details").at("group"), "batch");
  EXPECT_EQ(status.at("details").at("causes").at(0).at("field"), "spec.completions");
  EXPECT_EQ(status.at("message"),
            "Job.batch \"bad\" is invalid: spec.completions: Invalid value: -1: must be greater "
            "than or equal to 0");
  EXPECT_EQ(Call("GET", std::string(kBatchJobsPath) + "/bad").status, 404);
}

TEST_F(BatchHandlersTest, StrategicPatchTakesParallelismButNotTheTemplate) {
  ASSERT_EQ(Call("POST", kBatchJobsPath, kPiJob).status, 201);
  auto wider = Call("PATCH", std::string(kBatchJobsPath) + "/pi", R"({"spec":{"parallelism":3}})",
                    "application/strategic-merge-patch+json");
  ASSERT_EQ(wider.status, 200) << wider.body;
  EXPECT_EQ(Body(wider).at("spec").at("parallelism"), 3);
  auto image = Call("PATCH", std::string(kBatchJobsPath) + "/pi",
                    R"({"spec":{"template":{"spec":{"containers":[{"name":"pi","image":"x"}]}}}})",
                    "application/strategic-merge-patch+json");
  ASSERT_EQ(image.status, 422) << image.body;
  EXPECT_THAT(Body(image).at("message").as_string().c_str(), HasSubstr("spec.template"));
  EXPECT_THAT(Body(image).at("message").as_string().c_str(), HasSubstr("field is immutable"));
}

TEST_F(BatchHandlersTest, StatusWritesKeepTheSpecAndRefuseNegativeCounters) {
  json::value job = Body(Call("POST", kBatchJobsPath, kPiJob));
  job.as_object()["status"] = json::parse(R"({"active":1,"startTime":"2023-11-14T22:13:20Z"})");
  job.as_object()["spec"].as_object()["parallelism"] = 9;
  auto written = Call("PUT", std::string(kBatchJobsPath) + "/pi/status", json::serialize(job));
  ASSERT_EQ(written.status, 200) << written.body;
  EXPECT_EQ(Body(written).at("status").at("active"), 1);
  EXPECT_EQ(Body(written).at("spec").at("parallelism"), 1);
  json::value bad = Body(written);
  bad.as_object()["status"].as_object()["succeeded"] = -1;
  auto refused = Call("PUT", std::string(kBatchJobsPath) + "/pi/status", json::serialize(bad));
  ASSERT_EQ(refused.status, 422) << refused.body;
  EXPECT_THAT(Body(refused).at("message").as_string().c_str(),
              HasSubstr("status.succeeded: Invalid value: -1: must be greater than or equal to 0"));
}

TEST_F(BatchHandlersTest, CronJobScheduleIsValidated) {
  auto created = Call("POST", kCronJobsPath,
                      R"({"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"c"},)"
                      R"("spec":{"schedule":"@every 1x","jobTemplate":{"spec":{"template":)"
                      R"({"spec":{"restartPolicy":"Never","containers":[{"name":"c",)"
                      R"("image":"i"}]}}}}}})");
  ASSERT_EQ(created.status, 422) << created.body;
  EXPECT_THAT(Body(created).at("message").as_string().c_str(),
              HasSubstr("spec.schedule: Invalid value: \"@every 1x\": failed to parse duration"));
}

}  // namespace
}  // namespace muster::apiserver
