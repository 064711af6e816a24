#pragma once

// The engine's view of the cluster: nodes, tasks (pods), jobs (PodGroups) and queues, indexed
// for placement and updated incrementally from object changes. A scheduling session works on
// this state in place and undoes what it does not commit; it never copies it.
//
// Thread-safety: none. The owner (scheduler adapter, simulator, scenario runner) serialises
// updates and cycles.

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "api/gpu_indices.h"
#include "api/model.h"
#include "core/hypernodes.h"
#include "core/podgroup_phase.h"
#include "core/resources.h"

namespace muster::core {

enum class TaskStatus {
  kPending,
  kAllocated,
  kPipelined,
  kBinding,
  kBound,
  kRunning,
  kReleasing,
  kSucceeded,
  kFailed,
  kUnknown,
};
inline constexpr int kNumTaskStatus = 10;
const char* TaskStatusName(TaskStatus s);
// Allocated, Binding, Bound, Running: the task holds node resources as an admitted placement.
bool IsAllocatedStatus(TaskStatus s);
// Holds resources on its node (allocated statuses, Releasing, and Unknown).
bool OccupiesNode(TaskStatus s);

// Where the scheduler records the GPU devices it gave a pod, so that the engine's view survives
// restarts and pod updates: "0,3" (api/gpu_indices.h, the key's one definition and codec).
using api::kGpuIndicesAnnotation;
// A Go duration ("90m", "3600s") a user sets on a pod: how long it runs once started. allocate's
// reservations (reserve.h) count on the pod's resources coming free that long after its
// status.startTime; a running pod without it is expected to run for ever.
inline constexpr char kExpectedRuntimeAnnotation[] = "muster.dev/expected-runtime";
// A share of ONE GPU device, in thousandths of the device (1-999), requested as an extended
// resource next to cpu and memory: `muster.dev/gpu-milli: 500` is half a GPU. It is what the
// Alibaba GPU-sharing traces (openb) call gpu_milli with num_gpu 1. The engine counts a share as
// that many milli of nvidia.com/gpu (PodRequests folds it in), so queue and node totals see half
// a GPU; where it fits and which device it takes is decided per device (GpuDevice). A value
// outside 1-999, or next to an nvidia.com/gpu request, is not a share: it stays an extended
// resource of its own, which no node offers.
using api::kGpuShareResource;

struct GpuDevice {
  int index = 0;
  std::string model;
  int64_t memory_mib = 0;
  int holder = -1;  // the task holding the whole device, or -1
  int64_t shared_milli = 0;  // the sum of the shares placed on it (0 while a holder has it)

  bool IsFree() const { return holder < 0 && shared_milli == 0; }
  // What a share may still take: 0 when a task holds the whole device.
  int64_t FreeMilli() const { return holder >= 0 ? 0 : 1000 - shared_milli; }
};

struct TaskInfo {
  int id = -1;
  std::string ns;
  std::string name;
  std::string key;  // ns/name
  std::string uid;  // metadata.uid, or ns-name when unset
  std::shared_ptr<const api::Pod> pod;
  std::string group;  // PodGroup name from the annotation; empty when none
  int job = -1;
  std::string role;  // volcano.sh/task-spec, "" when none
  Resources resreq;  // a GPU share counts as its milli of nvidia.com/gpu (kGpuShareResource)
  int64_t gpu_share = 0;  // milli of one device, 1-999, for a pod that shares a GPU; else 0
  bool best_effort = false;
  int32_t priority = 1;
  bool preemptable = true;
  bool preempt_never = false;
  bool critical = false;  // kube-system or system-*-critical: never a victim (conformance)
  TaskStatus status = TaskStatus::kPending;
  int node = -1;
  std::vector<int> gpus;  // device indices on `node` (one for a GPU share)
  int64_t name_index = -1;  // trailing number in the pod name
  int64_t seq = 0;          // arrival order
  // How long the pod is expected to run once started (kExpectedRuntimeAnnotation), seconds; -1
  // when not given. With start_unix, what reservations (allocate's reserveGpus) plan with.
  double expected_runtime = -1;
  int64_t start_unix = 0;  // status.startTime in Unix seconds, 0 when unset
};

struct NodeInfo {
  int id = -1;
  std::string name;
  std::shared_ptr<const api::Node> node;
  Resources allocatable;
  Resources idle;
  Resources used;
  Resources releasing;
  Resources pipelined;
  int max_pods = 110;
  int pod_count = 0;        // tasks on the node, pipelined and releasing included
  int releasing_pods = 0;
  bool ready = true;
  bool unschedulable = false;
  bool has_prefer_no_schedule_taint = false;
  int taint_set = -1;  // the node's taints, interned: Cluster::TaintSet
  // Bumped on every change to the node's accounting or object; lets callers tell whether what
  // they computed about the node (a score) is still current.
  uint64_t version = 0;
  std::vector<GpuDevice> gpus;
  // Devices partly taken by shares: while none is, free whole devices are what idle
  // nvidia.com/gpu says and no device needs looking at (GpuDevicesFit).
  int shared_devices = 0;
  std::vector<int> tasks;  // task ids on the node

