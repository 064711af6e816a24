// The batch/v1 Job state machine (batch_job_state.h) and its pods (batch_job_pods.h), with a
// fixed clock: what kube's Job controller would do for each situation.

#include "controller/batch_job_state.h"

#include <string>
#include <vector>

#include "api/json_access.h"
#include "boost/json.hpp"
#include "controller/batch_job_pods.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::controller {
namespace {

namespace json = boost::json;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr int64_t kBatchNow = 1'700'000'000;

BatchJob MakeJob(std::string_view spec) {
  json::object obj = json::parse(R"({"apiVersion":"batch/v1","kind":"Job",
      "metadata":{"name":"pi","namespace":"ns","uid":"j-1"}})").as_object();
  obj["spec"] = json::parse(spec);
  absl::StatusOr<BatchJob> job = DecodeBatchJob(obj);
  EXPECT_TRUE(job.ok()) << job.status();
  return *job;
}

constexpr std::string_view kTemplate =
    R"("template":{"spec":{"restartPolicy":"Never","containers":[{"name":"main","image":"i"}]}})";

BatchJob Job(std::string_view fields) {
  return MakeJob(std::string("{") + std::string(fields) + (fields.empty() ? "" : ",") +
                 std::string(kTemplate) + "}");
}

BatchPod Pod(std::string name, std::string phase, std::optional<int32_t> index = std::nullopt) {
  BatchPod p;
  p.uid = "u-" + name;
  p.name = std::move(name);
  p.phase = std::move(phase);
  p.tracked = true;
  p.index = index;
  p.created = kBatchNow - 100;
  if (p.phase == "Failed" || p.phase == "Succeeded") p.finished = kBatchNow - 50;
  if (p.phase == "Failed") p.exits.push_back({"main", 1});
  return p;
}

BatchJobPlan Plan(const BatchJob& job, std::vector<BatchPod> pods, int64_t now = kBatchNow) {
  BatchJobSnapshot s;
  s.job = job;
  s.pods = std::move(pods);
  s.now = now;
  return PlanBatchJob(s);
}

// The Job after a plan was carried out (the status written).
BatchJob After(BatchJob job, const BatchJobPlan& plan) {
  job.status = plan.status;
  return job;
}

TEST(BatchJobStateTest, NewJobStartsAndMakesParallelismPods) {
  BatchJobPlan plan = Plan(Job(R"("parallelism":2,"completions":5)"), {});
  EXPECT_EQ(plan.create_pods.size(), 2u);
  EXPECT_EQ(plan.status.start_time, kBatchNow);
  EXPECT_EQ(plan.status.active, 2);
  EXPECT_TRUE(plan.status_changed);
  // Only what is left to complete: 4 succeeded of 5, so one more.
  BatchJob job = Job(R"("parallelism":2,"completions":5)");
  job.status.succeeded = 4;
  job.status.start_time = kBatchNow - 10;
  EXPECT_EQ(Plan(job, {}).create_pods.size(), 1u);
}

TEST(BatchJobStateTest, FinishedPodIsCountedOnceThroughUncountedThenComplete) {
  BatchJob job = Job(R"("completions":1,"parallelism":1)");
  job.status.start_time = kBatchNow - 60;
  BatchJobPlan plan = Plan(job, {Pod("pi-a", "Succeeded")});
  ASSERT_TRUE(plan.interim_status.has_value());
  EXPECT_THAT(plan.interim_status->uncounted_succeeded, ElementsAre("u-pi-a"));
  EXPECT_EQ(plan.interim_status->succeeded, 0);
  EXPECT_THAT(plan.remove_finalizers, ElementsAre("pi-a"));
  EXPECT_EQ(plan.status.succeeded, 1);
  EXPECT_THAT(plan.status.uncounted_succeeded, IsEmpty());
  EXPECT_TRUE(plan.status.IsTrue(kJobSuccessCriteriaMet));
  ASSERT_TRUE(plan.status.IsTrue(kJobComplete));
  EXPECT_EQ(plan.status.Find(kJobComplete)->reason, "CompletionsReached");
  EXPECT_EQ(plan.status.completion_time, kBatchNow);
  EXPECT_THAT(plan.events, ElementsAre(BatchJobEvent{"Normal", "Completed", "Job completed"}));
  EXPECT_THAT(plan.create_pods, IsEmpty());

  // The pod without its finalizer is not counted again.
  BatchJob done = After(job, plan);
  BatchPod counted = Pod("pi-a", "Succeeded");
  counted.tracked = false;
  BatchJobPlan again = Plan(done, {counted});
  EXPECT_EQ(again.status.succeeded, 1);
  EXPECT_FALSE(again.status_changed);
}

