#include "apiserver/admission/kinds.h"

// Volcano Job defaulting: volcano-sh/volcano pkg/webhooks/admission/jobs/mutate/mutate_job.go
// (mutatejob.volcano.sh: queue, schedulerName, maxRetry, minAvailable, task names and
// minAvailable, dnsPolicy with hostNetwork, patchDefaultPlugins), plus the job controller's
// scheduler inheritance into task templates.

#include <cstddef>
#include <cstdint>
#include <string>

#include "apiserver/admission/context.h"
#include "boost/json.hpp"
#include "fmt/format.h"

namespace muster::apiserver::admission {

// The per-task defaults of mutatejob.volcano.sh (name, minAvailable = replicas, dnsPolicy with
// hostNetwork) plus the template scheduler inheritance. Each fills only an absent field, so
// running it again over a defaulted spec changes nothing. Returns the sum of the tasks'
// minAvailable.
//
// Unlike the webhook, this runs on update too: `kubectl apply` sends a custom resource a JSON
// merge patch, which replaces the whole `tasks` list with the manifest's, dropping what creation
// filled in. Without defaulting again, re-applying an unchanged manifest would look like a change
// of `tasks[*].template` and be refused, and the stored template would lose its schedulerName.
int64_t DefaultJobTasks(json::object& spec) {
  json::value* tasks = spec.if_contains("tasks");
  if (tasks == nullptr || !tasks->is_array()) return 0;
  std::string scheduler = StringAt(spec, "schedulerName");
  if (scheduler.empty()) scheduler = "volcano";
  int64_t job_min = 0;
  json::array& list = tasks->get_array();
  for (size_t i = 0; i < list.size(); ++i) {
    json::object* task = list[i].if_object();
    if (task == nullptr) continue;
    DefaultString(*task, "name", fmt::format("default{}", i));
    int64_t replicas = 0;
    if (const json::value* r = task->if_contains("replicas")) replicas = AsInt(*r).value_or(0);
    if (IsAbsent(task->if_contains("minAvailable"))) (*task)["minAvailable"] = replicas;
    job_min += AsInt(task->at("minAvailable")).value_or(0);
    json::object* tmpl = EnsureObject(*task, "template");
    json::object* pod_spec = tmpl == nullptr ? nullptr : EnsureObject(*tmpl, "spec");
    if (pod_spec == nullptr) continue;
    if (const json::value* hn = pod_spec->if_contains("hostNetwork");
        hn != nullptr && hn->is_bool() && hn->get_bool()) {
      DefaultString(*pod_spec, "dnsPolicy", "ClusterFirstWithHostNet");
    }
    // The job controller gives pods the job's scheduler when the template names none.
    DefaultString(*pod_spec, "schedulerName", scheduler);
  }
  return job_min;
}

// Webhook mutatejob.volcano.sh (create only), plus the template scheduler inheritance.
void MutateJob(json::object& spec) {
  DefaultString(spec, "queue", "default");
  DefaultString(spec, "schedulerName", "volcano");
  if (const json::value* retry = spec.if_contains("maxRetry");
      IsAbsent(retry) || AsInt(*retry).value_or(0) == 0) {
    spec["maxRetry"] = 3;
  }
  const int64_t job_min = DefaultJobTasks(spec);
  if (const json::value* m = spec.if_contains("minAvailable");
      IsAbsent(m) || AsInt(*m).value_or(0) == 0) {
    spec["minAvailable"] = job_min;
  }
  // patchDefaultPlugins: tensorflow, mpi and pytorch need svc; mpi needs ssh.
  if (json::value* plugins = spec.if_contains("plugins"); plugins && plugins->is_object()) {
    json::object& p = plugins->get_object();
    if (p.contains("tensorflow") || p.contains("mpi") || p.contains("pytorch")) {
      if (!p.contains("svc")) p["svc"] = json::array();
    }
    if (p.contains("mpi") && !p.contains("ssh")) p["ssh"] = json::array();
  }
}

}  // namespace muster::apiserver::admission