  // The first resource (cpu, memory, then by id) of `req` above this node's future idle
  // (idle + releasing - pipelined), or -1 when it fits. No allocation.
  ResourceId FirstShortOfFutureIdle(const Resources& req) const {
    for (ResourceId r = 0; r < req.Size(); ++r) {
      int64_t want = req.Get(r);
      if (want > 0 && want > idle.Get(r) + releasing.Get(r) - pipelined.Get(r)) return r;
    }
    return -1;
  }
  Resources FutureIdle() const {
    Resources r = idle;
    r.Add(releasing).Sub(pipelined);
    return r;
  }
  // Devices free of any task (no holder, no share).
  int FreeGpus() const;
  // Whether the node's devices, as taken now, can give `t` what it asks: a share needs one
  // device with that much free milli (two devices with 600m free each do not take 700m); whole
  // GPUs need that many free devices, which only shares can make fewer than idle nvidia.com/gpu
  // says. Resource totals (FirstShortOfFutureIdle) are checked apart; devices held by releasing
  // tasks are not counted as coming free.
  bool GpuDevicesFit(const TaskInfo& t) const;
};

struct QueueInfo {
  int id = -1;
  std::string name;
  std::shared_ptr<const api::Queue> queue;
  int32_t weight = 1;
  int32_t priority = 0;
  bool open = true;
  bool reclaimable = true;
  std::string parent;
  std::string creation;
};

struct JobInfo {
  int id = -1;
  std::string ns;
  std::string name;
  std::string key;  // ns/name
  std::string uid;
  std::shared_ptr<const api::PodGroup> pg;  // null until the PodGroup is known
  std::string queue_name;
  int queue = -1;
  int32_t min_available = 0;
  std::map<std::string, int32_t> min_task_member;
  int32_t task_min_total = 0;
  std::optional<Resources> min_resources;
  int32_t priority = 0;
  // The PodGroup's phase as the engine knows it. Only for kOther is `other_phase` read: the text
  // of a phase the engine has no name for, kept to be written back as it came; empty while the
  // job has no PodGroup.
  PodGroupPhase phase = PodGroupPhase::kOther;
  std::string other_phase;
  std::string creation;
  int64_t seq = 0;
  std::vector<int> tasks;
  std::array<int, kNumTaskStatus> count{};
  int pending_best_effort = 0;  // Pending tasks that request nothing (kept by Cluster)
  Resources allocated;  // sum of requests of tasks in allocated statuses (kept by Cluster)

