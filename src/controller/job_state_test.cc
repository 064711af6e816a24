#include "controller/job_state.h"

#include <chrono>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "api/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::controller {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;
using namespace std::chrono_literals;

const Clock::time_point kNow = *api::ParseTime("2024-05-01T12:00:10Z");

// Builders ---------------------------------------------------------------------------------------

class JobBuilder {
 public:
  JobBuilder() {
    job_.ns = "default";
    job_.name = "j";
    job_.uid = "uid-1";
    job_.creation_timestamp = "2024-05-01T12:00:00Z";
    job_.spec.queue = "default";
    job_.spec.scheduler_name = "volcano";
    job_.spec.max_retry = 3;
  }
  JobBuilder& Task(std::string name, int32_t replicas, std::optional<int32_t> min = {}) {
    TaskSpec t;
    t.name = std::move(name);
    t.replicas = replicas;
    t.min_available = min;
    job_.spec.tasks.push_back(std::move(t));
    job_.spec.min_available = job_.spec.TotalTaskMinAvailable();
    return *this;
  }
  JobBuilder& MinAvailable(int32_t n) {
    job_.spec.min_available = n;
    return *this;
  }
  JobBuilder& MinSuccess(int32_t n) {
    job_.spec.min_success = n;
    return *this;
  }
  JobBuilder& MaxRetry(int32_t n) {
    job_.spec.max_retry = n;
    return *this;
  }
  JobBuilder& Policy(std::string event, std::string action) {
    job_.spec.policies.push_back({{std::move(event)}, std::move(action), std::nullopt});
    return *this;
  }
  JobBuilder& ExitCodePolicy(int32_t code, std::string action) {
    job_.spec.policies.push_back({{}, std::move(action), code});
    return *this;
  }
  JobBuilder& TaskPolicy(std::string event, std::string action) {
    job_.spec.tasks.back().policies.push_back({{std::move(event)}, std::move(action), {}});
    return *this;
  }
  JobBuilder& DependsOn(std::string task) {
    job_.spec.tasks.back().depends_on.push_back(std::move(task));
    return *this;
  }
  JobBuilder& Plugin(std::string name) {
    job_.spec.plugins[std::move(name)] = {};
    return *this;
  }
  JobBuilder& Phase(std::string phase) {
    job_.status.phase = std::move(phase);
    job_.status.min_available = job_.spec.min_available;
    return *this;
  }
  JobBuilder& Version(int32_t v) {
    job_.status.version = v;
    return *this;
  }
  JobBuilder& Retries(int32_t n) {
    job_.status.retry_count = n;
    return *this;
  }
  JobBuilder& Ttl(int32_t seconds) {
    job_.spec.ttl_seconds_after_finished = seconds;
    return *this;
  }
  JobBuilder& Deleting() {
    job_.deleting = true;
    return *this;
  }
  Job Build() const { return job_; }

 private:
  Job job_;
};

PodInfo MakePodInfo(std::string task, int index, std::string phase, int32_t version = 0) {
  PodInfo p;
  p.name = PodName("j", task, index);
  p.task = std::move(task);
  p.phase = std::move(phase);
  p.version = version;
  return p;
}

PodInfo TerminatingPod(std::string task, int index) {
  PodInfo p = MakePodInfo(std::move(task), index, "Running");
  p.terminating = true;
  return p;
}

JobSnapshot Snapshot(Job job, std::vector<PodInfo> pods = {}, std::string pg_phase = "Inqueue") {
  JobSnapshot s;
  s.job = std::move(job);
  s.pods = std::move(pods);
  if (!pg_phase.empty()) {
    s.pod_group.exists = true;
    s.pod_group.phase = pg_phase == "<none>" ? "" : pg_phase;
  }
  s.now = kNow;
  return s;
}

std::vector<std::string> CreatedNames(const Plan& plan) {
  std::vector<std::string> names;
  for (const PodToCreate& p : plan.create_pods) names.push_back(p.name);
  return names;
}

const Action kSync{kSyncJobAction, "", ""};

// --- applyPolicies ------------------------------------------------------------------------------

