// The batch/v1 Job controller's runner (batch_job_controller.h), after kube-controller-manager's
// pkg/controller/job/job_controller.go (informers, the queue, syncJob's writes) and
// pkg/controller/ttlafterfinished.

#include "controller/batch_job_controller.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "api/json_access.h"
#include "api/json_codec.h"
#include "boost/json/array.hpp"
#include "boost/json/serialize.hpp"
#include "boost/json/value.hpp"
#include "client/informer.h"
#include "controller/batch_job.h"
#include "controller/batch_job_pods.h"
#include "controller/batch_job_state.h"
#include "controller/podgroup_controller.h"
#include "controller/work_queue.h"
#include "fmt/format.h"

namespace muster::controller {

namespace json = boost::json;

namespace {

using api::MetaString;

int64_t BatchWallClock() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::pair<std::string, std::string> SplitBatchKey(const std::string& key) {
  const size_t slash = key.find('/');
  return {key.substr(0, slash), key.substr(slash + 1)};
}

bool HasTrackingFinalizer(const json::object& pod) {
  const json::object* meta = api::ObjectAt(pod, "metadata");
  const json::array* finalizers = meta == nullptr ? nullptr : api::ArrayAt(*meta, "finalizers");
  if (finalizers == nullptr) return false;
  return std::any_of(finalizers->begin(), finalizers->end(), [](const json::value& f) {
    return f.is_string() && f.get_string() == kJobTrackingFinalizer;
  });
}

// A merge patch taking the job-tracking finalizer off, guarded by the pod's resourceVersion so
// that a finalizer someone added meanwhile is not lost (a conflict syncs again).
std::string RemoveFinalizerPatch(const json::object& pod) {
  json::array keep;
  const json::object* meta = api::ObjectAt(pod, "metadata");
  const json::array* finalizers = meta == nullptr ? nullptr : api::ArrayAt(*meta, "finalizers");
  if (finalizers != nullptr) {
    for (const json::value& f : *finalizers) {
      if (!(f.is_string() && f.get_string() == kJobTrackingFinalizer)) keep.push_back(f);
    }
  }
  json::value rest = keep.empty() ? json::value(nullptr) : json::value(std::move(keep));
  json::object patch_meta{{"finalizers", std::move(rest)},
                          {"resourceVersion", MetaString(pod, "resourceVersion")}};
  return json::serialize(json::object{{"metadata", std::move(patch_meta)}});
}

// The controller NewBatchJobController makes: its watches, queues and workers.
struct BatchJobController final : public Controller {
  BatchJobController(client::Client& c, BatchJobControllerOptions o)
      : client(c),
        options(std::move(o)),
        jobs(c, client::BatchJobs()),
        pods(c, client::Pods()),
        queues({options.workers, options.backoff_base, options.backoff_max},
               [this](const WorkItem& item, int) { return Handle(item); }) {}

  ~BatchJobController() override { Stop(); }
  absl::Status Start(std::chrono::milliseconds sync_timeout) override;
  void Stop() override;
  bool WaitIdle(std::chrono::milliseconds timeout) override;

  client::Client& client;
  BatchJobControllerOptions options;
  client::Informer jobs;
  client::Informer pods;
  WorkQueues queues;
  bool started = false;

  int64_t Now() const { return options.now_unix ? options.now_unix() : BatchWallClock(); }

  void Log(const std::string& message) {
    std::fprintf(stderr, "batch job controller: %s\n", message.c_str());
  }

  void Enqueue(const std::string& key, const std::string& orphan_pod = "") {
    WorkItem item;
    item.key = key;
    item.request.pod = orphan_pod;
    queues.Add(std::move(item));
  }

  void EnqueueAt(const std::string& key, int64_t at) {
    WorkItem item;
    item.key = key;
    // A second past the time, so that the sync sees it passed.
    queues.AddAfter(std::move(item), std::chrono::seconds(std::max<int64_t>(at - Now(), 0) + 1));
  }

  void OnJob(const json::object& job) {
    Enqueue(MetaString(job, "namespace") + "/" + MetaString(job, "name"));
  }

  // A pod of a Job syncs that Job; one that still carries the finalizer while its Job is gone or
  // another Job has its name is let go.
  void OnPod(const json::object& pod) {
    const std::string owner = BatchJobOwnerName(pod);
    if (owner.empty()) return;
    const std::string ns = MetaString(pod, "namespace");
    Enqueue(ns + "/" + owner);
    if (!HasTrackingFinalizer(pod)) return;
    std::optional<json::object> job = jobs.Get(ns, owner);
    if (!job || MetaString(*job, "uid") != BatchJobOwnerUid(pod)) {
      Enqueue(ns + "/" + owner, MetaString(pod, "name"));
    }
  }