  int Count(TaskStatus s) const { return count[static_cast<int>(s)]; }
  // Bound + Binding + Running + Allocated + Succeeded.
  int ReadyTaskNum() const;
  int WaitingTaskNum() const { return Count(TaskStatus::kPipelined); }
  int ValidTaskNum() const;
  bool IsPending() const { return phase == PodGroupPhase::kPending; }
  // status.phase as it is to be written: the phase's name, or the text kept for kOther.
  std::string_view PhaseText() const {
    return phase == PodGroupPhase::kOther ? std::string_view(other_phase)
                                          : PodGroupPhaseName(phase);
  }
  void SetPhaseText(std::string_view text) {
    phase = ParsePodGroupPhase(text);
    other_phase = phase == PodGroupPhase::kOther ? std::string(text) : std::string();
  }
  // The phase the PodGroup's status says; Pending when it says none, as for a group no one has
  // admitted yet. Needs `pg`.
  void SetPhaseFromPodGroup() {
    SetPhaseText(pg->status.phase.empty() ? PodGroupPhaseName(PodGroupPhase::kPending)
                                          : std::string_view(pg->status.phase));
  }
};

// Kubernetes effective requests: containers summed, init containers maxed, overhead added;
// a resource given only in limits counts at its limit. A GPU share (kGpuShareResource, 1-999
// without nvidia.com/gpu) counts as that many milli of nvidia.com/gpu.
Resources PodRequests(const api::Pod& pod);
// The pod's GPU share in milli of one device (kGpuShareResource), 0 when it asks for none or
// for a value that is not a share.
int64_t PodGpuShare(const api::Pod& pod);

// One node label key's values across nodes, interned, so that filters over many nodes read a
// small array instead of every node object: by_node[node id] is the value's index in `values`,
// -1 (or past the end) where the node lacks the key.
struct LabelColumn {
  std::vector<int> by_node;
  std::vector<std::string> values;
  std::unordered_map<std::string, int> ids;

  int ValueOf(int node_id) const {
    return node_id < static_cast<int>(by_node.size()) ? by_node[node_id] : -1;
  }
};

class Cluster {
 public:
  Cluster();

  // A deep copy that shares only the immutable objects (pods, nodes, PodGroups, queues): what a
  // forward simulation (explain.h) runs its sessions on, leaving this one as it is.
  std::unique_ptr<Cluster> Clone() const;

  // Object changes. Upserts replace the previous version of the object with the same key.
  void UpsertNode(const api::Node& node);
  void RemoveNode(const std::string& name);
  void UpsertPod(const api::Pod& pod);
  void RemovePod(const std::string& ns, const std::string& name);
  void UpsertPodGroup(const api::PodGroup& pg);
  void RemovePodGroup(const std::string& ns, const std::string& name);
  void UpsertQueue(const api::Queue& queue);
  void RemoveQueue(const std::string& name);
  void UpsertPriorityClass(const api::PriorityClass& pc);
  void RemovePriorityClass(const std::string& name);
  void UpsertHyperNode(const api::HyperNode& hn);
  void RemoveHyperNode(const std::string& name);

  // The HyperNodes resolved against the nodes as they are now (names and labels); rebuilt on
  // the first call after a HyperNode or a node object changed, never by a session's placements.
  const HyperNodeTopology& Topology() const;

  // Lookups; nullptr when absent.
  TaskInfo* FindTask(const std::string& key);
  JobInfo* FindJob(const std::string& key);
  NodeInfo* FindNode(const std::string& name);
  QueueInfo* FindQueue(const std::string& name);
  // nullptr when `id` names no live queue.
  QueueInfo* QueueById(int id) {
    return id >= 0 && id < static_cast<int>(queues_.size()) ? queues_[id].get() : nullptr;
  }

  TaskInfo& task(int id) { return *tasks_[id]; }
  NodeInfo& node(int id) { return *nodes_[id]; }
  JobInfo& job(int id) { return *jobs_[id]; }
  QueueInfo& queue(int id) { return *queues_[id]; }
  const TaskInfo& task(int id) const { return *tasks_[id]; }
  const NodeInfo& node(int id) const { return *nodes_[id]; }
  const JobInfo& job(int id) const { return *jobs_[id]; }
  const QueueInfo& queue(int id) const { return *queues_[id]; }

  // Live objects in a stable order (nodes and queues by name, jobs by key).
  const std::vector<int>& NodeIds() const { return node_order_; }
  const std::vector<int>& JobIds() const { return job_order_; }
  std::vector<int> QueueIds() const;
  // Total allocatable over ready nodes, and total used over all nodes (kept incrementally).
  const Resources& TotalAllocatable() const { return total_allocatable_; }
  const Resources& TotalUsed() const { return total_used_; }
  // Bumped whenever any node changes (its version, or the node set): what a caller concluded
  // about every node (that none fits a task) holds while this is unchanged.
  uint64_t NodeChanges() const { return node_changes_; }
  // Tasks whose pods carry required pod anti-affinity (placed or not).
  const std::set<int>& AntiAffinityTasks() const { return anti_affinity_tasks_; }
  std::optional<int32_t> PriorityClassValue(const std::string& name) const;
  // Node labels by key (nullptr when no node has carried the key) and interned taint lists
  // (NodeInfo::taint_set), kept as nodes are upserted and removed.
  const LabelColumn* FindLabelColumn(const std::string& key) const;
  const std::vector<api::Taint>& TaintSet(int id) const { return taint_sets_[id]; }

