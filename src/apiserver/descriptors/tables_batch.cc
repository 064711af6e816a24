// The tables of batch/v1 Jobs and CronJobs (table_support.h), after kube's
// pkg/printers/internalversion/printers.go (printJob, printCronJob, layoutContainerCells) as
// kubectl 1.32 shows them.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/json_codec.h"
#include "api/selector.h"
#include "api/time.h"
#include "apiserver/descriptors/table_support.h"
#include "apiserver/descriptors/tables.h"
#include "fmt/format.h"

namespace muster::apiserver::table {
namespace {

using boost::json::array;
using boost::json::object;
using boost::json::value;

// metav1.FormatLabelSelector; "<none>" for an unset selector too.
std::string SelectorCell(const value* selector) {
  if (selector == nullptr || selector->is_null()) return "<none>";
  absl::StatusOr<api::LabelSelector> decoded = api::DecodeLabelSelector(*selector);
  return decoded.ok() ? api::FormatLabelSelector(*decoded) : "<error>";
}

// layoutContainerCells: the containers' names and images, comma-separated.
std::pair<std::string, std::string> ContainerCells(const value* pod_spec) {
  std::string names, images;
  for (const value& c : ArrayAt(Get(pod_spec, "containers"))) {
    if (!names.empty()) names += ",";
    if (!images.empty()) images += ",";
    names += StrAt(Get(&c, "name"));
    images += StrAt(Get(&c, "image"));
  }
  return {names, images};
}

bool JobConditionTrue(const value& job, std::string_view type) {
  for (const value& c : ArrayAt(Path(job, {"status", "conditions"}))) {
    if (StrAt(Get(&c, "type")) == type && StrAt(Get(&c, "status")) == "True") return true;
  }
  return false;
}

// printJob's STATUS, in its order of precedence.
std::string_view JobStatusCell(const value& job) {
  if (JobConditionTrue(job, "Complete")) return "Complete";
  if (JobConditionTrue(job, "Failed")) return "Failed";
  if (Path(job, {"metadata", "deletionTimestamp"}) != nullptr) return "Terminating";
  if (JobConditionTrue(job, "Suspended")) return "Suspended";
  if (JobConditionTrue(job, "FailureTarget")) return "FailureTarget";
  if (JobConditionTrue(job, "SuccessCriteriaMet")) return "SuccessCriteriaMet";
  return "Running";
}

// printJob's COMPLETIONS: "succeeded/completions", or for a Job without completions "n/1" (and
// " of <parallelism>" when more than one pod runs at once).
std::string CompletionsCell(const value& job) {
  const int64_t succeeded = IntAt(Path(job, {"status", "succeeded"}));
  if (const value* completions = Path(job, {"spec", "completions"});
      completions != nullptr && !completions->is_null()) {
    return fmt::format("{}/{}", succeeded, IntAt(completions));
  }
  const int64_t parallelism = IntAt(Path(job, {"spec", "parallelism"}));
  if (parallelism > 1) return fmt::format("{}/1 of {}", succeeded, parallelism);
  return fmt::format("{}/1", succeeded);
}

// printJob's DURATION: from startTime to completionTime, or to now while the Job runs.
std::string DurationCell(const value& job, int64_t now_unix) {
  const value* start = Path(job, {"status", "startTime"});
  if (start == nullptr || !start->is_string()) return "";
  std::optional<int64_t> started = api::ParseUnixTime(start->get_string());
  if (!started) return "";
  const value* completion = Path(job, {"status", "completionTime"});
  std::optional<int64_t> ended;
  if (completion != nullptr && completion->is_string()) {
    ended = api::ParseUnixTime(completion->get_string());
  }
  return HumanDuration(ended.value_or(now_unix) - *started);
}

}  // namespace

array JobColumns() {
  return array{
      NameColumn(),
      ColumnDef("Status", "string", "Status of the job."),
      ColumnDef("Completions", "string",
                "Specifies the desired number of successfully finished pods the job should be run "
                "with.  Setting to null means that the success of any pod signals the success of "
                "all pods, and allows parallelism to have any positive value.  Setting to 1 means "
                "that parallelism is limited to 1 and the success of that pod signals the success "
                "of the job. More info: https://kubernetes.io/docs/concepts/workloads/"
                "controllers/jobs-run-to-completion/"),
      ColumnDef("Duration", "string", "Time required to complete the job."),
      AgeColumn(),
      ColumnDef("Containers", "string", "Names of each container in the template.", 1),
      ColumnDef("Images", "string", "Images referenced by each container in the template.", 1),
      ColumnDef("Selector", "string",
                "A label query over pods that should match the pod count. Normally, the system "
                "sets this field for you. More info: "
                "https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/"
                "#label-selectors",
                1),
  };
}

array JobCells(const value& job, int64_t now_unix) {
  auto [names, images] = ContainerCells(Path(job, {"spec", "template", "spec"}));
  return array{StrAt(Path(job, {"metadata", "name"})),
               JobStatusCell(job),
               CompletionsCell(job),
               DurationCell(job, now_unix),
               Since(job, {"metadata", "creationTimestamp"}, now_unix),
               names,
               images,
               SelectorCell(Path(job, {"spec", "selector"}))};
}

array CronJobColumns() {
  return array{
      NameColumn(),
      ColumnDef("Schedule", "string",
                "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron."),
      ColumnDef("Timezone", "string",
                "The time zone name for the given schedule, see "
                "https://en.wikipedia.org/wiki/List_of_tz_database_time_zones."),
      ColumnDef("Suspend", "boolean",
                "This flag tells the controller to suspend subsequent executions, it does not "
                "apply to already started executions.  Defaults to false."),
      ColumnDef("Active", "integer", "A list of pointers to currently running jobs."),
      ColumnDef("Last Schedule", "string",
                "Information when was the last time the job was successfully scheduled."),
      AgeColumn(),
      ColumnDef("Containers", "string", "Names of each container in the template.", 1),
      ColumnDef("Images", "string", "Images referenced by each container in the template.", 1),
      ColumnDef("Selector", "string",
                "A label query over pods that should match the pod count. Normally, the system "
                "sets this field for you.",
                1),
  };
}

array CronJobCells(const value& cj, int64_t now_unix) {
  const value* spec = Get(&cj, "spec");
  const value* last = Path(cj, {"status", "lastScheduleTime"});
  const value* zone = Get(spec, "timeZone");
  const value* suspend = Get(spec, "suspend");
  auto [names, images] = ContainerCells(Path(cj, {"spec", "jobTemplate", "spec", "template",
                                                  "spec"}));
  return array{
      StrAt(Path(cj, {"metadata", "name"})),
      StrAt(Get(spec, "schedule")),
      zone != nullptr && zone->is_string() ? std::string(zone->get_string()) : "<none>",
      // printBoolPtr.
      suspend != nullptr && suspend->is_bool() ? (suspend->get_bool() ? "True" : "False")
                                               : "<unset>",
      static_cast<int64_t>(ArrayAt(Path(cj, {"status", "active"})).size()),
      last != nullptr && last->is_string() ? AgeCell(last, now_unix) : "<none>",
      Since(cj, {"metadata", "creationTimestamp"}, now_unix),
      names,
      images,
      SelectorCell(Path(cj, {"spec", "jobTemplate", "spec", "selector"}))};
}

}  // namespace muster::apiserver::table
