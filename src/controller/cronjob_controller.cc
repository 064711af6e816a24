// The CronJob controller's runner (cronjob_controller.h), after kube-controller-manager's
// pkg/controller/cronjob/cronjob_controllerv2.go (informers, queue, sync's writes).

#include "controller/cronjob_controller.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "api/json_access.h"
#include "api/time.h"
#include "boost/json/array.hpp"
#include "boost/json/value.hpp"
#include "client/informer.h"
#include "controller/cronjob_state.h"
#include "controller/work_queue.h"
#include "fmt/format.h"

namespace muster::controller {

namespace json = boost::json;

namespace {

using api::MetaString;

int64_t CronWallClock() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// status.active's ObjectReferences, as getRef makes them.
json::array ActiveRefs(const std::string& ns, const std::vector<JobRef>& active) {
  json::array refs;
  for (const JobRef& r : active) {
    json::object o{{"apiVersion", "batch/v1"}, {"kind", "Job"},  {"name", r.name},
                   {"namespace", ns},          {"uid", r.uid}};
    if (!r.resource_version.empty()) o["resourceVersion"] = r.resource_version;
    refs.push_back(std::move(o));
  }
  return refs;
}

// The controller NewCronJobController makes: its watches, queues and workers.
struct CronJobController final : public Controller {
  CronJobController(client::Client& c, CronJobControllerOptions o)
      : client(c),
        options(std::move(o)),
        cronjobs(c, client::CronJobs()),
        jobs(c, client::BatchJobs()),
        queues({options.workers, options.backoff_base, options.backoff_max},
               [this](const WorkItem& item, int) { return Sync(item.key); }) {}

  ~CronJobController() override { Stop(); }
  absl::Status Start(std::chrono::milliseconds sync_timeout) override;
  void Stop() override;
  bool WaitIdle(std::chrono::milliseconds timeout) override;

  client::Client& client;
  CronJobControllerOptions options;
  client::Informer cronjobs;
  client::Informer jobs;
  WorkQueues queues;
  bool started = false;

  int64_t Now() const { return options.now_unix ? options.now_unix() : CronWallClock(); }

  void Enqueue(const std::string& key) {
    WorkItem item;
    item.key = key;
    queues.Add(std::move(item));
  }

  void OnCronJob(const json::object& cj) {
    Enqueue(MetaString(cj, "namespace") + "/" + MetaString(cj, "name"));
  }

  // A Job of a CronJob syncs it (its owner's name from the controller reference).
  void OnJob(const json::object& job) {
    if (CronJobOwnerUid(job).empty()) return;
    const json::object* meta = api::ObjectAt(job, "metadata");
    const json::array* refs = meta == nullptr ? nullptr : api::ArrayAt(*meta, "ownerReferences");
    if (refs == nullptr) return;
    for (const json::value& r : *refs) {
      if (r.is_object() && api::StringAt(r.get_object(), "kind") == "CronJob") {
        Enqueue(MetaString(job, "namespace") + "/" + api::StringAt(r.get_object(), "name"));
      }
    }
  }

  void Log(const std::string& message) {
    std::fprintf(stderr, "cronjob controller: %s\n", message.c_str());
  }

  void Record(const CronJobInfo& cj, const CronJobEvent& e) {
    client::EventRecord event;
    event.involved_api_version = "batch/v1";
    event.involved_kind = "CronJob";
    event.involved_namespace = cj.ns;
    event.involved_name = cj.name;
    event.involved_uid = cj.uid;
    event.type = e.type;
    event.reason = e.reason;
    event.message = e.message;
    event.source_component = options.component;
    if (absl::Status s = client.RecordEvent(event); !s.ok()) {
      Log(fmt::format("cannot record event {} on CronJob {}/{}: {}", e.reason, cj.ns, cj.name,
                      std::string(s.message())));
    }
  }

  bool DeleteJob(const CronJobInfo& cj, const std::string& name) {
    client::DeleteOptions background;
    background.propagation_policy = "Background";
    absl::Status deleted = client.Delete(client::BatchJobs(), cj.ns, name, background);
    if (deleted.ok() || absl::IsNotFound(deleted)) return true;
    Record(cj, {"Warning", "FailedDelete", fmt::format("Deleted job: {}",
                                                       std::string(deleted.message()))});
    return false;
  }

