#include "core/framework/session.h"

#include <algorithm>
#include <unordered_map>

#include "core/framework/job_updater.h"
#include "core/framework/registry.h"
#include "fmt/format.h"

namespace muster::core {
namespace {

// Creation time, then UID: Volcano's fallback when every plugin ties.
template <typename T>
bool FallbackLess(const T& l, const T& r) {
  if (int c = l.creation.compare(r.creation); c != 0) return c < 0;
  return l.uid < r.uid;
}

}  // namespace

// --- Session ----------------------------------------------------------------------------------

Session::Session(Cluster& cluster, const SchedulerConf& conf, SessionOptions options)
    : cluster_(cluster),
      conf_(conf),
      options_(std::move(options)),
      next_start_node_(options_.start_node_index) {}

Session::~Session() = default;

CycleResult Session::Run() {
  const auto& step = options_.on_step;
  if (step) step("start", "");
  Open();
  for (const auto& name : conf_.actions) {
    std::unique_ptr<Action> action = NewAction(name);
    if (!action) continue;
    action->Execute(*this);
    if (step) step("action", name);
  }
  Close();
  if (step) step("end", "");
  return std::move(result_);
}

void Session::Open() {
  for (int id : cluster_.NodeIds()) {
    NodeInfo& n = cluster_.node(id);
    if (n.ready) nodes_.push_back(&n);
  }
  total_resource_ = cluster_.TotalAllocatable();
  for (int id : cluster_.JobIds()) {
    JobInfo& j = cluster_.job(id);
    if (!j.pg) continue;
    const JobRole role = options_.RoleOf(j);
    if (role == JobRole::kLeftOut) continue;
    // The queue id resolved last cycle is kept while it still names the same queue.
    QueueInfo* q = cluster_.QueueById(j.queue);
    if (!q || q->name != j.queue_name) q = cluster_.FindQueue(j.queue_name);
    j.queue = q ? q->id : -1;
    if (!q) continue;
    if (role == JobRole::kSettled) {
      settled_.push_back(&j);
      continue;
    }
    jobs_.push_back(&j);
  }
  for (const Tier& tier : conf_.tiers) {
    for (const PluginOption& opt : tier.plugins) {
      std::unique_ptr<Plugin> p = NewPlugin(opt);
      if (!p) continue;
      p->OnSessionOpen(*this);
      if (options_.on_step) options_.on_step("OnSessionOpen", opt.name);
      plugins_.push_back(std::move(p));
      plugin_names_.push_back(opt.name);
    }
  }
  // Jobs that can never become ready leave the session with the reason on their PodGroup. One
  // still Pending stays for enqueue alone (HeldBack for the other actions): a Volcano Job's
  // controller creates the pods only once its PodGroup is Inqueue (Volcano's openSession runs
  // JobValid before any plugin registers, so it never drops a job there).
  std::vector<JobInfo*> valid;
  for (JobInfo* j : jobs_) {
    if (auto vr = JobValid(*j)) {
      if (j->IsPending() && j->tasks.empty()) {
        // Nothing created yet: its controller makes the pods once it is Inqueue. Not a failure.
        invalid_.insert(j->id);
        if (options_.RoleOf(*j) != JobRole::kHeldBack) Touch(*j);
        valid.push_back(j);
        continue;
      }
      // Short only by pods terminating on their nodes: not unschedulable, the job leaves the
      // session with the phase those pods keep (Volcano's gang skips its condition then).
      if (!j->IsPending() && ShortOnlyByReleasing(cluster_, *j)) {
        PodGroupPhase phase = PhaseAtClose(cluster_, *j, false);
        if (phase != j->phase) {
          j->phase = phase;
          CycleResult::PodGroupStatus st;
          st.pod_group = j->key;
          st.phase = j->PhaseText();
          st.running = j->Count(TaskStatus::kRunning);
          st.succeeded = j->Count(TaskStatus::kSucceeded);
          st.failed = j->Count(TaskStatus::kFailed);
          result_.pod_groups.push_back(std::move(st));
        }
        continue;
      }
      api::Condition c;
      c.type = "Unschedulable";
      c.status = "True";
      c.reason = vr->reason;
      c.message = vr->message;
      c.transition_id = options_.session_id;
      // A job leaving the session here is unschedulable for it; its phase follows as at close
      // (Volcano keeps such a job in the session and its updater gives it the phase then).
      if (!j->IsPending()) j->phase = PhaseAtClose(cluster_, *j, true);
      CycleResult::PodGroupStatus st;
      st.pod_group = j->key;
      st.phase = j->PhaseText();
      st.condition = c;
      st.running = j->Count(TaskStatus::kRunning);
      st.succeeded = j->Count(TaskStatus::kSucceeded);
      st.failed = j->Count(TaskStatus::kFailed);
      result_.pod_groups.push_back(std::move(st));
      RecordEvent({"PodGroup", j->key, "Warning", "Unschedulable", vr->message});
      if (j->IsPending()) {
        invalid_.insert(j->id);
        valid.push_back(j);
      }
      continue;
    }
    if ((j->Count(TaskStatus::kPending) > 0 || j->Count(TaskStatus::kPipelined) > 0 ||
         j->IsPending()) &&
        !HeldBack(*j)) {
      Touch(*j);
    }
    valid.push_back(j);
  }
  jobs_ = std::move(valid);
  // Reserve the result up front: growing these vectors mid-cycle moves every event recorded so
  // far, a latency spike for whichever gang happens to trigger it.
  size_t pending = 0;
  for (const JobInfo* j : jobs_) pending += j->Count(TaskStatus::kPending);
  result_.binds.reserve(pending);
  if (options_.diagnostics) {
    result_.events.reserve(2 * pending + jobs_.size());
    result_.pod_conditions.reserve(pending);
  }
  result_.pod_groups.reserve(jobs_.size());
}

TaskStatus Session::LastStatus(const TaskInfo& t) const {
  auto it = last_tx_.find(t.id);
  return it == last_tx_.end() ? t.status : it->second.first;
}

int Session::LastNode(const TaskInfo& t) const {
  auto lt = last_tx_.find(t.id);
  return lt != last_tx_.end() ? lt->second.second : -1;
}

std::string Session::JobFitError(const JobInfo& j) const {
  std::map<std::string, int> counts;
  for (int s = 0; s < kNumTaskStatus; ++s) {
    if (j.count[s] > 0) counts[TaskStatusName(static_cast<TaskStatus>(s))] += j.count[s];
  }
  counts["minAvailable"] = j.min_available;
  std::string msg = "pod group is not ready, " + FitHistogram(counts);
  std::map<std::string, int> pending_reasons;
  const TaskInfo* first_failed = nullptr;
  std::vector<const TaskInfo*> tasks;
  for (int tid : j.tasks) tasks.push_back(&cluster_.task(tid));
  std::sort(tasks.begin(), tasks.end(),
            [&](const TaskInfo* a, const TaskInfo* b) { return TaskOrderLess(*a, *b); });
  for (const TaskInfo* t : tasks) {
    if (t->status != TaskStatus::kPending) continue;
    TaskStatus last = LastStatus(*t);
    pending_reasons[last == TaskStatus::kAllocated ? "Schedulable" : "Unschedulable"]++;
  }
  if (!pending_reasons.empty()) msg += "; Pending: " + FitHistogram(pending_reasons);
  auto jfe = job_fit_errors_.find(j.id);
  if (jfe != job_fit_errors_.end() && !jfe->second.empty()) {
    msg += ". Origin reason is " + jfe->second;
  } else {
    for (const TaskInfo* t : tasks) {
      auto fe = task_fit_errors_.find(t->id);
      if (fe != task_fit_errors_.end()) {
        first_failed = t;
        msg += fmt::format(". Origin reason is {}: {}", first_failed->name, fe->second.Error());
        break;
      }
    }
  }
  return msg;
}

void Session::Close() {
  for (size_t i = 0; i < plugins_.size(); ++i) {
    plugins_[i]->OnSessionClose(*this);
    if (options_.on_step) options_.on_step("OnSessionClose", plugin_names_[i]);
  }

  // PodGroup status (Volcano's jobStatus), pod conditions and events: job_updater.h.
  UpdateJobStatuses(*this);

  // Soft reservations end with the session.
  for (auto it = open_statements_.rbegin(); it != open_statements_.rend(); ++it) (*it)->Discard();
  open_statements_.clear();
  // Committed pipelines hold nodes only within the session; the preemptor's victims are leaving
  // and the next cycle places it for real.
  for (JobInfo* j : jobs_) {
    if (j->Count(TaskStatus::kPipelined) == 0 && j->Count(TaskStatus::kAllocated) == 0) continue;
    for (int tid : j->tasks) {
      TaskInfo& t = cluster_.task(tid);
      if (t.status == TaskStatus::kPipelined || t.status == TaskStatus::kAllocated) {
        cluster_.UnplaceTask(t, TaskStatus::kPending);
      }
    }
  }
}

void Session::KeepOpen(std::unique_ptr<Statement> stmt) {
  open_statements_.push_back(std::move(stmt));
}

// --- hook combination -----------------------------------------------------------------------

template <typename Fn>
const std::vector<std::vector<const Fn*>>& Session::Tiers(Hook<Fn>& hook) const {
  if (!hook.resolved) {
    hook.tiers.clear();
    for (const Tier& tier : conf_.tiers) {
      std::vector<const Fn*> fns;
      for (const PluginOption& p : tier.plugins) {
        if (hook.flag != nullptr && !p.Enabled(hook.flag)) continue;
        auto it = hook.fns.find(p.name);
        if (it != hook.fns.end()) fns.push_back(&it->second);
      }
      hook.tiers.push_back(std::move(fns));
    }
    hook.resolved = true;
  }
  return hook.tiers;
}

bool Session::JobOrderLess(const JobInfo& l, const JobInfo& r) const {
  for (const auto& tier : Tiers(job_order_)) {
    for (const auto* f : tier) {
      if (int c = (*f)(l, r); c != 0) return c < 0;
    }
  }
  return FallbackLess(l, r);
}

bool Session::QueueOrderLess(const QueueInfo& l, const QueueInfo& r) const {
  for (const auto& tier : Tiers(queue_order_)) {
    for (const auto* f : tier) {
      if (int c = (*f)(l, r); c != 0) return c < 0;
    }
  }
  if (l.creation != r.creation) return l.creation < r.creation;
  return l.name < r.name;
}

bool Session::VictimQueueOrderLess(const QueueInfo& l, const QueueInfo& r,
                                   const QueueInfo& pq) const {
  for (const auto& tier : Tiers(victim_queue_order_)) {
    for (const auto* f : tier) {
      if (int c = (*f)(l, r, pq); c != 0) return c < 0;
    }
  }
  return !QueueOrderLess(l, r);
}

bool Session::TaskOrderLess(const TaskInfo& l, const TaskInfo& r) const {
  for (const auto& tier : Tiers(task_order_)) {
    for (const auto* f : tier) {
      if (int c = (*f)(l, r); c != 0) return c < 0;
    }
  }
  if (l.name_index != r.name_index) return l.name_index < r.name_index;
  const std::string& lc = l.pod->meta.creation_timestamp;
  const std::string& rc = r.pod->meta.creation_timestamp;
  if (lc != rc) return lc < rc;
  return l.uid < r.uid;
}

PredicateStatus Session::Predicate(const TaskInfo& t, const NodeInfo& n) const {
  for (const auto& tier : Tiers(predicate_)) {
    for (const auto* f : tier) {
      PredicateStatus s = (*f)(t, n);
      if (!s.ok) return s;
    }
  }
  return {};
}

void Session::NodeScores(const TaskInfo& t, const std::vector<const NodeInfo*>& nodes,
                         std::vector<double>& scores) const {
  scores.assign(nodes.size(), 0.0);
  // Batch and per-node scorers of one plugin share its enableNodeOrder flag; their sum does not
  // depend on the order they are added in.
  for (const auto& tier : Tiers(node_order_)) {
    for (const auto* f : tier) {
      for (size_t i = 0; i < nodes.size(); ++i) scores[i] += (*f)(t, *nodes[i]);
    }
  }
  for (const auto& tier : Tiers(batch_node_order_)) {
    for (const auto* f : tier) (*f)(t, nodes, scores);
  }
}

std::optional<HyperNodeGradient> Session::HyperNodeGradientFor(const JobInfo& j) const {
  for (const auto& tier : Tiers(hypernode_gradient_)) {
    for (const auto* f : tier) {
      if (auto g = (*f)(j)) return g;
    }
  }
  return std::nullopt;
}

void Session::HyperNodeScores(const JobInfo& j, const std::vector<const HyperNodeInfo*>& hypernodes,
                              std::vector<double>& scores) const {
  scores.assign(hypernodes.size(), 0.0);
  for (const auto& tier : Tiers(hypernode_order_)) {
    for (const auto* f : tier) (*f)(j, hypernodes, scores);
  }
}

bool Session::JobReady(const JobInfo& j) const {
  for (const auto& tier : Tiers(job_ready_)) {
    for (const auto* f : tier) {
      if (!(*f)(j)) return false;
    }
  }
  return true;
}

namespace {

// Volcano's vote combination (JobPipelined, JobEnqueueable): any Reject decides false; a Permit
// in a tier ends the check with true; with no votes at all the answer is true.
bool CombineVotes(const std::vector<std::vector<const JobVoteFn*>>& tiers, const JobInfo& j) {
  for (const auto& tier : tiers) {
    bool permit = false;
    for (const auto* f : tier) {
      int v = (*f)(j);
      if (v < 0) return false;
      if (v > 0) permit = true;
    }
    if (permit) return true;
  }
  return true;
}

}  // namespace

bool Session::JobPipelined(const JobInfo& j) const {
  return CombineVotes(Tiers(job_pipelined_), j);
}

bool Session::JobStarving(const JobInfo& j) const {
  for (const auto& tier : Tiers(job_starving_)) {
    bool found = false;
    for (const auto* f : tier) {
      found = true;
      if (!(*f)(j)) return false;
    }
    if (found) return true;
  }
  return false;
}

std::optional<ValidateResult> Session::JobValid(const JobInfo& j) const {
  for (const auto& tier : Tiers(job_valid_)) {
    for (const auto* f : tier) {
      auto r = (*f)(j);
      if (r && !r->pass) return r;
    }
  }
  return std::nullopt;
}

bool Session::JobEnqueueable(const JobInfo& j) const {
  return CombineVotes(Tiers(job_enqueueable_), j);
}

void Session::JobEnqueued(const JobInfo& j) const {
  for (const auto& tier : Tiers(job_enqueued_)) {
    for (const auto* f : tier) {
      (*f)(j);
    }
  }
}

bool Session::Overused(const QueueInfo& q) const {
  for (const auto& tier : Tiers(overused_)) {
    for (const auto* f : tier) {
      if ((*f)(q)) return true;
    }
  }
  return false;
}

bool Session::Allocatable(const QueueInfo& q, const TaskInfo& t) const {
  for (const auto& tier : Tiers(allocatable_)) {
    for (const auto* f : tier) {
      if (!(*f)(q, t)) return false;
    }
  }
  return true;
}

bool Session::Preemptive(const QueueInfo& q, const TaskInfo& t) const {
  for (const auto& tier : Tiers(preemptive_)) {
    for (const auto* f : tier) {
      if (!(*f)(q, t)) return false;
    }
  }
  return true;
}

namespace {

std::vector<const TaskInfo*> Intersect(const std::vector<const TaskInfo*>& a,
                                       const std::vector<const TaskInfo*>& b) {
  std::vector<const TaskInfo*> out;
  for (const TaskInfo* x : a) {
    if (std::find(b.begin(), b.end(), x) != b.end()) out.push_back(x);
  }
  return out;
}

}  // namespace

#define MUSTER_VICTIMS_COMBINE(fns)                                            \
  for (const auto& tier : Tiers(fns)) {                                        \
    std::optional<std::vector<const TaskInfo*>> victims;                       \
    for (const auto* f : tier) {                                               \
      auto [candidates, vote] = (*f)(preemptor, preemptees);                   \
      if (vote == kAbstain) continue;                                          \
      if (candidates.empty()) {                                                \
        victims = std::vector<const TaskInfo*>{};                              \
        break;                                                                 \
      }                                                                        \
      victims = victims ? Intersect(*victims, candidates) : candidates;        \
    }                                                                          \
    if (victims) return *victims;                                              \
  }                                                                            \
  return {};

std::vector<const TaskInfo*> Session::Preemptable(
    const TaskInfo& preemptor, const std::vector<const TaskInfo*>& preemptees) const {
  MUSTER_VICTIMS_COMBINE(preemptable_)
}

std::vector<const TaskInfo*> Session::Reclaimable(
    const TaskInfo& preemptor, const std::vector<const TaskInfo*>& preemptees) const {
  MUSTER_VICTIMS_COMBINE(reclaimable_)
}

#undef MUSTER_VICTIMS_COMBINE

std::vector<const TaskInfo*> Session::OrderVictims(std::vector<const TaskInfo*> victims,
                                                   const TaskInfo& preemptor) const {
  const JobInfo* pj = preemptor.job >= 0 ? &cluster_.job(preemptor.job) : nullptr;
  std::stable_sort(victims.begin(), victims.end(), [&](const TaskInfo* l, const TaskInfo* r) {
    if (l->job == r->job || l->job < 0 || r->job < 0) return TaskOrderLess(*r, *l);
    const JobInfo& lj = cluster_.job(l->job);
    const JobInfo& rj = cluster_.job(r->job);
    if (pj && lj.queue != rj.queue && lj.queue >= 0 && rj.queue >= 0 && pj->queue >= 0) {
      return VictimQueueOrderLess(cluster_.queue(lj.queue), cluster_.queue(rj.queue),
                                  cluster_.queue(pj->queue));
    }
    return JobOrderLess(rj, lj);
  });
  return victims;
}

// --- primitive state changes -------------------------------------------------------------------

void Session::FireAllocate(const TaskInfo& t) {
  for (auto& h : handlers_) {
    if (h.on_allocate) h.on_allocate(t);
  }
}

void Session::FireDeallocate(const TaskInfo& t) {
  for (auto& h : handlers_) {
    if (h.on_deallocate) h.on_deallocate(t);
  }
}

void Session::DoAllocate(TaskInfo& t, int node) {
  if (t.resreq.Get(kGpu) > 0) {
    for (const GpuChoiceFn& choose : gpu_choice_) {
      t.gpus = choose(t, cluster_.node(node));
      if (!t.gpus.empty()) break;
    }
  }
  cluster_.PlaceTask(t, node, TaskStatus::kAllocated);
  last_tx_[t.id] = {TaskStatus::kAllocated, node};
  FireAllocate(t);
}

void Session::DoPipeline(TaskInfo& t, int node) {
  cluster_.PlaceTask(t, node, TaskStatus::kPipelined);
  last_tx_[t.id] = {TaskStatus::kPipelined, node};
  FireAllocate(t);
}

void Session::DoEvict(TaskInfo& t) {
  cluster_.SetStatus(t, TaskStatus::kReleasing);
  FireDeallocate(t);
}

void Session::UndoPlacement(TaskInfo& t) {
  cluster_.UnplaceTask(t, TaskStatus::kPending);
  FireDeallocate(t);
}

void Session::UndoEvict(TaskInfo& t, TaskStatus previous) {
  cluster_.SetStatus(t, previous);
  FireAllocate(t);
}

void Session::RecordBind(TaskInfo& t) {
  cluster_.SetStatus(t, TaskStatus::kBinding);
  result_.binds.push_back({t.key, cluster_.node(t.node).name, t.gpus});
  if (options_.diagnostics) {
    result_.events.push_back({"Pod", t.key, "Normal", "Scheduled",
                              fmt::format("Successfully assigned {} to {}", t.key,
                                          cluster_.node(t.node).name)});
  }
}

void Session::RecordEviction(TaskInfo& t, const std::string& reason) {
  if (t.job >= 0) Touch(cluster_.job(t.job));
  result_.evictions.push_back({t.key, reason});
  RecordEvent(
      {"Pod", t.key, "Warning", "Evict", fmt::format("Pod is evicted, because of {}", reason)});
}

void Session::RecordPipelined(const TaskInfo& t) {
  if (t.node >= 0) result_.pipelined[t.key] = cluster_.node(t.node).name;
}

}  // namespace muster::core
