#include "controller/job_controller.h"

#include <charconv>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "boost/json/array.hpp"
#include "boost/json/value.hpp"
#include "api/json_access.h"
#include "client/informer.h"
#include "common/parallel.h"
#include "controller/command_watch.h"
#include "controller/job_plugins.h"
#include "controller/job_pod_cache.h"
#include "controller/job_pods.h"
#include "controller/job_state.h"
#include "controller/metrics.h"
#include "controller/plugin_objects.h"
#include "controller/work_queue.h"
#include "fmt/format.h"

namespace muster::controller {

namespace json = boost::json;

namespace {

// A Job's pods are created on up to this many threads at once (the worker's own included).
constexpr size_t kCreateWorkers = 8;

using api::MetaString;
using api::ObjectAt;
using api::StringAt;

std::string Annotation(const json::object& o, std::string_view key) {
  const json::object* meta = ObjectAt(o, "metadata");
  const json::object* annotations = meta == nullptr ? nullptr : ObjectAt(*meta, "annotations");
  return annotations == nullptr ? std::string() : StringAt(*annotations, key);
}

std::string StatusString(const json::object& o, std::string_view key) {
  const json::object* status = ObjectAt(o, "status");
  return status == nullptr ? std::string() : StringAt(*status, key);
}

std::string Key(std::string_view ns, std::string_view name) {
  return fmt::format("{}/{}", ns, name);
}

std::pair<std::string, std::string> SplitKey(const std::string& key) {
  const size_t slash = key.find('/');
  return {key.substr(0, slash), key.substr(slash + 1)};
}

// resourceVersions as muster's store and etcd write them: decimal revisions.
std::optional<int64_t> Revision(const json::object& o) {
  const std::string rv = MetaString(o, "resourceVersion");
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(rv.data(), rv.data() + rv.size(), v);
  if (ec != std::errc() || ptr != rv.data() + rv.size() || rv.empty()) return std::nullopt;
  return v;
}

// Whether `candidate` is at least as new as `current` (unknown revisions: assume newer).
bool NotOlder(const json::object& candidate, const json::object& current) {
  std::optional<int64_t> a = Revision(candidate);
  std::optional<int64_t> b = Revision(current);
  return !a || !b || *a >= *b;
}

std::string Message(const absl::Status& status) { return std::string(status.message()); }

// A pod the job controller manages: controlled by a Volcano Job, with the job-name and a
// numeric job-version annotation (Volcano skips any other pod).
struct JobPodRef {
  std::string key;  // the Job's "ns/name"
  PodInfo info;
};

Request Req(std::string event, std::string task = {}, std::string pod = {}, int32_t version = 0,
            int32_t exit_code = 0) {
  Request r;
  r.event = std::move(event);
  r.task = std::move(task);
  r.pod = std::move(pod);
  r.job_version = version;
  r.exit_code = exit_code;
  return r;
}

std::optional<JobPodRef> RefOf(const json::object& pod) {
  const std::string job = Annotation(pod, kJobNameKey);
  if (job.empty()) return std::nullopt;
  JobPodRef ref;
  ref.info = DecodePodInfo(pod);
  if (ref.info.owner_uid.empty() || !ref.info.version) return std::nullopt;
  ref.key = Key(MetaString(pod, "namespace"), job);
  return ref;
}

// The controller NewJobController makes: its watches, queues and workers.
struct JobController final : public Controller {
  JobController(client::Client& c, JobControllerOptions o)
      : client(c),
        options(std::move(o)),
        jobs(c, client::VolcanoJobs()),
        pods(c, client::Pods(), "", client::ListOptions{kJobNameKey, ""}),
        pod_groups(c, client::PodGroups()),
        priority_classes(c, client::PriorityClasses()),
        metrics(options.metrics ? std::make_unique<ControllerMetrics>(*options.metrics) : nullptr),
        queues({options.workers, options.backoff_base, options.backoff_max},
               [this](const WorkItem& item, int retries) { return Handle(item, retries); }),
        commands(c, {TargetsJob, [this](const Command& cmd) { OnCommand(cmd); },
                     options.backoff_base, options.backoff_max}) {
    if (metrics) queues.SetDepthObserver([m = metrics.get()](int d) { m->QueueDepth(d); });
  }

