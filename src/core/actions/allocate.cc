// allocate: queue by queue (fair-share order), job by job (job order), task by task (task
// order), each job's placements a statement committed only when the gang is ready. Nodes where
// the task fits in idle resources are preferred; nodes where it fits only once releasing pods
// are gone get a pipelined (held) placement. Follows Volcano's
// pkg/scheduler/actions/allocate/allocate.go.
//
// Arguments of muster's own (configurations: [{name: allocate, arguments: {...}}]):
//   strictOrder: true   strict FIFO per queue: the first job in job order that cannot be placed,
//                       or that enqueue has not admitted, stops its queue; nothing behind it goes
//                       first (a job the caller holds back, JobRole::kHeldBack, is
//                       passed over: the live scheduler backs off no job under strictOrder).
//   reserveGpus: N      a reservation for the first gang of at least N GPUs that cannot be placed
//   reserveAfter: 10m   (once its PodGroup is that old): the jobs after it keep their placements
//                       only if they do not delay it (reserve.h).
//
// A gang with a network topology (a HyperNodeGradient from a plugin: network-topology-aware)
// takes the hypernode-aware path of Volcano's allocateForJob: for each gradient, lowest tier
// first, the whole gang is tried in each HyperNode with only that HyperNode's nodes in view; of
// those that take it, the best-scoring (HyperNodeOrderFn; first by tier and name among equals)
// gets it; when no HyperNode of any gradient does, the gang waits with the gradient's reason. A
// trial is placed and undone; the winner is placed again, from the same start, with the same
// result. Reservations do not hold such a gang's room (it is placed as if none were planned);
// a hard-mode gang's own reservation is planned within the HyperNodes it may land in (reserve.h).

#include <map>
#include <optional>
#include <set>

#include "core/actions/feasible_nodes.h"
#include "core/actions/ordered_queue.h"
#include "core/actions/reserve.h"
#include "core/actions/shape_cache.h"
#include "core/framework/plugin.h"

