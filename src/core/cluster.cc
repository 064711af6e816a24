#include "core/cluster.h"

#include <algorithm>
#include <cctype>

#include "api/time.h"
#include "common/go_duration.h"

namespace muster::core {
namespace {

// Kubernetes' effective request of one container: requests, with limits standing in for any
// resource that has a limit but no request (API defaulting does the same).
Resources ContainerRequests(const api::Container& c) {
  api::ResourceList merged = c.resources.requests;
  for (const auto& [name, q] : c.resources.limits) merged.emplace(name, q);
  return Resources::FromList(merged);
}

int64_t TrailingNumber(const std::string& name) {
  size_t i = name.size();
  while (i > 0 && std::isdigit(static_cast<unsigned char>(name[i - 1]))) --i;
  if (i == name.size() || name.size() - i > 18) return -1;
  return std::stoll(name.substr(i));
}

std::string LabelOrAnnotation(const api::ObjectMeta& m, const char* key) {
  if (auto it = m.labels.find(key); it != m.labels.end()) return it->second;
  if (auto it = m.annotations.find(key); it != m.annotations.end()) return it->second;
  return "";
}

TaskStatus StatusFromPod(const api::Pod& pod) {
  const std::string& phase = pod.status.phase;
  if (phase == "Succeeded") return TaskStatus::kSucceeded;
  if (phase == "Failed") return TaskStatus::kFailed;
  // A pod in phase Unknown (its node stopped reporting) still holds what it asked for there.
  if (phase == "Unknown") return TaskStatus::kUnknown;
  // A pod reported Running counts as running even where it names no node (Volcano's
  // getTaskStatus): its pod group keeps the members it has and stays Running, and the pod is
  // not placed again. It occupies no node, as there is none to account it on.
  if (phase == "Running" && pod.spec.node_name.empty()) {
    return pod.meta.deletion_timestamp.empty() ? TaskStatus::kRunning : TaskStatus::kReleasing;
  }
  if (pod.spec.node_name.empty()) return TaskStatus::kPending;
  if (!pod.meta.deletion_timestamp.empty()) return TaskStatus::kReleasing;
  if (phase == "Running") return TaskStatus::kRunning;
  return TaskStatus::kBound;
}

// The devices a bound pod was given, as the scheduler records them on the pod
// (annotation muster.dev/gpu-indices: "0,3"); empty when absent or malformed.
std::vector<int> GpuIndicesFromAnnotation(const api::Pod& pod) {
  auto it = pod.meta.annotations.find(kGpuIndicesAnnotation);
  if (it == pod.meta.annotations.end()) return {};
  return api::ParseGpuIndices(it->second).value_or(std::vector<int>());
}

Resources RawPodRequests(const api::Pod& pod) {
  Resources sum;
  for (const auto& c : pod.spec.containers) sum.Add(ContainerRequests(c));
  for (const auto& c : pod.spec.init_containers) sum.Max(ContainerRequests(c));
  sum.Add(Resources::FromList(pod.spec.overhead));
  return sum;
}

ResourceId GpuShareId() {
  static const ResourceId id = ResourceNames::Id(kGpuShareResource);
  return id;
}

// The share in `r` (raw requests) in milli of one device, or 0 when it is not a share.
int64_t ShareOf(const Resources& r) {
  int64_t v = r.Get(GpuShareId());  // thousandths of the written value
  if (v <= 0 || v % 1000 != 0 || r.Get(kGpu) > 0) return 0;
  int64_t milli = v / 1000;
  return milli < 1000 ? milli : 0;
}

}  // namespace

Resources PodRequests(const api::Pod& pod) {
  Resources sum = RawPodRequests(pod);
  if (int64_t share = ShareOf(sum); share > 0) {
    sum.Set(GpuShareId(), 0);
    sum.Set(kGpu, share);
  }
  return sum;
}

int64_t PodGpuShare(const api::Pod& pod) { return ShareOf(RawPodRequests(pod)); }

const char* TaskStatusName(TaskStatus s) {
  static constexpr const char* kNames[] = {"Pending", "Allocated", "Pipelined", "Binding",
                                           "Bound",   "Running",   "Releasing", "Succeeded",
                                           "Failed",  "Unknown"};
  return kNames[static_cast<int>(s)];
}

bool IsAllocatedStatus(TaskStatus s) {
  return s == TaskStatus::kAllocated || s == TaskStatus::kBinding || s == TaskStatus::kBound ||
         s == TaskStatus::kRunning;
}

bool OccupiesNode(TaskStatus s) {
  return IsAllocatedStatus(s) || s == TaskStatus::kReleasing || s == TaskStatus::kUnknown;
}

int NodeInfo::FreeGpus() const {
  int n = 0;
  for (const auto& g : gpus) n += g.IsFree() ? 1 : 0;
  return n;
}

bool NodeInfo::GpuDevicesFit(const TaskInfo& t) const {
  if (t.gpu_share > 0) {
    return std::any_of(gpus.begin(), gpus.end(),
                       [&](const GpuDevice& g) { return g.FreeMilli() >= t.gpu_share; });
  }
  if (shared_devices == 0) return true;
  return FreeGpus() >= (t.resreq.Get(kGpu) + 999) / 1000;
}

int JobInfo::ReadyTaskNum() const {
  return Count(TaskStatus::kBound) + Count(TaskStatus::kBinding) + Count(TaskStatus::kRunning) +
         Count(TaskStatus::kAllocated) + Count(TaskStatus::kSucceeded);
}

int JobInfo::ValidTaskNum() const {
  return Count(TaskStatus::kPending) + Count(TaskStatus::kPipelined) + ReadyTaskNum();
}

Cluster::Cluster() { EnsureDefaultQueue(); }

namespace {
template <typename T>
void CopyOwned(const std::vector<std::unique_ptr<T>>& from, std::vector<std::unique_ptr<T>>& to) {
  to.clear();
  to.reserve(from.size());
  for (const auto& p : from) to.push_back(p ? std::make_unique<T>(*p) : nullptr);
}
}  // namespace

std::unique_ptr<Cluster> Cluster::Clone() const {
  auto c = std::make_unique<Cluster>();
  CopyOwned(tasks_, c->tasks_);
  CopyOwned(nodes_, c->nodes_);
  CopyOwned(jobs_, c->jobs_);
  CopyOwned(queues_, c->queues_);
  c->task_index_ = task_index_;
  c->node_index_ = node_index_;
  c->job_index_ = job_index_;
  c->queue_index_ = queue_index_;
  c->free_tasks_ = free_tasks_;
  c->node_order_ = node_order_;
  c->job_order_ = job_order_;
  c->total_allocatable_ = total_allocatable_;
  c->total_used_ = total_used_;
  c->anti_affinity_tasks_ = anti_affinity_tasks_;
  c->priority_classes_ = priority_classes_;
  c->default_priority_ = default_priority_;
  c->waiting_for_node_ = waiting_for_node_;
  c->default_queue_declared_ = default_queue_declared_;
  c->label_columns_ = label_columns_;
  c->taint_sets_ = taint_sets_;
  c->taint_set_ids_ = taint_set_ids_;
  c->seq_ = seq_;
  c->node_changes_ = node_changes_;
  c->hyper_nodes_ = hyper_nodes_;
  c->topology_ = topology_;
  c->topology_dirty_ = topology_dirty_;
  return c;
}

void Cluster::EnsureDefaultQueue() {
  if (queue_index_.count("default")) return;
  auto q = std::make_unique<QueueInfo>();
  q->id = static_cast<int>(queues_.size());
  q->name = "default";
  queue_index_["default"] = q->id;
  queues_.push_back(std::move(q));
}

// --- nodes ----------------------------------------------------------------------------------

void Cluster::UpsertNode(const api::Node& api_node) {
  const std::string& name = api_node.meta.name;
  NodeInfo* n = FindNode(name);
  bool is_new = n == nullptr;
  if (is_new) {
    auto owned = std::make_unique<NodeInfo>();
    owned->id = static_cast<int>(nodes_.size());
    owned->name = name;
    n = owned.get();
    node_index_[name] = n->id;
    nodes_.push_back(std::move(owned));
    auto pos = std::lower_bound(node_order_.begin(), node_order_.end(), name,
                                [&](int id, const std::string& v) { return nodes_[id]->name < v; });
    node_order_.insert(pos, n->id);
  }
  ++n->version;
  ++node_changes_;
  if (!is_new && n->ready) total_allocatable_.Sub(n->allocatable);
  if (n->node) IndexNodeLabels(*n, false);
  n->node = std::make_shared<const api::Node>(api_node);
  IndexNodeLabels(*n, true);
  std::string taints_key;
  for (const api::Taint& t : api_node.spec.taints) {
    for (const std::string* part : {&t.key, &t.value, &t.effect}) {
      taints_key += std::to_string(part->size());
      taints_key += ':';
      taints_key += *part;
    }
  }
  auto [taints_it, taints_new] =
      taint_set_ids_.try_emplace(std::move(taints_key), static_cast<int>(taint_sets_.size()));
  if (taints_new) taint_sets_.push_back(api_node.spec.taints);
  n->taint_set = taints_it->second;
  const api::ResourceList& alloc =
      api_node.status.allocatable.empty() ? api_node.status.capacity : api_node.status.allocatable;
  Resources new_alloc = Resources::FromList(alloc);
  // Keep the occupied amount; recompute idle from the new allocatable.
  n->idle = new_alloc;
  n->idle.Sub(n->used);
  n->allocatable = new_alloc;
  if (auto it = alloc.find("pods"); it != alloc.end()) {
    n->max_pods = static_cast<int>(it->second.Value());
  }
  n->unschedulable = api_node.spec.unschedulable;
  n->has_prefer_no_schedule_taint = std::any_of(
      api_node.spec.taints.begin(), api_node.spec.taints.end(),
      [](const api::Taint& t) { return t.effect == "PreferNoSchedule"; });
  n->ready = true;
  for (const auto& c : api_node.status.conditions) {
    if (c.type == "Ready") n->ready = c.status == "True";
  }
  if (n->ready) total_allocatable_.Add(n->allocatable);
  // GPU devices: one per whole nvidia.com/gpu; holders survive a resize where they fit.
  int gpu_count = static_cast<int>(new_alloc.Get(kGpu) / 1000);
  std::string model;
  int64_t memory = 0;
  if (auto it = api_node.meta.labels.find("nvidia.com/gpu.product");
      it != api_node.meta.labels.end()) {
    model = it->second;
  }
  if (auto it = api_node.meta.labels.find("nvidia.com/gpu.memory");
      it != api_node.meta.labels.end()) {
    memory = std::atoll(it->second.c_str());
  }
  std::vector<GpuDevice> gpus(gpu_count);
  n->shared_devices = 0;
  for (int i = 0; i < gpu_count; ++i) {
    gpus[i] = i < static_cast<int>(n->gpus.size()) ? n->gpus[i] : GpuDevice{};
    gpus[i].index = i;
    gpus[i].model = model;
    gpus[i].memory_mib = memory;
    n->shared_devices += gpus[i].shared_milli > 0 ? 1 : 0;
  }
  n->gpus = std::move(gpus);
  if (is_new) {
    auto it = waiting_for_node_.find(name);
    if (it != waiting_for_node_.end()) {
      std::vector<int> waiting = std::move(it->second);
      waiting_for_node_.erase(it);
      for (int tid : waiting) {
        TaskInfo& t = *tasks_[tid];
        if (t.node < 0 && OccupiesNode(t.status)) {
          TaskStatus s = t.status;
          IndexStatus(t, s, -1);
          t.status = TaskStatus::kPending;
          IndexStatus(t, t.status, +1);
          PlaceTask(t, n->id, s);
        }
      }
    }
  }
}

void Cluster::RemoveNode(const std::string& name) {
  NodeInfo* n = FindNode(name);
  if (!n) return;
  std::vector<int> on_node = n->tasks;
  for (int tid : on_node) {
    TaskInfo& t = *tasks_[tid];
    TaskStatus s = t.status;
    UnplaceTask(t, TaskStatus::kPending);
    SetStatus(t, s);
    waiting_for_node_[name].push_back(tid);
  }
  if (n->ready) total_allocatable_.Sub(n->allocatable);
  IndexNodeLabels(*n, false);
  node_order_.erase(std::find(node_order_.begin(), node_order_.end(), n->id));
  node_index_.erase(name);
  nodes_[n->id].reset();
  ++node_changes_;
}

void Cluster::IndexNodeLabels(const NodeInfo& n, bool add) {
  topology_dirty_ = true;  // a node came, went or changed its labels
  for (const auto& [key, value] : n.node->meta.labels) {
    LabelColumn& col = label_columns_[key];
    if (!add) {
      if (n.id < static_cast<int>(col.by_node.size())) col.by_node[n.id] = -1;
      continue;
    }
    auto [it, inserted] = col.ids.try_emplace(value, static_cast<int>(col.values.size()));
    if (inserted) col.values.push_back(value);
    if (n.id >= static_cast<int>(col.by_node.size())) col.by_node.resize(n.id + 1, -1);
    col.by_node[n.id] = it->second;
  }
}

const LabelColumn* Cluster::FindLabelColumn(const std::string& key) const {
  auto it = label_columns_.find(key);
  return it == label_columns_.end() ? nullptr : &it->second;
}

// --- accounting -----------------------------------------------------------------------------

void Cluster::IndexStatus(TaskInfo& t, TaskStatus status, int sign) {
  if (t.job < 0) return;
  JobInfo& j = *jobs_[t.job];
  j.count[static_cast<int>(status)] += sign;
  if (status == TaskStatus::kPending && t.best_effort) j.pending_best_effort += sign;
  if (IsAllocatedStatus(status)) {
    if (sign > 0) j.allocated.Add(t.resreq); else j.allocated.Sub(t.resreq);
  }
}

void Cluster::AccountOnNode(TaskInfo& t, NodeInfo& n, TaskStatus status, int sign) {
  ++n.version;
  ++node_changes_;
  const Resources& r = t.resreq;
  auto apply = [&](Resources& target, bool add) {
    bool plus = (sign > 0) == add;
    if (plus) target.Add(r); else target.Sub(r);
    if (&target == &n.used) {
      if (plus) total_used_.Add(r); else total_used_.Sub(r);
    }
  };
  switch (status) {
    case TaskStatus::kPipelined:
      apply(n.pipelined, true);
      break;
    case TaskStatus::kReleasing:
      apply(n.releasing, true);
      apply(n.used, true);
      apply(n.idle, false);
      n.releasing_pods += sign;
      break;
    default:
      if (OccupiesNode(status)) {
        apply(n.used, true);
        apply(n.idle, false);
      }
      break;
  }
}

void Cluster::PlaceTask(TaskInfo& t, int node_id, TaskStatus status) {
  NodeInfo& n = *nodes_[node_id];
  IndexStatus(t, t.status, -1);
  t.status = status;
  t.node = node_id;
  IndexStatus(t, t.status, +1);
  n.tasks.push_back(t.id);
  n.pod_count++;
  AccountOnNode(t, n, status, +1);
  if (status != TaskStatus::kPipelined) TakeGpus(t, n);
}

void Cluster::TakeGpus(TaskInfo& t, NodeInfo& n) {
  // Devices recorded on the pod (a reload from the API) are kept while they can take it.
  bool usable = !t.gpus.empty() && (t.gpu_share == 0 || t.gpus.size() == 1);
  for (int g : t.gpus) {
    usable = usable && g >= 0 && g < static_cast<int>(n.gpus.size()) &&
             (t.gpu_share > 0 ? n.gpus[g].FreeMilli() >= t.gpu_share : n.gpus[g].IsFree());
  }
  if (!usable) t.gpus = ChooseGpus(t, n);
  HoldGpus(t, n, +1);
}

void Cluster::HoldGpus(TaskInfo& t, NodeInfo& n, int sign) {
  for (int g : t.gpus) {
    if (g < 0 || g >= static_cast<int>(n.gpus.size())) continue;
    GpuDevice& d = n.gpus[g];
    if (t.gpu_share == 0) {
      if (sign > 0) d.holder = t.id;
      else if (d.holder == t.id) d.holder = -1;
      continue;
    }
    bool was_shared = d.shared_milli > 0;
    d.shared_milli = std::max<int64_t>(d.shared_milli + sign * t.gpu_share, 0);
    n.shared_devices += (d.shared_milli > 0 ? 1 : 0) - (was_shared ? 1 : 0);
  }
}

void Cluster::UnplaceTask(TaskInfo& t, TaskStatus status) {
  if (t.node < 0) {
    SetStatus(t, status);
    return;
  }
  NodeInfo& n = *nodes_[t.node];
  AccountOnNode(t, n, t.status, -1);
  // A pipelined task holds no device yet.
  if (t.status != TaskStatus::kPipelined) HoldGpus(t, n, -1);
  t.gpus.clear();
  auto it = std::find(n.tasks.begin(), n.tasks.end(), t.id);
  if (it != n.tasks.end()) n.tasks.erase(it);
  n.pod_count--;
  IndexStatus(t, t.status, -1);
  t.status = status;
  t.node = -1;
  IndexStatus(t, t.status, +1);
}

void Cluster::SetStatus(TaskInfo& t, TaskStatus status) {
  if (t.node >= 0) {
    NodeInfo& n = *nodes_[t.node];
    AccountOnNode(t, n, t.status, -1);
    AccountOnNode(t, n, status, +1);
    if (t.status == TaskStatus::kPipelined && status != TaskStatus::kPipelined) TakeGpus(t, n);
  }
  IndexStatus(t, t.status, -1);
  t.status = status;
  IndexStatus(t, t.status, +1);
}

bool Cluster::GpuDevicesFitOnceReleased(const TaskInfo& t, const NodeInfo& n) const {
  if (t.gpu_share == 0 && n.shared_devices == 0) return true;
  std::vector<int64_t> free(n.gpus.size());
  for (size_t g = 0; g < n.gpus.size(); ++g) free[g] = n.gpus[g].FreeMilli();
  for (int id : n.tasks) {
    const TaskInfo& o = *tasks_[id];
    if (o.status != TaskStatus::kReleasing) continue;
    for (int g : o.gpus) {
      if (g < 0 || g >= static_cast<int>(free.size())) continue;
      free[g] = std::min<int64_t>(free[g] + (o.gpu_share > 0 ? o.gpu_share : 1000), 1000);
    }
  }
  if (t.gpu_share > 0) {
    return std::any_of(free.begin(), free.end(), [&](int64_t f) { return f >= t.gpu_share; });
  }
  return std::count(free.begin(), free.end(), 1000) >= (t.resreq.Get(kGpu) + 999) / 1000;
}

std::vector<int> Cluster::ChooseGpus(const TaskInfo& t, const NodeInfo& n) const {
  if (t.gpu_share > 0) {
    const GpuDevice* best = nullptr;
    for (const auto& g : n.gpus) {
      if (g.FreeMilli() >= t.gpu_share && (!best || g.FreeMilli() < best->FreeMilli())) best = &g;
    }
    if (!best) return {};
    return {best->index};
  }
  int64_t want = (t.resreq.Get(kGpu) + 999) / 1000;
  std::vector<int> out;
  for (const auto& g : n.gpus) {
    if (static_cast<int64_t>(out.size()) >= want) break;
    if (g.IsFree()) out.push_back(g.index);
  }
  return out;
}

// --- pods -----------------------------------------------------------------------------------

void Cluster::UpsertPod(const api::Pod& pod) {
  std::string key = pod.meta.namespace_ + "/" + pod.meta.name;
  auto it = task_index_.find(key);
  TaskInfo* t;
  std::vector<int> kept_gpus;
  int old_job = -1;
  if (it == task_index_.end()) {
    int id;
    if (!free_tasks_.empty()) {
      id = free_tasks_.back();
      free_tasks_.pop_back();
      tasks_[id] = std::make_unique<TaskInfo>();
    } else {
      id = static_cast<int>(tasks_.size());
      tasks_.push_back(std::make_unique<TaskInfo>());
    }
    t = tasks_[id].get();
    t->id = id;
    t->seq = seq_++;
    task_index_[key] = id;
  } else {
    t = tasks_[it->second].get();
    // Drop the old placement and job membership; the new version re-adds both. A pod that stays
    // on its node keeps the devices it was given.
    if (t->node >= 0 && nodes_[t->node]->name == pod.spec.node_name) kept_gpus = t->gpus;
    if (t->node >= 0) UnplaceTask(*t, TaskStatus::kPending);
    old_job = t->job;
    DetachTask(*t);
    auto w = waiting_for_node_.find(t->pod->spec.node_name);
    if (w != waiting_for_node_.end()) {
      std::erase(w->second, t->id);
    }
  }
  t->pod = std::make_shared<const api::Pod>(pod);
  t->ns = pod.meta.namespace_;
  t->name = pod.meta.name;
  t->key = key;
  t->uid = pod.meta.uid.empty() ? pod.meta.namespace_ + "-" + pod.meta.name : pod.meta.uid;
  t->group = "";
  if (auto a = pod.meta.annotations.find(api::kGroupNameAnnotation);
      a != pod.meta.annotations.end()) {
    t->group = a->second;
  }
  t->role = LabelOrAnnotation(pod.meta, api::kTaskSpecKey);
  t->preemptable = LabelOrAnnotation(pod.meta, api::kPreemptableKey) != "false";
  t->resreq = PodRequests(pod);
  t->gpu_share = PodGpuShare(pod);
  t->best_effort = t->resreq.IsEmpty();
  t->priority = pod.spec.priority.value_or(1);
  t->preempt_never = pod.spec.preemption_policy == "Never";
  t->critical = pod.meta.namespace_ == "kube-system" ||
                pod.spec.priority_class_name == "system-cluster-critical" ||
                pod.spec.priority_class_name == "system-node-critical";
  t->name_index = TrailingNumber(pod.meta.name);
  t->expected_runtime = -1;
  if (auto a = pod.meta.annotations.find(kExpectedRuntimeAnnotation);
      a != pod.meta.annotations.end()) {
    absl::StatusOr<double> d = common::ParseGoDurationSeconds(a->second);
    if (d.ok() && *d >= 0) t->expected_runtime = *d;
  }
  t->start_unix = 0;
  if (!pod.status.start_time.empty()) {
    t->start_unix = api::ParseUnixTime(pod.status.start_time).value_or(0);
  }
  if (pod.spec.affinity && pod.spec.affinity->pod_anti_affinity &&
      !pod.spec.affinity->pod_anti_affinity->required.empty()) {
    anti_affinity_tasks_.insert(t->id);
  } else {
    anti_affinity_tasks_.erase(t->id);
  }
  t->gpus = GpuIndicesFromAnnotation(pod);
  if (t->gpus.empty()) t->gpus = std::move(kept_gpus);
  t->status = TaskStatus::kPending;
  t->node = -1;
  AttachTask(*t);
  if (old_job >= 0 && old_job != t->job) ForgetJobIfUnused(old_job);
  TaskStatus s = StatusFromPod(pod);
  if (OccupiesNode(s) && !pod.spec.node_name.empty()) {
    NodeInfo* n = FindNode(pod.spec.node_name);
    if (n) {
      PlaceTask(*t, n->id, s);
    } else {
      SetStatus(*t, s);
      waiting_for_node_[pod.spec.node_name].push_back(t->id);
    }
  } else {
    SetStatus(*t, s);
  }
}

void Cluster::RemovePod(const std::string& ns, const std::string& name) {
  auto it = task_index_.find(ns + "/" + name);
  if (it == task_index_.end()) return;
  TaskInfo& t = *tasks_[it->second];
  if (t.node >= 0) UnplaceTask(t, TaskStatus::kPending);
  if (t.pod) {
    auto w = waiting_for_node_.find(t.pod->spec.node_name);
    if (w != waiting_for_node_.end()) std::erase(w->second, t.id);
  }
  int job = t.job;
  DetachTask(t);
  anti_affinity_tasks_.erase(t.id);
  free_tasks_.push_back(t.id);
  task_index_.erase(it);
  tasks_[t.id].reset();
  if (job >= 0) ForgetJobIfUnused(job);
}

void Cluster::AttachTask(TaskInfo& t) {
  t.job = -1;
  if (t.group.empty()) return;
  JobInfo& j = EnsureJob(t.ns, t.group);
  t.job = j.id;
  j.tasks.push_back(t.id);
  IndexStatus(t, t.status, +1);
}

void Cluster::DetachTask(TaskInfo& t) {
  if (t.job < 0) return;
  JobInfo& j = *jobs_[t.job];
  IndexStatus(t, t.status, -1);
  std::erase(j.tasks, t.id);
  t.job = -1;
}

// --- pod groups, queues, priority classes ------------------------------------------------------

JobInfo& Cluster::EnsureJob(const std::string& ns, const std::string& name) {
  std::string key = ns + "/" + name;
  auto it = job_index_.find(key);
  if (it != job_index_.end()) return *jobs_[it->second];
  auto j = std::make_unique<JobInfo>();
  j->id = static_cast<int>(jobs_.size());
  j->ns = ns;
  j->name = name;
  j->key = key;
  j->uid = ns + "-" + name;
  j->seq = seq_++;
  job_index_[key] = j->id;
  auto pos = std::lower_bound(job_order_.begin(), job_order_.end(), key,
                              [&](int id, const std::string& v) { return jobs_[id]->key < v; });
  job_order_.insert(pos, j->id);
  jobs_.push_back(std::move(j));
  return *jobs_.back();
}

void Cluster::UpsertPodGroup(const api::PodGroup& pg) {
  JobInfo& j = EnsureJob(pg.meta.namespace_, pg.meta.name);
  j.pg = std::make_shared<const api::PodGroup>(pg);
  if (!pg.meta.uid.empty()) j.uid = pg.meta.uid;
  j.queue_name = pg.spec.queue.empty() ? "default" : pg.spec.queue;
  j.min_available = pg.spec.min_member;
  j.min_task_member = pg.spec.min_task_member;
  j.task_min_total = 0;
  for (const auto& [role, n] : j.min_task_member) j.task_min_total += n;
  j.min_resources.reset();
  if (pg.spec.min_resources) {
    // The members' GPU shares, summed, count as milli of nvidia.com/gpu as each pod's do.
    Resources min = Resources::FromList(*pg.spec.min_resources);
    if (int64_t shares = min.Get(GpuShareId()); shares > 0) {
      min.Set(GpuShareId(), 0);
      min.Set(kGpu, min.Get(kGpu) + shares / 1000);
    }
    j.min_resources = std::move(min);
  }
  j.SetPhaseFromPodGroup();
  j.creation = pg.meta.creation_timestamp;
  RefreshJobPriority(j);
}

void Cluster::RefreshJobPriority(JobInfo& j) {
  // As Volcano: the named class's value, else the cluster's global default class, else 0.
  j.priority = default_priority_;
  if (j.pg && !j.pg->spec.priority_class_name.empty()) {
    j.priority = PriorityClassValue(j.pg->spec.priority_class_name).value_or(default_priority_);
  }
}

void Cluster::RefreshDefaultPriority() {
  default_priority_ = 0;
  for (const auto& [name, pc] : priority_classes_) {
    if (pc.second) default_priority_ = pc.first;
  }
  for (auto& j : jobs_) {
    if (j) RefreshJobPriority(*j);
  }
}

void Cluster::RemovePodGroup(const std::string& ns, const std::string& name) {
  JobInfo* j = FindJob(ns + "/" + name);
  if (!j) return;
  j->pg.reset();
  j->SetPhaseText("");
  ForgetJobIfUnused(j->id);
}

void Cluster::ForgetJobIfUnused(int id) {
  JobInfo& j = *jobs_[id];
  if (j.pg || !j.tasks.empty()) return;
  auto pos = std::lower_bound(job_order_.begin(), job_order_.end(), j.key,
                              [&](int other, const std::string& v) { return jobs_[other]->key < v; });
  if (pos != job_order_.end() && *pos == id) job_order_.erase(pos);
  job_index_.erase(j.key);
  jobs_[id].reset();
}

void Cluster::UpsertQueue(const api::Queue& api_queue) {
  QueueInfo* q = FindQueue(api_queue.meta.name);
  if (!q) {
    auto owned = std::make_unique<QueueInfo>();
    owned->id = static_cast<int>(queues_.size());
    owned->name = api_queue.meta.name;
    q = owned.get();
    queue_index_[q->name] = q->id;
    queues_.push_back(std::move(owned));
  }
  q->queue = std::make_shared<const api::Queue>(api_queue);
  q->weight = api_queue.spec.weight;
  q->priority = api_queue.spec.priority;
  q->open = api_queue.status.state.empty() || api_queue.status.state == "Open";
  q->reclaimable = api_queue.spec.reclaimable.value_or(true);
  q->parent = api_queue.spec.parent;
  q->creation = api_queue.meta.creation_timestamp;
}

void Cluster::RemoveQueue(const std::string& name) {
  QueueInfo* q = FindQueue(name);
  if (!q || name == "default") return;
  queue_index_.erase(name);
  queues_[q->id].reset();
}

void Cluster::UpsertPriorityClass(const api::PriorityClass& pc) {
  priority_classes_[pc.meta.name] = {pc.value, pc.global_default};
  RefreshDefaultPriority();
}

void Cluster::RemovePriorityClass(const std::string& name) {
  priority_classes_.erase(name);
  RefreshDefaultPriority();
}

void Cluster::UpsertHyperNode(const api::HyperNode& hn) {
  hyper_nodes_[hn.meta.name] = std::make_shared<const api::HyperNode>(hn);
  topology_dirty_ = true;
}

void Cluster::RemoveHyperNode(const std::string& name) {
  if (hyper_nodes_.erase(name)) topology_dirty_ = true;
}

const HyperNodeTopology& Cluster::Topology() const {
  if (topology_dirty_) {
    std::vector<TopologyNode> nodes;
    nodes.reserve(node_order_.size());
    for (int id : node_order_) {
      const NodeInfo& n = *nodes_[id];
      nodes.push_back({id, &n.name, &n.node->meta.labels});
    }
    topology_ = HyperNodeTopology::Build(hyper_nodes_, nodes);
    topology_dirty_ = false;
  }
  return topology_;
}

std::optional<int32_t> Cluster::PriorityClassValue(const std::string& name) const {
  auto it = priority_classes_.find(name);
  if (it == priority_classes_.end()) return std::nullopt;
  return it->second.first;
}

// --- lookups ----------------------------------------------------------------------------------

TaskInfo* Cluster::FindTask(const std::string& key) {
  auto it = task_index_.find(key);
  return it == task_index_.end() ? nullptr : tasks_[it->second].get();
}
JobInfo* Cluster::FindJob(const std::string& key) {
  auto it = job_index_.find(key);
  return it == job_index_.end() ? nullptr : jobs_[it->second].get();
}
NodeInfo* Cluster::FindNode(const std::string& name) {
  auto it = node_index_.find(name);
  return it == node_index_.end() ? nullptr : nodes_[it->second].get();
}
QueueInfo* Cluster::FindQueue(const std::string& name) {
  auto it = queue_index_.find(name);
  return it == queue_index_.end() ? nullptr : queues_[it->second].get();
}

std::vector<int> Cluster::QueueIds() const {
  std::vector<int> ids;
  for (const auto& q : queues_) {
    if (q) ids.push_back(q->id);
  }
  std::sort(ids.begin(), ids.end(),
            [&](int a, int b) { return queues_[a]->name < queues_[b]->name; });
  return ids;
}

}  // namespace muster::core