  ~JobController() override { Stop(); }
  absl::Status Start(std::chrono::milliseconds sync_timeout) override;
  void Stop() override;
  bool WaitIdle(std::chrono::milliseconds timeout) override;

  client::Client& client;
  JobControllerOptions options;
  // Creates a Job's pods side by side (shared by the workers; outlives them).
  common::WorkerPool creators{kCreateWorkers - 1};
  client::Informer jobs;
  client::Informer pods;
  client::Informer pod_groups;
  client::Informer priority_classes;
  std::unique_ptr<ControllerMetrics> metrics;  // null without options.metrics
  WorkQueues queues;
  CommandWatch commands;  // vcctl job suspend, resume, ... (command_watch.h)
  bool started = false;

  JobPodCache pod_cache;  // its own lock
  std::mutex mu;          // guards everything below
  // The Job as this controller last wrote it, until the watch delivers that version.
  std::map<std::string, json::object> job_writes;
  // PodGroups by "ns/name", and the UIDs of those this controller deleted (a late watch event
  // about one must not bring it back).
  std::map<std::string, json::object> groups;
  std::set<std::string> deleted_group_uids;
  // Events recorded once per Job UID (PodGroupPending per message, plugin problems).
  std::map<std::string, std::set<std::string>> recorded_once;

  // --- Watch handlers -------------------------------------------------------------------------

  void Enqueue(const std::string& key, Request request) {
    if (request.event == kOutOfSyncEvent) {
      // A sync ignores where it came from: identical requests collapse into one.
      request.task.clear();
      request.pod.clear();
      request.exit_code = 0;
    }
    WorkItem item;
    item.key = key;
    item.request = std::move(request);
    queues.Add(std::move(item));
  }

  void ScheduleTtl(const json::object& object) {
    absl::StatusOr<Job> job = DecodeJob(object);
    if (!job.ok()) return;
    std::optional<Clock::time_point> deadline = TtlDeadline(*job);
    if (!deadline) return;
    WorkItem item;
    item.key = Key(job->ns, job->name);
    item.kind = WorkItem::Kind::kTtl;
    queues.AddAfter(std::move(item), *deadline - options.now());
  }

  void CountPhase(const json::object& job) {
    if (!metrics) return;
    const json::object* status = ObjectAt(job, "status");
    const json::object* state = status == nullptr ? nullptr : ObjectAt(*status, "state");
    metrics->SetJobPhase(Key(MetaString(job, "namespace"), MetaString(job, "name")),
                         state == nullptr ? std::string() : StringAt(*state, "phase"));
  }

  void RememberUid(const json::object& job) {
    pod_cache.SetJobUid(Key(MetaString(job, "namespace"), MetaString(job, "name")),
                        MetaString(job, "uid"));
  }

  // Whether `ref` is a pod of the Job that now has its name (not one a deleted Job left).
  bool OfCurrentJob(const JobPodRef& ref) { return pod_cache.OfCurrentJob(ref.key, ref.info); }

  void OnJobAdd(const json::object& job) {
    RememberUid(job);
    CountPhase(job);
    Enqueue(Key(MetaString(job, "namespace"), MetaString(job, "name")), Req(kOutOfSyncEvent));
    ScheduleTtl(job);
  }

  void OnJobUpdate(const json::object& old_job, const json::object& job) {
    RememberUid(job);
    CountPhase(job);
    const std::string key = Key(MetaString(job, "namespace"), MetaString(job, "name"));
    {
      std::lock_guard lock(mu);
      auto it = job_writes.find(key);
      if (it != job_writes.end() && NotOlder(job, it->second)) job_writes.erase(it);
    }
    if (MetaString(job, "resourceVersion") == MetaString(old_job, "resourceVersion")) return;
    const json::value* spec = job.if_contains("spec");
    const json::value* old_spec = old_job.if_contains("spec");
    const bool same_spec = (spec == nullptr && old_spec == nullptr) ||
                           (spec != nullptr && old_spec != nullptr && *spec == *old_spec);
    const json::object* state = ObjectAt(job, "status");
    const json::object* old_state = ObjectAt(old_job, "status");
    auto phase = [](const json::object* status) {
      const json::object* s = status == nullptr ? nullptr : ObjectAt(*status, "state");
      return s == nullptr ? std::string() : StringAt(*s, "phase");
    };
    const bool same_phase = phase(state) == phase(old_state);
    if (same_spec && same_phase) return;
    Enqueue(key, Req(kOutOfSyncEvent));
    if (!same_phase) ScheduleTtl(job);
  }