namespace muster::core {
namespace {

// How many identical pods one feasible-node search serves before the next search.
constexpr int kShapeReuses = 16;

class AllocateAction : public Action {
 public:
  void Execute(Session& ssn) override {
    Cluster& c = ssn.cluster();
    bool has_enqueue = ssn.conf().HasAction("enqueue");
    // ParseSchedulerConf rejects bad arguments; a conf built in code falls back to Volcano's.
    AllocateOptions options = AllocateOptionsFromConf(ssn.conf()).value_or(AllocateOptions{});
    // Reservations plan in time: without the cycle's time (SessionOptions::now_unix) there are
    // none.
    std::optional<Reservation> reservation;
    if (options.reserve_gpus > 0 && ssn.options().now_unix > 0) reservation.emplace(ssn, options);
    OrderedQueue<QueueInfo*> queues(
        [&ssn](QueueInfo* const& l, QueueInfo* const& r) { return ssn.QueueOrderLess(*l, *r); });
    std::map<int, OrderedQueue<JobInfo*>> jobs;
    for (JobInfo* j : ssn.jobs()) {
      if (j->IsPending() && j->tasks.empty()) {
        // A Volcano Job's group without pods yet (held back from the actions): its controller
        // creates them once the group is Inqueue. Without enqueue in the conf, allocate admits
        // it as it admits any Pending job below, or the job would wait for ever.
        const bool backing_off = ssn.options().RoleOf(*j) == JobRole::kHeldBack;
        if (!has_enqueue && !backing_off && (!j->min_resources || ssn.JobEnqueueable(*j))) {
          ssn.JobEnqueued(*j);
          j->phase = PodGroupPhase::kInqueue;
        }
        continue;
      }
      if (ssn.HeldBack(*j)) continue;
      if (j->IsPending()) {
        if (has_enqueue || (j->min_resources && !ssn.JobEnqueueable(*j))) {
          // Not admitted: under strictOrder it still holds its place, and stops its queue.
          if (!options.strict_order) continue;
        } else {
          ssn.JobEnqueued(*j);
          j->phase = PodGroupPhase::kInqueue;
        }
      }
      // A job with nothing pending has nothing to allocate; leaving it out changes no decision.
      if (j->Count(TaskStatus::kPending) == 0) continue;
      QueueInfo* q = ssn.QueueOf(*j);
      auto [it, inserted] = jobs.try_emplace(
          q->id, [&ssn](JobInfo* const& l, JobInfo* const& r) { return ssn.JobOrderLess(*l, *r); });
      if (inserted) queues.Push(q);
      it->second.Push(j);
    }

    std::map<int, OrderedQueue<TaskInfo*>> pending_tasks;
    auto tasks_of = [&](JobInfo& j) -> OrderedQueue<TaskInfo*>& {
      auto [it, inserted] = pending_tasks.try_emplace(
          j.id,
          [&ssn](TaskInfo* const& l, TaskInfo* const& r) { return ssn.TaskOrderLess(*l, *r); });
      if (inserted) {
        for (int tid : j.tasks) {
          TaskInfo& t = c.task(tid);
          if (t.status == TaskStatus::kPending && !t.best_effort) it->second.Push(&t);
        }
      }
      return it->second;
    };
    ShapeCache shapes;
    Reservation* reserve = reservation ? &*reservation : nullptr;

    // The first gang in job order that wants a reservation and has waited since an earlier cycle
    // (which could not place it) holds it from the start and is tried first: the jobs before it
    // in order must not take its room either. Once it is placed, the next such gang that cannot
    // be placed gets one.
    if (reservation) {
      JobInfo* first = nullptr;
      for (auto& [qid, queue_jobs] : jobs) {
        for (JobInfo* j : queue_jobs.Items()) {
          if (!j->IsPending() && reservation->Wants(*j) && reservation->Waited(*j) &&
              (!first || ssn.JobOrderLess(*j, *first))) {
            first = j;
          }
        }
      }
      QueueInfo* q = first ? ssn.QueueOf(*first) : nullptr;
      if (first && reservation->Plan(*first) && !ssn.Overused(*q)) {
        Place(ssn, *q, *first, tasks_of(*first), jobs.at(q->id), shapes, reserve);
        // Planned to fit now and did not after all (a constraint between its own pods, which
        // the plan does not model): holding room for it now would hold it for nothing.
        if (!ssn.JobReady(*first) && reservation->shadow() <= ssn.options().now_unix) {
          reservation->Release();
        }
      }
    }

    while (!queues.Empty()) {
      QueueInfo* q = queues.Pop();
      if (ssn.Overused(*q)) continue;
      auto& queue_jobs = jobs.at(q->id);
      if (queue_jobs.Empty()) continue;
      JobInfo* j = queue_jobs.Pop();
      if (j->IsPending()) continue;  // strictOrder: the queue stops at a job not admitted
      Place(ssn, *q, *j, tasks_of(*j), queue_jobs, shapes, reserve);
      if (ssn.JobReady(*j)) {
        queues.Push(q);
        continue;
      }
      if (reservation && reservation->Wants(*j) && !ssn.JobPipelined(*j)) reservation->Plan(*j);
      if (!options.strict_order) queues.Push(q);
    }
  }

 private:
  static bool NeedContinueAllocating(Session& ssn, const JobInfo& j) {
    Cluster& c = ssn.cluster();
    if (j.min_available == static_cast<int>(j.tasks.size())) return false;
    std::set<std::string> failed_roles;
    std::map<std::string, int> pending, allocated;
    for (int tid : j.tasks) {
      const TaskInfo& t = c.task(tid);
      if (ssn.task_fit_errors().count(tid)) failed_roles.insert(t.role);
      if (t.status == TaskStatus::kPending) pending[t.role]++;
      if (IsAllocatedStatus(t.status) || t.status == TaskStatus::kSucceeded) allocated[t.role]++;
    }
    if (j.min_available < j.task_min_total) {
      int left = 0;
      for (const auto& [role, n] : pending) {
        if (!failed_roles.count(role)) left += n;
      }
      return j.ReadyTaskNum() + left >= j.min_available;
    }
    for (const std::string& role : failed_roles) {
      auto it = j.min_task_member.find(role);
      if (it == j.min_task_member.end() || it->second == 0) continue;
      if (allocated[role] < it->second) return false;
    }
    return true;
  }

