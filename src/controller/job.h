#pragma once

// The Volcano Job (batch.volcano.sh/v1alpha1) as the job controller reads and writes it: a typed
// view of the fields it acts on, decoded from the JSON the API serves, and the status it writes
// back in the JSON form Volcano's types marshal to (omitempty counters, so a Job with no running
// pods shows an empty RUNNINGS column, as with Volcano). Task templates are kept as JSON: pods are
// made from them field for field, including fields muster's object model does not describe.
//
// Also the few facts about the Job's pods that the controller needs (PodInfo), and the label and
// annotation keys Volcano's controller puts on what it creates.
//
// Thread-safety: all functions are pure.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "api/model.h"
#include "boost/json/object.hpp"

namespace muster::controller {

// Keys on pods (labels and annotations) and on the Job's status (volcano.sh/apis batch/v1alpha1);
// those the scheduler reads too are api/model.h's.
using api::kPreemptableKey;
using api::kTaskSpecKey;
inline constexpr char kJobNameKey[] = "volcano.sh/job-name";
inline constexpr char kJobNamespaceKey[] = "volcano.sh/job-namespace";
inline constexpr char kQueueNameKey[] = "volcano.sh/queue-name";
inline constexpr char kTaskIndexKey[] = "volcano.sh/task-index";
inline constexpr char kJobVersionKey[] = "volcano.sh/job-version";
inline constexpr char kPodTemplateKey[] = "volcano.sh/template-uid";
inline constexpr char kRevocableZoneKey[] = "volcano.sh/revocable-zone";
inline constexpr char kJdbMinAvailableKey[] = "volcano.sh/jdb-min-available";
inline constexpr char kJdbMaxUnavailableKey[] = "volcano.sh/jdb-max-unavailable";
inline constexpr char kNumaPolicyKey[] = "volcano.sh/numa-topology-policy";
inline constexpr char kDefaultTaskSpec[] = "default";

inline constexpr char kJobApiVersion[] = "batch.volcano.sh/v1alpha1";
inline constexpr char kJobKind[] = "Job";

// Job phases (batch/v1alpha1 JobPhase).
inline constexpr char kPending[] = "Pending";
inline constexpr char kRunning[] = "Running";
inline constexpr char kRestarting[] = "Restarting";
inline constexpr char kCompleting[] = "Completing";
inline constexpr char kCompleted[] = "Completed";
inline constexpr char kAborting[] = "Aborting";
inline constexpr char kAborted[] = "Aborted";
inline constexpr char kTerminating[] = "Terminating";
inline constexpr char kTerminated[] = "Terminated";
inline constexpr char kFailed[] = "Failed";

// A LifecyclePolicy: when one of `events` happens (or a pod exits with `exit_code`), do `action`.
struct LifecyclePolicy {
  std::vector<std::string> events;  // `events`, then `event`, without duplicates
  std::string action;
  std::optional<int32_t> exit_code;
};

struct TaskSpec {
  std::string name;
  int32_t replicas = 0;
  std::optional<int32_t> min_available;
  int32_t max_retry = 0;  // 0: Volcano's default of 3 for TaskFailed; -1: no limit
  std::vector<LifecyclePolicy> policies;
  std::string topology_policy;
  std::vector<std::string> depends_on;  // task names
  std::string depends_on_iteration;     // "any" or "all" (default)
  boost::json::object pod_template;     // the PodTemplateSpec as stored ({metadata, spec})

