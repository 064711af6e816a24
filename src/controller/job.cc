#include "controller/job.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/status/status.h"
#include "api/json_access.h"
#include "boost/json/array.hpp"
#include "boost/json/value.hpp"
#include "fmt/format.h"

namespace muster::controller {

namespace json = boost::json;

namespace {

using api::ObjectAt;
using api::StringAt;
using api::View;

// Reads typed fields, remembering the first type error with its path.
class Reader {
 public:
  absl::Status status() const { return status_; }

  std::string Str(const json::object& o, std::string_view key, std::string_view path) {
    const json::value* v = o.if_contains(key);
    if (v == nullptr || v->is_null()) return {};
    if (!v->is_string()) {
      Fail(path, "expected a string");
      return {};
    }
    return std::string(View(v->get_string()));
  }

  std::optional<int32_t> Int(const json::object& o, std::string_view key, std::string_view path) {
    const json::value* v = o.if_contains(key);
    if (v == nullptr || v->is_null()) return std::nullopt;
    double d = 0;
    if (v->is_int64()) {
      d = static_cast<double>(v->get_int64());
    } else if (v->is_uint64()) {
      d = static_cast<double>(v->get_uint64());
    } else if (v->is_double()) {
      d = v->get_double();
    } else {
      Fail(path, "expected an integer");
      return std::nullopt;
    }
    if (std::floor(d) != d || d < std::numeric_limits<int32_t>::min() ||
        d > std::numeric_limits<int32_t>::max()) {
      Fail(path, "expected a 32-bit integer");
      return std::nullopt;
    }
    return static_cast<int32_t>(d);
  }

  const json::object* Obj(const json::object& o, std::string_view key, std::string_view path) {
    const json::value* v = o.if_contains(key);
    if (v == nullptr || v->is_null()) return nullptr;
    if (!v->is_object()) {
      Fail(path, "expected an object");
      return nullptr;
    }
    return &v->get_object();
  }

  const json::array* Arr(const json::object& o, std::string_view key, std::string_view path) {
    const json::value* v = o.if_contains(key);
    if (v == nullptr || v->is_null()) return nullptr;
    if (!v->is_array()) {
      Fail(path, "expected an array");
      return nullptr;
    }
    return &v->get_array();
  }

  std::vector<std::string> Strings(const json::object& o, std::string_view key,
                                   std::string_view path) {
    std::vector<std::string> out;
    const json::array* a = Arr(o, key, path);
    if (a == nullptr) return out;
    for (size_t i = 0; i < a->size(); ++i) {
      if (!(*a)[i].is_string()) {
        Fail(fmt::format("{}[{}]", path, i), "expected a string");
        continue;
      }
      out.emplace_back(View((*a)[i].get_string()));
    }
    return out;
  }

  std::map<std::string, std::string> StringMap(const json::object& o, std::string_view key,
                                               std::string_view path) {
    std::map<std::string, std::string> out;
    const json::object* m = Obj(o, key, path);
    if (m == nullptr) return out;
    for (const auto& [k, v] : *m) {
      if (v.is_string()) {
        out.emplace(std::string(k), std::string(View(v.get_string())));
      } else if (!v.is_null()) {
        Fail(fmt::format("{}.{}", path, std::string_view(k)), "expected a string");
      }
    }
    return out;
  }

  void Fail(std::string_view path, std::string_view what) {
    if (status_.ok()) status_ = absl::InvalidArgumentError(fmt::format("{}: {}", path, what));
  }

