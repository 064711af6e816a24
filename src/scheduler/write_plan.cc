#include "scheduler/write_plan.h"

#include <charconv>
#include <cstdint>

#include "api/gpu_indices.h"
#include "api/time.h"
#include "boost/json/array.hpp"
#include "boost/json/object.hpp"
#include "boost/json/serialize.hpp"
#include "boost/json/value.hpp"
#include "core/podgroup_phase.h"
#include "core/resources.h"
#include "scheduler/cluster_mirror.h"

namespace muster::scheduler {
namespace {

namespace json = boost::json;

constexpr char kPodGroupApiVersion[] = "scheduling.volcano.sh/v1beta1";

const core::JobInfo* JobOfTask(const core::Cluster& cluster, const core::TaskInfo* t) {
  return t != nullptr && t->job >= 0 ? &cluster.job(t->job) : nullptr;
}

bool IsDefaultPod(const core::Cluster& cluster, const core::TaskInfo* t) {
  const core::JobInfo* j = JobOfTask(cluster, t);
  return j != nullptr && IsDefaultSchedulerJob(*j);
}

std::optional<uint64_t> ParseVersion(const std::string& v) {
  uint64_t out = 0;
  auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || ptr != v.data() + v.size() || v.empty()) return std::nullopt;
  return out;
}

template <typename Map>
void SawVersion(Map& map, const std::string& key, const std::string& resource_version) {
  auto it = map.find(key);
  if (it != map.end() && NewerVersion(resource_version, it->second.resource_version)) {
    map.erase(it);
  }
}

json::object ConditionJson(const api::Condition& c) {
  json::object o;
  o["type"] = c.type;
  o["status"] = c.status;
  if (!c.transition_id.empty()) o["transitionID"] = c.transition_id;
  if (!c.last_transition_time.empty()) o["lastTransitionTime"] = c.last_transition_time;
  if (!c.reason.empty()) o["reason"] = c.reason;
  if (!c.message.empty()) o["message"] = c.message;
  return o;
}

ConditionView ViewOf(const api::Condition& c) { return {c.type, c.status, c.reason, c.message}; }

// `conditions` with the Estimated condition as `estimates` says for `key`; one whose text is
// unchanged keeps its lastTransitionTime.
void ApplyEstimate(std::vector<api::Condition>& conditions, const std::string& key,
                   const std::map<std::string, GangEstimate>& estimates, const std::string& now) {
  std::optional<api::Condition> kept;
  for (auto it = conditions.begin(); it != conditions.end();) {
    if (it->type != kEstimatedCondition) {
      ++it;
      continue;
    }
    if (!kept) kept = *it;
    it = conditions.erase(it);
  }
  auto e = estimates.find(key);
  if (e == estimates.end() || e->second.reason.empty()) return;
  api::Condition cond = EstimateCondition(e->second);
  cond.last_transition_time =
      kept && ViewOf(*kept) == ViewOf(cond) ? kept->last_transition_time : now;
  conditions.push_back(std::move(cond));
}

std::map<std::string, int64_t> MilliMap(const core::Resources& r) {
  std::map<std::string, int64_t> out;
  for (core::ResourceId id = 0; id < r.Size(); ++id) {
    if (r.Get(id) != 0) out[core::ResourceNames::Name(id)] = r.Get(id);
  }
  return out;
}

client::EventRecord PodEvent(const core::TaskInfo& t, const std::string& type,
                             const std::string& reason, const std::string& message,
                             const std::string& source) {
  client::EventRecord e = client::EventRecord::AboutPod(t.ns, t.name, t.pod ? t.pod->meta.uid : "");
  e.type = type;
  e.reason = reason;
  e.message = message;
  e.source_component = source;
  return e;
}

// False when the same event was the last one recorded for the object.
bool NewEvent(WriteMemo& memo, const std::string& object, const std::string& reason,
              const std::string& message) {
  std::string text = reason + '\n' + message;
  auto [it, inserted] = memo.last_event.try_emplace(object, text);
  if (inserted) return true;
  if (it->second == text) return false;
  it->second = std::move(text);
  return true;
}

}  // namespace

api::Condition EstimateCondition(const GangEstimate& e) {
  api::Condition c;
  c.type = kEstimatedCondition;
  c.status = "True";
  if (e.start) {
    c.reason = "StartEstimated";
    c.message = e.reason + "; estimated start " + api::FormatUnixTime(*e.start);
  } else {
    c.reason = "NoEstimate";
    c.message = e.reason + "; no estimated start";
  }
  return c;
}

// --- binds -------------------------------------------------------------------------------------