TEST(BatchJobStateTest, AStopBetweenTheStepsCountsThePodOnce) {
  BatchJob job = Job(R"("completions":2,"parallelism":1)");
  job.status.start_time = kBatchNow - 60;
  job.status.uncounted_succeeded = {"u-pi-a"};  // recorded, finalizer not yet off
  BatchJobPlan plan = Plan(job, {Pod("pi-a", "Succeeded")});
  EXPECT_FALSE(plan.interim_status.has_value());
  EXPECT_EQ(plan.status.succeeded, 1);
  // Gone meanwhile: still counted from the uncounted list.
  EXPECT_EQ(Plan(job, {}).status.succeeded, 1);
}

TEST(BatchJobStateTest, BackoffLimitFailsTheJobAfterItsPodsAreGone) {
  BatchJob job = Job(R"("completions":1,"backoffLimit":1)");
  job.status.start_time = kBatchNow - 600;
  job.status.failed = 1;
  BatchJobPlan plan = Plan(job, {Pod("pi-a", "Failed"), Pod("pi-b", "Failed")});
  EXPECT_EQ(plan.status.failed, 3);
  ASSERT_TRUE(plan.status.IsTrue(kJobFailureTarget));
  ASSERT_TRUE(plan.status.IsTrue(kJobFailed));
  EXPECT_EQ(plan.status.Find(kJobFailed)->reason, "BackoffLimitExceeded");
  EXPECT_EQ(plan.status.Find(kJobFailed)->message, "Job has reached the specified backoff limit");
  EXPECT_THAT(plan.events, ElementsAre(BatchJobEvent{"Warning", "BackoffLimitExceeded",
                                                     "Job has reached the specified backoff "
                                                     "limit"}));

  // With a pod still running: FailureTarget first, the pod deleted, Failed once it is gone.
  BatchJob two = Job(R"("completions":2,"parallelism":2,"backoffLimit":0)");
  two.status.start_time = kBatchNow - 600;
  BatchJobPlan first = Plan(two, {Pod("pi-a", "Failed"), Pod("pi-b", "Running")});
  EXPECT_TRUE(first.status.IsTrue(kJobFailureTarget));
  EXPECT_FALSE(first.status.IsTrue(kJobFailed));
  EXPECT_THAT(first.delete_pods, ElementsAre("pi-b"));
  EXPECT_EQ(first.status.active, 0);
  EXPECT_EQ(first.status.terminating, 1);
  BatchPod untracked = Pod("pi-a", "Failed");
  untracked.tracked = false;
  BatchJobPlan second = Plan(After(two, first), {untracked});
  EXPECT_TRUE(second.status.IsTrue(kJobFailed));
}

TEST(BatchJobStateTest, FailedPodsAreReplacedAfterABackoff) {
  BatchJob job = Job(R"("completions":1,"backoffLimit":6)");
  job.status.start_time = kBatchNow - 600;
  BatchPod failed = Pod("pi-a", "Failed");
  failed.finished = kBatchNow - 3;
  BatchJobPlan plan = Plan(job, {failed});
  EXPECT_THAT(plan.create_pods, IsEmpty());
  ASSERT_TRUE(plan.requeue_at.has_value());
  EXPECT_EQ(*plan.requeue_at, kBatchNow + 7);  // 10 s after the failure
  EXPECT_EQ(Plan(job, {failed}, kBatchNow + 7).create_pods.size(), 1u);
}