  // minAvailable, or replicas when unset.
  int32_t MinAvailableOrReplicas() const { return min_available.value_or(replicas); }
};

// A job-level volume: a PVC mounted into every container at `mount_path`.
struct JobVolume {
  std::string mount_path;
  std::string volume_claim_name;
};

struct JobSpec {
  std::string scheduler_name;
  int32_t min_available = 0;
  std::optional<int32_t> min_success;
  std::string queue;
  int32_t max_retry = 0;
  std::optional<int32_t> ttl_seconds_after_finished;
  std::string priority_class_name;
  // spec.networkTopology, copied onto the PodGroup when it is created (Volcano's
  // createOrUpdatePodGroup: mode, and highestTierAllowed or else highestTierName).
  std::optional<api::NetworkTopologySpec> network_topology;
  std::vector<LifecyclePolicy> policies;
  // Plugin name -> its arguments, in name order (Volcano ranges over a Go map; sorted is the
  // deterministic choice).
  std::map<std::string, std::vector<std::string>> plugins;
  std::vector<JobVolume> volumes;
  std::vector<TaskSpec> tasks;

  int32_t TotalReplicas() const;
  // Σ task minAvailable (replicas where unset).
  int32_t TotalTaskMinAvailable() const;
  // The task's index in `tasks`, or -1.
  int FindTask(std::string_view name) const;
};

struct JobCondition {
  std::string status;  // the phase entered
  std::string last_transition_time;

  bool operator==(const JobCondition&) const = default;
};

struct JobStatus {
  std::string phase;  // "" before the controller first saw the Job
  std::string reason;
  std::string message;
  std::string last_transition_time;
  int32_t min_available = 0;
  // task name -> pod phase -> pods
  std::map<std::string, std::map<std::string, int32_t>> task_status_count;
  int32_t pending = 0;
  int32_t running = 0;
  int32_t succeeded = 0;
  int32_t failed = 0;
  int32_t terminating = 0;
  int32_t unknown = 0;
  int32_t version = 0;
  int32_t retry_count = 0;
  std::string running_duration;  // Go duration text ("1m30.5s"); "" when unset
  std::map<std::string, std::string> controlled_resources;
  std::vector<JobCondition> conditions;

  bool operator==(const JobStatus&) const = default;
};

struct Job {
  std::string ns;
  std::string name;
  std::string uid;
  std::string resource_version;
  std::string creation_timestamp;
  bool deleting = false;  // metadata.deletionTimestamp is set
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  JobSpec spec;
  JobStatus status;
};

// Decodes a Job as the API serves it. InvalidArgument (naming the field) where a field the
// controller reads has the wrong type; absent fields keep their defaults.
absl::StatusOr<Job> DecodeJob(const boost::json::object& json);

// The status object as Volcano marshals JobStatus: zero counters, empty maps and lists omitted.
boost::json::object EncodeJobStatus(const JobStatus& status);

// What the controller needs to know about one of a Job's pods.
struct PodInfo {
  std::string name;
  std::string uid;
  std::string task;          // annotation volcano.sh/task-spec
  std::string phase;         // Pending, Running, Succeeded, Failed, Unknown ("" counts as Unknown)
  bool terminating = false;  // deletionTimestamp set
  std::optional<int32_t> version;    // annotation volcano.sh/job-version
  int32_t restarts = 0;              // Σ restartCount of init and app containers
  std::optional<int32_t> exit_code;  // the first container's terminated exit code
  // The uid of the Volcano Job that controls the pod ("" when none does). A Job deleted and made
  // again under the same name is another Job: only pods with its own uid are its pods.
  std::string owner_uid;
};

PodInfo DecodePodInfo(const boost::json::object& pod);

// The ownerReference to the Job that everything the controller creates carries
// (metav1.NewControllerRef: controller and blockOwnerDeletion true), so that deleting the Job
// garbage-collects its pods, PodGroup, Service and ConfigMap.
boost::json::object JobOwnerReference(const Job& job);

// The controlling ownerReference when it names a Volcano Job (metav1.IsControlledBy).
struct JobOwner {
  std::string name;
  std::string uid;
};
std::optional<JobOwner> ControllingJob(const boost::json::object& object);

// --- Time -------------------------------------------------------------------------------------

// Timestamps are read and written with api::ParseTime and api::FormatTime (api/time.h).
using Clock = std::chrono::system_clock;

}  // namespace muster::controller