  // The shape's last feasible nodes that are still feasible for `t`. A node unchanged since
  // then is still feasible (its filters read only the node and the pod) unless some pod in the
  // cluster has required anti-affinity, which reads other nodes too: then every node is checked.
  static FeasibleNodes RecheckShape(Session& ssn, const TaskInfo& t, const ShapeCache::Entry& shape) {
    if (!ssn.cluster().AntiAffinityTasks().empty() || shape.versions.size() != shape.nodes.size()) {
      return RecheckFeasibleNodes(ssn, t, shape.nodes);
    }
    FeasibleNodes out;
    out.nodes.reserve(shape.nodes.size());
    thread_local std::vector<NodeInfo*> changed;
    changed.clear();
    for (size_t k = 0; k < shape.nodes.size(); ++k) {
      NodeInfo* n = shape.nodes[k];
      if (n->version == shape.versions[k]) {
        out.nodes.push_back(n);
        continue;
      }
      changed.assign(1, n);
      FeasibleNodes one = RecheckFeasibleNodes(ssn, t, changed);
      if (!one.nodes.empty()) out.nodes.push_back(n);
    }
    return out;
  }

  // Whether a search for a task of this shape would find no feasible node: the last search of
  // every node found none, and no node has changed since. Required pod anti-affinity of other
  // pods reads more than the node itself (as for RecheckShape): then every task searches.
  static bool NoNodeFits(Session& ssn, const ShapeCache::Entry& shape) {
    return shape.none_fit && shape.none_fit_at == ssn.cluster().NodeChanges() &&
           ssn.cluster().AntiAffinityTasks().empty();
  }

  // Whether this task's scores on a node depend on that node alone (not on the other candidates,
  // as normalised preference scores do), so that a score stays valid while the node is unchanged.
  static bool NodeLocalScores(const TaskInfo& t, const std::vector<NodeInfo*>& nodes) {
    const auto& a = t.pod->spec.affinity;
    if (a && ((a->node_affinity && !a->node_affinity->preferred.empty()) || a->pod_affinity ||
              a->pod_anti_affinity)) {
      return false;
    }
    return std::none_of(nodes.begin(), nodes.end(),
                        [](const NodeInfo* n) { return n->has_prefer_no_schedule_taint; });
  }

  // The best node among `feasible`: the best-scoring one whose idle resources fit, else the
  // best-scoring one that fits once releasing pods are gone; first in order among equals
  // (Volcano's idle / future-idle gradients). Scores of unchanged nodes are reused from the
  // shape's last round when they are node-local.
  // Moves `feasible` into the shape's entry.
  static NodeInfo* ChooseNode(Session& ssn, const TaskInfo& t, std::vector<NodeInfo*>& feasible,
                              ShapeCache::Entry& shape) {
    bool reuse = NodeLocalScores(t, feasible);
    thread_local std::vector<double> scores;
    thread_local std::vector<uint64_t> versions;
    thread_local std::vector<char> idle;
    thread_local std::vector<const NodeInfo*> stale;
    thread_local std::vector<size_t> stale_index;
    thread_local std::vector<double> fresh;
    scores.assign(feasible.size(), 0.0);
    versions.resize(feasible.size());
    idle.resize(feasible.size());
    stale.clear();
    stale_index.clear();
    // A re-checked list keeps the order of the shape's last list, so the two are walked in step
    // (a fresh list may not: its nodes the walk passes by are simply judged anew). Whether the
    // task fits a node's idle resources is reused from the shape's last round too (same
    // request) while the node is unchanged.
    size_t k = 0;
    for (size_t i = 0; i < feasible.size(); ++i) {
      versions[i] = feasible[i]->version;
      while (k < shape.nodes.size() && shape.nodes[k] != feasible[i]) ++k;
      bool unchanged = k < shape.nodes.size() && shape.versions[k] == versions[i];
      idle[i] = unchanged ? shape.idle[k] : t.resreq.LessEqual(feasible[i]->idle);
      if (reuse && unchanged) {
        scores[i] = shape.scores[k];
      } else {
        stale.push_back(feasible[i]);
        stale_index.push_back(i);
      }
    }
    if (!stale.empty()) {
      ssn.NodeScores(t, stale, fresh);
      for (size_t m = 0; m < stale.size(); ++m) scores[stale_index[m]] = fresh[m];
    }
    NodeInfo* best = nullptr;
    double best_score = 0;
    for (int pass = 0; pass < 2 && !best; ++pass) {
      for (size_t i = 0; i < feasible.size(); ++i) {
        if ((pass == 0) != static_cast<bool>(idle[i])) continue;
        if (!best || scores[i] > best_score) {
          best = feasible[i];
          best_score = scores[i];
        }
      }
    }
    // Swap rather than copy: the buffers' capacity is reused by the next pod.
    shape.nodes.swap(feasible);
    shape.scores.swap(scores);
    shape.versions.swap(versions);
    shape.idle.swap(idle);
    return best;
  }