TEST(ApplyPoliciesTest, OutOfSyncAndStaleRequestsOnlySync) {
  Job job = JobBuilder().Task("t", 2).Policy(kPodFailedEvent, kRestartJobAction).Version(2).Build();
  EXPECT_EQ(ApplyPolicies(job, {kOutOfSyncEvent, "t", "", 0, 2, ""}).name, kSyncJobAction);
  // A pod of the previous version failing is not this version's failure.
  EXPECT_EQ(ApplyPolicies(job, {kPodFailedEvent, "t", "", 1, 1, ""}).name, kSyncJobAction);
  EXPECT_EQ(ApplyPolicies(job, {kPodFailedEvent, "t", "", 1, 2, ""}).name, kRestartJobAction);
  EXPECT_EQ(ApplyPolicies(job, {kPodEvictedEvent, "t", "", 0, 2, ""}).name, kSyncJobAction);
}

TEST(ApplyPoliciesTest, TaskPoliciesComeFirstThenJobPoliciesThenExitCodes) {
  Job job = JobBuilder()
                .Task("master", 1)
                .TaskPolicy(kTaskCompletedEvent, kCompleteJobAction)
                .TaskPolicy(kPodFailedEvent, kRestartTaskAction)
                .Task("worker", 2)
                .Policy(kPodFailedEvent, kRestartJobAction)
                .ExitCodePolicy(42, kAbortJobAction)
                .Build();
  EXPECT_EQ(ApplyPolicies(job, {kPodFailedEvent, "master", "j-master-0", 1, 0, ""}),
            (Action{kRestartTaskAction, "master", "j-master-0"}));
  EXPECT_EQ(ApplyPolicies(job, {kPodFailedEvent, "worker", "j-worker-1", 1, 0, ""}).name,
            kRestartJobAction);
  EXPECT_EQ(ApplyPolicies(job, {kTaskCompletedEvent, "master", "", 0, 0, ""}).name,
            kCompleteJobAction);
  // An event no policy names, from a pod that exited 42.
  EXPECT_EQ(ApplyPolicies(job, {"", "worker", "", 42, 0, ""}).name, kAbortJobAction);
  EXPECT_EQ(ApplyPolicies(job, {kPodEvictedEvent, "worker", "", 0, 0, ""}).name, kSyncJobAction);
}

TEST(ApplyPoliciesTest, AnyEventAndExplicitActions) {
  Job job = JobBuilder().Task("t", 1).Policy(kAnyEvent, kTerminateJobAction).Build();
  EXPECT_EQ(ApplyPolicies(job, {kPodEvictedEvent, "t", "", 0, 0, ""}).name, kTerminateJobAction);
  EXPECT_EQ(ApplyPolicies(job, {kJobUnknownEvent, "", "", 0, 0, ""}).name, kTerminateJobAction);
  EXPECT_EQ(ApplyPolicies(job, {kOutOfSyncEvent, "", "", 0, 0, ""}).name, kSyncJobAction);
  EXPECT_EQ(ApplyPolicies(job, {kCommandIssuedEvent, "", "", 0, 0, kAbortJobAction}).name,
            kAbortJobAction);
}

// --- Pending: initiation and pod creation -------------------------------------------------------

TEST(PendingTest, NewJobIsInitiatedButGetsNoPodsBeforeItsPodGroupIsAdmitted) {
  Job job = JobBuilder().Task("t", 2).Plugin("env").Build();
  for (std::string pg : {"", "Pending", "<none>"}) {
    Plan plan = PlanAction(Snapshot(job, {}, pg), kSync);
    EXPECT_TRUE(plan.sync_job_objects);
    EXPECT_TRUE(plan.initiate);
    EXPECT_THAT(plan.create_pods, IsEmpty()) << pg;
    EXPECT_EQ(plan.status.phase, "Pending");
    EXPECT_EQ(plan.status.min_available, 2);
    EXPECT_EQ(plan.status.last_transition_time, "2024-05-01T12:00:10Z");
    EXPECT_THAT(plan.status.conditions,
                ElementsAre(JobCondition{"Pending", "2024-05-01T12:00:10Z"}));
    EXPECT_THAT(plan.status.controlled_resources, ElementsAre(Pair("plugin-env", "env")));
    EXPECT_EQ(plan.status.running_duration, "10s");
  }
}

