// The CronJob controller's decisions (cronjob_state.h), after kube-controller-manager's
// pkg/controller/cronjob (cronjob_controllerv2.go, utils.go).

#include "controller/cronjob_state.h"

#include <algorithm>
#include <utility>

#include "api/cron_schedule.h"
#include "api/json_access.h"
#include "api/time.h"
#include "boost/json/array.hpp"
#include "boost/json/value.hpp"
#include "fmt/format.h"

namespace muster::controller {

namespace json = boost::json;

namespace {

using api::ObjectAt;
using api::StringAt;

int64_t CronTimeAt(const json::object* o, std::string_view key) {
  const std::string text = StringAt(o, key);
  return text.empty() ? 0 : api::ParseUnixTime(text).value_or(0);
}

std::optional<int32_t> CronInt32At(const json::object* o, std::string_view key) {
  const json::value* v = o == nullptr ? nullptr : o->if_contains(key);
  if (v == nullptr || v->is_null()) return std::nullopt;
  std::optional<int64_t> n = api::TruncatedInt64(*v);
  if (!n) return std::nullopt;
  return static_cast<int32_t>(*n);
}

bool ConditionTrue(const json::object* status, std::string_view type) {
  const json::array* conds = status == nullptr ? nullptr : api::ArrayAt(*status, "conditions");
  if (conds == nullptr) return false;
  for (const json::value& c : *conds) {
    if (c.is_object() && StringAt(c.get_object(), "type") == type &&
        StringAt(c.get_object(), "status") == "True") {
      return true;
    }
  }
  return false;
}

absl::Time AsTime(int64_t unix) { return absl::FromUnixSeconds(unix); }
int64_t AsUnix(absl::Time t) { return absl::ToUnixSeconds(t); }

struct MostRecent {
  int64_t earliest = 0;
  std::optional<int64_t> most_recent;  // the latest schedule time at or before now
  bool missed = false;                 // schedules were missed since `earliest`
  bool many_missed = false;            // more than 100
  std::string error;
};

// mostRecentScheduleTime.
MostRecent MostRecentScheduleTime(const CronJobInfo& cj, int64_t now,
                                  const api::CronSchedule& schedule, const absl::TimeZone& zone,
                                  bool include_deadline) {
  MostRecent r;
  r.earliest = cj.last_schedule_time != 0 ? cj.last_schedule_time : cj.created;
  if (include_deadline && cj.starting_deadline_seconds) {
    r.earliest = std::max(r.earliest, now - *cj.starting_deadline_seconds);
  }
  std::optional<absl::Time> t1 = schedule.Next(AsTime(r.earliest), zone);
  if (!t1 || AsUnix(*t1) > now) return r;
  std::optional<absl::Time> t2 = schedule.Next(*t1, zone);
  if (!t2 || AsUnix(*t2) > now) {
    r.most_recent = AsUnix(*t1);
    return r;
  }
  const int64_t between = AsUnix(*t2) - AsUnix(*t1);
  if (between < 1) {
    r.error = "time difference between two schedules is less than 1 second";
    return r;
  }
  const int64_t missed = (now - AsUnix(*t1)) / between + 1;
  r.missed = true;
  r.many_missed = missed > 100;
  // Back one interval from the estimate, then walk the schedule to now.
  absl::Time t = AsTime(AsUnix(*t1) + (missed - 2) * between);
  std::optional<absl::Time> next = schedule.Next(t, zone);
  while (next && AsUnix(*next) <= now) {
    r.most_recent = AsUnix(*next);
    next = schedule.Next(*next, zone);
  }
  return r;
}

// Go's time.RFC3339 ("Z" for a zero offset) and time.RFC1123Z.
std::string Rfc3339In(int64_t t, const absl::TimeZone& zone) {
  const absl::Time at = AsTime(t);
  if (zone.At(at).offset == 0) return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", at, zone);
  return absl::FormatTime("%Y-%m-%dT%H:%M:%S%Ez", at, zone);
}

std::string Rfc1123Z(int64_t t) {
  return absl::FormatTime("%a, %d %b %Y %H:%M:%S %z", AsTime(t), absl::UTCTimeZone());
}

absl::StatusOr<absl::TimeZone> ZoneOf(const CronJobInfo& cj, const absl::TimeZone& local) {
  if (!cj.time_zone) return local;
  return api::LoadCronTimeZone(*cj.time_zone);
}

}  // namespace

absl::StatusOr<CronJobInfo> DecodeCronJob(const json::object& object) {
  const json::object* meta = ObjectAt(object, "metadata");
  const json::object* spec = ObjectAt(object, "spec");
  if (meta == nullptr || spec == nullptr) {
    return absl::InvalidArgumentError("a CronJob needs metadata and spec");
  }
  CronJobInfo cj;
  cj.ns = StringAt(*meta, "namespace");
  cj.name = StringAt(*meta, "name");
  cj.uid = StringAt(*meta, "uid");
  cj.deleting = !StringAt(*meta, "deletionTimestamp").empty();
  cj.created = CronTimeAt(meta, "creationTimestamp");
  cj.schedule = StringAt(*spec, "schedule");
  if (const json::value* tz = spec->if_contains("timeZone"); tz != nullptr && tz->is_string()) {
    cj.time_zone = std::string(tz->get_string());
  }
  cj.concurrency_policy = StringAt(*spec, "concurrencyPolicy");
  if (cj.concurrency_policy.empty()) cj.concurrency_policy = "Allow";
  if (const json::value* d = spec->if_contains("startingDeadlineSeconds");
      d != nullptr && d->is_number()) {
    cj.starting_deadline_seconds = api::TruncatedInt64(*d);
  }
  const json::value* suspend = spec->if_contains("suspend");
  cj.suspend = suspend != nullptr && suspend->is_bool() && suspend->get_bool();
  cj.successful_jobs_history_limit = CronInt32At(spec, "successfulJobsHistoryLimit");
  cj.failed_jobs_history_limit = CronInt32At(spec, "failedJobsHistoryLimit");
  if (const json::object* tmpl = ObjectAt(*spec, "jobTemplate")) cj.job_template = *tmpl;
  const json::object* status = ObjectAt(object, "status");
  if (const json::array* active = status == nullptr ? nullptr : api::ArrayAt(*status, "active")) {
    for (const json::value& v : *active) {
      if (!v.is_object()) continue;
      cj.active.push_back({StringAt(v.get_object(), "name"), StringAt(v.get_object(), "uid"),
                           StringAt(v.get_object(), "resourceVersion")});
    }
  }
  cj.last_schedule_time = CronTimeAt(status, "lastScheduleTime");
  cj.last_successful_time = CronTimeAt(status, "lastSuccessfulTime");
  return cj;
}

ChildJob DecodeChildJob(const json::object& job) {
  ChildJob c;
  const json::object* meta = ObjectAt(job, "metadata");
  c.name = StringAt(meta, "name");
  c.uid = StringAt(meta, "uid");
  c.resource_version = StringAt(meta, "resourceVersion");
  const json::object* status = ObjectAt(job, "status");
  c.complete = ConditionTrue(status, "Complete");
  c.failed = ConditionTrue(status, "Failed");
  c.start_time = CronTimeAt(status, "startTime");
  c.completion_time = CronTimeAt(status, "completionTime");
  return c;
}

std::string CronJobOwnerUid(const json::object& job) {
  const json::object* meta = ObjectAt(job, "metadata");
  const json::array* refs = meta == nullptr ? nullptr : api::ArrayAt(*meta, "ownerReferences");
  if (refs == nullptr) return "";
  for (const json::value& r : *refs) {
    if (!r.is_object()) continue;
    const json::object& ref = r.get_object();
    const json::value* controller = ref.if_contains("controller");
    if (controller == nullptr || !controller->is_bool() || !controller->get_bool()) continue;
    if (StringAt(ref, "apiVersion") == "batch/v1" && StringAt(ref, "kind") == "CronJob") {
      return StringAt(ref, "uid");
    }
    return "";
  }
  return "";
}

std::string CronJobJobName(const std::string& cronjob, int64_t scheduled) {
  return fmt::format("{}-{}", cronjob, scheduled / 60);
}

json::object CronJobJob(const CronJobInfo& cj, int64_t scheduled, const absl::TimeZone& zone) {
  json::object meta;
  if (const json::object* m = ObjectAt(cj.job_template, "metadata")) {
    for (const char* key : {"labels", "annotations"}) {
      if (const json::value* v = m->if_contains(key); v != nullptr && v->is_object()) {
        meta[key] = *v;
      }
    }
  }
  meta["name"] = CronJobJobName(cj.name, scheduled);
  meta["namespace"] = cj.ns;
  api::EnsureObject(meta, "annotations")[kCronJobScheduledTimestampAnnotation] =
      Rfc3339In(scheduled, zone);
  meta["ownerReferences"] = json::array{json::object{{"apiVersion", "batch/v1"},
                                                     {"kind", "CronJob"},
                                                     {"name", cj.name},
                                                     {"uid", cj.uid},
                                                     {"controller", true},
                                                     {"blockOwnerDeletion", true}}};
  json::object job{{"apiVersion", "batch/v1"}, {"kind", "Job"}, {"metadata", std::move(meta)}};
  if (const json::object* spec = ObjectAt(cj.job_template, "spec")) {
    job["spec"] = *spec;
  } else {
    job["spec"] = json::object();
  }
  return job;
}

std::optional<int64_t> NextCronTime(const CronJobInfo& cj, int64_t now,
                                    const absl::TimeZone& local) {
  absl::StatusOr<api::CronSchedule> schedule = api::CronSchedule::Parse(cj.schedule);
  absl::StatusOr<absl::TimeZone> zone = ZoneOf(cj, local);
  if (!schedule.ok() || !zone.ok()) return std::nullopt;
  // nextScheduleTimeDuration: from the most recent schedule time, the last one, or now.
  MostRecent r = MostRecentScheduleTime(cj, now, *schedule, *zone, false);
  if (!r.error.empty()) return std::nullopt;
  const int64_t from = r.most_recent ? *r.most_recent : (r.missed ? now : r.earliest);
  std::optional<absl::Time> next = schedule->Next(AsTime(from), *zone);
  if (!next) return std::nullopt;
  return AsUnix(*next);
}

CronJobPlan PlanCronJob(const CronJobInfo& cj, const std::vector<ChildJob>& jobs, int64_t now,
                        const absl::TimeZone& local) {
  CronJobPlan plan;
  plan.active = cj.active;
  plan.last_schedule_time = cj.last_schedule_time;
  plan.last_successful_time = cj.last_successful_time;
  auto in_active = [&](const std::string& uid) {
    return std::any_of(plan.active.begin(), plan.active.end(),
                       [&](const JobRef& r) { return r.uid == uid; });
  };
  auto drop_active = [&](const std::string& uid) {
    std::erase_if(plan.active, [&](const JobRef& r) { return r.uid == uid; });
  };

  std::vector<const ChildJob*> sorted;
  for (const ChildJob& j : jobs) sorted.push_back(&j);
  std::sort(sorted.begin(), sorted.end(),
            [](const ChildJob* a, const ChildJob* b) { return a->name < b->name; });
  for (const ChildJob* j : sorted) {
    const bool found = in_active(j->uid);
    if (!found && !j->Finished()) {
      plan.events.push_back({"Warning", "UnexpectedJob",
                             fmt::format("Saw a job that the controller did not create or "
                                         "forgot: {}",
                                         j->name)});
    } else if (found && j->Finished()) {
      drop_active(j->uid);
      plan.events.push_back({"Normal", "SawCompletedJob",
                             fmt::format("Saw completed job: {}, condition: {}", j->name,
                                         j->complete ? "Complete" : "Failed")});
    }
    if (j->complete && j->completion_time > plan.last_successful_time) {
      plan.last_successful_time = j->completion_time;
    }
  }
  for (const JobRef& ref : cj.active) {
    const bool exists = std::any_of(sorted.begin(), sorted.end(),
                                    [&](const ChildJob* j) { return j->uid == ref.uid; });
    if (exists) continue;
    drop_active(ref.uid);
    plan.events.push_back(
        {"Normal", "MissingJob", fmt::format("Active job went missing: {}", ref.name)});
  }

  auto finish = [&]() -> CronJobPlan& {
    // cleanupFinishedJobs: the oldest finished Jobs beyond the history limits go.
    auto trim = [&](bool successful, std::optional<int32_t> limit) {
      if (!limit) return;
      std::vector<const ChildJob*> finished;
      for (const ChildJob* j : sorted) {
        if (successful ? j->complete : (j->failed && !j->complete)) finished.push_back(j);
      }
      if (static_cast<int32_t>(finished.size()) <= *limit) return;
      // byJobStartTime: a Job that never started sorts last; ties by name.
      std::stable_sort(finished.begin(), finished.end(), [](const ChildJob* a, const ChildJob* b) {
        if ((a->start_time == 0) != (b->start_time == 0)) return b->start_time == 0;
        return a->start_time < b->start_time;
      });
      const size_t extra = finished.size() - static_cast<size_t>(*limit);
      for (size_t i = 0; i < extra; ++i) {
        plan.delete_finished_jobs.push_back(finished[i]->name);
        drop_active(finished[i]->uid);
        plan.events.push_back(
            {"Normal", "SuccessfulDelete", fmt::format("Deleted job {}", finished[i]->name)});
      }
    };
    trim(true, cj.successful_jobs_history_limit);
    trim(false, cj.failed_jobs_history_limit);
    plan.status_changed = plan.active != cj.active ||
                          plan.last_schedule_time != cj.last_schedule_time ||
                          plan.last_successful_time != cj.last_successful_time ||
                          plan.create_job.has_value();
    return plan;
  };

  if (cj.deleting) return finish();
  absl::StatusOr<absl::TimeZone> zone = ZoneOf(cj, local);
  if (!zone.ok()) {
    plan.events.push_back({"Warning", "UnknownTimeZone",
                           fmt::format("invalid timeZone: \"{}\": {}", cj.time_zone.value_or(""),
                                       std::string(zone.status().message()))});
    return finish();
  }
  if (cj.suspend) return finish();
  absl::StatusOr<api::CronSchedule> schedule = api::CronSchedule::Parse(cj.schedule);
  if (!schedule.ok()) {
    plan.events.push_back({"Warning", "UnparseableSchedule",
                           fmt::format("unparseable schedule: \"{}\" : {}", cj.schedule,
                                       std::string(schedule.status().message()))});
    return finish();
  }
  MostRecent recent = MostRecentScheduleTime(cj, now, *schedule, *zone, true);
  if (!recent.error.empty()) {
    plan.events.push_back({"Warning", "InvalidSchedule",
                           fmt::format("invalid schedule: {} : {}", cj.schedule, recent.error)});
    return finish();
  }
  if (recent.many_missed) {
    plan.events.push_back({"Warning", "TooManyMissedTimes",
                           "too many missed start times. Set or decrease "
                           ".spec.startingDeadlineSeconds or check clock skew"});
  }
  plan.requeue_at = NextCronTime(cj, now, local);
  if (!recent.most_recent) return finish();
  const int64_t scheduled = *recent.most_recent;
  if (cj.starting_deadline_seconds && scheduled + *cj.starting_deadline_seconds < now) {
    plan.events.push_back({"Warning", "MissSchedule",
                           fmt::format("Missed scheduled time to start a job: {}",
                                       Rfc1123Z(scheduled))});
    return finish();
  }
  const std::string name = CronJobJobName(cj.name, scheduled);
  const bool started = std::any_of(plan.active.begin(), plan.active.end(),
                                   [&](const JobRef& r) { return r.name == name; });
  if (started || cj.last_schedule_time == scheduled) return finish();
  if (cj.concurrency_policy == "Forbid" && !plan.active.empty()) {
    plan.events.push_back({"Normal", "JobAlreadyActive",
                           "Not starting job because prior execution is running and concurrency "
                           "policy is Forbid"});
    return finish();
  }
  if (cj.concurrency_policy == "Replace") {
    for (const JobRef& ref : plan.active) {
      plan.delete_jobs.push_back(ref.name);
      plan.events.push_back(
          {"Normal", "SuccessfulDelete", fmt::format("Deleted job {}", ref.name)});
    }
    plan.active.clear();
  }
  plan.create_job = CronJobJob(cj, scheduled, *zone);
  plan.scheduled_time = scheduled;
  plan.last_schedule_time = scheduled;
  plan.events.push_back({"Normal", "SuccessfulCreate", fmt::format("Created job {}", name)});
  return finish();
}

}  // namespace muster::controller