  static bool RoleHasFitErrors(Session& ssn, const JobInfo& j, const TaskInfo& t) {
    if (t.role.empty()) return false;
    for (const auto& [tid, fe] : ssn.task_fit_errors()) {
      const TaskInfo& other = ssn.cluster().task(tid);
      if (other.job == j.id && other.role == t.role) return true;
    }
    return false;
  }

  // kNormal: Volcano's allocateResourcesForTasks. kTrial: every pending task is tried (none is
  // left for a later turn), and the placements are undone whatever comes of them. kWhole: every
  // pending task is tried, and the placements are kept when the gang is ready.
  enum class Mode { kNormal, kTrial, kWhole };

  static void Place(Session& ssn, QueueInfo& q, JobInfo& j, OrderedQueue<TaskInfo*>& tasks,
                    OrderedQueue<JobInfo*>& queue_jobs, ShapeCache& shapes,
                    Reservation* reservation) {
    std::optional<HyperNodeGradient> gradient = ssn.HyperNodeGradientFor(j);
    if (!gradient) {
      AllocateJob(ssn, q, j, tasks, queue_jobs, shapes, reservation, Mode::kNormal);
      return;
    }
    AllocateInHyperNodes(ssn, q, j, tasks, *gradient);
  }

  static void ForgetFitErrors(Session& ssn, const JobInfo& j) {
    for (int tid : j.tasks) ssn.task_fit_errors().erase(tid);
  }

  // What the trials left in the job's record: their fit errors and placements.
  static void ForgetTrials(Session& ssn, const JobInfo& j) {
    ForgetFitErrors(ssn, j);
    for (int tid : j.tasks) {
      const TaskInfo& t = ssn.cluster().task(tid);
      if (t.status == TaskStatus::kPending) ssn.ForgetLastPlacement(t);
    }
  }

  // The gang placed within one HyperNode's nodes, from the search start `start`: whether it was
  // ready (kTrial leaves nothing placed).
  // kWhole keeps its placements, so the tasks it took leave `tasks` (the job's queue for the
  // cycle), as kNormal's do: a later turn of the job in the same cycle (the reservation's gang is
  // placed before the loop over the queues, and comes up again in it) must not place them again.
  static bool TryHyperNode(Session& ssn, QueueInfo& q, JobInfo& j, OrderedQueue<TaskInfo*>& tasks,
                           const HyperNodeInfo& hn, int start, Mode mode) {
    std::vector<NodeInfo*> in_view;
    for (NodeInfo* n : ssn.nodes()) {
      if (hn.Has(n->id)) in_view.push_back(n);
    }
    std::vector<NodeInfo*> all = ssn.SwapNodes(std::move(in_view));
    ssn.set_next_start_node(start);
    ForgetTrials(ssn, j);
    OrderedQueue<TaskInfo*> mine = tasks;
    OrderedQueue<JobInfo*> unused(
        [&ssn](JobInfo* const& l, JobInfo* const& r) { return ssn.JobOrderLess(*l, *r); });
    ShapeCache shapes;  // feasible nodes found among other nodes do not hold here
    bool ready = AllocateJob(ssn, q, j, mine, unused, shapes, nullptr, mode);
    ssn.SwapNodes(std::move(all));
    if (mode == Mode::kWhole) tasks = std::move(mine);
    return ready;
  }

  static void AllocateInHyperNodes(Session& ssn, QueueInfo& q, JobInfo& j,
                                   OrderedQueue<TaskInfo*>& tasks,
                                   const HyperNodeGradient& gradient) {
    const int start = ssn.next_start_node();
    std::vector<double> scores;
    for (const std::vector<const HyperNodeInfo*>& tier : gradient.tiers) {
      std::vector<const HyperNodeInfo*> fit;
      for (const HyperNodeInfo* hn : tier) {
        if (TryHyperNode(ssn, q, j, tasks, *hn, start, Mode::kTrial)) fit.push_back(hn);
      }
      if (fit.empty()) continue;
      ssn.HyperNodeScores(j, fit, scores);
      size_t best = 0;
      for (size_t i = 1; i < fit.size(); ++i) {
        if (scores[i] > scores[best]) best = i;
      }
      TryHyperNode(ssn, q, j, tasks, *fit[best], start, Mode::kWhole);
      return;
    }
    ssn.set_next_start_node(start);
    for (int tid : j.tasks) {
      const TaskInfo& t = ssn.cluster().task(tid);
      if (t.status == TaskStatus::kPending) ssn.ForgetLastPlacement(t);
    }
    if (!gradient.unfit_reason.empty()) {
      // The pods wait for the reason the gang does, not for the last HyperNode tried.
      ForgetFitErrors(ssn, j);
      ssn.job_fit_errors()[j.id] = gradient.unfit_reason;
    }
  }