  void Record(const BatchJob& job, const std::string& type, const std::string& reason,
              const std::string& message) {
    client::EventRecord event;
    event.involved_api_version = kBatchApiVersion;
    event.involved_kind = "Job";
    event.involved_namespace = job.ns;
    event.involved_name = job.name;
    event.involved_uid = job.uid;
    event.type = type;
    event.reason = reason;
    event.message = message;
    event.source_component = options.component;
    if (absl::Status s = client.RecordEvent(event); !s.ok()) {
      Log(fmt::format("cannot record event {} on Job {}/{}: {}", reason, job.ns, job.name,
                      std::string(s.message())));
    }
  }

  bool Handle(const WorkItem& item) {
    if (!item.request.pod.empty()) return ReleaseOrphan(item.key, item.request.pod);
    return Sync(item.key);
  }

  // The pod's finalizer off when no Job with its owner's uid exists.
  bool ReleaseOrphan(const std::string& key, const std::string& pod_name) {
    auto [ns, name] = SplitBatchKey(key);
    absl::StatusOr<json::object> pod = client.Get(client::Pods(), ns, pod_name);
    if (!pod.ok()) return absl::IsNotFound(pod.status());
    if (!HasTrackingFinalizer(*pod)) return true;
    absl::StatusOr<json::object> job = client.Get(client::BatchJobs(), ns, name);
    if (job.ok() && MetaString(*job, "uid") == BatchJobOwnerUid(*pod)) return true;
    if (!job.ok() && !absl::IsNotFound(job.status())) return false;
    absl::Status patched = client.PatchWithoutResult(client::Pods(), ns, pod_name,
                                                     client::PatchType::kMerge,
                                                     RemoveFinalizerPatch(*pod));
    return patched.ok() || absl::IsNotFound(patched);
  }

  // The Job's gang PodGroup, made before its first pod (an existing one is kept).
  bool EnsureGang(const BatchJob& job, const BatchGang& gang, const json::object& pod) {
    absl::StatusOr<api::Pod> decoded = api::DecodePod(json::value(pod));
    if (!decoded.ok()) return false;
    json::object group = GangPodGroup(*decoded, gang.pod_group, gang.min_member);
    absl::StatusOr<json::object> created = client.Create(client::PodGroups(), job.ns, group);
    if (created.ok() || absl::IsAlreadyExists(created.status())) return true;
    Log(fmt::format("cannot create PodGroup {}/{} for Job {}: {}", job.ns, gang.pod_group,
                    job.name, std::string(created.status().message())));
    return false;
  }

  bool WriteStatus(json::object& object, const BatchJobStatus& status) {
    object["status"] = EncodeBatchJobStatus(status);
    absl::StatusOr<json::object> written = client.UpdateStatus(client::BatchJobs(), object);
    if (!written.ok()) {
      if (!absl::IsAborted(written.status()) && !absl::IsNotFound(written.status())) {
        Log(fmt::format("cannot write the status of Job {}/{}: {}",
                        MetaString(object, "namespace"), MetaString(object, "name"),
                        std::string(written.status().message())));
      }
      return false;
    }
    object = std::move(*written);
    return true;
  }