TEST(PendingTest, AdmittedPodGroupGetsEveryMissingPodCountedPending) {
  Job job = JobBuilder().Task("ps", 1).Task("worker", 2).Phase("Pending").Build();
  Plan plan = PlanAction(Snapshot(job, {MakePodInfo("worker", 1, "Running")}, "Inqueue"), kSync);
  EXPECT_THAT(CreatedNames(plan), ElementsAre("j-ps-0", "j-worker-0"));
  EXPECT_EQ(plan.create_pods[1].task, 1);
  EXPECT_EQ(plan.create_pods[1].index, 0);
  EXPECT_EQ(plan.status.pending, 2);
  EXPECT_EQ(plan.status.running, 1);
  EXPECT_THAT(plan.status.task_status_count,
              ElementsAre(Pair("ps", ElementsAre(Pair("Pending", 1))),
                          Pair("worker", ElementsAre(Pair("Pending", 1), Pair("Running", 1)))));
  EXPECT_EQ(plan.status.phase, "Pending");
  EXPECT_TRUE(plan.initiate);  // a Pending Job is (re)initiated on every sync, as in Volcano
  EXPECT_THAT(plan.status.conditions, IsEmpty());  // no transition
}

TEST(PendingTest, RunsOnceMinAvailablePodsHaveStarted) {
  Job job = JobBuilder().Task("t", 3).MinAvailable(2).Phase("Pending").Build();
  Plan one =
      PlanAction(Snapshot(job, {MakePodInfo("t", 0, "Running"), MakePodInfo("t", 1, "Pending"),
                                MakePodInfo("t", 2, "Pending")}),
                 kSync);
  EXPECT_EQ(one.status.phase, "Pending");
  Plan two =
      PlanAction(Snapshot(job, {MakePodInfo("t", 0, "Running"), MakePodInfo("t", 1, "Succeeded"),
                                MakePodInfo("t", 2, "Pending")}),
                 kSync);
  EXPECT_EQ(two.status.phase, "Running");
  EXPECT_THAT(two.status.conditions, ElementsAre(JobCondition{"Running", "2024-05-01T12:00:10Z"}));
}

TEST(PendingTest, UnschedulablePodGroupIsReportedOnTheJob) {
  JobSnapshot s = Snapshot(JobBuilder().Task("t", 2).Phase("Pending").Build(), {}, "Pending");
  s.pod_group.unschedulable_messages = {"2/2 tasks in gang unschedulable: pod group is not ready"};
  Plan plan = PlanAction(s, kSync);
  EXPECT_THAT(plan.events,
              ElementsAre(PlannedEvent{"Warning", "PodGroupPending",
                                       "PodGroup default:j unschedulable, reason: 2/2 tasks in "
                                       "gang unschedulable: pod group is not ready"}));
}

TEST(PendingTest, DependentTaskWaitsForItsDependency) {
  Job job = JobBuilder().Task("ps", 1).Task("worker", 2).DependsOn("ps").Phase("Pending").Build();
  Plan first = PlanAction(Snapshot(job), kSync);
  EXPECT_THAT(CreatedNames(first), ElementsAre("j-ps-0"));
  Plan pending = PlanAction(Snapshot(job, {MakePodInfo("ps", 0, "Pending")}), kSync);
  EXPECT_THAT(pending.create_pods, IsEmpty());
  Plan started = PlanAction(Snapshot(job, {MakePodInfo("ps", 0, "Running")}), kSync);
  EXPECT_THAT(CreatedNames(started), ElementsAre("j-worker-0", "j-worker-1"));
}

