#pragma once

// One scheduling cycle ("session" in Volcano): plugins register their callbacks, the configured
// actions run over the cluster state in place, and the session closes by computing PodGroup
// status, pod conditions and events. Hook combination across tiers follows volcano-sh/volcano
// pkg/scheduler/framework/session_plugins.go.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/cluster.h"
#include "core/framework/conf.h"

namespace muster::core {

// Scheduling failure reasons ("Insufficient cpu", "node(s) had untolerated taint {k: v}") are
// interned once into small ids so that the hot filter loop never builds strings. Thread-safe.
class FitReasons {
 public:
  static int Id(std::string_view text);
  static std::string Text(int id);
};

// Why a task does not fit, per node; Error() renders Volcano's
// "0/<N> nodes are unavailable: <k> <reason>, ...." text.
class FitErrors {
 public:
  void SetNodeError(int node, int reason);
  bool empty() const { return nodes_ == 0; }
  std::string Error() const;

 private:
  int nodes_ = 0;
  std::vector<std::pair<int, int>> counts_;  // reason id, nodes
};

// Everything a cycle decided, for the adapter to apply (binds, evictions, status writes, events).
struct CycleResult {
  struct Bind {
    std::string pod;  // ns/name
    std::string node;
    std::vector<int> gpus;
  };
  struct Eviction {
    std::string pod;
    std::string reason;
  };
  struct PodGroupStatus {
    std::string pod_group;  // ns/name
    std::string phase;
    std::optional<api::Condition> condition;
    int32_t running = 0;
    int32_t succeeded = 0;
    int32_t failed = 0;
  };
  struct PodCondition {  // PodScheduled=False on a pod that stays unscheduled
    std::string pod;
    std::string reason;  // Unschedulable, Schedulable
    std::string message;
    std::string nominated_node;
  };
  struct Event {
    std::string kind;  // Pod, PodGroup
    std::string object;  // ns/name
    std::string type;  // Normal, Warning
    std::string reason;
    std::string message;
  };
  std::vector<Bind> binds;
  std::vector<Eviction> evictions;
  std::map<std::string, std::string> pipelined;  // pod -> node held for it
  std::vector<PodGroupStatus> pod_groups;
  std::vector<PodCondition> pod_conditions;
  std::vector<Event> events;
  // Where the proportion plugin ran: every queue's deserved resources, by queue name.
  std::map<std::string, Resources> queue_deserved;
};

// Votes of JobPipelined / JobEnqueueable / victim functions.
inline constexpr int kPermit = 1;
inline constexpr int kAbstain = 0;
inline constexpr int kReject = -1;

struct ValidateResult {
  bool pass = true;
  std::string reason;
  std::string message;
};

struct PredicateStatus {
  bool ok = true;
  // Unresolvable failures (affinity, taints) cannot be cured by evicting pods.
  bool unresolvable = false;
  int reason = -1;  // FitReasons id when !ok
};

class Session;

using JobOrderFn = std::function<int(const JobInfo&, const JobInfo&)>;
using QueueOrderFn = std::function<int(const QueueInfo&, const QueueInfo&)>;
using VictimQueueOrderFn =
    std::function<int(const QueueInfo&, const QueueInfo&, const QueueInfo& preemptor)>;
using TaskOrderFn = std::function<int(const TaskInfo&, const TaskInfo&)>;
using PredicateFn = std::function<PredicateStatus(const TaskInfo&, const NodeInfo&)>;
using NodeOrderFn = std::function<double(const TaskInfo&, const NodeInfo&)>;
// Adds each node's score to `scores` (same order as `nodes`).
using BatchNodeOrderFn = std::function<void(const TaskInfo&, const std::vector<const NodeInfo*>&,
                                            std::vector<double>& scores)>;
// The devices of `node` that a task allocated there takes (indices), or empty to leave the choice
// to the engine (Cluster::ChooseGpus). Called only for a task that asks for GPUs and fits the
// node's idle resources and devices.
using GpuChoiceFn = std::function<std::vector<int>(const TaskInfo&, const NodeInfo&)>;
using JobBoolFn = std::function<bool(const JobInfo&)>;
using JobVoteFn = std::function<int(const JobInfo&)>;
using JobValidFn = std::function<std::optional<ValidateResult>(const JobInfo&)>;
using JobEnqueuedFn = std::function<void(const JobInfo&)>;
using QueueBoolFn = std::function<bool(const QueueInfo&)>;
using QueueTaskBoolFn = std::function<bool(const QueueInfo&, const TaskInfo&)>;
// Returns the acceptable victims and a vote (kAbstain means "no opinion").
using VictimsFn = std::function<std::pair<std::vector<const TaskInfo*>, int>(
    const TaskInfo& preemptor, const std::vector<const TaskInfo*>& preemptees)>;

struct EventHandler {
  std::function<void(const TaskInfo&)> on_allocate;
  std::function<void(const TaskInfo&)> on_deallocate;
};

class Plugin {
 public:
  virtual ~Plugin() = default;
  virtual void OnSessionOpen(Session& ssn) = 0;
  virtual void OnSessionClose(Session& ssn) {}
};

class Action {
 public:
  virtual ~Action() = default;
  virtual void Execute(Session& ssn) = 0;
};

struct SessionOptions {
  // Volcano's --minimum-feasible-nodes and --percentage-nodes-to-find (0 = adaptive).
  int min_feasible_nodes = 100;
  int percentage_nodes_to_find = 0;
  // Rotates the first node examined across cycles (kube-scheduler's nextStartNodeIndex).
  int start_node_index = 0;
  std::string session_id = "session";
  // Wall-clock time of the cycle in Unix seconds, for age-based plugins (sla); 0 = unknown.
  int64_t now_unix = 0;
  // Jobs the adapter holds back this cycle (a live scheduler's backoff of unchanged
  // unschedulable gangs): they keep their place in every plugin's accounting, but allocate,
  // backfill, preempt and reclaim skip them and close reports nothing new for them. Empty: none.
  std::function<bool(const JobInfo&)> hold_back;
  // Jobs the adapter knows no action can change this cycle: their pods cannot be placed and a
  // Pending one cannot be admitted (the replay's jobs that a cycle tried and failed, with
  // nothing released since), and they have no status to report. They stay out of jobs(), so
  // that no action orders or tries them and close passes them by, but the plugins still count
  // them wherever they sum over jobs (ForEachCountedJob: queue requests and shares, admitted
  // minResources, allocations), so that every other job meets the same decisions as with them
  // in. Unlike hold_back, enqueue does not see them either. Empty: none.
  std::function<bool(const JobInfo&)> settled;
  // Events, pod conditions, and all of a PodGroup condition but its type and status: what a
  // live scheduler writes back for people to read. No decision reads them; an adapter that applies only binds and
  // evictions (sim replay) turns them off, which saves most of a cycle's cost while thousands
  // of pods wait (each would get its fit errors written out every cycle).
  bool diagnostics = true;
  // Jobs the adapter leaves out of this session altogether (another scheduler's share of the
  // cluster): no plugin sees them and their pods only occupy their nodes. Empty: none.
  std::function<bool(const JobInfo&)> leave_out;
  // Called as the cycle passes each step, so that an adapter with a clock can time them (the
  // core has none): ("start", "") first, then ("OnSessionOpen", plugin) after each plugin
  // opened, ("action", name) after each action ran, ("OnSessionClose", plugin) after each
  // plugin closed, and ("end", "") last. A step lasts from the call before it. Empty: none.
  std::function<void(std::string_view step, std::string_view name)> on_step;
};

class Statement;

// A hook's callbacks by plugin name, resolved once per session into the tiers' order with the
// plugin's enable flag applied, so that combining them on a hot path does no lookups.
template <typename Fn>
struct Hook {
  const char* flag = nullptr;  // nullptr: always on
  std::map<std::string, Fn> fns;
  std::vector<std::vector<const Fn*>> tiers;
  bool resolved = false;
};

class Session {
 public:
  Session(Cluster& cluster, const SchedulerConf& conf, SessionOptions options);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Opens plugins, runs the configured actions, closes. Call once.
  CycleResult Run();