  // False when a write was refused: the Job is synced again after a backoff.
  bool Sync(const std::string& key) {
    auto [ns, name] = SplitBatchKey(key);
    absl::StatusOr<json::object> object = client.Get(client::BatchJobs(), ns, name);
    if (absl::IsNotFound(object.status())) return true;
    if (!object.ok()) return false;
    absl::StatusOr<BatchJob> job = DecodeBatchJob(*object);
    if (!job.ok()) return true;

    client::ListOptions list;
    const json::object* selector = &job->selector;
    const json::object* labels = api::ObjectAt(*selector, "matchLabels");
    const std::string uid_label = api::StringAt(labels, kControllerUidLabel);
    // The generated selector narrows the list; a manual one is the user's, so every pod of the
    // namespace is read and only the Job's own kept.
    if (uid_label == job->uid) {
      list.label_selector = fmt::format("{}={}", kControllerUidLabel, job->uid);
    }
    absl::StatusOr<client::ObjectList> listed = client.List(client::Pods(), ns, list);
    if (!listed.ok()) return false;
    std::map<std::string, json::object> by_name;
    BatchJobSnapshot snapshot;
    for (json::object& pod : listed->items) {
      if (BatchJobOwnerUid(pod) != job->uid) continue;
      snapshot.pods.push_back(DecodeBatchPod(pod));
      by_name.emplace(MetaString(pod, "name"), std::move(pod));
    }
    snapshot.now = Now();
    snapshot.backoff_base_seconds = options.pod_failure_backoff_seconds;
    snapshot.job = *job;
    BatchJobPlan plan = PlanBatchJob(snapshot);

    if (plan.interim_status && !WriteStatus(*object, *plan.interim_status)) return false;
    for (const std::string& pod : plan.remove_finalizers) {
      auto it = by_name.find(pod);
      if (it == by_name.end()) continue;
      absl::Status patched = client.PatchWithoutResult(client::Pods(), ns, pod,
                                                       client::PatchType::kMerge,
                                                       RemoveFinalizerPatch(it->second));
      if (!patched.ok() && !absl::IsNotFound(patched)) return false;
    }
    for (const std::string& pod : plan.delete_pods) {
      absl::Status deleted = client.Delete(client::Pods(), ns, pod);
      if (!deleted.ok() && !absl::IsNotFound(deleted)) {
        Record(*job, "Warning", "FailedDelete",
               fmt::format("Error deleting: {}", std::string(deleted.message())));
        return false;
      }
      Record(*job, "Normal", "SuccessfulDelete", fmt::format("Deleted pod: {}", pod));
    }
    const std::optional<BatchGang> gang = BatchJobGang(*job, options.scheduler_names);
    int32_t created = 0;
    bool create_failed = false;
    for (const BatchPodToCreate& want : plan.create_pods) {
      json::object pod = MakeBatchJobPod(*job, want, gang);
      if (gang && created == 0 && !EnsureGang(*job, *gang, pod)) {
        create_failed = true;
        break;
      }
      absl::StatusOr<json::object> made = client.Create(client::Pods(), ns, std::move(pod));
      if (!made.ok()) {
        Record(*job, "Warning", "FailedCreate",
               fmt::format("Error creating: {}", std::string(made.status().message())));
        create_failed = true;
        break;
      }
      ++created;
      Record(*job, "Normal", "SuccessfulCreate",
             fmt::format("Created pod: {}", MetaString(*made, "name")));
    }
    BatchJobStatus status = plan.status;
    status.active -= static_cast<int32_t>(plan.create_pods.size()) - created;
    if ((plan.status_changed || plan.interim_status) && !WriteStatus(*object, status)) {
      return false;
    }
    for (const BatchJobEvent& e : plan.events) Record(*job, e.type, e.reason, e.message);
    if (create_failed) return false;
    if (plan.requeue_at) EnqueueAt(key, *plan.requeue_at);
    if (plan.delete_job_at) {
      if (*plan.delete_job_at <= snapshot.now) {
        client::DeleteOptions options_for_delete;
        options_for_delete.propagation_policy = "Foreground";
        options_for_delete.precondition_uid = job->uid;
        absl::Status deleted = client.Delete(client::BatchJobs(), ns, name, options_for_delete);
        if (!deleted.ok() && !absl::IsNotFound(deleted) && !absl::IsAborted(deleted)) return false;
      } else {
        EnqueueAt(key, *plan.delete_job_at);
      }
    }
    return true;
  }
};

}  // namespace

absl::Status BatchJobController::Start(std::chrono::milliseconds sync_timeout) {
  BatchJobController& s = *this;
  if (s.started) return absl::OkStatus();
  s.started = true;
  client::InformerHandlers jobs;
  jobs.on_add = [&s](const json::object& o) { s.OnJob(o); };
  jobs.on_update = [&s](const json::object&, const json::object& o) { s.OnJob(o); };
  s.jobs.AddHandlers(std::move(jobs));
  client::InformerHandlers pods;
  pods.on_add = [&s](const json::object& o) { s.OnPod(o); };
  pods.on_update = [&s](const json::object&, const json::object& o) { s.OnPod(o); };
  pods.on_delete = [&s](const json::object& o) { s.OnPod(o); };
  s.pods.AddHandlers(std::move(pods));
  // Jobs first: a pod's first add then finds its Job in the cache.
  for (absl::Status started : {s.queues.Start(), s.jobs.Start(), s.pods.Start()}) {
    if (!started.ok()) {
      Stop();
      return started;
    }
  }
  if (!s.jobs.WaitForSync(sync_timeout) || !s.pods.WaitForSync(sync_timeout)) {
    Stop();
    return absl::DeadlineExceededError(fmt::format(
        "batch job controller: the jobs and pods watches did not sync within {} ms",
        sync_timeout.count()));
  }
  return absl::OkStatus();
}

void BatchJobController::Stop() {
  BatchJobController& s = *this;
  s.pods.Stop();
  s.jobs.Stop();
  s.queues.Stop();
}

bool BatchJobController::WaitIdle(std::chrono::milliseconds timeout) {
  return queues.WaitIdle(timeout);
}

std::unique_ptr<Controller> NewBatchJobController(client::Client& client,
                                                  BatchJobControllerOptions options) {
  return std::make_unique<BatchJobController>(client, std::move(options));
}

}  // namespace muster::controller