  void OnJobDelete(const json::object& job) {
    const std::string key = Key(MetaString(job, "namespace"), MetaString(job, "name"));
    if (metrics) metrics->ForgetJob(key);
    std::lock_guard lock(mu);
    job_writes.erase(key);
    recorded_once.erase(MetaString(job, "uid"));
    pod_cache.ForgetJob(key, MetaString(job, "uid"));
  }

  // A Job's Command, deleted already (processNextCommand): recorded on the Job, then its action.
  void OnCommand(const Command& command) {
    const std::string key = Key(command.ns, command.target->name);
    // Commands come through a watch of their own: a Command issued right after its Job was
    // created can come before the Job's add reaches this controller's cache. Admission lets a
    // Command in only for a Job that exists, so give the cache a moment (Handle retries too).
    std::optional<json::object> object = CurrentJob(key);
    for (int i = 0; !object && i < 100; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      object = CurrentJob(key);
    }
    absl::StatusOr<Job> job = object ? DecodeJob(*object) : absl::NotFoundError(key);
    if (job.ok()) {
      RecordJobEvent(*job, "Normal", kCommandIssuedEvent, CommandIssuedMessage(command.action));
    }
    Enqueue(key, JobCommandRequest(command));
  }

  void UpsertPod(const JobPodRef& ref, const json::object& pod) {
    pod_cache.Upsert(ref.key, ref.info, Revision(pod));
  }

  // Whether every replica of the task has succeeded (jobCache.TaskCompleted).
  bool TaskCompleted(const std::string& key, const std::string& task) {
    std::optional<json::object> job = CurrentJob(key);
    if (!job) return false;
    absl::StatusOr<Job> decoded = DecodeJob(*job);
    if (!decoded.ok()) return false;
    const int t = decoded->spec.FindTask(task);
    if (t < 0) return false;
    const int32_t replicas = decoded->spec.tasks[static_cast<size_t>(t)].replicas;
    if (replicas <= 0) return false;
    int32_t succeeded = 0;
    pod_cache.ForEachPodOf(key, decoded->uid, [&](const PodInfo& pod) {
      if (pod.task == task && pod.phase == "Succeeded") ++succeeded;
    });
    return succeeded >= replicas;
  }

  // Whether the task's live pods restarted more often than its maxRetry (jobCache.TaskFailed).
  bool TaskFailed(const std::string& key, const std::string& task) {
    std::optional<json::object> job = CurrentJob(key);
    if (!job) return false;
    absl::StatusOr<Job> decoded = DecodeJob(*job);
    if (!decoded.ok()) return false;
    const int t = decoded->spec.FindTask(task);
    if (t < 0) return false;
    const TaskSpec& spec = decoded->spec.tasks[static_cast<size_t>(t)];
    if (spec.replicas == 0 || spec.max_retry == -1) return false;
    const int32_t max_retry = spec.max_retry == 0 ? 3 : spec.max_retry;
    int32_t restarts = 0;
    pod_cache.ForEachPodOf(key, decoded->uid, [&](const PodInfo& pod) {
      if (pod.task == task && (pod.phase == "Running" || pod.phase == "Pending")) {
        restarts += pod.restarts;
      }
    });
    return restarts > max_retry;
  }