  Cluster& cluster() { return cluster_; }
  const SchedulerConf& conf() const { return conf_; }
  const SessionOptions& options() const { return options_; }
  // Ready nodes in name order.
  const std::vector<NodeInfo*>& nodes() const { return nodes_; }
  // Jobs this session schedules: PodGroup known, queue known, not settled.
  const std::vector<JobInfo*>& jobs() const { return jobs_; }
  // Calls f(JobInfo&) for jobs() and then the settled jobs (SessionOptions::settled): what a
  // plugin's sums over jobs must cover.
  template <typename F>
  void ForEachCountedJob(F&& f) const {
    for (JobInfo* j : jobs_) f(*j);
    for (JobInfo* j : settled_) f(*j);
  }
  QueueInfo* QueueOf(const JobInfo& j) { return j.queue >= 0 ? &cluster_.queue(j.queue) : nullptr; }
  JobInfo* JobOf(const TaskInfo& t) { return t.job >= 0 ? &cluster_.job(t.job) : nullptr; }
  const Resources& total_resource() const { return total_resource_; }
  CycleResult& result() { return result_; }
  // Where the next feasible-node search starts; advanced past the nodes each search examined so
  // that successive tasks spread their searches over the cluster (kube-scheduler's
  // nextStartNodeIndex). Starts at options().start_node_index.
  int next_start_node() const { return next_start_node_; }
  void set_next_start_node(int index) { next_start_node_ = index; }