std::vector<GangBinding> PlanBinds(const core::CycleResult& result, core::Cluster& cluster) {
  std::vector<GangBinding> gangs;
  std::unordered_map<std::string, size_t> index;
  core::Cluster& c = cluster;
  for (const auto& b : result.binds) {
    const core::TaskInfo* t = c.FindTask(b.pod);
    if (t == nullptr) continue;
    const core::JobInfo* j = JobOfTask(cluster, t);
    std::string job = j != nullptr ? j->key : b.pod;
    auto [it, inserted] = index.try_emplace(job, gangs.size());
    if (inserted) gangs.push_back({job, {}});
    client::Binding binding;
    binding.ns = t->ns;
    binding.pod = t->name;
    binding.node = b.node;
    binding.pod_uid = t->pod ? t->pod->meta.uid : "";
    if (!b.gpus.empty()) binding.annotations[api::kGpuIndicesAnnotation] = api::FormatGpuIndices(b.gpus);
    gangs[it->second].bindings.push_back(std::move(binding));
  }
  return gangs;
}

std::string KubeSchedulerMessage(const std::string& message) {
  // "<n>/<m> nodes are unavailable: ..." -> "<n>/<m> nodes are available: ..."
  static constexpr std::string_view kVolcano = " nodes are unavailable: ";
  size_t at = message.find(kVolcano);
  if (at == std::string::npos || at == 0) return message;
  std::string_view head(message.data(), at);
  size_t slash = head.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == head.size()) return message;
  for (size_t i = 0; i < head.size(); ++i) {
    if (i != slash && (head[i] < '0' || head[i] > '9')) return message;
  }
  return std::string(head) + " nodes are available: " + message.substr(at + kVolcano.size());
}

// --- views -------------------------------------------------------------------------------------

PodGroupStatusView ViewOf(const api::PodGroupStatus& status) {
  PodGroupStatusView v;
  v.phase = status.phase;
  v.running = status.running;
  v.succeeded = status.succeeded;
  v.failed = status.failed;
  for (const auto& c : status.conditions) v.conditions.push_back(ViewOf(c));
  return v;
}

std::optional<PodScheduledView> PodScheduledOf(const api::Pod& pod) {
  for (const auto& c : pod.status.conditions) {
    if (c.type == "PodScheduled") {
      return PodScheduledView{c.status, c.reason, c.message, pod.status.nominated_node_name};
    }
  }
  return std::nullopt;
}

QueueStatusView ViewOf(const api::QueueStatus& status) {
  QueueStatusView v;
  v.pending = status.pending;
  v.running = status.running;
  v.inqueue = status.inqueue;
  v.unknown = status.unknown;
  v.completed = status.completed;
  for (const auto& [name, q] : status.allocated) {
    if (q.MilliValue() != 0) v.allocated[name] = q.MilliValue();
  }
  return v;
}

// --- memo --------------------------------------------------------------------------------------

bool NewerVersion(const std::string& a, const std::string& b) {
  auto va = ParseVersion(a);
  auto vb = ParseVersion(b);
  if (!va || !vb) return true;
  return *va > *vb;
}

void WriteMemo::SawPod(const std::string& key, const std::string& resource_version) {
  SawVersion(pods, key, resource_version);
}
void WriteMemo::SawPodGroup(const std::string& key, const std::string& resource_version) {
  SawVersion(pod_groups, key, resource_version);
}
void WriteMemo::SawQueue(const std::string& name, const std::string& resource_version) {
  SawVersion(queues, name, resource_version);
}
void WriteMemo::ForgetPod(const std::string& key) {
  pods.erase(key);
  last_event.erase("Pod " + key);
}
void WriteMemo::ForgetPodGroup(const std::string& key) {
  pod_groups.erase(key);
  last_event.erase("PodGroup " + key);
}

// --- status, evictions and events --------------------------------------------------------------

