#include "apiserver/admission/kinds.h"

// Volcano Job validation: volcano-sh/volcano pkg/webhooks/admission/jobs/validate (admit_job.go:
// validateJobCreate, validateJobUpdate, validateTaskTemplate; util.go: validatePolicies,
// validateIO, topoSort; messages verbatim) behind the CRD schema checks of the fields the webhook
// reads. AdmitVolcanoJob runs the schema, mutatejob.volcano.sh
// (jobs_mutate.cc), then validatejob.volcano.sh.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "api/text.h"
#include "apiserver/admission/context.h"
#include "boost/json.hpp"
#include "fmt/format.h"

namespace muster::apiserver::admission {
namespace {

constexpr char kJobWebhook[] = "validatejob.volcano.sh";

// pkg/webhooks/admission/jobs/validate/util.go: policyEventMap and policyActionMap entries open
// to users, in declaration order (Go prints them in map order, which varies).
const std::vector<std::string>& ValidPolicyEvents() {
  static const auto* const events =
      new std::vector<std::string>{"*",       "PodPending",    "PodFailed",  "PodEvicted",
                                   "Unknown", "TaskCompleted", "TaskFailed", "JobUpdated"};
  return *events;
}
const std::vector<std::string>& ValidPolicyActions() {
  static const auto* const actions =
      new std::vector<std::string>{"AbortJob",         "RestartJob",   "RestartTask", "RestartPod",
                                   "RestartPartition", "TerminateJob", "CompleteJob", "ResumeJob"};
  return *actions;
}

// go-multierror's text for a list of errors.
std::string MultiError(const std::vector<std::string>& errors) {
  if (errors.size() == 1) return fmt::format("1 error occurred:\n\t* {}\n\n", errors[0]);
  std::string points;
  for (size_t i = 0; i < errors.size(); ++i) {
    if (i > 0) points += "\n\t";
    points += "* " + errors[i];
  }
  return fmt::format("{} errors occurred:\n\t{}\n\n", errors.size(), points);
}

// validatePolicies; "" when the policies are valid.
std::string ValidatePolicies(const json::value* policies_json, const std::string& path) {
  if (policies_json == nullptr || !policies_json->is_array()) return "";
  std::vector<std::string> errors;
  std::set<std::string> events_seen;
  std::set<int64_t> exit_codes;
  const auto& valid_events = ValidPolicyEvents();
  const auto& valid_actions = ValidPolicyActions();
  for (const json::value& pv : policies_json->get_array()) {
    const json::object* policy = pv.if_object();
    if (policy == nullptr) continue;
    std::string event = StringAt(*policy, "event");
    std::vector<std::string> events;
    if (const json::value* ev = policy->if_contains("events"); ev && ev->is_array()) {
      for (const json::value& e : ev->get_array()) {
        if (e.is_string()) events.emplace_back(View(e.get_string()));
      }
    }
    std::optional<int64_t> exit_code;
    if (const json::value* ec = policy->if_contains("exitCode"); !IsAbsent(ec)) {
      exit_code = AsInt(*ec);
    }
    std::string action = StringAt(*policy, "action");
    if ((!event.empty() || !events.empty()) && exit_code) {
      errors.push_back("must not specify event and exitCode simultaneously");
      break;
    }
    if (event.empty() && events.empty() && !exit_code) {
      errors.push_back("either event and exitCode should be specified");
      break;
    }
    if (!event.empty() || !events.empty()) {
      // getEventList: events, then event, without duplicates.
      std::vector<std::string> list;
      for (const std::string& e : events) {
        if (std::find(list.begin(), list.end(), e) == list.end()) list.push_back(e);
      }
      if (!event.empty() && std::find(list.begin(), list.end(), event) == list.end()) {
        list.push_back(event);
      }
      bool stop = false;
      for (const std::string& e : list) {
        if (std::find(valid_events.begin(), valid_events.end(), e) == valid_events.end()) {
          errors.push_back(
              fmt::format("{}: Invalid value: {}: invalid policy event", path, api::GoQuote(e)));
          stop = true;
          break;
        }
        if (std::find(valid_actions.begin(), valid_actions.end(), action) == valid_actions.end()) {
          errors.push_back(fmt::format("{}: Invalid value: {}: invalid policy action", path,
                                       api::GoQuote(action)));
          stop = true;
          break;
        }
        if (!events_seen.insert(e).second) {
          errors.push_back(fmt::format("duplicate event {}  across different policy", e));
          stop = true;
          break;
        }
      }
      if (stop) break;
    } else {
      if (*exit_code == 0) {
        errors.push_back("0 is not a valid error code");
        break;
      }
      if (!exit_codes.insert(*exit_code).second) {
        errors.push_back(fmt::format("duplicate exitCode {}", *exit_code));
        break;
      }
    }
  }
  if (events_seen.contains("*") && events_seen.size() > 1) {
    errors.push_back("if there's * here, no other policy should be here");
  }
  if (errors.empty()) return "";
  return MultiError(errors);
}

// Job plugins the controller knows (plugins.GetPluginBuilder).
bool IsKnownJobPlugin(std::string_view name) {
  static const std::set<std::string_view> kPlugins = {"env",        "svc",     "ssh", "mpi",
                                                      "tensorflow", "pytorch", "ray", "hcclrank"};
  return kPlugins.contains(name);
}

// The task template checked the way validateTaskTemplate does: defaulted copy, pod template
// validation, each error as "spec.task[<i>].<error>. ".
std::string ValidateTaskTemplate(const AdmissionRequest& req, const json::object& task,
                                 size_t index) {
  json::object tmpl;
  if (const json::object* t = FindObject(task, "template")) tmpl = *t;
  json::object spec;
  if (const json::object* s = FindObject(tmpl, "spec")) spec = *s;
  DefaultPodSpec(spec, /*is_pod=*/false);
  Context sub(req, tmpl);
  if (const json::object* meta = FindObject(tmpl, "metadata")) {
    ValidateLabels(sub, *meta, "labels", "template.labels");
  }
  ValidatePodSpec(sub, spec, "template.spec");
  std::vector<FieldError> errors = sub.errs.list();
  for (const TypeProblem& p : sub.problems) {
    // unverified: the CRD schema would refuse these before the webhook runs.
    errors.push_back(
        {ErrorType::kInvalid, p.path, api::GoQuote(p.quantity ? p.go_got : p.schema_got),
         p.quantity ? kQuantityFormatError : fmt::format("must be of type {}", p.schema_want)});
  }
  if (errors.empty()) return "";
  std::string msg = fmt::format("spec.task[{}].", index);
  for (const FieldError& e : errors) msg += e.Error() + ". ";
  return msg;
}

// Webhook validatejob.volcano.sh on create (validateJobCreate); "" when allowed.
std::string ValidateJobCreate(const Context& c, const json::object& spec) {
  auto int_at = [](const json::object& o, std::string_view key) -> std::optional<int64_t> {
    const json::value* v = o.if_contains(key);
    return IsAbsent(v) ? std::nullopt : AsInt(*v);
  };
  int64_t min_available = int_at(spec, "minAvailable").value_or(0);
  if (min_available < 0) return "job 'minAvailable' must be >= 0.";
  if (int_at(spec, "maxRetry").value_or(0) < 0) return "'maxRetry' cannot be less than zero.";
  if (std::optional<int64_t> ttl = int_at(spec, "ttlSecondsAfterFinished"); ttl && *ttl < 0) {
    return "'ttlSecondsAfterFinished' cannot be less than zero.";
  }
  const json::value* tasks_json = spec.if_contains("tasks");
  if (tasks_json == nullptr || !tasks_json->is_array() || tasks_json->get_array().empty()) {
    return "No task specified in job spec";
  }
  std::string msg;
  std::set<std::string> task_names;
  int64_t total_replicas = 0;
  bool has_dependencies = false;
  const json::array& tasks = tasks_json->get_array();
  for (size_t index = 0; index < tasks.size(); ++index) {
    const json::object* task = tasks[index].if_object();
    if (task == nullptr) continue;
    std::string name = StringAt(*task, "name");
    if (const json::value* d = task->if_contains("dependsOn"); !IsAbsent(d)) {
      has_dependencies = true;
    }
    int64_t replicas = int_at(*task, "replicas").value_or(0);
    if (replicas < 0) msg += fmt::format(" 'replicas' < 0 in task: {};", name);
    if (std::optional<int64_t> task_min = int_at(*task, "minAvailable");
        task_min && *task_min > replicas) {
      msg += fmt::format(" 'minAvailable' is greater than 'replicas' in task: {}, job: {}", name,
                         c.name);
    }
    total_replicas += replicas;
    if (std::vector<std::string> errs = Dns1123LabelErrors(name); !errs.empty()) {
      msg += fmt::format(" {};", GoList(errs));
    }
    if (!task_names.insert(name).second) {
      msg += fmt::format(" duplicated task name {};", name);
      break;
    }
    if (std::string err = ValidatePolicies(task->if_contains("policies"), "spec.tasks.policies");
        !err.empty()) {
      msg += err + fmt::format(" valid events are {}, valid actions are {}",
                               GoList(ValidPolicyEvents()), GoList(ValidPolicyActions()));
    }
    // jobhelpers.MakePodName: <job>-<task>-<index>.
    std::string pod_name = fmt::format("{}-{}-{}", c.name, name, index);
    if (std::vector<std::string> errs = QualifiedNameErrors(pod_name); !errs.empty()) {
      msg += fmt::format("create pod with name {} validate failed {};", pod_name, GoList(errs));
    }
    msg += ValidateTaskTemplate(c.req, *task, index);
  }
  if (std::vector<std::string> errs = QualifiedNameErrors(c.name); !errs.empty()) {
    msg += fmt::format("create job with name {} validate failed {}", c.name, GoList(errs));
  }
  if (total_replicas < min_available) {
    msg += "job 'minAvailable' should not be greater than total replicas in tasks;";
  }
  if (std::string err = ValidatePolicies(spec.if_contains("policies"), "spec.policies");
      !err.empty()) {
    msg += err + fmt::format(" valid events are {}, valid actions are {};",
                             GoList(ValidPolicyEvents()), GoList(ValidPolicyActions()));
  }
  if (const json::value* plugins = spec.if_contains("plugins"); plugins && plugins->is_object()) {
    std::set<std::string> sorted;
    for (const auto& [name, args] : plugins->get_object()) sorted.insert(std::string(name));
    for (const std::string& name : sorted) {
      if (!IsKnownJobPlugin(name)) msg += fmt::format(" unable to find job plugin: {}", name);
    }
  }
  // validateIO
  if (const json::value* volumes = spec.if_contains("volumes"); volumes && volumes->is_array()) {
    std::set<std::string> mounts;
    for (const json::value& vv : volumes->get_array()) {
      const json::object* volume = vv.if_object();
      if (volume == nullptr) continue;
      std::string mount = StringAt(*volume, "mountPath");
      bool has_claim = !IsAbsent(volume->if_contains("volumeClaim"));
      std::string claim_name = StringAt(*volume, "volumeClaimName");
      if (mount.empty()) {
        msg += " mountPath is required;";
        break;
      }
      if (!mounts.insert(mount).second) {
        msg += fmt::format(" duplicated mountPath: {};", mount);
        break;
      }
      if (!has_claim && claim_name.empty()) {
        msg += " either VolumeClaim or VolumeClaimName must be specified;";
        break;
      }
      if (!claim_name.empty() && has_claim) {
        msg +=
            "conflict: If you want to use an existing PVC, just specify VolumeClaimName.If you "
            "want to create a new PVC, you do not need to specify VolumeClaimName";
        break;
      }
    }
  }
  std::string queue = StringAt(spec, "queue");
  if (std::optional<std::string> state = QueueState(c.req.store, queue); !state) {
    msg += fmt::format(" unable to find job queue: {}", QueueNotFound(queue));
  } else {
    if (*state != "Open") {
      msg += fmt::format(
          "can only submit job to queue with state `Open`, queue `{}` status is `{}`", queue,
          *state);
    }
    // validate hierarchical queue (admit_job.go)
    if (queue == "root") {
      msg += " can not submit job to root queue;";
    } else if (int children = ChildQueueCount(c.req.store, queue); children > 0) {
      msg += fmt::format(" can only submit job to leaf queue, queue `{}` has {} child queues;",
                         queue, children);
    }
  }
  if (has_dependencies) {
    // topoSort: Kahn's algorithm over dependsOn.name edges.
    std::map<std::string, int> in_degree;
    std::map<std::string, std::vector<std::string>> out_edges;
    for (const json::value& tv : tasks) {
      const json::object* task = tv.if_object();
      if (task == nullptr) continue;
      std::string name = StringAt(*task, "name");
      in_degree.try_emplace(name, 0);
      const json::object* depends = FindObject(*task, "dependsOn");
      const json::value* names = depends == nullptr ? nullptr : depends->if_contains("name");
      if (names == nullptr || !names->is_array()) continue;
      for (const json::value& d : names->get_array()) {
        if (!d.is_string()) continue;
        out_edges[std::string(View(d.get_string()))].push_back(name);
        ++in_degree[name];
      }
    }
    std::vector<std::string> ready;
    for (const auto& [name, degree] : in_degree) {
      if (degree == 0) ready.push_back(name);
    }
    size_t sorted = 0;
    while (!ready.empty()) {
      std::string next = ready.back();
      ready.pop_back();
      ++sorted;
      for (const std::string& to : out_edges[next]) {
        if (--in_degree[to] == 0) ready.push_back(to);
      }
    }
    if (sorted != tasks.size()) {
      msg += "job has dependencies between tasks, but doesn't form a directed acyclic graph(DAG)";
    }
  }
  return msg;
}

// Webhook validatejob.volcano.sh on update (validateJobUpdate); "" when allowed.
std::string ValidateJobUpdate(const json::object& spec, const json::object& old_spec) {
  auto int_at = [](const json::object& o, std::string_view key) -> std::optional<int64_t> {
    const json::value* v = o.if_contains(key);
    return IsAbsent(v) ? std::nullopt : AsInt(*v);
  };
  static const json::array kNoTasks;
  const json::value* tv = spec.if_contains("tasks");
  const json::array& tasks = tv != nullptr && tv->is_array() ? tv->get_array() : kNoTasks;
  const json::value* otv = old_spec.if_contains("tasks");
  const json::array& old_tasks = otv != nullptr && otv->is_array() ? otv->get_array() : kNoTasks;
  int64_t total_replicas = 0;
  for (const json::value& t : tasks) {
    const json::object* task = t.if_object();
    if (task == nullptr) continue;
    std::string name = StringAt(*task, "name");
    int64_t replicas = int_at(*task, "replicas").value_or(0);
    if (replicas < 0) return fmt::format("'replicas' must be >= 0 in task: {}", name);
    if (std::optional<int64_t> task_min = int_at(*task, "minAvailable");
        task_min && *task_min > replicas) {
      return fmt::format("'minAvailable' must be <= 'replicas' in task: {};", name);
    }
    total_replicas += replicas;
  }
  int64_t min_available = int_at(spec, "minAvailable").value_or(0);
  if (min_available > total_replicas) {
    return "job 'minAvailable' must not be greater than total replicas";
  }
  if (min_available < 0) return "job 'minAvailable' must be >= 0";
  if (tasks.size() != old_tasks.size()) return "job updates may not add or remove tasks";

  json::object munged = spec;
  for (std::string_view key : {"minAvailable", "priorityClassName"}) {
    if (const json::value* v = old_spec.if_contains(key)) {
      munged[key] = *v;
    } else {
      munged.erase(key);
    }
  }
  if (json::value* mt = munged.if_contains("tasks"); mt != nullptr && mt->is_array()) {
    for (size_t i = 0; i < mt->get_array().size(); ++i) {
      json::object* task = mt->get_array()[i].if_object();
      const json::object* old_task = old_tasks[i].if_object();
      if (task == nullptr || old_task == nullptr) continue;
      for (std::string_view key : {"replicas", "minAvailable"}) {
        if (const json::value* v = old_task->if_contains(key)) {
          (*task)[key] = *v;
        } else {
          task->erase(key);
        }
      }
    }
  }
  // The job controller fills in volumeClaimName for claims it creates.
  auto strip_claim_names = [](json::object& s) {
    if (json::value* volumes = s.if_contains("volumes"); volumes && volumes->is_array()) {
      for (json::value& v : volumes->get_array()) {
        if (json::object* volume = v.if_object();
            volume != nullptr && !IsAbsent(volume->if_contains("volumeClaim"))) {
          volume->erase("volumeClaimName");
        }
      }
    }
  };
  json::object old_copy = old_spec;
  strip_claim_names(munged);
  strip_claim_names(old_copy);
  if (!SemanticEqual(munged, old_copy)) {
    return "job updates may not change fields other than `minAvailable`, `tasks[*].replicas "
           "under spec`";
  }
  return "";
}

// CRD schema checks of the Job fields the webhooks read.
void CheckJobSchema(Context& c, json::object& spec) {
  c.reader.Int(spec, "minAvailable", "spec.minAvailable");
  c.reader.Int(spec, "maxRetry", "spec.maxRetry");
  c.reader.Int(spec, "ttlSecondsAfterFinished", "spec.ttlSecondsAfterFinished");
  c.reader.Str(spec, "queue", "spec.queue");
  c.reader.Str(spec, "schedulerName", "spec.schedulerName");
  c.reader.Str(spec, "priorityClassName", "spec.priorityClassName");
  CheckNetworkTopology(c, spec);
  if (std::optional<int64_t> min_success = c.reader.Int(spec, "minSuccess", "spec.minSuccess");
      min_success && *min_success < 1) {
    // unverified: the CRD's `minimum: 1` as apiextensions words it.
    c.errs.InvalidInt("spec.minSuccess", *min_success,
                      "spec.minSuccess in body should be greater than or equal to 1");
  }
  c.reader.Obj(spec, "plugins", "spec.plugins", "map[string][]string");
  c.reader.Arr(spec, "policies", "spec.policies", "[]v1alpha1.LifecyclePolicy");
  c.reader.Arr(spec, "volumes", "spec.volumes", "[]v1alpha1.VolumeSpec");
  json::array* tasks = c.reader.Arr(spec, "tasks", "spec.tasks", "[]v1alpha1.TaskSpec");
  if (tasks == nullptr) return;
  for (size_t i = 0; i < tasks->size(); ++i) {
    std::string path = fmt::format("spec.tasks[{}]", i);
    json::object* task = (*tasks)[i].if_object();
    if (task == nullptr) {
      c.reader.Problem(path, (*tasks)[i], "v1alpha1.TaskSpec", "object");
      continue;
    }
    c.reader.Str(*task, "name", path + ".name");
    c.reader.Int(*task, "replicas", path + ".replicas");
    c.reader.Int(*task, "minAvailable", path + ".minAvailable");
    c.reader.Arr(*task, "policies", path + ".policies", "[]v1alpha1.LifecyclePolicy");
    c.reader.Obj(*task, "template", path + ".template", "v1.PodTemplateSpec");
  }
}

}  // namespace

std::optional<ApiError> AdmitVolcanoJob(Context& c) {
  if (!c.main_resource()) return std::nullopt;  // the webhook does not watch jobs/status
  json::object* spec = c.reader.Obj(c.obj, "spec", "spec", "v1alpha1.JobSpec");
  if (spec == nullptr) {
    if (!c.problems.empty()) return TypeProblemsError(c);
    c.obj["spec"] = json::object();
    spec = &c.obj["spec"].as_object();
  }
  CheckJobSchema(c, *spec);
  if (std::optional<ApiError> err = TypeProblemsError(c)) return err;
  if (c.create()) {
    MutateJob(*spec);
    c.obj.erase("status");              // the status subresource owns it
    spec = &c.obj["spec"].as_object();  // the erase may have moved it
  } else {
    DefaultJobTasks(*spec);
  }
  if (!c.errs.empty()) return std::nullopt;  // schema errors come before the webhook
  std::string msg;
  if (c.create()) {
    msg = ValidateJobCreate(c, *spec);
  } else {
    const json::object* old_spec = FindObject(*c.req.old, "spec");
    static const json::object kEmpty;
    msg = ValidateJobUpdate(*spec, old_spec != nullptr ? *old_spec : kEmpty);
  }
  // strings.TrimSpace
  size_t first = msg.find_first_not_of(" \t\n\r");
  if (first == std::string::npos) return std::nullopt;
  msg = msg.substr(first, msg.find_last_not_of(" \t\n\r") - first + 1);
  return WebhookDenied(kJobWebhook, msg);
}

}  // namespace muster::apiserver::admission