  void OnPodAdd(const json::object& pod) {
    std::optional<JobPodRef> ref = RefOf(pod);
    if (!ref) return;
    UpsertPod(*ref, pod);
    // A pod a deleted Job of the same name left is no event of this Job's; its going may free
    // a name this Job waits to create a pod under.
    if (!OfCurrentJob(*ref)) {
      Enqueue(ref->key, Req(kOutOfSyncEvent));
      return;
    }
    if (ref->info.terminating) {
      Enqueue(ref->key, Req(kPodEvictedEvent, ref->info.task, ref->info.name, *ref->info.version));
      return;
    }
    Enqueue(ref->key, Req(kOutOfSyncEvent, "", "", *ref->info.version));
  }

  void OnPodUpdate(const json::object& old_pod, const json::object& pod) {
    std::optional<JobPodRef> ref = RefOf(pod);
    if (!ref) return;
    if (MetaString(pod, "resourceVersion") == MetaString(old_pod, "resourceVersion")) return;
    UpsertPod(*ref, pod);
    if (!OfCurrentJob(*ref)) {
      Enqueue(ref->key, Req(kOutOfSyncEvent));
      return;
    }
    const PodInfo& info = ref->info;
    const int32_t version = *info.version;
    if (info.terminating) {
      Enqueue(ref->key, Req(kPodEvictedEvent, info.task, info.name, version));
      return;
    }
    const std::string old_phase = StatusString(old_pod, "phase");
    Request request = Req(kOutOfSyncEvent, info.task, info.name, version);
    if (info.phase == "Failed" && old_phase != "Failed") {
      request.event = kPodFailedEvent;
      request.exit_code = info.exit_code.value_or(0);
    } else if (info.phase == "Succeeded" && old_phase != "Succeeded" &&
               TaskCompleted(ref->key, info.task)) {
      request.event = kTaskCompletedEvent;
    } else if ((info.phase == "Pending" || info.phase == "Running") &&
               TaskFailed(ref->key, info.task)) {
      request.event = kTaskFailedEvent;
    }
    Enqueue(ref->key, std::move(request));
  }

  void OnPodDelete(const json::object& pod) {
    std::optional<JobPodRef> ref = RefOf(pod);
    if (!ref) return;
    pod_cache.Erase(ref->key, ref->info);
    if (!OfCurrentJob(*ref)) {
      Enqueue(ref->key, Req(kOutOfSyncEvent));
      return;
    }
    Enqueue(ref->key, Req(kPodEvictedEvent, ref->info.task, ref->info.name, *ref->info.version));
  }

  static std::string OwningJob(const json::object& group) {
    const json::object* meta = ObjectAt(group, "metadata");
    const json::value* refs = meta == nullptr ? nullptr : meta->if_contains("ownerReferences");
    std::string job = MetaString(group, "name");
    if (refs != nullptr && refs->is_array()) {
      for (const json::value& r : refs->get_array()) {
        if (r.is_object() && StringAt(r.get_object(), "kind") == kJobKind) {
          job = StringAt(r.get_object(), "name");
        }
      }
    }
    return job;
  }

  void UpsertGroup(const json::object& group) {
    std::lock_guard lock(mu);
    if (deleted_group_uids.contains(MetaString(group, "uid"))) return;
    const std::string key = Key(MetaString(group, "namespace"), MetaString(group, "name"));
    auto it = groups.find(key);
    if (it != groups.end() && MetaString(it->second, "uid") == MetaString(group, "uid") &&
        !NotOlder(group, it->second)) {
      return;
    }
    groups[key] = group;
  }

  // The messages of a PodGroup's Unschedulable conditions.
  static std::vector<std::string> UnschedulableMessages(const json::object& group) {
    std::vector<std::string> messages;
    const json::object* status = ObjectAt(group, "status");
    const json::value* conds = status == nullptr ? nullptr : status->if_contains("conditions");
    if (conds == nullptr || !conds->is_array()) return messages;
    for (const json::value& c : conds->get_array()) {
      if (!c.is_object()) continue;
      const json::object& co = c.get_object();
      if (StringAt(co, "type") == "Unschedulable" && StringAt(co, "status") == "True") {
        messages.push_back(StringAt(co, "message"));
      }
    }
    return messages;
  }

