#pragma once

// Kubernetes' batch/v1 Job as the batch Job controller reads and writes it (k8s.io/api batch/v1
// types): a typed view of the spec fields it acts on and of the status it owns, decoded from the
// JSON the API serves and encoded back as kube marshals JobStatus (omitempty), and the facts
// about a Job's pods it needs (BatchPod). The pod template stays JSON: pods are made from it field
// for field (batch_job_pods.h).
//
// Times are whole seconds since the Unix epoch (0: unset), as the API writes them (RFC 3339).
//
// Thread-safety: all functions are pure.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "boost/json/object.hpp"

namespace muster::controller {

// Labels, annotations and the finalizer kube's Job controller puts on what it makes
// (batch/v1 types.go).
inline constexpr char kBatchApiVersion[] = "batch/v1";
inline constexpr char kControllerUidLabel[] = "batch.kubernetes.io/controller-uid";
inline constexpr char kBatchJobNameLabel[] = "batch.kubernetes.io/job-name";
inline constexpr char kLegacyControllerUidLabel[] = "controller-uid";
inline constexpr char kLegacyJobNameLabel[] = "job-name";
inline constexpr char kCompletionIndexKey[] = "batch.kubernetes.io/job-completion-index";
inline constexpr char kIndexFailureCountKey[] = "batch.kubernetes.io/job-index-failure-count";
inline constexpr char kJobTrackingFinalizer[] = "batch.kubernetes.io/job-tracking";
inline constexpr char kCompletionIndexEnv[] = "JOB_COMPLETION_INDEX";
// Volcano's annotation asking its podgroup controller for a gang of that many pods.
inline constexpr char kGroupMinMemberAnnotation[] = "scheduling.volcano.sh/group-min-member";

// Condition types and the reasons the controller writes (JobConditionType, JobReason*).
inline constexpr char kJobComplete[] = "Complete";
inline constexpr char kJobFailed[] = "Failed";
inline constexpr char kJobSuspended[] = "Suspended";
inline constexpr char kJobFailureTarget[] = "FailureTarget";
inline constexpr char kJobSuccessCriteriaMet[] = "SuccessCriteriaMet";

struct PodFailureRule {
  std::string action;  // FailJob, FailIndex, Ignore, Count
  bool on_exit_codes = false;
  std::optional<std::string> container;  // onExitCodes.containerName
  bool in = true;                        // operator In (else NotIn)
  std::vector<int32_t> values;
  // onPodConditions: (type, status) patterns.
  std::vector<std::pair<std::string, std::string>> conditions;
};

struct SuccessRule {
  std::optional<std::set<int32_t>> indexes;
  std::optional<int32_t> count;
};

struct BatchJobCondition {
  std::string type;
  std::string status;  // True, False
  std::string reason;
  std::string message;
  int64_t last_probe_time = 0;
  int64_t last_transition_time = 0;

  bool operator==(const BatchJobCondition&) const = default;
};

struct BatchJobStatus {
  int32_t active = 0;
  int32_t succeeded = 0;
  int32_t failed = 0;
  std::optional<int32_t> ready;
  std::optional<int32_t> terminating;
  int64_t start_time = 0;
  int64_t completion_time = 0;
  std::vector<BatchJobCondition> conditions;
  std::string completed_indexes;
  std::optional<std::string> failed_indexes;
  // uncountedTerminatedPods: finished pods counted once their finalizer is off.
  std::vector<std::string> uncounted_succeeded;
  std::vector<std::string> uncounted_failed;

  bool operator==(const BatchJobStatus&) const = default;
  const BatchJobCondition* Find(std::string_view type) const;
  bool IsTrue(std::string_view type) const;
};

struct BatchJob {
  std::string ns;
  std::string name;
  std::string uid;
  std::string resource_version;
  bool deleting = false;
  std::map<std::string, std::string> annotations;

  int32_t parallelism = 1;
  std::optional<int32_t> completions;
  bool indexed = false;
  int32_t backoff_limit = 6;
  std::optional<int32_t> backoff_limit_per_index;
  std::optional<int32_t> max_failed_indexes;
  std::optional<int64_t> active_deadline_seconds;
  std::optional<int32_t> ttl_seconds_after_finished;
  bool suspend = false;
  bool replace_only_failed = false;  // podReplacementPolicy Failed
  bool has_pod_failure_policy = false;
  std::vector<PodFailureRule> pod_failure_rules;
  std::vector<SuccessRule> success_rules;
  boost::json::object selector;  // spec.selector
  boost::json::object pod_template;  // spec.template
  std::string restart_policy;        // the template's

  BatchJobStatus status;

  bool Finished() const { return status.IsTrue(kJobComplete) || status.IsTrue(kJobFailed); }
};

// What the controller knows of one of a Job's pods.
struct BatchPod {
  std::string name;
  std::string uid;
  std::string phase;  // Pending, Running, Succeeded, Failed
  bool terminating = false;  // has a deletionTimestamp
  bool tracked = false;      // carries the job-tracking finalizer
  bool ready = false;
  std::optional<int32_t> index;  // batch.kubernetes.io/job-completion-index
  int32_t index_failures = 0;    // batch.kubernetes.io/job-index-failure-count
  int32_t restarts = 0;          // the containers' restartCount, summed
  int64_t created = 0;
  int64_t finished = 0;  // the latest container finishedAt (0: unknown)
  struct Exit {
    std::string container;
    int32_t code = 0;
  };
  std::vector<Exit> exits;  // terminated containers, then init containers
  std::vector<std::pair<std::string, std::string>> conditions;  // (type, status)

  bool Finished() const { return phase == "Succeeded" || phase == "Failed"; }
};

absl::StatusOr<BatchJob> DecodeBatchJob(const boost::json::object& job);
BatchPod DecodeBatchPod(const boost::json::object& pod);
// The uid of the pod's controller when it is a batch/v1 Job; "" otherwise.
std::string BatchJobOwnerUid(const boost::json::object& pod);
std::string BatchJobOwnerName(const boost::json::object& pod);
// The status as kube marshals it.
boost::json::object EncodeBatchJobStatus(const BatchJobStatus& status);

}  // namespace muster::controller