TEST(BatchJobStateTest, PodFailurePolicyFailJobIgnoreAndCount) {
  BatchJob job = Job(R"("completions":1,"backoffLimit":3,"podFailurePolicy":{"rules":[
      {"action":"FailJob","onExitCodes":{"containerName":"main","operator":"In","values":[42]}},
      {"action":"Ignore","onPodConditions":[{"type":"DisruptionTarget"}]}]})");
  job.status.start_time = kBatchNow - 600;
  BatchPod exit42 = Pod("pi-a", "Failed");
  exit42.exits = {{"main", 42}};
  BatchJobPlan plan = Plan(job, {exit42});
  ASSERT_TRUE(plan.status.IsTrue(kJobFailed));
  EXPECT_EQ(plan.status.Find(kJobFailed)->reason, "PodFailurePolicy");
  EXPECT_EQ(plan.status.Find(kJobFailed)->message,
            "Container main for pod ns/pi-a failed with exit code 42 matching FailJob rule at "
            "index 0");

  BatchPod evicted = Pod("pi-b", "Failed");
  evicted.conditions = {{"DisruptionTarget", "True"}};
  BatchJobPlan ignored = Plan(job, {evicted}, kBatchNow);
  EXPECT_EQ(ignored.status.failed, 0);
  EXPECT_THAT(ignored.remove_finalizers, ElementsAre("pi-b"));
  EXPECT_EQ(ignored.create_pods.size(), 1u);  // no backoff for an ignored failure

  BatchJobPlan counted = Plan(job, {Pod("pi-c", "Failed")});
  EXPECT_EQ(counted.status.failed, 1);
  EXPECT_FALSE(counted.status.IsTrue(kJobFailureTarget));
}

TEST(BatchJobStateTest, ActiveDeadlineFailsTheJob) {
  BatchJob job = Job(R"("completions":1,"activeDeadlineSeconds":30)");
  job.status.start_time = kBatchNow - 10;
  BatchJobPlan early = Plan(job, {Pod("pi-a", "Running")});
  EXPECT_FALSE(early.status.IsTrue(kJobFailureTarget));
  ASSERT_TRUE(early.requeue_at.has_value());
  EXPECT_EQ(*early.requeue_at, kBatchNow + 20);
  BatchJobPlan late = Plan(job, {Pod("pi-a", "Running")}, kBatchNow + 20);
  ASSERT_TRUE(late.status.IsTrue(kJobFailureTarget));
  EXPECT_EQ(late.status.Find(kJobFailureTarget)->reason, "DeadlineExceeded");
  EXPECT_THAT(late.delete_pods, ElementsAre("pi-a"));
}

TEST(BatchJobStateTest, SuspendDeletesPodsAndResumeRestartsTheClock) {
  BatchJob job = Job(R"("completions":2,"parallelism":2,"suspend":true)");
  job.status.start_time = kBatchNow - 600;
  BatchJobPlan suspended = Plan(job, {Pod("pi-a", "Running"), Pod("pi-b", "Pending")});
  EXPECT_THAT(suspended.delete_pods, ElementsAre("pi-a", "pi-b"));
  EXPECT_THAT(suspended.remove_finalizers, ElementsAre("pi-a", "pi-b"));
  EXPECT_TRUE(suspended.status.IsTrue(kJobSuspended));
  EXPECT_EQ(suspended.status.Find(kJobSuspended)->reason, "JobSuspended");
  EXPECT_THAT(suspended.events, ElementsAre(BatchJobEvent{"Normal", "Suspended", "Job suspended"}));
  EXPECT_THAT(suspended.create_pods, IsEmpty());
  EXPECT_EQ(suspended.status.failed, 0);  // deleted by the controller: not failures

  BatchJob resumed = After(job, suspended);
  resumed.suspend = false;
  BatchJobPlan plan = Plan(resumed, {}, kBatchNow + 100);
  EXPECT_EQ(plan.status.Find(kJobSuspended)->status, "False");
  EXPECT_EQ(plan.status.Find(kJobSuspended)->reason, "JobResumed");
  EXPECT_EQ(plan.status.start_time, kBatchNow + 100);
  EXPECT_EQ(plan.create_pods.size(), 2u);
}