  // Volcano syncs a Job when its PodGroup changes phase; muster also when the PodGroup's
  // Unschedulable reason changes, so that the Job's PodGroupPending event tells the current one.
  void OnGroupUpdate(const json::object& old_group, const json::object& group) {
    UpsertGroup(group);
    const std::string phase = StatusString(group, "phase");
    if (phase == StatusString(old_group, "phase") &&
        UnschedulableMessages(group) == UnschedulableMessages(old_group)) {
      return;
    }
    Request request;
    if (phase == "Unknown") request.event = kJobUnknownEvent;
    Enqueue(Key(MetaString(group, "namespace"), OwningJob(group)), std::move(request));
  }

  void OnGroupDelete(const json::object& group) {
    std::lock_guard lock(mu);
    const std::string key = Key(MetaString(group, "namespace"), MetaString(group, "name"));
    auto it = groups.find(key);
    if (it != groups.end() && MetaString(it->second, "uid") == MetaString(group, "uid")) {
      groups.erase(it);
    }
    deleted_group_uids.erase(MetaString(group, "uid"));
  }

  // --- Reads ----------------------------------------------------------------------------------

  std::optional<json::object> CurrentJob(const std::string& key) {
    auto [ns, name] = SplitKey(key);
    std::optional<json::object> watched = jobs.Get(ns, name);
    std::lock_guard lock(mu);
    auto it = job_writes.find(key);
    if (!watched) {
      // Deleted (the watch says so) or not seen yet; a write of ours does not resurrect it.
      return std::nullopt;
    }
    if (it != job_writes.end() && MetaString(it->second, "uid") == MetaString(*watched, "uid") &&
        !NotOlder(*watched, it->second)) {
      return it->second;
    }
    return watched;
  }

  JobSnapshot Snapshot(Job job) {
    JobSnapshot s;
    const std::string key = Key(job.ns, job.name);
    const std::string group_key = Key(job.ns, PodGroupName(job));
    s.pods = pod_cache.PodsOf(key, job.uid);
    std::lock_guard lock(mu);
    if (auto it = groups.find(group_key); it != groups.end()) {
      s.pod_group.exists = true;
      s.pod_group.phase = StatusString(it->second, "phase");
      s.pod_group.unschedulable_messages = UnschedulableMessages(it->second);
    }
    s.job = std::move(job);
    s.now = options.now();
    return s;
  }

  std::optional<int32_t> PriorityOf(const std::string& name) {
    std::optional<json::object> pc = priority_classes.Get("", name);
    if (!pc) return std::nullopt;
    const json::value* v = pc->if_contains("value");
    if (v == nullptr || !v->is_number()) return std::nullopt;
    return static_cast<int32_t>(v->to_number<double>());
  }

  // --- Events ---------------------------------------------------------------------------------

  void RecordJobEvent(const Job& job, const std::string& type, const std::string& reason,
                      const std::string& message) {
    client::EventRecord event;
    event.involved_api_version = kJobApiVersion;
    event.involved_kind = kJobKind;
    event.involved_namespace = job.ns;
    event.involved_name = job.name;
    event.involved_uid = job.uid;
    event.type = type;
    event.reason = reason;
    event.message = message;
    event.source_component = options.component;
    if (absl::Status s = client.RecordEvent(event); !s.ok()) {
      std::fprintf(stderr, "job controller: recording event %s on %s/%s: %s\n", reason.c_str(),
                   job.ns.c_str(), job.name.c_str(), Message(s).c_str());
    }
  }

  // Records an event the first time its reason and message come up for this Job.
  void RecordJobEventOnce(const Job& job, const std::string& type, const std::string& reason,
                          const std::string& message) {
    {
      std::lock_guard lock(mu);
      if (!recorded_once[job.uid].insert(reason + "\n" + message).second) return;
    }
    RecordJobEvent(job, type, reason, message);
  }

  // --- Carrying out a plan --------------------------------------------------------------------

  std::vector<std::unique_ptr<JobPlugin>> Plugins(const Job& job) {
    std::vector<std::unique_ptr<JobPlugin>> plugins;
    for (const auto& [name, args] : job.spec.plugins) {
      PluginBuild build = MakePlugin(name, args);
      if (!build.problem.empty()) RecordJobEventOnce(job, "Warning", "PluginError", build.problem);
      if (build.plugin) plugins.push_back(std::move(build.plugin));
    }
    return plugins;
  }