CycleWrites PlanWrites(const core::CycleResult& result, core::Cluster& cluster,
                       const PlanContext& context, WriteMemo& memo) {
  core::Cluster& c = cluster;
  CycleWrites out;

  // Evictions.
  for (const auto& e : result.evictions) {
    const core::TaskInfo* t = c.FindTask(e.pod);
    if (t == nullptr) continue;
    std::string message = "Pod is evicted, because of " + e.reason;
    json::object ready{{"type", "Ready"},          {"status", "False"},
                       {"reason", "Evict"},        {"message", message},
                       {"lastProbeTime", nullptr}, {"lastTransitionTime", context.now}};
    json::object patch{{"status", json::object{{"conditions", json::array{ready}}}}};
    out.evictions.push_back(
        {t->ns, t->name, t->pod ? t->pod->meta.uid : "", e.reason, json::serialize(patch)});
  }

  // Pod conditions.
  for (const auto& pc : result.pod_conditions) {
    if (context.bound.count(pc.pod)) continue;
    const core::TaskInfo* t = c.FindTask(pc.pod);
    if (t == nullptr || !t->pod) continue;
    const core::JobInfo* j = JobOfTask(cluster, t);
    if (j != nullptr && context.failed_jobs.count(j->key)) continue;
    std::string message = pc.message;
    if (IsDefaultPod(cluster, t)) {
      // kube-scheduler states fit errors only; a pod held for resources being released is, to
      // it, still a pod that does not fit, and it nominates no node for it.
      message = KubeSchedulerMessage(pc.message);
      if (message == pc.message) continue;
    }
    PodScheduledView want{"False", pc.reason, message,
                          IsDefaultPod(cluster, t) ? std::string() : pc.nominated_node};
    std::optional<PodScheduledView> have = PodScheduledOf(*t->pod);
    if (want.nominated_node.empty() && have) want.nominated_node = have->nominated_node;
    if (have && *have == want) continue;
    if (auto m = memo.pods.find(pc.pod); m != memo.pods.end() && m->second.view == want) continue;
    json::object cond{{"type", "PodScheduled"},   {"status", "False"},
                      {"reason", want.reason},    {"message", want.message},
                      {"lastProbeTime", nullptr}, {"lastTransitionTime", context.now}};
    json::object status{{"conditions", json::array{cond}}};
    if (!want.nominated_node.empty()) status["nominatedNodeName"] = want.nominated_node;
    json::object patch{{"status", std::move(status)}};
    out.pod_conditions.push_back({t->ns, t->name, json::serialize(patch), std::move(want)});
  }

  // PodGroup status: the groups the cycle reported, and those whose pods changed.
  std::map<std::string, const core::CycleResult::PodGroupStatus*> reported;
  for (const auto& pg : result.pod_groups) reported[pg.pod_group] = &pg;
  std::set<std::string> jobs = context.dirty_jobs;
  for (const auto& [key, pg] : reported) jobs.insert(key);
  for (const std::string& key : jobs) {
    if (context.failed_jobs.count(key)) continue;
    const core::JobInfo* j = c.FindJob(key);
    if (j == nullptr || !j->pg || IsDefaultSchedulerJob(*j) || j->PhaseText().empty()) continue;
    std::vector<api::Condition> conditions = j->pg->status.conditions;
    auto r = reported.find(key);
    if (r != reported.end() && r->second->condition) {
      api::Condition cond = *r->second->condition;
      cond.last_transition_time = context.now;
      bool found = false;
      for (auto& existing : conditions) {
        if (existing.type != cond.type) continue;
        found = true;
        if (!(ViewOf(existing) == ViewOf(cond))) existing = cond;
      }
      if (!found) conditions.push_back(cond);
    }
    if (context.estimates) ApplyEstimate(conditions, key, *context.estimates, context.now);
    PodGroupStatusView want;
    want.phase = j->PhaseText();
    want.running = j->Count(core::TaskStatus::kRunning);
    want.succeeded = j->Count(core::TaskStatus::kSucceeded);
    want.failed = j->Count(core::TaskStatus::kFailed);
    for (const auto& cond : conditions) want.conditions.push_back(ViewOf(cond));
    if (ViewOf(j->pg->status) == want) continue;
    if (auto m = memo.pod_groups.find(key); m != memo.pod_groups.end() && m->second.view == want) {
      continue;
    }
    json::array conds;
    for (const auto& cond : conditions) conds.push_back(ConditionJson(cond));
    json::object status{{"phase", want.phase},
                        {"conditions", std::move(conds)},
                        {"running", want.running},
                        {"succeeded", want.succeeded},
                        {"failed", want.failed}};
    json::object patch{{"status", std::move(status)}};
    out.pod_groups.push_back({j->ns, j->name, json::serialize(patch), std::move(want)});
  }

  // Events.
  for (const auto& e : result.events) {
    if (e.kind == "Pod") {
      const core::TaskInfo* t = c.FindTask(e.object);
      if (t == nullptr) continue;
      bool kube = IsDefaultPod(cluster, t);
      std::string source = kube ? kDefaultSchedulerName : context.source;
      std::string message = e.message;
      if (e.reason == "Scheduled") {
        if (!context.bound.count(e.object)) continue;
      } else if (e.reason == "FailedScheduling") {
        if (context.bound.count(e.object)) continue;
        const core::JobInfo* j = JobOfTask(cluster, t);
        if (j != nullptr && context.failed_jobs.count(j->key)) continue;
        if (kube) {
          message = KubeSchedulerMessage(message);
          if (message == e.message) continue;  // not a fit error (see the conditions above)
        }
      }
      if (e.reason != "Evict" && !NewEvent(memo, "Pod " + e.object, e.reason, message)) continue;
      out.events.push_back(PodEvent(*t, e.type, e.reason, message, source));
    } else if (e.kind == "PodGroup") {
      const core::JobInfo* j = c.FindJob(e.object);
      if (j == nullptr || !j->pg || IsDefaultSchedulerJob(*j)) continue;
      if (context.failed_jobs.count(e.object)) continue;
      if (!NewEvent(memo, "PodGroup " + e.object, e.reason, e.message)) continue;
      client::EventRecord ev;
      ev.involved_api_version = kPodGroupApiVersion;
      ev.involved_kind = "PodGroup";
      ev.involved_namespace = j->ns;
      ev.involved_name = j->name;
      ev.involved_uid = j->pg->meta.uid;
      ev.type = e.type;
      ev.reason = e.reason;
      ev.message = e.message;
      ev.source_component = context.source;
      out.events.push_back(std::move(ev));
    }
  }
  return out;
}