TEST(BatchJobStateTest, IndexedJobMakesEachMissingIndexOnce) {
  BatchJob job = Job(R"("completionMode":"Indexed","completions":4,"parallelism":4)");
  job.status.start_time = kBatchNow - 60;
  job.status.completed_indexes = "0";
  BatchJobPlan plan = Plan(job, {Pod("pi-1-x", "Running", 1), Pod("pi-3-y", "Succeeded", 3)});
  ASSERT_EQ(plan.create_pods.size(), 1u);
  EXPECT_EQ(plan.create_pods[0].index, 2);
  EXPECT_EQ(plan.status.completed_indexes, "0,3");
  EXPECT_EQ(plan.status.succeeded, 2);

  // A duplicate of a running index is deleted.
  BatchJobPlan dup = Plan(job, {Pod("pi-1-x", "Running", 1), Pod("pi-1-z", "Running", 1)});
  EXPECT_THAT(dup.delete_pods, ElementsAre("pi-1-z"));
}

TEST(BatchJobStateTest, BackoffLimitPerIndexFailsTheIndexNotTheJob) {
  BatchJob job = Job(R"("completionMode":"Indexed","completions":2,"parallelism":2,
      "backoffLimitPerIndex":1)");
  job.status.start_time = kBatchNow - 600;
  BatchPod first = Pod("pi-0-a", "Failed", 0);
  BatchJobPlan plan = Plan(job, {first, Pod("pi-1-a", "Running", 1)});
  ASSERT_EQ(plan.create_pods.size(), 1u);
  EXPECT_EQ(plan.create_pods[0], (BatchPodToCreate{0, 1}));
  EXPECT_EQ(plan.status.failed_indexes, "");

  BatchPod second = Pod("pi-0-b", "Failed", 0);
  second.index_failures = 1;
  BatchJobPlan failed = Plan(job, {first, second, Pod("pi-1-a", "Succeeded", 1)});
  EXPECT_EQ(failed.status.failed_indexes, "0");
  EXPECT_EQ(failed.status.completed_indexes, "1");
  ASSERT_TRUE(failed.status.IsTrue(kJobFailed));
  EXPECT_EQ(failed.status.Find(kJobFailed)->reason, "FailedIndexes");
}

TEST(BatchJobStateTest, SuccessPolicyCompletesEarlyAndRemovesLingeringPods) {
  BatchJob job = Job(R"("completionMode":"Indexed","completions":3,"parallelism":3,
      "successPolicy":{"rules":[{"succeededIndexes":"0"}]})");
  job.status.start_time = kBatchNow - 60;
  BatchJobPlan plan =
      Plan(job, {Pod("pi-0-a", "Succeeded", 0), Pod("pi-1-a", "Running", 1),
                 Pod("pi-2-a", "Running", 2)});
  ASSERT_TRUE(plan.status.IsTrue(kJobSuccessCriteriaMet));
  EXPECT_EQ(plan.status.Find(kJobSuccessCriteriaMet)->reason, "SuccessPolicy");
  EXPECT_EQ(plan.status.Find(kJobSuccessCriteriaMet)->message, "Matched rules at index 0");
  EXPECT_THAT(plan.delete_pods, ElementsAre("pi-1-a", "pi-2-a"));
  EXPECT_FALSE(plan.status.IsTrue(kJobComplete));
  BatchJobPlan later = Plan(After(job, plan), {Pod("pi-0-a", "Succeeded", 0)}, kBatchNow + 5);
  EXPECT_TRUE(later.status.IsTrue(kJobComplete));
}

TEST(BatchJobStateTest, FinishedJobWithTtlIsDeletedOnTime) {
  BatchJob job = Job(R"("completions":1,"ttlSecondsAfterFinished":100)");
  job.status.start_time = kBatchNow - 60;
  BatchJobPlan plan = Plan(job, {Pod("pi-a", "Succeeded")});
  ASSERT_TRUE(plan.delete_job_at.has_value());
  EXPECT_EQ(*plan.delete_job_at, kBatchNow + 100);
  BatchJobPlan later = Plan(After(job, plan), {}, kBatchNow + 50);
  EXPECT_EQ(later.delete_job_at, kBatchNow + 100);
}