  // Registration, by plugin name.
  void AddJobOrderFn(const std::string& p, JobOrderFn f) { job_order_.fns[p] = std::move(f); }
  void AddQueueOrderFn(const std::string& p, QueueOrderFn f) { queue_order_.fns[p] = std::move(f); }
  void AddVictimQueueOrderFn(const std::string& p, VictimQueueOrderFn f) { victim_queue_order_.fns[p] = std::move(f); }
  void AddTaskOrderFn(const std::string& p, TaskOrderFn f) { task_order_.fns[p] = std::move(f); }
  void AddPredicateFn(const std::string& p, PredicateFn f) { predicate_.fns[p] = std::move(f); }
  void AddNodeOrderFn(const std::string& p, NodeOrderFn f) { node_order_.fns[p] = std::move(f); }
  void AddBatchNodeOrderFn(const std::string& p, BatchNodeOrderFn f) { batch_node_order_.fns[p] = std::move(f); }
  void AddJobReadyFn(const std::string& p, JobBoolFn f) { job_ready_.fns[p] = std::move(f); }
  void AddJobPipelinedFn(const std::string& p, JobVoteFn f) { job_pipelined_.fns[p] = std::move(f); }
  void AddJobStarvingFn(const std::string& p, JobBoolFn f) { job_starving_.fns[p] = std::move(f); }
  void AddJobValidFn(const std::string& p, JobValidFn f) { job_valid_.fns[p] = std::move(f); }
  void AddJobEnqueueableFn(const std::string& p, JobVoteFn f) { job_enqueueable_.fns[p] = std::move(f); }
  void AddJobEnqueuedFn(const std::string& p, JobEnqueuedFn f) { job_enqueued_.fns[p] = std::move(f); }
  void AddOverusedFn(const std::string& p, QueueBoolFn f) { overused_.fns[p] = std::move(f); }
  void AddAllocatableFn(const std::string& p, QueueTaskBoolFn f) { allocatable_.fns[p] = std::move(f); }
  void AddPreemptiveFn(const std::string& p, QueueTaskBoolFn f) { preemptive_.fns[p] = std::move(f); }
  void AddPreemptableFn(const std::string& p, VictimsFn f) { preemptable_.fns[p] = std::move(f); }
  void AddReclaimableFn(const std::string& p, VictimsFn f) { reclaimable_.fns[p] = std::move(f); }
  // One plugin chooses GPU devices (the gpu-* placement plugins): the first to register. Devices
  // it returns that cannot take the task are replaced by the engine's choice.
  void SetGpuChoiceFn(GpuChoiceFn f) {
    if (!gpu_choice_) gpu_choice_ = std::move(f);
  }
  void AddEventHandler(EventHandler h) { handlers_.push_back(std::move(h)); }