std::vector<QueueStatusWrite> PlanQueueStatus(const core::Cluster& cluster, const WriteMemo& memo) {
  struct Tally {
    QueueStatusView view;
    core::Resources allocated;
    int64_t pods = 0;  // tasks in allocated statuses: Volcano's Resreq counts one `pods` each
  };
  std::map<std::string, Tally> tallies;
  static constexpr char kRootQueueName[] = "root";
  // Volcano's updateQueueStatus: where a root queue exists, a queue's allocated counts what its
  // descendants hold too (a queue without spec.parent is root's child).
  std::map<std::string, std::string> parent_of;
  bool has_root = false;
  for (int id : cluster.QueueIds()) {
    const core::QueueInfo& q = cluster.queue(id);
    if (!q.queue) continue;
    has_root = has_root || q.name == kRootQueueName;
    if (q.name != kRootQueueName) parent_of[q.name] = q.parent.empty() ? kRootQueueName : q.parent;
  }
  for (int id : cluster.JobIds()) {
    const core::JobInfo& j = cluster.job(id);
    if (!j.pg || IsDefaultSchedulerJob(j)) continue;
    const int64_t pods = j.Count(core::TaskStatus::kAllocated) +
                         j.Count(core::TaskStatus::kBinding) + j.Count(core::TaskStatus::kBound) +
                         j.Count(core::TaskStatus::kRunning);
    if (has_root) {
      std::string at = j.queue_name;
      // At most one step per queue: a cycle of parents (refused on write) cannot loop here.
      for (size_t step = 0; step < parent_of.size(); ++step) {
        auto it = parent_of.find(at);
        if (it == parent_of.end()) break;
        at = it->second;
        tallies[at].allocated.Add(j.allocated);
        tallies[at].pods += pods;
        if (at == kRootQueueName) break;
      }
    }
    Tally& t = tallies[j.queue_name];
    switch (j.phase) {
      case core::PodGroupPhase::kPending:
        ++t.view.pending;
        break;
      case core::PodGroupPhase::kRunning:
        ++t.view.running;
        break;
      case core::PodGroupPhase::kInqueue:
        ++t.view.inqueue;
        break;
      case core::PodGroupPhase::kUnknown:
        ++t.view.unknown;
        break;
      case core::PodGroupPhase::kCompleted:
        ++t.view.completed;
        break;
      case core::PodGroupPhase::kOther:  // a text Volcano's queue status has no count for
        break;
    }
    t.allocated.Add(j.allocated);
    t.pods += pods;
  }
  std::vector<QueueStatusWrite> out;
  for (int id : cluster.QueueIds()) {
    const core::QueueInfo& q = cluster.queue(id);
    if (!q.queue || q.name == kDefaultQueueName) continue;
    Tally& t = tallies[q.name];
    QueueStatusView want = t.view;
    want.allocated = MilliMap(t.allocated);
    if (t.pods != 0) want.allocated["pods"] = t.pods * 1000;
    if (ViewOf(q.queue->status) == want) continue;
    if (auto m = memo.queues.find(q.name); m != memo.queues.end() && m->second.view == want) {
      continue;
    }
    json::object allocated;
    for (const auto& [name, milli] : want.allocated) {
      allocated[name] = common::Quantity::FromMilli(milli).ToString();
    }
    for (const auto& [name, quantity] : q.queue->status.allocated) {
      if (!want.allocated.count(name)) allocated[name] = nullptr;  // merge patch: remove
    }
    json::object status{{"pending", want.pending},     {"running", want.running},
                        {"inqueue", want.inqueue},     {"unknown", want.unknown},
                        {"completed", want.completed}, {"allocated", std::move(allocated)}};
    json::object patch{{"status", std::move(status)}};
    out.push_back({q.name, json::serialize(patch), std::move(want)});
  }
  return out;
}

}  // namespace muster::scheduler