TEST(PendingTest, PodsBeyondReplicasAreDeletedAndTerminatingPodsCounted) {
  Job job = JobBuilder().Task("t", 1).Phase("Running").Build();
  Plan plan = PlanAction(Snapshot(job, {MakePodInfo("t", 0, "Running"),
                                        MakePodInfo("t", 1, "Running"), TerminatingPod("t", 2)}),
                         kSync);
  EXPECT_THAT(plan.delete_pods, ElementsAre("j-t-1"));
  EXPECT_EQ(plan.status.terminating, 2);
  EXPECT_EQ(plan.status.running, 1);
}

TEST(PendingTest, JobBeingDeletedIsLeftAlone) {
  Plan plan = PlanAction(Snapshot(JobBuilder().Task("t", 1).Deleting().Build()), kSync);
  EXPECT_TRUE(plan.skip);
  EXPECT_THAT(plan.create_pods, IsEmpty());
  Plan kill = PlanAction(Snapshot(JobBuilder().Task("t", 1).Phase("Running").Deleting().Build(),
                                  {MakePodInfo("t", 0, "Running")}),
                         {kRestartJobAction, "", ""});
  EXPECT_TRUE(kill.skip);
  EXPECT_THAT(kill.delete_pods, IsEmpty());
}

// --- Running: completion ------------------------------------------------------------------------

TEST(RunningTest, CompletesWhenEveryPodSucceeded) {
  Job job = JobBuilder().Task("t", 2).Phase("Running").Build();
  Plan plan = PlanAction(
      Snapshot(job, {MakePodInfo("t", 0, "Succeeded"), MakePodInfo("t", 1, "Succeeded")}), kSync);
  EXPECT_EQ(plan.status.phase, "Completed");
  EXPECT_EQ(plan.status.succeeded, 2);
}

TEST(RunningTest, FailsWhenPodsFinishedWithTooFewSuccesses) {
  Job job = JobBuilder().Task("t", 2).Phase("Running").Build();
  Plan plan = PlanAction(
      Snapshot(job, {MakePodInfo("t", 0, "Succeeded"), MakePodInfo("t", 1, "Failed")}), kSync);
  EXPECT_EQ(plan.status.phase, "Failed");
  Plan still = PlanAction(
      Snapshot(job, {MakePodInfo("t", 0, "Succeeded"), MakePodInfo("t", 1, "Running")}), kSync);
  EXPECT_EQ(still.status.phase, "Running");
}

TEST(RunningTest, MinSuccessCompletesEarlyAndIsRequiredAtTheEnd) {
  Job early = JobBuilder().Task("t", 3).MinAvailable(1).MinSuccess(2).Phase("Running").Build();
  EXPECT_EQ(PlanAction(
                Snapshot(early, {MakePodInfo("t", 0, "Succeeded"), MakePodInfo("t", 1, "Succeeded"),
                                 MakePodInfo("t", 2, "Running")}),
                kSync)
                .status.phase,
            "Completed");
  EXPECT_EQ(
      PlanAction(Snapshot(early, {MakePodInfo("t", 0, "Succeeded"), MakePodInfo("t", 1, "Failed"),
                                  MakePodInfo("t", 2, "Failed")}),
                 kSync)
          .status.phase,
      "Failed");
}

TEST(RunningTest, EachTaskMustReachItsOwnMinimum) {
  // minAvailable 3 covers the tasks' minimums (1 + 2): the worker task needs 2 successes.
  Job job =
      JobBuilder().Task("ps", 1, 1).Task("worker", 2, 2).MinAvailable(3).Phase("Running").Build();
  Plan plan = PlanAction(
      Snapshot(job, {MakePodInfo("ps", 0, "Succeeded"), MakePodInfo("worker", 0, "Succeeded"),
                     MakePodInfo("worker", 1, "Failed")}),
      kSync);
  EXPECT_EQ(plan.status.phase, "Failed");
}

// --- Restarts and maxRetry ----------------------------------------------------------------------