  // Combined hooks (Volcano semantics).
  bool JobOrderLess(const JobInfo& l, const JobInfo& r) const;
  bool QueueOrderLess(const QueueInfo& l, const QueueInfo& r) const;
  bool VictimQueueOrderLess(const QueueInfo& l, const QueueInfo& r, const QueueInfo& p) const;
  bool TaskOrderLess(const TaskInfo& l, const TaskInfo& r) const;
  // All predicates; resources are checked by the caller.
  PredicateStatus Predicate(const TaskInfo& t, const NodeInfo& n) const;
  // Per node scores (same order as `nodes`).
  // Per node scores into `scores` (same order as `nodes`; resized and overwritten).
  void NodeScores(const TaskInfo& t, const std::vector<const NodeInfo*>& nodes,
                  std::vector<double>& scores) const;
  // Jobs with something to do this session: pending work at open, or an eviction. Close reports
  // status only for these and for jobs whose phase changed.
  void Touch(const JobInfo& j) {
    if (j.id >= static_cast<int>(touched_.size())) touched_.resize(j.id + 1, 0);
    touched_[j.id] = 1;
  }
  // Jobs the actions leave alone this session: backed off by the adapter, or failing JobValid
  // while still Pending (kept in the session for enqueue alone).
  bool HeldBack(const JobInfo& j) const {
    return invalid_.count(j.id) > 0 || (options_.hold_back && options_.hold_back(j));
  }
  bool Touched(const JobInfo& j) const {
    return j.id < static_cast<int>(touched_.size()) && touched_[j.id] != 0;
  }
  bool JobReady(const JobInfo& j) const;
  bool JobPipelined(const JobInfo& j) const;
  bool JobStarving(const JobInfo& j) const;
  std::optional<ValidateResult> JobValid(const JobInfo& j) const;
  bool JobEnqueueable(const JobInfo& j) const;
  void JobEnqueued(const JobInfo& j) const;
  bool Overused(const QueueInfo& q) const;
  bool Allocatable(const QueueInfo& q, const TaskInfo& t) const;
  bool Preemptive(const QueueInfo& q, const TaskInfo& t) const;
  std::vector<const TaskInfo*> Preemptable(const TaskInfo& preemptor,
                                           const std::vector<const TaskInfo*>& preemptees) const;
  std::vector<const TaskInfo*> Reclaimable(const TaskInfo& reclaimer,
                                           const std::vector<const TaskInfo*>& reclaimees) const;
  // Victims in eviction order (lowest first), Volcano's BuildVictimsPriorityQueue.
  std::vector<const TaskInfo*> OrderVictims(std::vector<const TaskInfo*> victims,
                                            const TaskInfo& preemptor) const;

  // Primitive state changes (statements call these and record how to undo them).
  void DoAllocate(TaskInfo& t, int node);
  void DoPipeline(TaskInfo& t, int node);
  void DoEvict(TaskInfo& t);
  void UndoPlacement(TaskInfo& t);  // Allocated or Pipelined back to Pending
  void UndoEvict(TaskInfo& t, TaskStatus previous);
  void FireAllocate(const TaskInfo& t);
  void FireDeallocate(const TaskInfo& t);
  // Records a committed bind / eviction / pipeline in the result.
  void RecordBind(TaskInfo& t);
  void RecordEviction(TaskInfo& t, const std::string& reason);
  void RecordPipelined(const TaskInfo& t);
  // A statement neither committed nor discarded (a pipelined gang); undone at close.
  void KeepOpen(std::unique_ptr<Statement> stmt);

  // Scheduling diagnostics gathered during actions.
  std::map<int, FitErrors>& task_fit_errors() { return task_fit_errors_; }
  std::map<int, std::string>& job_fit_errors() { return job_fit_errors_; }
  std::map<int, std::string>& enqueue_rejections() { return enqueue_rejections_; }

  // Job summary in Volcano's FitError() form.
  std::string JobFitError(const JobInfo& j) const;
  void SetPodGroupCondition(const JobInfo& j, api::Condition c) { pg_conditions_[j.id] = std::move(c); }
  const std::unordered_map<int, api::Condition>& pod_group_conditions() const {
    return pg_conditions_;
  }
  // Dropped when the options turn diagnostics off.
  void RecordEvent(CycleResult::Event e) {
    if (options_.diagnostics) result_.events.push_back(std::move(e));
  }
  // The job's statuses when the session opened (Volcano's TransactionContext.LastTransaction).
  TaskStatus LastStatus(const TaskInfo& t) const;

