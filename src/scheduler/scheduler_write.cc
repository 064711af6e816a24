// What a scheduling cycle writes (Scheduler::State, scheduler_state.h): the gangs' binds, all or
// none, after the check against binds another scheduler made meanwhile; the cycle's pod and
// PodGroup statuses, Queue statuses and Events; the backoff of gangs left unschedulable; and the
// repair of gangs a crash left partly bound (gang_repair.h). Volcano's counterparts are the
// cache's Bind and the session's job updater (pkg/scheduler/cache/cache.go,
// pkg/scheduler/framework/job_updater.go).

#include <signal.h>

#include <map>
#include <utility>

#include "api/gpu_indices.h"
#include "scheduler/gang_repair.h"
#include "scheduler/scheduler_state.h"

namespace muster::scheduler {
namespace {

// Patches the status of every object of `writes` (each with .ns, .name, .patch) side by side,
// through `subresource` ("status", or "" for the object itself), then hands each outcome to
// `done`, in order, on the calling thread.
template <typename Write, typename Done>
void PatchStatuses(common::WorkerPool& pool, client::Client& client,
                   const client::Resource& resource, client::PatchType type,
                   std::string_view subresource, const std::vector<Write>& writes, Done done) {
  std::vector<absl::StatusOr<json::object>> results(writes.size());
  pool.ParallelFor(writes.size(), [&](size_t i) {
    results[i] = client.Patch(resource, writes[i].ns, writes[i].name, type, writes[i].patch,
                              subresource);
  });
  for (size_t i = 0; i < writes.size(); ++i) done(writes[i], results[i]);
}

std::string ResourceVersionOf(const absl::StatusOr<json::object>& o) {
  return o.ok() ? api::MetaString(*o, "resourceVersion") : "";
}

}  // namespace

// Another scheduler (kube-scheduler beside muster) may have bound pods while the session ran from
// its snapshot: those of its binds the watch has delivered since are applied now, and a gang that
// would put a node over its allocatable with them is not bound this cycle (its placement is
// undone; the next cycle, which sees them, places it again). What is left of the race, binds the
// watch has not delivered yet, is the node's to refuse, as a kubelet's admission does.
std::vector<bool> Scheduler::State::DeferGangsOnNodesFilledMeanwhile(
    const std::vector<GangBinding>& gangs) {
  std::vector<bool> deferred(gangs.size(), false);
  if (gangs.empty()) return deferred;
  std::vector<api::Pod> late;
  {
    std::lock_guard<std::mutex> lock(mu);
    for (const Delta& d : deltas) {
      const api::Pod* pod = d.kind == Kind::kPod ? std::get_if<api::Pod>(&d.object) : nullptr;
      if (pod != nullptr && !pod->spec.node_name.empty() &&
          ServedBy(*pod, mirror.options()) == Served::kNo) {
        late.push_back(*pod);
      }
    }
  }
  if (late.empty()) return deferred;
  core::Cluster& cluster = mirror.cluster();
  std::set<std::string> filled;  // nodes that took pods of others meanwhile
  for (api::Pod& pod : late) {
    const core::TaskInfo* t = cluster.FindTask(pod.meta.namespace_ + "/" + pod.meta.name);
    if (t != nullptr && t->node >= 0 && cluster.node(t->node).name == pod.spec.node_name) continue;
    filled.insert(pod.spec.node_name);
    // Applied again, in order, with the rest of the batch at the next cycle.
    mirror.UpsertPod(std::move(pod));
  }
  auto over = [&](const std::string& name) {
    const core::NodeInfo* n = cluster.FindNode(name);
    if (n == nullptr) return false;
    for (core::ResourceId r = 0; r < n->idle.Size(); ++r) {
      if (n->idle.Get(r) < 0) return true;
    }
    return n->pod_count > n->max_pods;
  };
  for (size_t g = 0; g < gangs.size(); ++g) {
    const auto& bindings = gangs[g].bindings;
    auto at = std::find_if(bindings.begin(), bindings.end(), [&](const client::Binding& b) {
      return filled.count(b.node) > 0 && over(b.node);
    });
    if (at == bindings.end()) continue;
    deferred[g] = true;
    Log(fmt::format("not binding gang {} this cycle: node {} took pods of another scheduler "
                    "while it was placed, and no longer has room for it",
                    gangs[g].job, at->node));
    for (const client::Binding& b : bindings) {
      if (core::TaskInfo* t = cluster.FindTask(b.ns + "/" + b.pod);
          t != nullptr && t->node >= 0 && t->status == core::TaskStatus::kBinding) {
        cluster.UnplaceTask(*t, core::TaskStatus::kPending);
      }
    }
  }
  return deferred;
}

void Scheduler::State::Bind(const core::CycleResult& result, PlanContext& context,
                            std::set<std::string>& placed) {
  core::Cluster& cluster = mirror.cluster();
  uint64_t bound = 0, failed = 0;
  const std::vector<GangBinding> gangs = PlanBinds(result, cluster);
  if (options.before_binds && !gangs.empty()) {
    options.before_binds([this] {
      std::lock_guard<std::mutex> lock(mu);
      return deltas.size();
    });
  }
  const std::vector<bool> deferred = DeferGangsOnNodesFilledMeanwhile(gangs);
  // Each gang's placement is recorded on its PodGroup before any of it is bound, so that a
  // crash between two binds can be repaired (gang_repair.h); a gang whose record is refused is
  // not bound this cycle.
  std::vector<std::pair<std::string, std::string>> records(gangs.size());  // PodGroup ns, name
  if (!client.transport().BindsAtomically()) {
    for (size_t g = 0; g < gangs.size(); ++g) {
      const core::JobInfo* j = cluster.FindJob(gangs[g].job);
      if (j != nullptr && j->pg && !IsDefaultSchedulerJob(*j) &&
          (j->min_available > 1 || gangs[g].bindings.size() > 1)) {
        records[g] = {j->ns, j->name};
      }
    }
  }
  std::vector<absl::StatusOr<std::vector<absl::Status>>> outcomes(gangs.size());
  // Where the transport cannot store a gang's binds together (a real API server: one POST per
  // pod), every bind of every gang goes out side by side once the gangs' placements are recorded:
  // a gang is then partly bound for one round trip, not for its pods' round trips one after the
  // other (bench/peers, docs/benchmarks.md "Side by side").
  const bool side_by_side =
      !client.transport().BindsAtomically() && options.fault_kill_after_binds == 0;
  writers.ParallelFor(gangs.size(), [&](size_t g) {
    if (deferred[g]) return;
    if (!records[g].second.empty()) {
      absl::Status recorded = client.PatchWithoutResult(
          client::PodGroups(), records[g].first, records[g].second, client::PatchType::kMerge,
          PlacementPatch(gangs[g].bindings));
      if (!recorded.ok()) {
        outcomes[g] = absl::Status(recorded.code(), "recording the placement on its PodGroup: " +
                                                        std::string(recorded.message()));
        return;
      }
    }
    if (side_by_side) {
      outcomes[g] = std::vector<absl::Status>(gangs[g].bindings.size(), absl::OkStatus());
      return;
    }
    if (options.fault_kill_after_binds == 0) {
      outcomes[g] = client.BindAll(gangs[g].bindings);
      return;
    }
    std::vector<absl::Status> one_by_one;
    for (const client::Binding& b : gangs[g].bindings) {
      one_by_one.push_back(client.Bind(b));
      if (one_by_one.back().ok() && ++fault_binds == options.fault_kill_after_binds) {
        ::raise(SIGKILL);
      }
    }
    outcomes[g] = std::move(one_by_one);
  });
  if (side_by_side) {
    std::vector<std::pair<size_t, size_t>> binds;  // (gang, binding) of the gangs to bind
    for (size_t g = 0; g < gangs.size(); ++g) {
      if (deferred[g] || !outcomes[g].ok()) continue;
      for (size_t i = 0; i < gangs[g].bindings.size(); ++i) binds.emplace_back(g, i);
    }
    writers.ParallelFor(binds.size(), [&](size_t k) {
      auto [g, i] = binds[k];
      (*outcomes[g])[i] = client.Bind(gangs[g].bindings[i]);
    });
  }
  for (size_t g = 0; g < gangs.size(); ++g) {
    const GangBinding& gang = gangs[g];
    if (deferred[g]) {
      context.failed_jobs.insert(gang.job);
      if (core::JobInfo* j = cluster.FindJob(gang.job); j != nullptr && j->pg) {
        j->SetPhaseFromPodGroup();
      }
      std::lock_guard<std::mutex> lock(stats_mu);
      ++stats.gangs_deferred;
      continue;
    }
    const absl::StatusOr<std::vector<absl::Status>>& outcome = outcomes[g];
    bool all_bound = true;
    for (size_t i = 0; i < gang.bindings.size(); ++i) {
      const client::Binding& b = gang.bindings[i];
      absl::Status st = !outcome.ok()         ? outcome.status()
                        : i < outcome->size() ? (*outcome)[i]
                                              : absl::InternalError("no outcome");
      const std::string key = b.ns + "/" + b.pod;
      if (st.ok()) {
        auto gpus = b.annotations.find(api::kGpuIndicesAnnotation);
        mirror.AssumeBound(key, b.pod_uid, b.node,
                           gpus != b.annotations.end() ? gpus->second : std::string());
        context.bound.insert(key);
        ++bound;
        continue;
      }
      if (all_bound) {  // the gang's first failure says why
        Log(fmt::format("binding {} (gang {}) to {} failed: {}", key, gang.job, b.node,
                        std::string(st.message())));
      }
      all_bound = false;
      ++failed;
      // The placement was never made: give the resources back; the pod is tried again.
      if (core::TaskInfo* t = cluster.FindTask(key);
          t != nullptr && t->node >= 0 && t->status == core::TaskStatus::kBinding) {
        cluster.UnplaceTask(*t, core::TaskStatus::kPending);
        if (!absl::IsNotFound(st)) {
          client::EventRecord e = client::EventRecord::AboutPod(b.ns, b.pod, b.pod_uid);
          e.type = "Warning";
          e.reason = "FailedScheduling";
          e.message =
              fmt::format("failed to bind to node {}: {}", b.node, std::string(st.message()));
          e.source_component = t->job >= 0 && IsDefaultSchedulerJob(cluster.job(t->job))
                                   ? kDefaultSchedulerName
                                   : options.event_source;
          events.Record(std::move(e));
        }
      }
    }
    if (all_bound) {
      placed.insert(gang.job);
      continue;
    }
    // The job's phase as the API knows it; the next cycle recomputes it.
    context.failed_jobs.insert(gang.job);
    if (core::JobInfo* j = cluster.FindJob(gang.job); j != nullptr && j->pg) {
      j->SetPhaseFromPodGroup();
    }
    backoff.Reset(gang.job);
  }
  if (metrics) metrics->CountBinds(bound, failed);
  std::lock_guard<std::mutex> lock(stats_mu);
  stats.pods_bound += bound;
  stats.bind_failures += failed;
}

void Scheduler::State::Write(const CycleWrites& writes) {
  uint64_t errors = 0, evicted = 0;
  auto refused = [&](const absl::Status& st, std::string_view what) {
    if (st.ok() || absl::IsNotFound(st)) return;
    ++errors;
    Log(fmt::format("{}: {}", what, std::string(st.message())));
  };
  for (const Eviction& e : writes.evictions) {
    const std::string key = e.ns + "/" + e.name;
    auto patched = client.Patch(client::Pods(), e.ns, e.name, client::PatchType::kStrategic,
                                e.status_patch, "status");
    if (!patched.ok() && absl::IsNotFound(patched.status())) continue;
    refused(patched.status(), "marking evicted pod " + key);
    client::DeleteOptions del;
    del.precondition_uid = e.uid;
    absl::Status st = client.Delete(client::Pods(), e.ns, e.name, del);
    if (st.ok()) {
      mirror.AssumeEvicted(key, e.uid);
      ++evicted;
    } else {
      refused(st, "evicting pod " + key);
      if (!absl::IsNotFound(st)) mirror.Reapply(key);
    }
  }
  PatchStatuses(writers, client, client::Pods(), client::PatchType::kStrategic, "status",
                writes.pod_conditions, [&](const PodConditionWrite& w, const auto& r) {
                  const std::string key = w.ns + "/" + w.name;
                  if (r.ok()) {
                    memo.pods[key] = {w.view, ResourceVersionOf(r)};
                  } else {
                    refused(r.status(), "updating the condition of pod " + key);
                  }
                });
  // A PodGroup's status goes with the object, as vc-scheduler writes it: Volcano's CRD has no
  // status subresource (muster's CRD neither, apiserver/descriptors/crds.h; muster's own server has
  // both).
  PatchStatuses(writers, client, client::PodGroups(), client::PatchType::kMerge, "",
                writes.pod_groups,
                [&](const PodGroupStatusWrite& w, const auto& r) {
                  const std::string key = w.ns + "/" + w.name;
                  if (r.ok()) {
                    memo.pod_groups[key] = {w.view, ResourceVersionOf(r)};
                  } else {
                    refused(r.status(), "updating the status of PodGroup " + key);
                  }
                });
  for (const QueueStatusWrite& w : PlanQueueStatus(mirror.cluster(), memo)) {
    auto r =
        client.Patch(client::Queues(), "", w.name, client::PatchType::kMerge, w.patch, "status");
    if (r.ok()) {
      memo.queues[w.name] = {w.view, ResourceVersionOf(r)};
    } else {
      refused(r.status(), "updating the status of queue " + w.name);
    }
  }
  for (const client::EventRecord& e : writes.events) events.Record(e);
  std::lock_guard<std::mutex> lock(stats_mu);
  stats.write_errors += errors;
  stats.evictions += evicted;
}

void Scheduler::State::WriteEstimates(int64_t now_unix, std::set<std::string>& planned) {
  uint64_t reloads;  // a reloaded configuration can move every answer, as a change can
  {
    std::lock_guard<std::mutex> lock(stats_mu);
    reloads = stats.conf_reloads;
  }
  for (const EstimateWrite& w :
       estimator.Plan(mirror.cluster(), conf.conf(), now_unix, mirror.Changes() + reloads)) {
    absl::Status st = client.PatchWithoutResult(client::PodGroups(), w.ns, w.name,
                                                client::PatchType::kMerge, w.Patch());
    if (st.ok()) {
      estimator.Written(w);
      planned.insert(w.ns + "/" + w.name);
    } else if (!absl::IsNotFound(st)) {
      Log(fmt::format("writing the estimated start of PodGroup {}/{}: {}", w.ns, w.name,
                      std::string(st.message())));
    }
  }
}

void Scheduler::State::UpdateBackoff(const core::CycleResult& result, const PlanContext& context,
                                     const std::set<std::string>& placed, Clock::time_point start) {
  core::Cluster& cluster = mirror.cluster();
  for (const std::string& job : placed) backoff.Succeeded(job);
  // Gangs waiting for victims to leave are making progress.
  std::set<std::string> progressing;
  auto job_of = [&](const std::string& pod) -> std::string {
    core::TaskInfo* t = cluster.FindTask(pod);
    return t != nullptr && t->job >= 0 ? cluster.job(t->job).key : "";
  };
  for (const auto& [pod, node] : result.pipelined) progressing.insert(job_of(pod));
  for (const auto& pg : result.pod_groups) {
    const std::string& key = pg.pod_group;
    if (placed.count(key) || context.failed_jobs.count(key) || progressing.count(key)) continue;
    const core::JobInfo* j = cluster.FindJob(key);
    if (j == nullptr || !j->pg) continue;
    if (j->Count(core::TaskStatus::kPending) > 0 || j->IsPending()) {
      backoff.Failed(key, start);
    }
  }
}

void Scheduler::State::RepairGangs() {
  for (const GangRepair& r : PlanGangRepairs(mirror.cluster(), options.scheduler_names)) {
    bool completed = false;
    if (r.complete) {
      auto outcome = client.BindAll(r.bindings);
      completed = outcome.ok();
      for (size_t i = 0; i < r.bindings.size(); ++i) {
        const client::Binding& b = r.bindings[i];
        absl::Status st = !outcome.ok() ? outcome.status() : (*outcome)[i];
        if (!st.ok()) {
          completed = false;
          Log(fmt::format("completing gang {}: binding {}/{} to {} failed: {}", r.job, b.ns, b.pod,
                          b.node, std::string(st.message())));
          continue;
        }
        auto gpus = b.annotations.find(api::kGpuIndicesAnnotation);
        mirror.AssumeBound(b.ns + "/" + b.pod, b.pod_uid, b.node,
                           gpus != b.annotations.end() ? gpus->second : std::string());
        mirror.Reapply(b.ns + "/" + b.pod);
      }
      if (completed) {
        Log(fmt::format("gang {} was left bound below minAvailable ({} of {}): completed its "
                        "recorded placement ({} more bound)",
                        r.job, r.bound, r.min_available, r.bindings.size()));
        std::lock_guard<std::mutex> lock(stats_mu);
        ++stats.gangs_completed;
        continue;
      }
    }
    Log(fmt::format("gang {} was left bound below minAvailable ({} of {}){}: deleting its bound "
                    "members so that it is placed again whole",
                    r.job, r.bound, r.min_available, r.why.empty() ? "" : " and " + r.why));
    for (const client::Binding& b : r.undo) {
      client::DeleteOptions del;
      del.precondition_uid = b.pod_uid;
      absl::Status st = client.Delete(client::Pods(), b.ns, b.pod, del);
      if (st.ok()) {
        mirror.AssumeEvicted(b.ns + "/" + b.pod, b.pod_uid);
        mirror.Reapply(b.ns + "/" + b.pod);
      } else if (!absl::IsNotFound(st)) {
        Log(fmt::format("undoing gang {}: deleting {}/{} failed: {}", r.job, b.ns, b.pod,
                        std::string(st.message())));
      }
    }
    dirty_jobs.insert(r.job);
    std::lock_guard<std::mutex> lock(stats_mu);
    ++stats.gangs_undone;
  }
}

}  // namespace muster::scheduler