TEST(RestartTest, RestartJobKillsEveryPodAndTheJobsObjects) {
  Job job = JobBuilder().Task("t", 2).Plugin("svc").Phase("Running").Version(1).MaxRetry(3).Build();
  job.status.controlled_resources["plugin-svc"] = "svc";
  Plan plan = PlanAction(
      Snapshot(job, {MakePodInfo("t", 0, "Failed", 1), MakePodInfo("t", 1, "Running", 1)}),
      {kRestartJobAction, "t", "j-t-0"});
  EXPECT_THAT(plan.delete_pods, ElementsAre("j-t-0", "j-t-1"));
  EXPECT_TRUE(plan.delete_job_objects);
  EXPECT_FALSE(plan.sync_job_objects);
  EXPECT_EQ(plan.status.phase, "Restarting");
  EXPECT_EQ(plan.status.retry_count, 1);
  EXPECT_EQ(plan.status.version, 2);
  EXPECT_EQ(plan.status.terminating, 2);
  EXPECT_THAT(plan.status.controlled_resources, IsEmpty());
}

TEST(RestartTest, RestartingWaitsForPodsToGoThenIsPendingAgain) {
  Job job = JobBuilder().Task("t", 2).Phase("Restarting").Retries(1).Version(2).Build();
  Plan waiting =
      PlanAction(Snapshot(job, {TerminatingPod("t", 0), TerminatingPod("t", 1)}, ""), kSync);
  EXPECT_EQ(waiting.status.phase, "Restarting");
  EXPECT_THAT(waiting.create_pods, IsEmpty());
  Plan pending = PlanAction(Snapshot(job, {}, "Pending"), kSync);
  EXPECT_EQ(pending.status.phase, "Pending");
  EXPECT_TRUE(pending.sync_job_objects);  // the PodGroup is made again
  EXPECT_THAT(pending.create_pods, IsEmpty());
}

TEST(RestartTest, LateRestartWithLivePodsKillsThemAgain) {
  Job job = JobBuilder().Task("t", 1).Phase("Restarting").Retries(1).Version(2).Build();
  Plan plan =
      PlanAction(Snapshot(job, {MakePodInfo("t", 0, "Pending", 2)}), {kRestartJobAction, "", ""});
  EXPECT_THAT(plan.delete_pods, ElementsAre("j-t-0"));
  EXPECT_EQ(plan.status.retry_count, 1);  // not counted twice
  EXPECT_EQ(plan.status.phase, "Restarting");
}

TEST(RestartTest, MaxRetryReachedFailsTheJobKeepingTheFailedPod) {
  // The third failure with maxRetry 3: the last retry keeps finished pods.
  Job job = JobBuilder().Task("t", 2).Phase("Running").Retries(2).Version(3).MaxRetry(3).Build();
  Plan restart = PlanAction(
      Snapshot(job, {MakePodInfo("t", 0, "Failed", 3), MakePodInfo("t", 1, "Running", 3)}),
      {kRestartJobAction, "t", "j-t-0"});
  EXPECT_THAT(restart.delete_pods, ElementsAre("j-t-1"));
  EXPECT_EQ(restart.status.retry_count, 3);
  EXPECT_EQ(restart.status.phase, "Restarting");

  Job restarting = job;
  restarting.status = restart.status;
  // The kill removed the PodGroup.
  Plan failed = PlanAction(Snapshot(restarting, {MakePodInfo("t", 0, "Failed", 3)}, ""), kSync);
  EXPECT_EQ(failed.status.phase, "Failed");
  EXPECT_THAT(failed.delete_pods, IsEmpty());
  EXPECT_THAT(failed.create_pods, IsEmpty());
  EXPECT_EQ(failed.status.failed, 1);
}