 private:
  void Open();
  void Close();
  template <typename Fn>
  const std::vector<std::vector<const Fn*>>& Tiers(Hook<Fn>& hook) const;

  Cluster& cluster_;
  const SchedulerConf& conf_;
  SessionOptions options_;
  std::vector<NodeInfo*> nodes_;
  std::vector<JobInfo*> jobs_;
  std::vector<JobInfo*> settled_;
  int next_start_node_ = 0;
  std::vector<char> touched_;  // by job id: asked every job at close, so no tree
  std::unordered_set<int> invalid_;  // Pending jobs failing JobValid
  Resources total_resource_;
  CycleResult result_;
  std::vector<std::unique_ptr<Plugin>> plugins_;
  std::vector<std::string> plugin_names_;  // by index of plugins_
  GpuChoiceFn gpu_choice_;
  std::vector<std::unique_ptr<Statement>> open_statements_;
  std::map<int, FitErrors> task_fit_errors_;
  std::map<int, std::string> job_fit_errors_;
  std::map<int, std::string> enqueue_rejections_;
  std::unordered_map<int, api::Condition> pg_conditions_;  // by job id, looked up per job
  std::map<int, std::pair<TaskStatus, int>> last_tx_;  // task -> (status, node) of last op

  mutable Hook<JobOrderFn> job_order_{"enableJobOrder", {}, {}, false};
  mutable Hook<QueueOrderFn> queue_order_{"enableQueueOrder", {}, {}, false};
  mutable Hook<VictimQueueOrderFn> victim_queue_order_{"enableQueueOrder", {}, {}, false};
  mutable Hook<TaskOrderFn> task_order_{"enableTaskOrder", {}, {}, false};
  mutable Hook<PredicateFn> predicate_{"enablePredicate", {}, {}, false};
  mutable Hook<NodeOrderFn> node_order_{"enableNodeOrder", {}, {}, false};
  mutable Hook<BatchNodeOrderFn> batch_node_order_{"enableNodeOrder", {}, {}, false};
  mutable Hook<JobBoolFn> job_ready_{"enableJobReady", {}, {}, false};
  mutable Hook<JobVoteFn> job_pipelined_{"enableJobPipelined", {}, {}, false};
  mutable Hook<JobBoolFn> job_starving_{"enableJobStarving", {}, {}, false};
  mutable Hook<JobValidFn> job_valid_{nullptr, {}, {}, false};
  mutable Hook<JobVoteFn> job_enqueueable_{"enableJobEnqueued", {}, {}, false};
  mutable Hook<JobEnqueuedFn> job_enqueued_{"enableJobEnqueued", {}, {}, false};
  mutable Hook<QueueBoolFn> overused_{"enabledOverused", {}, {}, false};
  mutable Hook<QueueTaskBoolFn> allocatable_{"enabledAllocatable", {}, {}, false};
  mutable Hook<QueueTaskBoolFn> preemptive_{"enablePreemptive", {}, {}, false};
  mutable Hook<VictimsFn> preemptable_{"enablePreemptable", {}, {}, false};
  mutable Hook<VictimsFn> reclaimable_{"enableReclaimable", {}, {}, false};
  std::vector<EventHandler> handlers_;
};

// Gang statement: tentative operations, committed together or undone in reverse.
class Statement {
 public:
  explicit Statement(Session& ssn) : ssn_(ssn) {}
  ~Statement() = default;
  void Allocate(TaskInfo& t, int node);
  void Pipeline(TaskInfo& t, int node);
  void Evict(TaskInfo& t, const std::string& reason);
  void Commit();
  void Discard();
  // Moves other's operations to the end of this one.
  void Merge(Statement& other);
  bool empty() const { return ops_.empty(); }

 private:
  enum class Kind { kAllocate, kPipeline, kEvict };
  struct Op {
    Kind kind;
    int task;
    TaskStatus previous;
    std::string reason;
  };
  Session& ssn_;
  std::vector<Op> ops_;
};

}  // namespace muster::core
