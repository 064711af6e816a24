#pragma once

// One scheduling cycle ("session" in Volcano, pkg/scheduler/framework/session.go): plugins
// register their callbacks, the configured actions run over the cluster state in place, and the
// session closes by computing PodGroup status, pod conditions and events. Hook combination
// across tiers follows pkg/scheduler/framework/session_plugins.go. Includes the headers of the
// concepts it uses (fit errors, cycle result, votes, hooks, plugin and action, options,
// statement), so that including it is enough to write a plugin or an action.

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/cluster.h"
#include "core/framework/conf.h"
#include "core/framework/cycle_result.h"
#include "core/framework/fit_errors.h"
#include "core/framework/hooks.h"
#include "core/framework/plugin.h"
#include "core/framework/session_options.h"
#include "core/framework/statement.h"
#include "core/framework/votes.h"

namespace muster::core {

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
  // Jobs this session schedules: PodGroup known, queue known, neither settled nor left out
  // (JobRole).
  const std::vector<JobInfo*>& jobs() const { return jobs_; }
  // Calls f(JobInfo&) for jobs() and then the settled jobs (JobRole::kSettled): what a
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
  void AddHyperNodeGradientFn(const std::string& p, HyperNodeGradientFn f) { hypernode_gradient_.fns[p] = std::move(f); }
  void AddHyperNodeOrderFn(const std::string& p, HyperNodeOrderFn f) { hypernode_order_.fns[p] = std::move(f); }
  // Plugins that choose GPU devices (nvlink, the gpu-* placement plugins), asked in the order
  // they register (the conf's order); the first that answers (a non-empty list) chooses. Devices
  // it returns that cannot take the task are replaced by the engine's choice, as is no answer.
  void AddGpuChoiceFn(GpuChoiceFn f) { gpu_choice_.push_back(std::move(f)); }
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
    return invalid_.count(j.id) > 0 || options_.RoleOf(j) == JobRole::kHeldBack;
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
  // The first plugin's gradient for a job with a network topology (in tier order); nullopt when
  // no plugin gives one.
  std::optional<HyperNodeGradient> HyperNodeGradientFor(const JobInfo& j) const;
  // Sum of the plugins' scores per HyperNode (same order as `hypernodes`).
  void HyperNodeScores(const JobInfo& j, const std::vector<const HyperNodeInfo*>& hypernodes,
                       std::vector<double>& scores) const;
  // Replaces the nodes the actions see (nodes()) and returns the previous list: allocate shows
  // only a HyperNode's nodes while it tries a gang there, and puts the list back after.
  std::vector<NodeInfo*> SwapNodes(std::vector<NodeInfo*> nodes) {
    nodes_.swap(nodes);
    return nodes;
  }
  // Victims in eviction order (lowest first), Volcano's BuildVictimsPriorityQueue.
  std::vector<const TaskInfo*> OrderVictims(std::vector<const TaskInfo*> victims,
                                            const TaskInfo& preemptor) const;

  // Primitive state changes (statements call these and record how to undo them).
  void DoAllocate(TaskInfo& t, int node);
  void DoPipeline(TaskInfo& t, int node);
  void DoEvict(TaskInfo& t);
  void UndoPlacement(TaskInfo& t);  // Allocated or Pipelined back to Pending
  void UndoEvict(TaskInfo& t, TaskStatus previous);
  // The victims topology-aware preemption has taken off a node in its dry run (make_room.cc),
  // empty outside one. Volcano's dry run lifts a victim's inter-pod terms only through the
  // SimulateRemoveTask/SimulateAddTask hooks of plugins with enablePreemptable or
  // enabledAllocatable on (framework/session_plugins.go); predicates reads this to keep such
  // victims in its inter-pod checks when both of its flags are off.
  const std::vector<int>& dry_run_victims() const { return dry_run_victims_; }
  void set_dry_run_victims(std::vector<int> ids) { dry_run_victims_ = std::move(ids); }
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
  // The node of the task's last placement this session (Allocate or Pipeline), or -1.
  int LastNode(const TaskInfo& t) const;
  // Forgets the task's placements this session: they were trials (allocate's HyperNode
  // trials), and what the pod is told must not name a node it was only tried on.
  void ForgetLastPlacement(const TaskInfo& t) { last_tx_.erase(t.id); }

 private:
  void Open();
  void Close();
  template <typename Fn>
  const std::vector<std::vector<const Fn*>>& Tiers(Hook<Fn>& hook) const;

  Cluster& cluster_;
  const SchedulerConf& conf_;
  SessionOptions options_;
  std::vector<NodeInfo*> nodes_;
  std::vector<int> dry_run_victims_;
  std::vector<JobInfo*> jobs_;
  std::vector<JobInfo*> settled_;
  int next_start_node_ = 0;
  std::vector<char> touched_;  // by job id: asked every job at close, so no tree
  std::unordered_set<int> invalid_;  // Pending jobs failing JobValid
  Resources total_resource_;
  CycleResult result_;
  std::vector<std::unique_ptr<Plugin>> plugins_;
  std::vector<std::string> plugin_names_;  // by index of plugins_
  std::vector<GpuChoiceFn> gpu_choice_;
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
  mutable Hook<HyperNodeGradientFn> hypernode_gradient_{"enabledHyperNodeGradient", {}, {}, false};
  mutable Hook<HyperNodeOrderFn> hypernode_order_{"enabledHyperNodeOrder", {}, {}, false};
  std::vector<EventHandler> handlers_;
};

}  // namespace muster::core