TEST(BatchJobStateTest, DeletedJobLetsItsPodsGo) {
  BatchJob job = Job(R"("completions":1)");
  job.deleting = true;
  BatchJobPlan plan = Plan(job, {Pod("pi-a", "Running")});
  EXPECT_THAT(plan.remove_finalizers, ElementsAre("pi-a"));
  EXPECT_THAT(plan.delete_pods, IsEmpty());
  EXPECT_THAT(plan.create_pods, IsEmpty());
}

TEST(BatchJobPodsTest, IndexedPodCarriesItsIndexAndHostname) {
  BatchJob job = MakeJob(R"({"completionMode":"Indexed","completions":4,"parallelism":4,
      "template":{"metadata":{"labels":{"app":"x"}},"spec":{"subdomain":"workers",
      "restartPolicy":"Never","containers":[{"name":"main","image":"i"}]}}})");
  json::object pod = MakeBatchJobPod(job, {2, 0}, std::nullopt);
  const json::object& meta = pod.at("metadata").as_object();
  EXPECT_EQ(meta.at("generateName"), "pi-2-");
  EXPECT_EQ(meta.at("annotations").at(kCompletionIndexKey), "2");
  EXPECT_EQ(meta.at("labels").at(kCompletionIndexKey), "2");
  EXPECT_EQ(meta.at("labels").at("app"), "x");
  EXPECT_EQ(json::serialize(meta.at("finalizers")), R"(["batch.kubernetes.io/job-tracking"])");
  EXPECT_EQ(json::serialize(meta.at("ownerReferences")),
            R"([{"apiVersion":"batch/v1","kind":"Job","name":"pi","uid":"j-1",)"
            R"("controller":true,"blockOwnerDeletion":true}])");
  const json::object& spec = pod.at("spec").as_object();
  EXPECT_EQ(spec.at("hostname"), "pi-2");
  EXPECT_EQ(spec.at("subdomain"), "workers");
  EXPECT_EQ(json::serialize(spec.at("containers").at(0).at("env")),
            R"([{"name":"JOB_COMPLETION_INDEX","valueFrom":{"fieldRef":{"apiVersion":"v1",)"
            R"("fieldPath":"metadata.labels['batch.kubernetes.io/job-completion-index']"}}}])");
}

TEST(BatchJobPodsTest, GangOnlyForTheSchedulersPodsThatAskForOne) {
  const std::vector<std::string> names = {"volcano", "muster"};
  BatchJob plain = MakeJob(R"({"parallelism":4,"template":{"spec":{"schedulerName":"volcano",
      "containers":[{"name":"c","image":"i"}]}}})");
  EXPECT_FALSE(BatchJobGang(plain, names).has_value());
  BatchJob annotated = plain;
  annotated.annotations[kGroupMinMemberAnnotation] = "3";
  EXPECT_EQ(BatchJobGang(annotated, names), (BatchGang{"podgroup-j-1", 3}));
  BatchJob named = MakeJob(R"({"parallelism":4,"template":{"metadata":{"annotations":{
      "scheduling.k8s.io/group-name":"train"}},"spec":{"schedulerName":"volcano",
      "containers":[{"name":"c","image":"i"}]}}})");
  EXPECT_EQ(BatchJobGang(named, names), (BatchGang{"train", 4}));
  BatchJob other = named;
  other.pod_template["spec"].as_object()["schedulerName"] = "default-scheduler";
  EXPECT_FALSE(BatchJobGang(other, names).has_value());
  json::object pod = MakeBatchJobPod(annotated, {}, BatchJobGang(annotated, names));
  EXPECT_EQ(pod.at("metadata").at("annotations").at("scheduling.k8s.io/group-name"),
            "podgroup-j-1");
  EXPECT_EQ(pod.at("metadata").at("generateName"), "pi-");
}

}  // namespace
}  // namespace muster::controller
