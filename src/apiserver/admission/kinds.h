#pragma once

// The admission step of each kind, which Admit (admission.cc) runs after the metadata checks,
// and what one kind's step borrows from another's (a Volcano Job's task templates are checked as
// pod specs; pods and PriorityClasses look up PriorityClasses; Jobs and PodGroups look up
// Queues). Each returns a refusal, or nullopt with the field errors left in `c.errs` for Admit to
// turn into a 422.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "apiserver/admission/context.h"
#include "apiserver/descriptors/structural_schema.h"
#include "apiserver/api_error.h"
#include "store/store.h"

namespace muster::apiserver::admission {

// --- Every kind ----------------------------------------------------------------------------------

// object_meta.cc: ValidateObjectMeta, plus what rest.BeforeCreate / BeforeUpdate do to system
// fields.
void AdmitMetadata(Context& c);

// object_meta.cc: the map at parent[key] as labels (keys qualified names, values label values).
void ValidateLabels(Context& c, const json::object& parent, std::string_view key,
                    const std::string& path);

// poddisruptionbudgets.cc: metav1validation.ValidateLabelSelector of parent[key] (matchLabels as
// labels, matchExpressions' operators, keys and values), refusals at `path`.
void ValidateLabelSelector(Context& c, json::object& parent, std::string_view key,
                           const std::string& path);

// podgroups.cc: the CRD schema's checks of spec.networkTopology (PodGroup and Volcano Job): mode
// one of hard and soft (defaulted to hard), highestTierAllowed at least 0, highestTierName at
// most 253 characters.
void CheckNetworkTopology(Context& c, json::object& spec);

// namespaces.cc: NamespaceLifecycle: nothing new in a namespace that is being deleted.
std::optional<ApiError> CheckNamespaceLifecycle(const Context& c);

// --- Pods ----------------------------------------------------------------------------------------

// pods_mutate.cc: defaulting, the priority and defaulttolerationseconds plugins, then
// pods_validate.cc's checks.
std::optional<ApiError> AdmitPod(Context& c);

// pods_mutate.cc: SetDefaults_PodSpec and SetDefaults_Container (and, for pods, SetDefaults_Pod).
void DefaultPodSpec(json::object& spec, bool is_pod);

// pods_validate.cc: helper.IsOvercommitAllowed: native resources except huge pages.
bool IsOvercommitAllowed(std::string_view name);

// pods_validate.cc: ValidatePodSpec for the fields muster reads. `path` is "spec" or
// "template.spec".
void ValidatePodSpec(Context& c, json::object& spec, const std::string& path);

// pods_validate.cc: ValidatePodUpdate's immutability rules.
void ValidatePodSpecUpdate(Context& c, json::object& spec, const json::object& old_spec);

// --- Other core kinds ----------------------------------------------------------------------------

// namespaces.cc
std::optional<ApiError> AdmitNamespace(Context& c);

// events.cc
std::optional<ApiError> AdmitEvent(Context& c);

// services.cc
std::optional<ApiError> AdmitService(Context& c);

// config_data.cc
std::optional<ApiError> AdmitConfigMap(Context& c);
std::optional<ApiError> AdmitSecret(Context& c);

// priorityclasses.cc
std::optional<ApiError> AdmitPriorityClass(Context& c);

// nodes.cc: a muster.dev/gpu-topology annotation the scheduler can read.
std::optional<ApiError> AdmitNode(Context& c);

// --- CustomResourceDefinitions and custom resources ----------------------------------------------

// customresourcedefinitions.cc: apiextensions' defaults and validation (names, scope, versions,
// schemas, subresources, printer columns), what muster serves itself, and the status the
// naming and establishing controllers would write (acceptedNames, NamesAccepted, Established,
// storedVersions), set at once.
std::optional<ApiError> AdmitCustomResourceDefinition(Context& c);

// custom_resources.cc: a custom resource through its version's structural schema: unknown fields
// pruned, defaults filled in, then validated; stored in the CRD's storage version.
std::optional<ApiError> AdmitCustomResource(Context& c);

// custom_resources.cc: schema violations as field errors.
void AppendSchemaViolations(Errors& errs, std::vector<SchemaViolation> violations);

// poddisruptionbudgets.cc: the spec (minAvailable and maxUnavailable exclusive, each a
// non-negative integer or a percent up to 100%, the selector) on writes of the object, the status
// counters and conditions on writes of /status.
std::optional<ApiError> AdmitPodDisruptionBudget(Context& c);

struct PriorityClassInfo {
  std::string name;
  int64_t value = 0;
  std::string preemption_policy;
};

// priorityclasses.cc: the PriorityClass named `name`, including the two kube-apiserver creates
// at start-up.
std::optional<PriorityClassInfo> FindPriorityClass(const store::Store* st, const std::string& name);

// priorityclasses.cc: getDefaultPriorityClass: the global default with the lowest value.
std::optional<PriorityClassInfo> DefaultPriorityClass(const store::Store* st);

// --- batch/v1 ------------------------------------------------------------------------------------

// batch_jobs.cc: SetDefaults_Job, the generated selector and template labels (on create),
// ValidateJob and ValidateJobUpdate; the status counters on writes of /status.
std::optional<ApiError> AdmitBatchJob(Context& c);

// batch_jobs.cc: validateJobSpec of the Job spec at `path` ("spec", "spec.jobTemplate.spec"),
// the pod template included; not the selector, which Jobs and CronJobs check differently.
void ValidateBatchJobSpec(Context& c, json::object& spec, const std::string& path);

// cronjobs.cc: SetDefaults_CronJob and validateCronJobSpec (schedule, time zone, template).
std::optional<ApiError> AdmitCronJob(Context& c);

// --- Volcano -------------------------------------------------------------------------------------

// jobs_validate.cc: the CRD schema, mutatejob.volcano.sh (jobs_mutate.cc), validatejob.volcano.sh.
std::optional<ApiError> AdmitVolcanoJob(Context& c);

// jobs_mutate.cc: webhook mutatejob.volcano.sh (create only), plus the template scheduler
// inheritance.
void MutateJob(json::object& spec);

// jobs_mutate.cc: the per-task defaults of mutatejob.volcano.sh, on create and update; the sum
// of the tasks' minAvailable.
int64_t DefaultJobTasks(json::object& spec);

// podgroups.cc
std::optional<ApiError> AdmitPodGroup(Context& c);

// pods_validate.cc: helper.IsIntegerResourceName, resources whose quantities must be whole
// (extended resources such as nvidia.com/gpu, and a few native object counts).
bool IsIntegerResource(std::string_view name);

// queues.cc
std::optional<ApiError> AdmitQueue(Context& c);

// queues.cc: the state of a queue for the webhooks' checks; nullopt when it does not exist.
std::optional<std::string> QueueState(const store::Store* st, const std::string& name);

// queues.cc: validateQueueDeleting's refusal of root, default or a queue with children
// (AdmitQueueDelete).
std::optional<ApiError> RefuseQueueDelete(const store::Store* st, const std::string& name);

// queues.cc: how many queues name it as their spec.parent (jobs go to leaf queues only).
int ChildQueueCount(const store::Store* st, const std::string& name);

// queues.cc: `queues.scheduling.volcano.sh "<name>" not found`
std::string QueueNotFound(const std::string& name);

// commands.cc: the target's kind, the action it takes and, on create, that the target exists.
std::optional<ApiError> AdmitCommand(Context& c);

// hypernodes.cc: topology.volcano.sh HyperNodes: the CRD schema's and the webhook's checks, and
// no member cycle.
std::optional<ApiError> AdmitHyperNode(Context& c);

}  // namespace muster::apiserver::admission
