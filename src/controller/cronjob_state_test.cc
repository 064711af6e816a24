// The CronJob controller's decisions (cronjob_state.h) with a fake clock: a CronJob fires on its
// schedule, in its time zone, under each concurrency policy, within its starting deadline, and
// keeps its history within the limits.

#include "controller/cronjob_state.h"

#include <string>
#include <vector>

#include "absl/time/civil_time.h"
#include "api/time.h"
#include "boost/json.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::controller {
namespace {

namespace json = boost::json;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

int64_t At(int y, int mo, int d, int h, int mi, int s = 0) {
  return absl::ToUnixSeconds(
      absl::FromCivil(absl::CivilSecond(y, mo, d, h, mi, s), absl::UTCTimeZone()));
}

// Created 2024-05-01 10:00:30 UTC.
CronJobInfo Cron(std::string_view spec_fields) {
  json::object obj = json::parse(R"({"apiVersion":"batch/v1","kind":"CronJob",
      "metadata":{"name":"hello","namespace":"ns","uid":"c-1",
                  "creationTimestamp":"2024-05-01T10:00:30Z"}})").as_object();
  obj["spec"] = json::parse(std::string(R"({"jobTemplate":{"metadata":{"labels":{"app":"hi"}},
      "spec":{"template":{"spec":{"restartPolicy":"OnFailure",
      "containers":[{"name":"c","image":"busybox"}]}}}},)") + std::string(spec_fields) + "}");
  absl::StatusOr<CronJobInfo> cj = DecodeCronJob(obj);
  EXPECT_TRUE(cj.ok()) << cj.status();
  return *cj;
}

CronJobPlan Plan(const CronJobInfo& cj, int64_t now, std::vector<ChildJob> jobs = {}) {
  return PlanCronJob(cj, jobs, now, absl::UTCTimeZone());
}

TEST(CronJobStateTest, EveryMinuteFiresAtTheMinuteNotBefore) {
  CronJobInfo cj = Cron(R"("schedule":"*/1 * * * *","concurrencyPolicy":"Allow")");
  CronJobPlan early = Plan(cj, At(2024, 5, 1, 10, 0, 50));
  EXPECT_FALSE(early.create_job.has_value());
  EXPECT_FALSE(early.status_changed);
  ASSERT_TRUE(early.requeue_at.has_value());
  EXPECT_EQ(*early.requeue_at, At(2024, 5, 1, 10, 1));

  CronJobPlan due = Plan(cj, At(2024, 5, 1, 10, 1, 2));
  ASSERT_TRUE(due.create_job.has_value());
  const int64_t scheduled = At(2024, 5, 1, 10, 1);
  EXPECT_EQ(due.scheduled_time, scheduled);
  EXPECT_EQ(due.last_schedule_time, scheduled);
  const std::string name = "hello-" + std::to_string(scheduled / 60);
  const json::object& meta = due.create_job->at("metadata").as_object();
  EXPECT_EQ(meta.at("name").as_string(), name);
  EXPECT_EQ(meta.at("labels").at("app"), "hi");
  EXPECT_EQ(meta.at("annotations").at(kCronJobScheduledTimestampAnnotation),
            "2024-05-01T10:01:00Z");
  EXPECT_EQ(meta.at("ownerReferences").at(0).at("kind"), "CronJob");
  EXPECT_EQ(meta.at("ownerReferences").at(0).at("uid"), "c-1");
  EXPECT_EQ(due.create_job->at("spec").at("template").at("spec").at("restartPolicy"),
            "OnFailure");
  EXPECT_THAT(due.events, ElementsAre(CronJobEvent{"Normal", "SuccessfulCreate",
                                                   "Created job " + name}));
  EXPECT_EQ(due.requeue_at, At(2024, 5, 1, 10, 2));

  // Started: not again for the same minute.
  cj.last_schedule_time = scheduled;
  cj.active = {{name, "j-1", "5"}};
  CronJobPlan same = Plan(cj, At(2024, 5, 1, 10, 1, 30), {{name, "j-1", "5"}});
  EXPECT_FALSE(same.create_job.has_value());
}

TEST(CronJobStateTest, HourlyInATimeZone) {
  CronJobInfo cj = Cron(R"("schedule":"0 9 * * *","timeZone":"Asia/Tokyo")");
  // 09:00 in Tokyo is 00:00 UTC; created 2024-05-01 10:00 UTC, so the first run is 05-02 00:00.
  CronJobPlan before = Plan(cj, At(2024, 5, 1, 23, 59));
  EXPECT_FALSE(before.create_job.has_value());
  EXPECT_EQ(before.requeue_at, At(2024, 5, 2, 0, 0));
  CronJobPlan due = Plan(cj, At(2024, 5, 2, 0, 0, 1));
  ASSERT_TRUE(due.create_job.has_value());
  EXPECT_EQ(due.create_job->at("metadata").at("annotations").at(
                kCronJobScheduledTimestampAnnotation),
            "2024-05-02T09:00:00+09:00");
}

