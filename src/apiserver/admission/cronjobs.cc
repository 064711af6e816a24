#include "apiserver/admission/kinds.h"

// batch/v1 CronJobs: pkg/apis/batch/v1/defaults.go (SetDefaults_CronJob; the pod template's spec
// defaulted as any), pkg/apis/batch/validation (ValidateCronJobCreate, ValidateCronJobUpdate,
// validateCronJobSpec, validateScheduleFormat, validateTimeZone, ValidateJobTemplateSpec), with
// kube's messages. Schedules are parsed as robfig/cron's ParseStandard parses them
// (api/cron_schedule.h) and time zones loaded from the tz database.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/cron_schedule.h"
#include "api/text.h"
#include "apiserver/admission/context.h"
#include "boost/json.hpp"
#include "fmt/format.h"

namespace muster::apiserver::admission {
namespace {

constexpr char kCronNonNegative[] = "must be greater than or equal to 0";
// The cronjob controller names a Job "<cronjob>-<minutes since the epoch>", 11 more characters,
// and a Job's name must stay a DNS-1035 label (63).
constexpr size_t kCronJobNameMax = 63 - 11;

void CronNonNegative(Context& c, json::object& spec, std::string_view key,
                     std::string_view go_type = "int32") {
  const std::string path = fmt::format("spec.{}", key);
  if (std::optional<int64_t> n = c.reader.Int(spec, key, path, go_type); n && *n < 0) {
    c.errs.InvalidInt(path, *n, kCronNonNegative);
  }
}

// validTimeZoneCharacters: ^[A-Za-z\.\-_0-9+]{1,14}$ per path component.
bool ValidZonePart(std::string_view part) {
  if (part.empty() || part.size() > 14 || part == "." || part == ".." || part.front() == '-') {
    return false;
  }
  for (char ch : part) {
    const bool ok = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
                    (ch >= '0' && ch <= '9') || ch == '.' || ch == '-' || ch == '_' || ch == '+';
    if (!ok) return false;
  }
  return true;
}

// validateTimeZone.
void ValidateCronTimeZone(Context& c, const std::string& zone) {
  constexpr char kPath[] = "spec.timeZone";
  if (zone.empty()) {
    c.errs.InvalidString(kPath, zone, "timeZone must be nil or non-empty string");
    return;
  }
  size_t start = 0;
  for (;;) {
    const size_t slash = zone.find('/', start);
    if (!ValidZonePart(std::string_view(zone).substr(start, slash - start))) {
      c.errs.InvalidString(kPath, zone, fmt::format("unknown time zone {}", zone));
      return;
    }
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  std::string lower = zone;
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (lower == "local") {
    c.errs.InvalidString(kPath, zone,
                         "timeZone must be an explicit time zone as defined in "
                         "https://www.iana.org/time-zones");
  }
  if (absl::StatusOr<absl::TimeZone> loaded = api::LoadCronTimeZone(zone); !loaded.ok()) {
    c.errs.InvalidString(kPath, zone, std::string(loaded.status().message()));
  }
}

// validateScheduleFormat: robfig's parse error, and no TZ= in the schedule (allowed only where
// the stored CronJob already had one).
void ValidateCronSchedule(Context& c, const std::string& schedule, bool allow_tz, bool has_zone) {
  constexpr char kPath[] = "spec.schedule";
  if (absl::StatusOr<api::CronSchedule> parsed = api::CronSchedule::Parse(schedule);
      !parsed.ok()) {
    c.errs.InvalidString(kPath, schedule, std::string(parsed.status().message()));
  }
  const bool tz = schedule.find("TZ") != std::string::npos;
  if (allow_tz && tz && has_zone) {
    c.errs.InvalidString(kPath, schedule,
                         "cannot use both timeZone field and TZ or CRON_TZ in schedule");
  } else if (!allow_tz && tz) {
    c.errs.InvalidString(kPath, schedule,
                         "cannot use TZ or CRON_TZ in schedule, use timeZone field instead");
  }
}

// ValidateJobTemplateSpec: the Job spec, whose selector the controller always generates.
void ValidateCronJobTemplate(Context& c, json::object& spec) {
  json::object* tmpl =
      c.reader.Obj(spec, "jobTemplate", "spec.jobTemplate", "v1.JobTemplateSpec");
  if (tmpl == nullptr) {
    // An absent template is the zero one: a Job spec without a pod template.
    json::object job_spec;
    if (c.problems.empty()) ValidateBatchJobSpec(c, job_spec, "spec.jobTemplate.spec");
    return;
  }
  if (const json::object* meta = FindObject(*tmpl, "metadata")) {
    ValidateLabels(c, *meta, "labels", "spec.jobTemplate.metadata.labels");
  }
  json::object* job_spec = c.reader.Obj(*tmpl, "spec", "spec.jobTemplate.spec", "v1.JobSpec");
  json::object empty;
  if (job_spec == nullptr) job_spec = &empty;
  ValidateBatchJobSpec(c, *job_spec, "spec.jobTemplate.spec");
  if (const json::value* selector = job_spec->if_contains("selector"); !IsAbsent(selector)) {
    // unverified: kube prints the *metav1.LabelSelector's String().
    c.errs.Invalid("spec.jobTemplate.spec.selector", json::serialize(*selector),
                   "`selector` will be auto-generated");
  }
  if (const json::value* manual = job_spec->if_contains("manualSelector");
      manual != nullptr && manual->is_bool() && manual->get_bool()) {
    c.errs.mutable_list().push_back({ErrorType::kNotSupported,
                                     "spec.jobTemplate.spec.manualSelector", "true",
                                     "supported values: \"nil\", \"false\""});
  }
}

}  // namespace

std::optional<ApiError> AdmitCronJob(Context& c) {
  if (!c.main_resource()) return std::nullopt;
  // PrepareForCreate: the status starts empty (before `spec` is taken: a member added to the
  // object may move the others).
  if (c.create()) c.obj["status"] = json::object();
  json::object* spec = c.reader.Obj(c.obj, "spec", "spec", "v1.CronJobSpec");
  if (spec == nullptr) {
    if (!c.problems.empty()) return std::nullopt;
    c.obj["spec"] = json::object();
    spec = &c.obj["spec"].as_object();
  }
  // SetDefaults_CronJob, and SetDefaults_PodSpec inside the template.
  DefaultString(*spec, "concurrencyPolicy", "Allow");
  DefaultValue(*spec, "suspend", false);
  DefaultValue(*spec, "successfulJobsHistoryLimit", 3);
  DefaultValue(*spec, "failedJobsHistoryLimit", 1);
  if (json::value* tmpl = spec->if_contains("jobTemplate"); tmpl != nullptr && tmpl->is_object()) {
    json::value* job_spec = tmpl->get_object().if_contains("spec");
    json::value* pod = job_spec != nullptr && job_spec->is_object()
                           ? job_spec->get_object().if_contains("template")
                           : nullptr;
    if (pod != nullptr && pod->is_object()) {
      if (json::object* pod_spec = EnsureObject(pod->get_object(), "spec")) {
        DefaultPodSpec(*pod_spec, false);
      }
    }
  }
  if (std::optional<ApiError> err = TypeProblemsError(c)) return err;

  const json::object* old_spec = c.create() ? nullptr : FindObject(*c.req.old, "spec");
  const std::optional<std::string> zone = c.reader.Str(*spec, "timeZone", "spec.timeZone");
  const std::string schedule = c.reader.StrOr(*spec, "schedule", "spec.schedule");
  if (schedule.empty()) {
    c.errs.Required("spec.schedule");
  } else {
    const bool allow_tz =
        old_spec != nullptr && StringAt(*old_spec, "schedule").find("TZ") != std::string::npos;
    ValidateCronSchedule(c, schedule, allow_tz, zone.has_value());
  }
  CronNonNegative(c, *spec, "startingDeadlineSeconds", "int64");
  const json::value* old_zone = old_spec == nullptr ? nullptr : old_spec->if_contains("timeZone");
  const bool zone_changed =
      old_spec == nullptr || IsAbsent(old_zone) != !zone.has_value() ||
      (zone && old_zone != nullptr && old_zone->is_string() && old_zone->get_string() != *zone);
  if (zone && zone_changed) ValidateCronTimeZone(c, *zone);
  const std::string policy =
      c.reader.StrOr(*spec, "concurrencyPolicy", "spec.concurrencyPolicy");
  if (policy.empty()) {
    c.errs.Required("spec.concurrencyPolicy");
  } else if (policy != "Allow" && policy != "Forbid" && policy != "Replace") {
    c.errs.NotSupported("spec.concurrencyPolicy", policy, {"Allow", "Forbid", "Replace"});
  }
  ValidateCronJobTemplate(c, *spec);
  CronNonNegative(c, *spec, "successfulJobsHistoryLimit");
  CronNonNegative(c, *spec, "failedJobsHistoryLimit");
  c.reader.Bool(*spec, "suspend", "spec.suspend");
  if (c.create() && c.name.size() > kCronJobNameMax) {
    c.errs.InvalidString("metadata.name", c.name,
                         fmt::format("must be no more than {} characters", kCronJobNameMax));
  }
  return std::nullopt;
}

}  // namespace muster::apiserver::admission
