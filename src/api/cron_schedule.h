#pragma once

// Cron schedules as Kubernetes' CronJobs read them: robfig/cron v3's ParseStandard (five fields,
// minute hour day-of-month month day-of-week, or a descriptor such as @hourly), which both
// kube-apiserver's validation (pkg/apis/batch/validation) and kube-controller-manager's cronjob
// controller use, with its error texts, and SpecSchedule.Next in a time zone of the tz database
// (absl::LoadTimeZone reads /usr/share/zoneinfo, as Go's time.LoadLocation does).
//
// Thread-safety: a CronSchedule is immutable once parsed; every function is thread-safe.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace muster::api {

class CronSchedule {
 public:
  // cron.ParseStandard: "*/5 * * * *", "0 9 * * mon-fri", "@daily", "@every 90s". A leading
  // "TZ=<zone> " or "CRON_TZ=<zone> " sets the zone the schedule is read in (CronJob validation
  // refuses it separately). InvalidArgument with robfig's message: "expected exactly 5 fields,
  // found 1: [x]", "end of range (60) above maximum (59): 60", "unrecognized descriptor: @x",
  // "empty spec string", ...
  static absl::StatusOr<CronSchedule> Parse(std::string_view spec);

  // The first time after `after` (strictly) that the schedule fires, read in `zone` unless the
  // spec named its own; nullopt when there is none within five years (robfig's limit: "0 0 30 2
  // *" never fires).
  std::optional<absl::Time> Next(absl::Time after, const absl::TimeZone& zone) const;

 private:
  CronSchedule() = default;

  // Bit sets as robfig keeps them: bit n set when value n matches; kStar when the field was "*"
  // or "?" (day-of-month and day-of-week then combine with AND, otherwise with OR).
  uint64_t minute_ = 0;
  uint64_t hour_ = 0;
  uint64_t dom_ = 0;
  uint64_t month_ = 0;
  uint64_t dow_ = 0;
  // @every: a constant delay (rounded down to whole seconds, at least one) instead of fields.
  std::optional<absl::Duration> every_;
  std::optional<absl::TimeZone> zone_;
};

// time.LoadLocation for a CronJob's spec.timeZone: the zone, or the error Go prints ("unknown
// time zone Mars/Base"). "UTC" and "" are UTC, as in Go.
absl::StatusOr<absl::TimeZone> LoadCronTimeZone(std::string_view name);

}  // namespace muster::api