  // False when a write was refused: the CronJob is synced again after a backoff.
  bool Sync(const std::string& key) {
    const size_t slash = key.find('/');
    const std::string ns = key.substr(0, slash);
    const std::string name = key.substr(slash + 1);
    absl::StatusOr<json::object> object = client.Get(client::CronJobs(), ns, name);
    if (absl::IsNotFound(object.status())) return true;
    if (!object.ok()) return false;
    absl::StatusOr<CronJobInfo> cj = DecodeCronJob(*object);
    if (!cj.ok()) return true;
    absl::StatusOr<client::ObjectList> listed = client.List(client::BatchJobs(), ns);
    if (!listed.ok()) return false;
    std::vector<ChildJob> children;
    for (const json::object& job : listed->items) {
      if (CronJobOwnerUid(job) == cj->uid) children.push_back(DecodeChildJob(job));
    }
    const int64_t now = Now();
    CronJobPlan plan = PlanCronJob(*cj, children, now, options.local_zone);

    for (const std::string& job : plan.delete_jobs) {
      if (!DeleteJob(*cj, job)) return false;
    }
    std::vector<JobRef> active = plan.active;
    if (plan.create_job) {
      const std::string job_name = MetaString(*plan.create_job, "name");
      absl::StatusOr<json::object> created = client.Create(client::BatchJobs(), ns,
                                                           *plan.create_job);
      if (absl::IsAlreadyExists(created.status())) {
        // Made by an earlier sync whose status write did not land: adopt it if it is ours.
        created = client.Get(client::BatchJobs(), ns, job_name);
        if (created.ok() && CronJobOwnerUid(*created) != cj->uid) {
          plan.create_job.reset();
          created = absl::NotFoundError("not ours");
        }
      } else if (!created.ok()) {
        Record(*cj, {"Warning", "FailedCreate",
                     fmt::format("Error creating job: {}",
                                 std::string(created.status().message()))});
        return false;
      }
      if (created.ok()) {
        active.push_back({job_name, MetaString(*created, "uid"),
                          MetaString(*created, "resourceVersion")});
      }
    }
    for (const std::string& job : plan.delete_finished_jobs) {
      if (!DeleteJob(*cj, job)) return false;
    }
    if (plan.status_changed || active != plan.active) {
      json::object status;
      if (const json::object* old = api::ObjectAt(*object, "status")) status = *old;
      if (active.empty()) {
        status.erase("active");
      } else {
        status["active"] = ActiveRefs(ns, active);
      }
      if (plan.last_schedule_time != 0) {
        status["lastScheduleTime"] = api::FormatUnixTime(plan.last_schedule_time);
      }
      if (plan.last_successful_time != 0) {
        status["lastSuccessfulTime"] = api::FormatUnixTime(plan.last_successful_time);
      }
      (*object)["status"] = std::move(status);
      absl::StatusOr<json::object> written = client.UpdateStatus(client::CronJobs(), *object);
      if (!written.ok()) return absl::IsNotFound(written.status());
    }
    for (const CronJobEvent& e : plan.events) {
      if (e.reason == "SuccessfulCreate" && !plan.create_job) continue;
      Record(*cj, e);
    }
    if (plan.requeue_at) {
      WorkItem item;
      item.key = key;
      queues.AddAfter(std::move(item),
                      std::chrono::milliseconds(std::max<int64_t>(*plan.requeue_at - Now(), 0) *
                                                    1000 +
                                                100));
    }
    return true;
  }
};

}  // namespace

absl::Status CronJobController::Start(std::chrono::milliseconds sync_timeout) {
  CronJobController& s = *this;
  if (s.started) return absl::OkStatus();
  s.started = true;
  client::InformerHandlers cronjobs;
  cronjobs.on_add = [&s](const json::object& o) { s.OnCronJob(o); };
  cronjobs.on_update = [&s](const json::object&, const json::object& o) { s.OnCronJob(o); };
  s.cronjobs.AddHandlers(std::move(cronjobs));
  client::InformerHandlers jobs;
  jobs.on_add = [&s](const json::object& o) { s.OnJob(o); };
  jobs.on_update = [&s](const json::object&, const json::object& o) { s.OnJob(o); };
  jobs.on_delete = [&s](const json::object& o) { s.OnJob(o); };
  s.jobs.AddHandlers(std::move(jobs));
  for (absl::Status started : {s.queues.Start(), s.cronjobs.Start(), s.jobs.Start()}) {
    if (!started.ok()) {
      Stop();
      return started;
    }
  }
  if (!s.cronjobs.WaitForSync(sync_timeout) || !s.jobs.WaitForSync(sync_timeout)) {
    Stop();
    return absl::DeadlineExceededError(fmt::format(
        "cronjob controller: the cronjobs and jobs watches did not sync within {} ms",
        sync_timeout.count()));
  }
  return absl::OkStatus();
}

void CronJobController::Stop() {
  CronJobController& s = *this;
  s.jobs.Stop();
  s.cronjobs.Stop();
  s.queues.Stop();
}

bool CronJobController::WaitIdle(std::chrono::milliseconds timeout) {
  return queues.WaitIdle(timeout);
}

std::unique_ptr<Controller> NewCronJobController(client::Client& client,
                                                 CronJobControllerOptions options) {
  return std::make_unique<CronJobController>(client, std::move(options));
}

}  // namespace muster::controller