TEST(CronJobStateTest, ConcurrencyPolicies) {
  CronJobInfo cj = Cron(R"("schedule":"*/1 * * * *","concurrencyPolicy":"Forbid")");
  cj.last_schedule_time = At(2024, 5, 1, 10, 1);
  cj.active = {{"hello-old", "j-1", "5"}};
  const std::vector<ChildJob> running = {{"hello-old", "j-1", "5"}};
  CronJobPlan forbid = Plan(cj, At(2024, 5, 1, 10, 2, 1), running);
  EXPECT_FALSE(forbid.create_job.has_value());
  EXPECT_THAT(forbid.events,
              ElementsAre(CronJobEvent{"Normal", "JobAlreadyActive",
                                       "Not starting job because prior execution is running and "
                                       "concurrency policy is Forbid"}));
  cj.concurrency_policy = "Replace";
  CronJobPlan replace = Plan(cj, At(2024, 5, 1, 10, 2, 1), running);
  EXPECT_THAT(replace.delete_jobs, ElementsAre("hello-old"));
  EXPECT_TRUE(replace.create_job.has_value());
  EXPECT_THAT(replace.active, IsEmpty());
  cj.concurrency_policy = "Allow";
  CronJobPlan allow = Plan(cj, At(2024, 5, 1, 10, 2, 1), running);
  EXPECT_THAT(allow.delete_jobs, IsEmpty());
  EXPECT_TRUE(allow.create_job.has_value());
  EXPECT_THAT(allow.active, ElementsAre(JobRef{"hello-old", "j-1", "5"}));
}

TEST(CronJobStateTest, StartingDeadlineMissesLateRuns) {
  CronJobInfo cj = Cron(R"("schedule":"0 * * * *","startingDeadlineSeconds":30)");
  CronJobPlan late = Plan(cj, At(2024, 5, 1, 11, 0, 45));
  EXPECT_FALSE(late.create_job.has_value());
  CronJobPlan in_time = Plan(cj, At(2024, 5, 1, 11, 0, 20));
  EXPECT_TRUE(in_time.create_job.has_value());
  // Without a deadline a run missed by an hour still starts (the most recent one).
  CronJobInfo lax = Cron(R"("schedule":"0 * * * *")");
  CronJobPlan catch_up = Plan(lax, At(2024, 5, 1, 13, 30));
  ASSERT_TRUE(catch_up.create_job.has_value());
  EXPECT_EQ(catch_up.scheduled_time, At(2024, 5, 1, 13, 0));
}

TEST(CronJobStateTest, SuspendedStartsNothing) {
  CronJobInfo cj = Cron(R"("schedule":"*/1 * * * *","suspend":true)");
  EXPECT_FALSE(Plan(cj, At(2024, 5, 1, 10, 5)).create_job.has_value());
}

TEST(CronJobStateTest, FinishedJobsLeaveTheActiveListAndOldOnesGo) {
  CronJobInfo cj = Cron(R"("schedule":"@hourly","successfulJobsHistoryLimit":1,
      "failedJobsHistoryLimit":0)");
  cj.last_schedule_time = At(2024, 5, 1, 12, 0);
  cj.active = {{"hello-3", "u3", "1"}, {"hello-gone", "ug", "1"}};
  ChildJob one{"hello-1", "u1", "1", true, false, At(2024, 5, 1, 10, 0), At(2024, 5, 1, 10, 1)};
  ChildJob two{"hello-2", "u2", "1", true, false, At(2024, 5, 1, 11, 0), At(2024, 5, 1, 11, 1)};
  ChildJob three{"hello-3", "u3", "1", false, true, At(2024, 5, 1, 12, 0), 0};
  CronJobPlan plan = Plan(cj, At(2024, 5, 1, 12, 30), {one, two, three});
  EXPECT_THAT(plan.active, IsEmpty());
  EXPECT_EQ(plan.last_successful_time, At(2024, 5, 1, 11, 1));
  EXPECT_THAT(plan.delete_finished_jobs, ElementsAre("hello-1", "hello-3"));
  EXPECT_TRUE(plan.status_changed);
  EXPECT_THAT(plan.events,
              ElementsAre(CronJobEvent{"Normal", "SawCompletedJob",
                                       "Saw completed job: hello-3, condition: Failed"},
                          CronJobEvent{"Normal", "MissingJob", "Active job went missing: "
                                                               "hello-gone"},
                          CronJobEvent{"Normal", "SuccessfulDelete", "Deleted job hello-1"},
                          CronJobEvent{"Normal", "SuccessfulDelete", "Deleted job hello-3"}));
}

}  // namespace
}  // namespace muster::controller