TEST(RestartTest, RestartTaskAndRestartPodKillOnlyTheirTarget) {
  Job job = JobBuilder().Task("ps", 1).Task("worker", 2).Phase("Running").Version(1).Build();
  std::vector<PodInfo> pods = {MakePodInfo("ps", 0, "Running", 1),
                               MakePodInfo("worker", 0, "Failed", 1),
                               MakePodInfo("worker", 1, "Running", 1)};
  Plan task = PlanAction(Snapshot(job, pods), {kRestartTaskAction, "worker", "j-worker-0"});
  EXPECT_THAT(task.delete_pods, ElementsAre("j-worker-0", "j-worker-1"));
  EXPECT_FALSE(task.delete_job_objects);  // the PodGroup stays admitted
  EXPECT_EQ(task.status.phase, "Restarting");
  EXPECT_EQ(task.status.retry_count, 1);

  Plan pod = PlanAction(Snapshot(job, pods), {kRestartPodAction, "worker", "j-worker-0"});
  EXPECT_THAT(pod.delete_pods, ElementsAre("j-worker-0"));
  EXPECT_EQ(pod.status.running, 2);

  // Restarting with the PodGroup still admitted recreates the killed pod at once.
  Job restarting = job;
  restarting.status = pod.status;
  Plan again = PlanAction(Snapshot(restarting, {MakePodInfo("ps", 0, "Running", 1),
                                                MakePodInfo("worker", 1, "Running", 1)}),
                          kSync);
  EXPECT_THAT(CreatedNames(again), ElementsAre("j-worker-0"));
  EXPECT_EQ(again.status.phase, "Pending");
}

// --- Abort, complete, terminate, finished -------------------------------------------------------

TEST(DrainTest, CompleteJobKeepsFinishedPodsAndCompletesWhenDrained) {
  Job job = JobBuilder().Task("master", 1).Task("worker", 2).Phase("Running").Build();
  Plan completing = PlanAction(
      Snapshot(job, {MakePodInfo("master", 0, "Succeeded"), MakePodInfo("worker", 0, "Running"),
                     MakePodInfo("worker", 1, "Pending")}),
      {kCompleteJobAction, "master", ""});
  EXPECT_THAT(completing.delete_pods, ElementsAre("j-worker-0", "j-worker-1"));
  EXPECT_EQ(completing.status.phase, "Completing");
  EXPECT_TRUE(completing.delete_job_objects);

  Job drained = job;
  drained.status = completing.status;
  EXPECT_EQ(PlanAction(Snapshot(drained, {MakePodInfo("master", 0, "Succeeded"),
                                          TerminatingPod("worker", 0)}),
                       kSync)
                .status.phase,
            "Completing");
  Plan done = PlanAction(Snapshot(drained, {MakePodInfo("master", 0, "Succeeded")}), kSync);
  EXPECT_EQ(done.status.phase, "Completed");
  EXPECT_EQ(done.status.succeeded, 1);
}

TEST(DrainTest, AbortThenResumeRestarts) {
  Job job = JobBuilder().Task("t", 1).Phase("Pending").Build();
  Plan aborting =
      PlanAction(Snapshot(job, {MakePodInfo("t", 0, "Pending")}), {kAbortJobAction, "", ""});
  EXPECT_EQ(aborting.status.phase, "Aborting");
  Job aborted = job;
  aborted.status = aborting.status;
  Plan done = PlanAction(Snapshot(aborted), kSync);
  EXPECT_EQ(done.status.phase, "Aborted");
  aborted.status = done.status;
  Plan resumed = PlanAction(Snapshot(aborted), {kResumeJobAction, "", ""});
  EXPECT_EQ(resumed.status.phase, "Restarting");
  EXPECT_EQ(resumed.status.retry_count, 1);
}

TEST(DrainTest, TerminateJobEndsTerminated) {
  Job job = JobBuilder().Task("t", 1).Phase("Running").Build();
  Plan terminating =
      PlanAction(Snapshot(job, {MakePodInfo("t", 0, "Running")}), {kTerminateJobAction, "", ""});
  EXPECT_EQ(terminating.status.phase, "Terminating");
  Job next = job;
  next.status = terminating.status;
  EXPECT_EQ(PlanAction(Snapshot(next), kSync).status.phase, "Terminated");
}

TEST(DrainTest, FinishedJobsKillLeftoverPodsButKeepFinishedOnes) {
  Job job = JobBuilder().Task("t", 3).Phase("Completed").Version(4).Build();
  Plan plan =
      PlanAction(Snapshot(job, {MakePodInfo("t", 0, "Succeeded"), MakePodInfo("t", 1, "Running"),
                                MakePodInfo("t", 2, "Failed")}),
                 {kRestartJobAction, "t", ""});
  EXPECT_THAT(plan.delete_pods, ElementsAre("j-t-1"));
  EXPECT_EQ(plan.status.phase, "Completed");
  EXPECT_EQ(plan.status.version, 5);
  EXPECT_THAT(plan.create_pods, IsEmpty());
}