  // State changes used by sessions. They keep node accounting, GPU holders and job counters
  // consistent. SetStatus moves a task between statuses without changing its node.
  void PlaceTask(TaskInfo& t, int node, TaskStatus status);  // precondition: t.node == -1
  void UnplaceTask(TaskInfo& t, TaskStatus status);          // back to off-node
  void SetStatus(TaskInfo& t, TaskStatus status);

  // NodeInfo::GpuDevicesFit once the node's releasing tasks are gone: their devices, or their
  // shares of one, count as free. What preemption, which evicts and then waits, checks.
  bool GpuDevicesFitOnceReleased(const TaskInfo& t, const NodeInfo& n) const;

  // GPU choice for a task on a node: for whole GPUs, the lowest-indexed free devices; for a
  // share, the best fit: the device with the least free milli that still takes it, the lowest
  // index on ties (what packs shares together and keeps whole devices free). Empty when the task
  // asks for no GPU or the share fits no device; fewer than asked when the node lacks free
  // devices.
  std::vector<int> ChooseGpus(const TaskInfo& t, const NodeInfo& n) const;

 private:
  void AccountOnNode(TaskInfo& t, NodeInfo& n, TaskStatus status, int sign);
  void IndexStatus(TaskInfo& t, TaskStatus status, int sign);
  // Devices for t on n as it starts holding them: those recorded on it when they can take it,
  // else ChooseGpus'; then held.
  void TakeGpus(TaskInfo& t, NodeInfo& n);
  // Takes (sign +1) or gives back (-1) t.gpus on n: the whole devices, or t's share of one.
  void HoldGpus(TaskInfo& t, NodeInfo& n, int sign);
  JobInfo& EnsureJob(const std::string& ns, const std::string& name);
  // A job with neither a PodGroup nor pods is forgotten (its id is not reused), so that what
  // iterates the jobs (every session) costs what the live ones cost, not every job ever seen.
  void ForgetJobIfUnused(int id);
  void AttachTask(TaskInfo& t);
  void DetachTask(TaskInfo& t);
  void RefreshJobPriority(JobInfo& j);
  void RefreshDefaultPriority();
  void EnsureDefaultQueue();
  void IndexNodeLabels(const NodeInfo& n, bool add);

  std::vector<std::unique_ptr<TaskInfo>> tasks_;
  std::vector<std::unique_ptr<NodeInfo>> nodes_;
  std::vector<std::unique_ptr<JobInfo>> jobs_;
  std::vector<std::unique_ptr<QueueInfo>> queues_;
  std::unordered_map<std::string, int> task_index_;
  std::unordered_map<std::string, int> node_index_;
  std::unordered_map<std::string, int> job_index_;
  std::unordered_map<std::string, int> queue_index_;
  std::vector<int> free_tasks_;
  std::vector<int> node_order_;
  std::vector<int> job_order_;
  Resources total_allocatable_;
  Resources total_used_;
  std::set<int> anti_affinity_tasks_;
  std::map<std::string, std::pair<int32_t, bool>> priority_classes_;  // value, globalDefault
  int32_t default_priority_ = 0;
  // Tasks bound to a node name that is not (yet) known; placed when the node arrives.
  std::unordered_map<std::string, std::vector<int>> waiting_for_node_;
  bool default_queue_declared_ = false;
  std::unordered_map<std::string, LabelColumn> label_columns_;
  std::vector<std::vector<api::Taint>> taint_sets_;
  std::unordered_map<std::string, int> taint_set_ids_;
  int64_t seq_ = 0;
  uint64_t node_changes_ = 0;
  std::map<std::string, std::shared_ptr<const api::HyperNode>> hyper_nodes_;
  mutable HyperNodeTopology topology_;
  mutable bool topology_dirty_ = false;
};

}  // namespace muster::core
