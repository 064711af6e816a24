#pragma once

// The batch/v1 CronJob controller's decisions, as a pure function of a CronJob, the Jobs it owns
// and the time: kube-controller-manager's pkg/controller/cronjob (cronjob_controllerv2.go
// syncCronJob and cleanupFinishedJobs, utils.go mostRecentScheduleTime, nextScheduleTime,
// getJobFromTemplate2), so that the clock can be faked in tests. The runner is
// cronjob_controller.h.
//
//   - The active list: a Job that finished leaves it (SawCompletedJob), one that is gone too
//     (MissingJob); lastSuccessfulTime follows the latest completionTime of a Job that succeeded.
//   - Scheduling, unless the CronJob is suspended or being deleted: the most recent schedule time
//     due since lastScheduleTime (or creation, or now minus startingDeadlineSeconds, whichever is
//     later), in spec.timeZone (else the controller's zone). Past its starting deadline it is
//     missed (MissSchedule); already started it is skipped; with Forbid and an active Job it waits
//     (JobAlreadyActive); with Replace the active Jobs are deleted first. Otherwise the Job
//     "<cronjob>-<scheduled minutes since the epoch>" is created from the template, owned by the
//     CronJob, annotated batch.kubernetes.io/cronjob-scheduled-timestamp, added to the active
//     list, and lastScheduleTime set (SuccessfulCreate).
//   - History: finished Jobs beyond successfulJobsHistoryLimit and failedJobsHistoryLimit are
//     deleted, oldest start first (SuccessfulDelete).
//   - The CronJob is synced again at the next schedule time.
//
// Thread-safety: pure functions.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "boost/json/object.hpp"

namespace muster::controller {

inline constexpr char kCronJobScheduledTimestampAnnotation[] =
    "batch.kubernetes.io/cronjob-scheduled-timestamp";

struct JobRef {
  std::string name;
  std::string uid;
  std::string resource_version;

  bool operator==(const JobRef&) const = default;
};

struct CronJobInfo {
  std::string ns;
  std::string name;
  std::string uid;
  bool deleting = false;
  int64_t created = 0;  // seconds since the epoch
  std::string schedule;
  std::optional<std::string> time_zone;
  std::string concurrency_policy = "Allow";  // Allow, Forbid, Replace
  std::optional<int64_t> starting_deadline_seconds;
  bool suspend = false;
  std::optional<int32_t> successful_jobs_history_limit;
  std::optional<int32_t> failed_jobs_history_limit;
  boost::json::object job_template;  // spec.jobTemplate

  std::vector<JobRef> active;
  int64_t last_schedule_time = 0;
  int64_t last_successful_time = 0;
};

// One of the CronJob's Jobs (controller reference with its uid).
struct ChildJob {
  std::string name;
  std::string uid;
  std::string resource_version;
  bool complete = false;
  bool failed = false;
  int64_t start_time = 0;
  int64_t completion_time = 0;

  bool Finished() const { return complete || failed; }
};

struct CronJobEvent {
  std::string type;
  std::string reason;
  std::string message;

  bool operator==(const CronJobEvent&) const = default;
};

// Carried out in order: deletes (Replace), the create, history deletes, the status, events.
struct CronJobPlan {
  std::vector<std::string> delete_jobs;  // Replace: the active Jobs, deleted before the create
  std::optional<boost::json::object> create_job;
  int64_t scheduled_time = 0;  // of create_job
  std::vector<std::string> delete_finished_jobs;  // history limits
  // The status to write (the created Job joins `active` once created: its uid comes back).
  std::vector<JobRef> active;
  int64_t last_schedule_time = 0;
  int64_t last_successful_time = 0;
  bool status_changed = false;
  std::vector<CronJobEvent> events;
  std::optional<int64_t> requeue_at;  // seconds since the epoch
};

absl::StatusOr<CronJobInfo> DecodeCronJob(const boost::json::object& cronjob);
ChildJob DecodeChildJob(const boost::json::object& job);
// The uid of the Job's controller when it is a batch/v1 CronJob; "" otherwise.
std::string CronJobOwnerUid(const boost::json::object& job);

// `local` is the zone a CronJob without spec.timeZone is read in (the controller's).
CronJobPlan PlanCronJob(const CronJobInfo& cronjob, const std::vector<ChildJob>& jobs,
                        int64_t now, const absl::TimeZone& local);

// getJobName: "<cronjob>-<scheduled minutes since the epoch>".
std::string CronJobJobName(const std::string& cronjob, int64_t scheduled);

// The Job getJobFromTemplate2 makes for `scheduled` (RFC 3339 in the schedule's zone).
boost::json::object CronJobJob(const CronJobInfo& cronjob, int64_t scheduled,
                               const absl::TimeZone& zone);

// The next time the schedule fires after `now`, as the runner's requeue uses it; nullopt for a
// schedule that does not parse or never fires.
std::optional<int64_t> NextCronTime(const CronJobInfo& cronjob, int64_t now,
                                    const absl::TimeZone& local);

}  // namespace muster::controller