 private:
  absl::Status status_;
};

std::vector<LifecyclePolicy> ReadPolicies(Reader& r, const json::object& o,
                                          const std::string& path) {
  std::vector<LifecyclePolicy> out;
  const json::array* list = r.Arr(o, "policies", path);
  if (list == nullptr) return out;
  for (size_t i = 0; i < list->size(); ++i) {
    std::string p = fmt::format("{}[{}]", path, i);
    const json::object* po = (*list)[i].if_object();
    if (po == nullptr) {
      r.Fail(p, "expected an object");
      continue;
    }
    LifecyclePolicy policy;
    // getEventlist: events, then event.
    for (std::string& e : r.Strings(*po, "events", p + ".events")) {
      if (std::find(policy.events.begin(), policy.events.end(), e) == policy.events.end()) {
        policy.events.push_back(std::move(e));
      }
    }
    std::string event = r.Str(*po, "event", p + ".event");
    if (!event.empty() &&
        std::find(policy.events.begin(), policy.events.end(), event) == policy.events.end()) {
      policy.events.push_back(std::move(event));
    }
    policy.action = r.Str(*po, "action", p + ".action");
    policy.exit_code = r.Int(*po, "exitCode", p + ".exitCode");
    out.push_back(std::move(policy));
  }
  return out;
}

void ReadSpec(Reader& r, const json::object& spec, JobSpec& out) {
  out.scheduler_name = r.Str(spec, "schedulerName", "spec.schedulerName");
  out.min_available = r.Int(spec, "minAvailable", "spec.minAvailable").value_or(0);
  out.min_success = r.Int(spec, "minSuccess", "spec.minSuccess");
  out.queue = r.Str(spec, "queue", "spec.queue");
  out.max_retry = r.Int(spec, "maxRetry", "spec.maxRetry").value_or(0);
  out.ttl_seconds_after_finished =
      r.Int(spec, "ttlSecondsAfterFinished", "spec.ttlSecondsAfterFinished");
  out.priority_class_name = r.Str(spec, "priorityClassName", "spec.priorityClassName");
  out.policies = ReadPolicies(r, spec, "spec.policies");
  if (const json::object* nt = r.Obj(spec, "networkTopology", "spec.networkTopology")) {
    api::NetworkTopologySpec& t = out.network_topology.emplace();
    t.mode = r.Str(*nt, "mode", "spec.networkTopology.mode");
    t.highest_tier_allowed =
        r.Int(*nt, "highestTierAllowed", "spec.networkTopology.highestTierAllowed");
    t.highest_tier_name = r.Str(*nt, "highestTierName", "spec.networkTopology.highestTierName");
  }
  if (const json::object* plugins = r.Obj(spec, "plugins", "spec.plugins")) {
    for (const auto& [name, args] : *plugins) {
      std::vector<std::string> list;
      if (args.is_array()) {
        for (const json::value& a : args.get_array()) {
          if (a.is_string()) {
            list.emplace_back(View(a.get_string()));
          } else {
            r.Fail(fmt::format("spec.plugins.{}", std::string_view(name)), "expected strings");
          }
        }
      } else if (!args.is_null()) {
        r.Fail(fmt::format("spec.plugins.{}", std::string_view(name)), "expected an array");
      }
      out.plugins.emplace(std::string(name), std::move(list));
    }
  }
  if (const json::array* volumes = r.Arr(spec, "volumes", "spec.volumes")) {
    for (size_t i = 0; i < volumes->size(); ++i) {
      const json::object* vo = (*volumes)[i].if_object();
      if (vo == nullptr) continue;
      std::string p = fmt::format("spec.volumes[{}]", i);
      out.volumes.push_back({r.Str(*vo, "mountPath", p + ".mountPath"),
                             r.Str(*vo, "volumeClaimName", p + ".volumeClaimName")});
    }
  }
  const json::array* tasks = r.Arr(spec, "tasks", "spec.tasks");
  if (tasks == nullptr) return;
  for (size_t i = 0; i < tasks->size(); ++i) {
    std::string p = fmt::format("spec.tasks[{}]", i);
    const json::object* to = (*tasks)[i].if_object();
    if (to == nullptr) {
      r.Fail(p, "expected an object");
      continue;
    }
    TaskSpec task;
    task.name = r.Str(*to, "name", p + ".name");
    task.replicas = r.Int(*to, "replicas", p + ".replicas").value_or(0);
    task.min_available = r.Int(*to, "minAvailable", p + ".minAvailable");
    task.max_retry = r.Int(*to, "maxRetry", p + ".maxRetry").value_or(0);
    task.policies = ReadPolicies(r, *to, p + ".policies");
    task.topology_policy = r.Str(*to, "topologyPolicy", p + ".topologyPolicy");
    if (const json::object* dep = r.Obj(*to, "dependsOn", p + ".dependsOn")) {
      task.depends_on = r.Strings(*dep, "name", p + ".dependsOn.name");
      task.depends_on_iteration = r.Str(*dep, "iteration", p + ".dependsOn.iteration");
    }
    if (const json::object* tmpl = r.Obj(*to, "template", p + ".template")) {
      task.pod_template = *tmpl;
    }
    out.tasks.push_back(std::move(task));
  }
}

void ReadStatus(Reader& r, const json::object& status, JobStatus& out) {
  if (const json::object* state = r.Obj(status, "state", "status.state")) {
    out.phase = r.Str(*state, "phase", "status.state.phase");
    out.reason = r.Str(*state, "reason", "status.state.reason");
    out.message = r.Str(*state, "message", "status.state.message");
    out.last_transition_time =
        r.Str(*state, "lastTransitionTime", "status.state.lastTransitionTime");
  }
  out.min_available = r.Int(status, "minAvailable", "status.minAvailable").value_or(0);
  if (const json::object* counts = r.Obj(status, "taskStatusCount", "status.taskStatusCount")) {
    for (const auto& [task, state] : *counts) {
      std::map<std::string, int32_t>& phases = out.task_status_count[std::string(task)];
      const json::object* so = state.if_object();
      const json::object* po = so == nullptr ? nullptr : ObjectAt(*so, "phase");
      if (po == nullptr) continue;
      for (const auto& [phase, n] : *po) {
        if (std::optional<int32_t> v = r.Int(*po, phase, "status.taskStatusCount")) {
          phases[std::string(phase)] = *v;
        }
      }
    }
  }
  out.pending = r.Int(status, "pending", "status.pending").value_or(0);
  out.running = r.Int(status, "running", "status.running").value_or(0);
  out.succeeded = r.Int(status, "succeeded", "status.succeeded").value_or(0);
  out.failed = r.Int(status, "failed", "status.failed").value_or(0);
  out.terminating = r.Int(status, "terminating", "status.terminating").value_or(0);
  out.unknown = r.Int(status, "unknown", "status.unknown").value_or(0);
  out.version = r.Int(status, "version", "status.version").value_or(0);
  out.retry_count = r.Int(status, "retryCount", "status.retryCount").value_or(0);
  out.running_duration = r.Str(status, "runningDuration", "status.runningDuration");
  out.controlled_resources =
      r.StringMap(status, "controlledResources", "status.controlledResources");
  if (const json::array* conditions = r.Arr(status, "conditions", "status.conditions")) {
    for (const json::value& c : *conditions) {
      const json::object* co = c.if_object();
      if (co == nullptr) continue;
      out.conditions.push_back({StringAt(*co, "status"), StringAt(*co, "lastTransitionTime")});
    }
  }
}

}  // namespace

int32_t JobSpec::TotalReplicas() const {
  int32_t total = 0;
  for (const TaskSpec& t : tasks) total += t.replicas;
  return total;
}

int32_t JobSpec::TotalTaskMinAvailable() const {
  int32_t total = 0;
  for (const TaskSpec& t : tasks) total += t.MinAvailableOrReplicas();
  return total;
}

int JobSpec::FindTask(std::string_view name) const {
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (tasks[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

absl::StatusOr<Job> DecodeJob(const json::object& object) {
  Reader r;
  Job job;
  if (const json::object* meta = r.Obj(object, "metadata", "metadata")) {
    job.ns = r.Str(*meta, "namespace", "metadata.namespace");
    job.name = r.Str(*meta, "name", "metadata.name");
    job.uid = r.Str(*meta, "uid", "metadata.uid");
    job.resource_version = r.Str(*meta, "resourceVersion", "metadata.resourceVersion");
    job.creation_timestamp = r.Str(*meta, "creationTimestamp", "metadata.creationTimestamp");
    job.deleting = !r.Str(*meta, "deletionTimestamp", "metadata.deletionTimestamp").empty();
    job.labels = r.StringMap(*meta, "labels", "metadata.labels");
    job.annotations = r.StringMap(*meta, "annotations", "metadata.annotations");
  }
  if (const json::object* spec = r.Obj(object, "spec", "spec")) ReadSpec(r, *spec, job.spec);
  if (const json::object* status = r.Obj(object, "status", "status")) {
    ReadStatus(r, *status, job.status);
  }
  if (!r.status().ok()) {
    return absl::InvalidArgumentError(
        fmt::format("Job {}/{}: {}", job.ns, job.name, std::string(r.status().message())));
  }
  return job;
}

json::object EncodeJobStatus(const JobStatus& s) {
  json::object out;
  json::object state;
  if (!s.phase.empty()) state["phase"] = s.phase;
  if (!s.reason.empty()) state["reason"] = s.reason;
  if (!s.message.empty()) state["message"] = s.message;
  // metav1.Time marshals a zero time as null.
  state["lastTransitionTime"] =
      s.last_transition_time.empty() ? json::value(nullptr) : json::value(s.last_transition_time);
  out["state"] = std::move(state);
  if (s.min_available != 0) out["minAvailable"] = s.min_available;
  if (!s.task_status_count.empty()) {
    json::object counts;
    for (const auto& [task, phases] : s.task_status_count) {
      json::object phase_counts;
      for (const auto& [phase, n] : phases) phase_counts[phase] = n;
      json::object task_state;
      if (!phase_counts.empty()) task_state["phase"] = std::move(phase_counts);
      counts[task] = std::move(task_state);
    }
    out["taskStatusCount"] = std::move(counts);
  }
  auto put = [&out](std::string_view key, int32_t v) {
    if (v != 0) out[key] = v;
  };
  put("pending", s.pending);
  put("running", s.running);
  put("succeeded", s.succeeded);
  put("failed", s.failed);
  put("terminating", s.terminating);
  put("unknown", s.unknown);
  put("version", s.version);
  put("retryCount", s.retry_count);
  if (!s.running_duration.empty()) out["runningDuration"] = s.running_duration;
  if (!s.controlled_resources.empty()) {
    json::object resources;
    for (const auto& [k, v] : s.controlled_resources) resources[k] = v;
    out["controlledResources"] = std::move(resources);
  }
  if (!s.conditions.empty()) {
    json::array conditions;
    for (const JobCondition& c : s.conditions) {
      json::object co;
      co["status"] = c.status;
      co["lastTransitionTime"] = c.last_transition_time.empty()
                                     ? json::value(nullptr)
                                     : json::value(c.last_transition_time);
      conditions.emplace_back(std::move(co));
    }
    out["conditions"] = std::move(conditions);
  }
  return out;
}

PodInfo DecodePodInfo(const json::object& pod) {
  PodInfo info;
  if (const json::object* meta = ObjectAt(pod, "metadata")) {
    info.name = StringAt(*meta, "name");
    info.uid = StringAt(*meta, "uid");
    const json::value* deletion = meta->if_contains("deletionTimestamp");
    info.terminating = deletion != nullptr && !deletion->is_null();
    if (const json::object* annotations = ObjectAt(*meta, "annotations")) {
      info.task = StringAt(*annotations, kTaskSpecKey);
      std::string version = StringAt(*annotations, kJobVersionKey);
      if (!version.empty()) {
        int64_t v = 0;
        bool ok = version.size() <= 10;
        for (char c : version) ok = ok && c >= '0' && c <= '9';
        if (ok) {
          for (char c : version) v = v * 10 + (c - '0');
          if (v <= std::numeric_limits<int32_t>::max()) info.version = static_cast<int32_t>(v);
        }
      }
    }
  }
  if (const json::object* status = ObjectAt(pod, "status")) {
    info.phase = StringAt(*status, "phase");
    for (std::string_view key : {"initContainerStatuses", "containerStatuses"}) {
      const json::value* list = status->if_contains(key);
      if (list == nullptr || !list->is_array()) continue;
      for (const json::value& cs : list->get_array()) {
        const json::object* co = cs.if_object();
        if (co == nullptr) continue;
        if (const json::value* rc = co->if_contains("restartCount"); rc && rc->is_number()) {
          info.restarts += static_cast<int32_t>(rc->to_number<double>());
        }
      }
    }
    // Volcano reads the first container's terminated state only.
    if (const json::value* list = status->if_contains("containerStatuses");
        list != nullptr && list->is_array() && !list->get_array().empty()) {
      const json::object* first = list->get_array()[0].if_object();
      const json::object* state = first == nullptr ? nullptr : ObjectAt(*first, "state");
      const json::object* terminated = state == nullptr ? nullptr : ObjectAt(*state, "terminated");
      if (terminated != nullptr) {
        if (const json::value* ec = terminated->if_contains("exitCode"); ec && ec->is_number()) {
          info.exit_code = static_cast<int32_t>(ec->to_number<double>());
        }
      }
    }
  }
  if (std::optional<JobOwner> owner = ControllingJob(pod)) info.owner_uid = owner->uid;
  return info;
}

json::object JobOwnerReference(const Job& job) {
  return json::object{{"apiVersion", kJobApiVersion},
                      {"kind", kJobKind},
                      {"name", job.name},
                      {"uid", job.uid},
                      {"controller", true},
                      {"blockOwnerDeletion", true}};
}

std::optional<JobOwner> ControllingJob(const json::object& object) {
  const json::object* meta = ObjectAt(object, "metadata");
  const json::value* refs = meta == nullptr ? nullptr : meta->if_contains("ownerReferences");
  if (refs == nullptr || !refs->is_array()) return std::nullopt;
  for (const json::value& ref : refs->get_array()) {
    const json::object* ro = ref.if_object();
    if (ro == nullptr) continue;
    const json::value* controller = ro->if_contains("controller");
    if (controller == nullptr || !controller->is_bool() || !controller->get_bool()) continue;
    // isControlledBy: the controller reference names batch.volcano.sh/v1alpha1 Job.
    if (StringAt(*ro, "apiVersion") == kJobApiVersion && StringAt(*ro, "kind") == kJobKind) {
      return JobOwner{StringAt(*ro, "name"), StringAt(*ro, "uid")};
    }
    return std::nullopt;
  }
  return std::nullopt;
}

// --- Time ---------------------------------------------------------------------------------------


}  // namespace muster::controller