// --- Commands (vcctl job suspend, resume, ...) ---------------------------------------------------

// A Command's request (command.h JobCommandRequest): its action, whatever the policies say.
Action CommandAction(const Job& job, std::string action) {
  return ApplyPolicies(job, {kCommandIssuedEvent, "", "", 0, 0, std::move(action)});
}

// vcctl job suspend, then resume: the pods go, the PodGroup with them, the Job is Aborted; resumed,
// it restarts (a retry), is Pending with its PodGroup made again, and gets its pods once the
// PodGroup is admitted. Each phase leaves a condition.
TEST(JobCommandTest, SuspendedJobLosesItsPodsAndRunsAgainWhenResumed) {
  Job job = JobBuilder().Task("t", 2).Phase("Running").Version(1).Policy("*", kRestartJobAction)
                .Build();
  Plan aborting = PlanAction(
      Snapshot(job, {MakePodInfo("t", 0, "Running", 1), MakePodInfo("t", 1, "Succeeded", 1)},
               "Running"),
      CommandAction(job, kAbortJobAction));
  EXPECT_THAT(aborting.delete_pods, ElementsAre("j-t-0"));  // a finished pod is kept
  EXPECT_TRUE(aborting.delete_job_objects);                 // the PodGroup goes too
  EXPECT_EQ(aborting.status.phase, "Aborting");
  EXPECT_EQ(aborting.status.version, 2);
  EXPECT_EQ(aborting.status.retry_count, 0);

  job.status = aborting.status;
  Plan aborted = PlanAction(Snapshot(job, {MakePodInfo("t", 1, "Succeeded", 1)}, ""), kSync);
  EXPECT_EQ(aborted.status.phase, "Aborted");
  EXPECT_THAT(aborted.create_pods, IsEmpty());
  EXPECT_FALSE(aborted.sync_job_objects);  // no PodGroup while suspended

  job.status = aborted.status;
  // Policies do not bring an Aborted Job back; only ResumeJob does.
  Plan still = PlanAction(Snapshot(job, {}, ""), CommandAction(job, kRestartJobAction));
  EXPECT_EQ(still.status.phase, "Aborted");
  Plan resumed = PlanAction(Snapshot(job, {MakePodInfo("t", 1, "Succeeded", 1)}, ""),
                            CommandAction(job, kResumeJobAction));
  EXPECT_EQ(resumed.status.phase, "Restarting");
  EXPECT_EQ(resumed.status.retry_count, 1);
  EXPECT_THAT(resumed.delete_pods, IsEmpty());

  job.status = resumed.status;
  Plan pending = PlanAction(Snapshot(job, {MakePodInfo("t", 1, "Succeeded", 1)}, ""), kSync);
  EXPECT_EQ(pending.status.phase, "Pending");
  EXPECT_TRUE(pending.sync_job_objects);

  job.status = pending.status;
  Plan admitted = PlanAction(Snapshot(job, {MakePodInfo("t", 1, "Succeeded", 1)}, "Inqueue"),
                             kSync);
  EXPECT_THAT(CreatedNames(admitted), ElementsAre("j-t-0"));
  std::vector<std::string> phases;
  for (const JobCondition& c : pending.status.conditions) phases.push_back(c.status);
  EXPECT_THAT(phases, ElementsAre("Aborting", "Aborted", "Restarting", "Pending"));
}

// Volcano counts each resume as a retry: past maxRetry the resumed Job fails.
TEST(JobCommandTest, ResumingMoreOftenThanMaxRetryFailsTheJob) {
  Job job = JobBuilder().Task("t", 1).Phase("Aborted").MaxRetry(2).Retries(1).Build();
  Plan resumed = PlanAction(Snapshot(job, {}, ""), CommandAction(job, kResumeJobAction));
  EXPECT_EQ(resumed.status.retry_count, 2);
  job.status = resumed.status;
  EXPECT_EQ(PlanAction(Snapshot(job, {}, ""), kSync).status.phase, "Failed");
}