  absl::Status SyncPodGroup(const Job& job) {
    const json::object desired =
        MakePodGroup(job, [this](const std::string& name) { return PriorityOf(name); });
    const std::string name = PodGroupName(job);
    std::optional<json::object> cached;
    {
      std::lock_guard lock(mu);
      if (auto it = groups.find(Key(job.ns, name)); it != groups.end()) cached = it->second;
    }
    if (!cached) {
      absl::StatusOr<json::object> created = client.Create(client::PodGroups(), job.ns, desired);
      if (created.ok()) {
        UpsertGroup(*created);
        return absl::OkStatus();
      }
      if (!absl::IsAlreadyExists(created.status())) return created.status();
      absl::StatusOr<json::object> live = client.Get(client::PodGroups(), job.ns, name);
      if (!live.ok()) return live.status();
      UpsertGroup(*live);
      cached = *live;
    }
    std::optional<json::object> updated = UpdatedPodGroup(*cached, desired);
    if (!updated) return absl::OkStatus();
    absl::StatusOr<json::object> stored = client.Update(client::PodGroups(), *std::move(updated));
    if (!stored.ok()) return stored.status();
    UpsertGroup(*stored);
    return absl::OkStatus();
  }

  absl::Status Execute(const Job& job, const json::object& job_object, const Plan& plan) {
    if (plan.skip) return absl::OkStatus();
    for (const PlannedEvent& e : plan.events) RecordJobEventOnce(job, e.type, e.reason, e.message);
    std::vector<std::unique_ptr<JobPlugin>> plugins = Plugins(job);

    if (plan.sync_job_objects) {
      for (const auto& plugin : plugins) {
        const std::string marker = "plugin-" + std::string(plugin->name());
        auto it = job.status.controlled_resources.find(marker);
        const bool added =
            it != job.status.controlled_resources.end() && it->second == plugin->name();
        // OnJobAdd while the Job is not started (once per plugin), OnJobUpdate afterwards.
        if (plan.initiate && added) continue;
        for (const PluginObject& object : plugin->Objects(job)) {
          if (absl::Status s = CreateOrUpdatePluginObject(client, object, job.ns, plan.initiate);
              !s.ok()) {
            RecordJobEvent(job, "Warning", "PluginError",
                           fmt::format("Execute plugin when job add failed, err: {}", Message(s)));
            return s;
          }
        }
      }
      if (absl::Status s = SyncPodGroup(job); !s.ok()) {
        RecordJobEvent(job, "Warning", "PodGroupError",
                       fmt::format("Failed to create PodGroup, err: {}", Message(s)));
        return s;
      }
    }

    std::vector<std::string> errors;
    std::vector<json::object> pods;
    pods.reserve(plan.create_pods.size());
    for (const PodToCreate& p : plan.create_pods) {
      json::object& pod = pods.emplace_back(MakePod(job, static_cast<size_t>(p.task), p.index));
      for (const auto& plugin : plugins) {
        plugin->OnPodCreate(job, static_cast<size_t>(p.task), p.index, pod);
      }
    }
    // Side by side, as Volcano's syncJob creates them from goroutines.
    std::vector<absl::StatusOr<json::object>> results(pods.size());
    creators.ParallelFor(pods.size(), [&](size_t i) {
      results[i] = client.Create(client::Pods(), job.ns, std::move(pods[i]));
    });
    for (size_t i = 0; i < plan.create_pods.size(); ++i) {
      const PodToCreate& p = plan.create_pods[i];
      const absl::StatusOr<json::object>& created = results[i];
      if (created.ok()) {
        if (std::optional<JobPodRef> ref = RefOf(*created)) UpsertPod(*ref, *created);
      } else if (!absl::IsAlreadyExists(created.status())) {
        errors.push_back(
            fmt::format("failed to create pod {}, err: {}", p.name, Message(created.status())));
      }
    }
    if (!errors.empty()) {
      RecordJobEvent(job, "Warning", "FailedCreatePod",
                     fmt::format("Error creating pods: [{}]", fmt::join(errors, " ")));
      return absl::UnavailableError(
          fmt::format("failed to create {} pods of {}", errors.size(), plan.create_pods.size()));
    }

    for (const std::string& name : plan.delete_pods) {
      absl::Status s = client.Delete(client::Pods(), job.ns, name);
      if (s.ok() || absl::IsNotFound(s)) continue;
      errors.push_back(fmt::format("failed to delete pod {}, err: {}", name, Message(s)));
    }
    if (!errors.empty()) {
      RecordJobEvent(job, "Warning", "FailedDeletePod",
                     fmt::format("Error deleting pods: [{}]", fmt::join(errors, " ")));
      return absl::UnavailableError(
          fmt::format("failed to delete {} pods of {}", errors.size(), plan.delete_pods.size()));
    }

    if (plan.delete_job_objects) {
      for (const auto& plugin : plugins) {
        for (const PluginObject& object : plugin->Objects(job)) {
          if (absl::Status s = DeletePluginObject(client, object, job.ns); !s.ok()) return s;
        }
      }
    }

    // Counting and phases are Volcano's; the running duration alone changing is not worth a
    // write (Volcano writes it on every sync, muster with every other change).
    JobStatus unchanged = plan.status;
    unchanged.running_duration = job.status.running_duration;
    if (!(unchanged == job.status)) {
      json::object updated = job_object;
      updated["status"] = EncodeJobStatus(plan.status);
      absl::StatusOr<json::object> stored =
          client.UpdateStatus(client::VolcanoJobs(), std::move(updated));
      if (!stored.ok()) return stored.status();
      {
        std::lock_guard lock(mu);
        job_writes[Key(job.ns, job.name)] = *stored;
      }
      ScheduleTtl(*stored);
    }

    if (plan.delete_job_objects) {
      const std::string name = PodGroupName(job);
      absl::Status s = client.Delete(client::PodGroups(), job.ns, name);
      if (!s.ok() && !absl::IsNotFound(s)) return s;
      std::lock_guard lock(mu);
      if (auto it = groups.find(Key(job.ns, name)); it != groups.end()) {
        deleted_group_uids.insert(MetaString(it->second, "uid"));
        groups.erase(it);
      }
    }
    return absl::OkStatus();
  }