  // Whether the gang is ready once its tasks are tried (kNormal: when its placements end).
  static bool AllocateJob(Session& ssn, QueueInfo& q, JobInfo& j, OrderedQueue<TaskInfo*>& tasks,
                          OrderedQueue<JobInfo*>& queue_jobs, ShapeCache& shapes,
                          Reservation* reservation, Mode mode) {
    auto stmt = std::make_unique<Statement>(ssn);
    while (!tasks.Empty()) {
      TaskInfo* t = tasks.Pop();
      if (!ssn.Allocatable(q, *t)) continue;
      if (RoleHasFitErrors(ssn, j, *t)) continue;
      // Identical pods share a search: a pod re-checks only the nodes the last pod of its shape
      // found feasible (and only those changed since): all pods of the job that searched, and
      // up to kShapeReuses pods of other jobs; then, or
      // when none of them is left, it searches afresh from the rotating start, so that pods
      // still spread over the whole cluster. Every node used is re-checked, so a shared search
      // never places a pod where it does not fit; what it may miss is a node beyond the search
      // horizon, as any early-stopping search does.
      FeasibleNodes feasible;
      ShapeCache::Entry* shape = shapes.Find(*t);
      if (shape && NoNodeFits(ssn, *shape)) {
        // What the searches below would conclude, without them: no node fits, for the reasons
        // the last one found; the shape's entry is left as a failed fresh search leaves it (and
        // the rotating start where a search of every node leaves it).
        if (!ssn.nodes().empty()) {
          ssn.set_next_start_node(ssn.next_start_node() % static_cast<int>(ssn.nodes().size()));
        }
        shape->shape = t;
        shape->uses = 0;
        shape->job = j.id;
        ssn.task_fit_errors()[t->id] = shape->none_fit_errors;
        if (NeedContinueAllocating(ssn, j)) continue;
        break;
      }
      if (shape && (shape->job == j.id || shape->uses < kShapeReuses)) {
        feasible = RecheckShape(ssn, *t, *shape);
        ++shape->uses;
      }
      if (feasible.nodes.empty()) {
        feasible = FindFeasibleNodes(ssn, *t);
        shape = &shapes.Get(*t);
        shape->uses = 0;
        shape->job = j.id;
      }
      if (feasible.nodes.empty()) {
        shape->none_fit = true;
        shape->none_fit_at = ssn.cluster().NodeChanges();
        shape->none_fit_errors = feasible.errors;
        ssn.task_fit_errors()[t->id] = std::move(feasible.errors);
        if (NeedContinueAllocating(ssn, j)) continue;
        break;
      }
      shape->none_fit = false;
      shape->shape = t;  // the entry found above; the task is its latest user (ShapeCache::Get)
      NodeInfo* best = ChooseNode(ssn, *t, feasible.nodes, *shape);  // takes the nodes
      if (t->resreq.LessEqual(best->idle)) {
        stmt->Allocate(*t, best->id);
      } else {
        stmt->Pipeline(*t, best->id);
      }
      if (mode == Mode::kNormal && ssn.JobReady(j) && !tasks.Empty()) {
        queue_jobs.Push(&j);
        break;
      }
    }
    const bool ready = ssn.JobReady(j);
    if (mode == Mode::kTrial) {
      stmt->Discard();
      return ready;
    }
    if (ssn.JobReady(j) && reservation && !reservation->Admit(j)) {
      stmt->Discard();
      ssn.job_fit_errors()[j.id] = reservation->TurnedAwayReason();
    } else if (ssn.JobReady(j)) {
      stmt->Commit();
      if (reservation && reservation->gang() == &j) reservation->Release();
    } else if (!ssn.JobPipelined(j)) {
      stmt->Discard();
    } else if (!stmt->empty()) {
      ssn.KeepOpen(std::move(stmt));
    }
    return ready;
  }
};

}  // namespace

std::unique_ptr<Action> NewAllocateAction() { return std::make_unique<AllocateAction>(); }

}  // namespace muster::core