TEST(JobCommandTest, ResumeOfAJobThatIsNotSuspendedOnlySyncs) {
  Job job = JobBuilder().Task("t", 1).Phase("Running").Build();
  Plan plan = PlanAction(Snapshot(job, {MakePodInfo("t", 0, "Running")}, "Running"),
                         CommandAction(job, kResumeJobAction));
  EXPECT_EQ(plan.status.phase, "Running");
  EXPECT_THAT(plan.delete_pods, IsEmpty());
  EXPECT_FALSE(plan.delete_job_objects);
}

// CompleteJob and TerminateJob from a Pending Job: nothing to drain, final at the next sync; a
// finished Job takes no command (it only keeps its pods cleared).
TEST(JobCommandTest, CompleteAndTerminateEndTheJobAndFinishedJobsIgnoreCommands) {
  for (const auto& [action, draining, final_phase] :
       {std::tuple{kCompleteJobAction, "Completing", "Completed"},
        std::tuple{kTerminateJobAction, "Terminating", "Terminated"}}) {
    Job job = JobBuilder().Task("t", 1).Phase("Pending").Build();
    Plan plan = PlanAction(Snapshot(job, {}, "Pending"), CommandAction(job, action));
    EXPECT_EQ(plan.status.phase, draining);
    job.status = plan.status;
    Plan done = PlanAction(Snapshot(job, {}, ""), kSync);
    EXPECT_EQ(done.status.phase, final_phase);
    job.status = done.status;
    for (const char* again : {kResumeJobAction, kRestartJobAction, kAbortJobAction}) {
      EXPECT_EQ(PlanAction(Snapshot(job, {}, ""), CommandAction(job, again)).status.phase,
                final_phase)
          << again;
    }
  }
}

// --- TTL and names ------------------------------------------------------------------------------

TEST(TtlTest, DeadlineCountsFromTheFinishingTransition) {
  Job job = JobBuilder().Task("t", 1).Phase("Completed").Ttl(30).Build();
  job.status.last_transition_time = "2024-05-01T12:00:05Z";
  std::optional<Clock::time_point> deadline = TtlDeadline(job);
  ASSERT_TRUE(deadline.has_value());
  EXPECT_EQ(api::FormatTime(*deadline), "2024-05-01T12:00:35Z");
  job.status.phase = "Running";
  EXPECT_FALSE(TtlDeadline(job).has_value());
  job.status.phase = "Aborted";  // not finished for the garbage collector
  EXPECT_FALSE(TtlDeadline(job).has_value());
  job.status.phase = "Failed";
  job.spec.ttl_seconds_after_finished.reset();
  EXPECT_FALSE(TtlDeadline(job).has_value());
}

TEST(NamesTest, PodGroupAndPodNames) {
  Job job = JobBuilder().Build();
  EXPECT_EQ(PodGroupName(job), "j-uid-1");
  EXPECT_EQ(PodName("gang-tf-job", "trainer", 1), "gang-tf-job-trainer-1");
}

TEST(DeterminismTest, SameSnapshotSamePlan) {
  Job job = JobBuilder().Task("a", 3).Task("b", 2).Phase("Running").Version(1).Build();
  std::vector<PodInfo> pods = {MakePodInfo("b", 1, "Running", 1), MakePodInfo("a", 2, "Failed", 1),
                               MakePodInfo("a", 0, "Running", 1)};
  Plan one = PlanAction(Snapshot(job, pods), {kRestartJobAction, "a", ""});
  std::reverse(pods.begin(), pods.end());
  Plan two = PlanAction(Snapshot(job, pods), {kRestartJobAction, "a", ""});
  EXPECT_EQ(one.delete_pods, two.delete_pods);
  EXPECT_EQ(one.status, two.status);
}

}  // namespace
}  // namespace muster::controller