  // --- Work -----------------------------------------------------------------------------------

  bool HandleTtl(const std::string& key) {
    auto [ns, name] = SplitKey(key);
    // Read the Job afresh, as Volcano's garbage collector does before deleting.
    absl::StatusOr<json::object> live = client.Get(client::VolcanoJobs(), ns, name);
    if (absl::IsNotFound(live.status())) return true;
    if (!live.ok()) return false;
    absl::StatusOr<Job> job = DecodeJob(*live);
    if (!job.ok()) return true;
    std::optional<Clock::time_point> deadline = TtlDeadline(*job);
    if (!deadline) return true;
    const Clock::time_point now = options.now();
    if (*deadline > now) {
      WorkItem item;
      item.key = key;
      item.kind = WorkItem::Kind::kTtl;
      queues.AddAfter(std::move(item), *deadline - now);
      return true;
    }
    client::DeleteOptions options_for_delete;
    options_for_delete.propagation_policy = "Foreground";
    options_for_delete.precondition_uid = job->uid;
    absl::Status s = client.Delete(client::VolcanoJobs(), ns, name, options_for_delete);
    return s.ok() || absl::IsNotFound(s) || absl::IsFailedPrecondition(s) || absl::IsAborted(s);
  }

  bool Handle(const WorkItem& item, int retries) {
    if (item.kind == WorkItem::Kind::kTtl) return HandleTtl(item.key);
    std::optional<json::object> object = CurrentJob(item.key);
    if (!object) {
      // Deleted: its dependents go with it. A Command's Job may not be in the cache yet
      // (OnCommand): retry that, until the retries run out.
      return !(item.request.event == kCommandIssuedEvent && retries + 1 < options.max_requeues);
    }
    absl::StatusOr<Job> job = DecodeJob(*object);
    if (!job.ok()) {
      std::fprintf(stderr, "job controller: %s\n", Message(job.status()).c_str());
      return true;
    }
    const Action action = ApplyPolicies(*job, item.request);
    if (action.name != kSyncJobAction && retries == 0) {
      RecordJobEvent(*job, "Normal", "ExecuteAction",
                     fmt::format("Start to execute action {}", action.name));
    }
    absl::Status status = Execute(*job, *object, PlanAction(Snapshot(*job), action));
    if (metrics) metrics->Synced(status.ok());
    if (status.ok()) return true;
    if (retries + 1 < options.max_requeues) return false;
    RecordJobEvent(*job, "Normal", "ExecuteAction",
                   fmt::format("Job failed on action {} for retry limit reached", action.name));
    if (std::optional<json::object> again = CurrentJob(item.key)) {
      if (absl::StatusOr<Job> j = DecodeJob(*again); j.ok()) {
        Execute(*j, *again, PlanAction(Snapshot(*j), Action{kTerminateJobAction, "", ""}))
            .IgnoreError();
      }
    }
    return true;
  }
};

}  // namespace

absl::Status JobController::Start(std::chrono::milliseconds sync_timeout) {
  JobController& s = *this;
  if (s.started) return absl::OkStatus();
  s.started = true;
  client::InformerHandlers jobs;
  jobs.on_add = [&s](const json::object& o) { s.OnJobAdd(o); };
  jobs.on_update = [&s](const json::object& a, const json::object& b) { s.OnJobUpdate(a, b); };
  jobs.on_delete = [&s](const json::object& o) { s.OnJobDelete(o); };
  s.jobs.AddHandlers(std::move(jobs));
  client::InformerHandlers pods;
  pods.on_add = [&s](const json::object& o) { s.OnPodAdd(o); };
  pods.on_update = [&s](const json::object& a, const json::object& b) { s.OnPodUpdate(a, b); };
  pods.on_delete = [&s](const json::object& o) { s.OnPodDelete(o); };
  s.pods.AddHandlers(std::move(pods));
  client::InformerHandlers groups;
  groups.on_add = [&s](const json::object& o) { s.UpsertGroup(o); };
  groups.on_update = [&s](const json::object& a, const json::object& b) { s.OnGroupUpdate(a, b); };
  groups.on_delete = [&s](const json::object& o) { s.OnGroupDelete(o); };
  s.pod_groups.AddHandlers(std::move(groups));
  // Pods and PodGroups first, so that the first sync of each Job sees them.
  const auto deadline = std::chrono::steady_clock::now() + sync_timeout;
  absl::Status started = StartInformers(
      "job controller", {&s.priority_classes, &s.pod_groups, &s.pods}, deadline, sync_timeout);
  if (started.ok()) started = s.queues.Start();
  if (started.ok()) started = StartInformers("job controller", {&s.jobs}, deadline, sync_timeout);
  if (!started.ok()) {
    Stop();
    return started;
  }
  absl::Status commands = s.commands.Start();
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(std::max(
      deadline - std::chrono::steady_clock::now(), std::chrono::steady_clock::duration::zero()));
  if (commands.ok() && !s.commands.WaitForSync(left)) {
    commands = absl::DeadlineExceededError(fmt::format(
        "job controller: the commands watch did not sync within {} ms", sync_timeout.count()));
  }
  if (!commands.ok()) Stop();
  return commands;
}

void JobController::Stop() {
  JobController& s = *this;
  s.commands.Stop();
  s.jobs.Stop();
  s.pods.Stop();
  s.pod_groups.Stop();
  s.priority_classes.Stop();
  s.queues.Stop();
}

bool JobController::WaitIdle(std::chrono::milliseconds timeout) {
  return commands.WaitIdle(timeout) && queues.WaitIdle(timeout);
}

std::unique_ptr<Controller> NewJobController(client::Client& client, JobControllerOptions options) {
  return std::make_unique<JobController>(client, std::move(options));
}

}  // namespace muster::controller
