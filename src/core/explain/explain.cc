// Explain (explain.h): a gang's queue position, admission and placement verdicts, and its
// estimated start from a forward simulation through the engine.

#include "core/explain/explain.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "api/selector.h"
#include "api/time.h"
#include "common/quantity.h"
#include "core/apply_cycle_result.h"
#include "core/framework/session.h"
#include "fmt/format.h"

namespace muster::core {
namespace {

constexpr double kNoEnd = std::numeric_limits<double>::infinity();
// The simulation's sessions at each expected end, before it steps a minute at a time.
constexpr int kExactSessions = 32;
constexpr double kCoarseStepSeconds = 60;
constexpr double kCoarseStepShare = 0.05;

std::string QuantityText(int64_t milli) { return common::Quantity::FromMilli(milli).ToString(); }

bool Started(const JobInfo& j) {
  if (j.min_available > 0) return j.ReadyTaskNum() >= j.min_available;
  return j.ReadyTaskNum() > 0;
}

// Whether j is waiting to start: known PodGroup, not started, Pending or Inqueue.
bool Waiting(const JobInfo& j) {
  return j.pg && !Started(j) &&
         (j.phase == PodGroupPhase::kPending || j.phase == PodGroupPhase::kInqueue);
}

double RuntimeOf(const TaskInfo& t, const ExplainOptions& options) {
  if (t.expected_runtime >= 0) return t.expected_runtime;
  return options.runtime_history ? options.runtime_history(t) : -1;
}

// When t, now occupying a node, is expected to leave it (Unix seconds), as reserve.cc's
// ExpectedEnd says, with the caller's history for pods without the annotation.
double ExpectedEndOf(const TaskInfo& t, const ExplainOptions& options) {
  const double now = static_cast<double>(options.now_unix);
  if (t.status == TaskStatus::kReleasing) return now;
  double runtime = RuntimeOf(t, options);
  if (runtime < 0) return kNoEnd;
  double start = t.status == TaskStatus::kRunning && t.start_unix > 0
                     ? static_cast<double>(t.start_unix)
                     : now;
  return std::max(now, start + runtime);
}

// The planned pods whose group has no pods in `cluster` yet.
void AddPlannedPods(Cluster& cluster, const std::vector<api::Pod>& planned) {
  std::set<std::string> with_pods;
  for (const api::Pod& p : planned) {
    auto g = p.meta.annotations.find(api::kGroupNameAnnotation);
    if (g == p.meta.annotations.end()) continue;
    std::string key = p.meta.namespace_ + "/" + g->second;
    const JobInfo* j = cluster.FindJob(key);
    if (j && !j->tasks.empty()) with_pods.insert(key);
  }
  for (const api::Pod& p : planned) {
    auto g = p.meta.annotations.find(api::kGroupNameAnnotation);
    if (g == p.meta.annotations.end()) continue;
    if (with_pods.count(p.meta.namespace_ + "/" + g->second)) continue;
    cluster.UpsertPod(p);
  }
}

struct Ending {
  double end;
  std::string pod;
  bool operator>(const Ending& o) const { return std::tie(end, pod) > std::tie(o.end, o.pod); }
};

// A waiting pod of the gang: its object and request.
struct WaitingPod {
  const api::Pod* pod;
  Resources req;
};

// The node-filter sentence: nodeSelector, required node affinity, tolerations.
std::string NodeFilterText(const api::Pod& pod) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : pod.spec.node_selector) parts.push_back(fmt::format("{}={}", k, v));
  if (pod.spec.affinity && pod.spec.affinity->node_affinity &&
      pod.spec.affinity->node_affinity->required) {
    std::vector<std::string> terms;
    for (const api::NodeSelectorTerm& term : *pod.spec.affinity->node_affinity->required) {
      std::vector<std::string> reqs;
      for (const api::NodeSelectorRequirement& r : term.match_expressions) {
        if (r.values.empty()) {
          reqs.push_back(fmt::format("{} {}", r.key, r.op));
        } else {
          reqs.push_back(fmt::format("{} {} [{}]", r.key, r.op, fmt::join(r.values, ", ")));
        }
      }
      terms.push_back(fmt::format("{}", fmt::join(reqs, " and ")));
    }
    parts.push_back(fmt::format("{}", fmt::join(terms, " or ")));
  }
  std::string out =
      parts.empty() ? "any node" : fmt::format("nodes matching {}", fmt::join(parts, ", "));
  std::vector<std::string> tolerated;
  for (const api::Toleration& t : pod.spec.tolerations) {
    tolerated.push_back(t.key.empty() ? "every taint" : t.key);
  }
  if (!tolerated.empty()) out += fmt::format(" and tolerating {}", fmt::join(tolerated, ", "));
  return out;
}

// How many pods of request `req` fit into `free` with `slots` pod slots left.
int Capacity(const Resources& free, int slots, const Resources& req) {
  int64_t n = std::max(slots, 0);
  for (ResourceId r = 0; r < req.Size(); ++r) {
    int64_t want = req.Get(r);
    if (want <= 0) continue;
    n = std::min(n, std::max<int64_t>(free.Get(r), 0) / want);
  }
  return static_cast<int>(n);
}

// Capacity(free + more, slots, req), without making the sum.
int CapacityWith(const Resources& free, const Resources& more, int slots, const Resources& req) {
  int64_t n = std::max(slots, 0);
  for (ResourceId r = 0; r < req.Size(); ++r) {
    int64_t want = req.Get(r);
    if (want <= 0) continue;
    n = std::min(n, std::max<int64_t>(free.Get(r) + more.Get(r), 0) / want);
  }
  return static_cast<int>(n);
}

// The first dimension of `req` in which `free` falls short of one more pod; -1 when none.
ResourceId ShortDimension(const Resources& free, const Resources& req) {
  for (ResourceId r = 0; r < req.Size(); ++r) {
    if (req.Get(r) > 0 && free.Get(r) < req.Get(r)) return r;
  }
  return -1;
}

std::string Duration(int64_t seconds) {
  if (seconds < 60) return fmt::format("{}s", seconds);
  if (seconds < 3600) return fmt::format("{}m{:02d}s", seconds / 60, seconds % 60);
  return fmt::format("{}h{:02d}m", seconds / 3600, seconds / 60 % 60);
}

void ExplainPosition(const Cluster& cluster, const JobInfo& job, Explanation& e) {
  std::vector<const JobInfo*> waiting;
  for (int id : cluster.JobIds()) {
    const JobInfo& j = cluster.job(id);
    if (j.queue_name == job.queue_name && Waiting(j)) waiting.push_back(&j);
  }
  // The engine's default job order: priority first, then creation, then arrival.
  std::sort(waiting.begin(), waiting.end(), [](const JobInfo* a, const JobInfo* b) {
    return std::make_tuple(-a->priority, a->creation, a->seq, a->key) <
           std::make_tuple(-b->priority, b->creation, b->seq, b->key);
  });
  e.waiting_in_queue = static_cast<int>(waiting.size());
  for (size_t i = 0; i < waiting.size(); ++i) {
    if (waiting[i] == &job) e.position = static_cast<int>(i) + 1;
  }
}

// The fewest running pods whose end would cover what the cluster lacks for the gang's admission:
// for each short resource in turn (cpu, memory, then by id), the largest holders first, then the
// earliest to end, then by key. What a gang with no pods yet (its controller makes them once it
// is admitted) is blocked by.
void AdmissionBlockers(const Cluster& cluster, const JobInfo& job, Resources deficit,
                       const ExplainOptions& options, Explanation& e) {
  struct Holder {
    const TaskInfo* task;
    double end;
  };
  std::vector<Holder> holders;
  for (int nid : cluster.NodeIds()) {
    for (int tid : cluster.node(nid).tasks) {
      const TaskInfo& t = cluster.task(tid);
      if (t.job != job.id && OccupiesNode(t.status)) {
        holders.push_back({&t, ExpectedEndOf(t, options)});
      }
    }
  }
  std::set<std::string> chosen;
  double last_end = 0;
  for (ResourceId r = 0; r < deficit.Size(); ++r) {
    if (deficit.Get(r) <= 0) continue;
    std::sort(holders.begin(), holders.end(), [r](const Holder& a, const Holder& b) {
      return std::make_tuple(-a.task->resreq.Get(r), a.end, a.task->key) <
             std::make_tuple(-b.task->resreq.Get(r), b.end, b.task->key);
    });
    for (const Holder& h : holders) {
      if (deficit.Get(r) <= 0 || h.task->resreq.Get(r) <= 0) break;
      if (!chosen.insert(h.task->key).second) continue;
      deficit.Sub(h.task->resreq);
      last_end = std::max(last_end, h.end);
    }
    if (deficit.Get(r) > 0) return;  // even every holder's end would not do: no set
  }
  e.blocking.assign(chosen.begin(), chosen.end());
  e.blocked_for_ever = !e.blocking.empty() && std::isinf(last_end);
}

void ExplainAdmission(Cluster& cluster, const JobInfo& job, const std::vector<WaitingPod>& pods,
                      const ExplainOptions& options, Explanation& e) {
  e.admitted = job.phase != PodGroupPhase::kPending;
  if (e.admitted) {
    e.admission = "admitted by enqueue";
    return;
  }
  Resources need;
  if (job.min_resources) {
    need = *job.min_resources;
  } else {
    for (const WaitingPod& p : pods) need.Add(p.req);
  }
  Resources free = cluster.TotalAllocatable();
  free.Sub(cluster.TotalUsed());
  const QueueInfo* q = job.queue >= 0 ? cluster.QueueById(job.queue) : nullptr;
  std::optional<Resources> queue_left;
  if (q && q->queue && !q->queue->spec.capability.empty()) {
    queue_left = Resources::FromList(q->queue->spec.capability);
    for (int id : cluster.JobIds()) {
      const JobInfo& j = cluster.job(id);
      if (j.queue == job.queue) queue_left->Sub(j.allocated);
    }
  }
  std::vector<std::string> parts;
  Resources deficit;
  for (ResourceId r = 0; r < need.Size(); ++r) {
    int64_t want = need.Get(r);
    if (want <= 0) continue;
    std::string name = ResourceNames::Name(r);
    if (want > free.Get(r)) {
      int64_t have = std::max<int64_t>(free.Get(r), 0);
      deficit.Set(r, want - have);
      e.admission_shortfalls.push_back(
          {name, QuantityText(want), QuantityText(have), QuantityText(want - have)});
      parts.push_back(fmt::format("{} short by {} (needs {}, {} free in the cluster)", name,
                                  QuantityText(want - have), QuantityText(want),
                                  QuantityText(have)));
    }
    if (queue_left && queue_left->Get(r) < want &&
        q->queue->spec.capability.count(name) > 0) {
      int64_t have = std::max<int64_t>(queue_left->Get(r), 0);
      e.admission_shortfalls.push_back({fmt::format("{} (queue {} capability)", name, q->name),
                                        QuantityText(want), QuantityText(have),
                                        QuantityText(want - have)});
      parts.push_back(fmt::format("{} short by {} in queue {}'s capability (needs {}, {} left)",
                                  name, QuantityText(want - have), q->name, QuantityText(want),
                                  QuantityText(have)));
    }
  }
  if (!deficit.IsEmpty()) AdmissionBlockers(cluster, job, deficit, options, e);
  if (q && !q->open) {
    e.admission = fmt::format("not admitted: queue {} is not open", q->name);
  } else if (!parts.empty()) {
    e.admission = fmt::format("not admitted by enqueue: {}", fmt::join(parts, "; "));
  } else {
    e.admission = "not admitted by enqueue yet (nothing is short now: the next cycle may admit it)";
  }
}

void ExplainPlacement(Cluster& cluster, const JobInfo& job, const std::vector<WaitingPod>& pods,
                      const ExplainOptions& options, Explanation& e) {
  if (pods.empty() || e.pods_waiting == 0) return;
  const api::Pod& shape_pod = *pods.front().pod;
  const Resources& req = pods.front().req;
  e.pod_request = req.ToString();
  ResourceId focus = req.Get(kGpu) > 0 ? kGpu : kCpu;
  e.resource = ResourceNames::Name(focus);
  e.node_filter = NodeFilterText(shape_pod);

  struct Candidate {
    const TaskInfo* task;
    int node;  // index into eligible
    double end;
  };
  std::vector<const NodeInfo*> eligible;
  std::vector<Resources> free;
  std::vector<int> slots;
  std::vector<Candidate> candidates;
  for (int id : cluster.NodeIds()) {
    const NodeInfo& n = cluster.node(id);
    if (!n.node || !n.ready || n.unschedulable) continue;
    if (!api::PodMatchesNodeAffinity(shape_pod, *n.node)) continue;
    if (api::FindUntoleratedTaint(n.node->spec.taints, shape_pod.spec.tolerations)) continue;
    // A node that could not take one pod even empty is no place for the gang.
    if (Capacity(n.allocatable, n.max_pods, req) == 0) continue;
    int index = static_cast<int>(eligible.size());
    eligible.push_back(&n);
    free.push_back(n.idle);
    slots.push_back(n.max_pods - n.pod_count);
    for (int tid : n.tasks) {
      const TaskInfo& t = cluster.task(tid);
      if (t.job == job.id || !OccupiesNode(t.status)) continue;
      candidates.push_back({&t, index, ExpectedEndOf(t, options)});
    }
  }
  e.matching_nodes = static_cast<int>(eligible.size());
  std::vector<int> cap(eligible.size());
  int total = 0;
  for (size_t i = 0; i < eligible.size(); ++i) {
    cap[i] = Capacity(free[i], slots[i], req);
    total += cap[i];
  }
  e.fitting_pods = std::min(total, e.pods_waiting);

  // The greedy minimal blocking set (explain.h). What a candidate's end would bring (pods of the
  // gang that then fit on its node, and how much of the node's short dimension it frees) depends
  // on its node alone: it is computed once, and again only for the candidates on the node the
  // last step changed; so is each node's best candidate, and a step picks the best of those.
  struct Effect {
    int gain = 0;
    int64_t freed = 0;
  };
  std::vector<std::vector<int>> on_node(eligible.size());
  for (size_t c = 0; c < candidates.size(); ++c) {
    on_node[candidates[c].node].push_back(static_cast<int>(c));
  }
  std::vector<Effect> effect(candidates.size());
  std::vector<char> chosen(candidates.size(), 0);
  // Most gain, then most of the short dimension freed, then earliest end, then key.
  auto better = [&](int a, int b) {
    return std::make_tuple(-effect[a].gain, -effect[a].freed, candidates[a].end,
                           std::string_view(candidates[a].task->key)) <
           std::make_tuple(-effect[b].gain, -effect[b].freed, candidates[b].end,
                           std::string_view(candidates[b].task->key));
  };
  std::vector<int> node_best(eligible.size(), -1);
  auto assess = [&](int node) {
    ResourceId dim = ShortDimension(free[node], req);
    node_best[node] = -1;
    for (int c : on_node[node]) {
      const Resources& frees = candidates[c].task->resreq;
      effect[c].gain = CapacityWith(free[node], frees, slots[node] + 1, req) - cap[node];
      effect[c].freed = dim >= 0 ? frees.Get(dim) : 0;
      if (chosen[c] || (effect[c].gain <= 0 && effect[c].freed <= 0)) continue;
      if (node_best[node] < 0 || better(c, node_best[node])) node_best[node] = c;
    }
  };
  for (size_t i = 0; i < eligible.size(); ++i) assess(static_cast<int>(i));
  while (total < e.pods_waiting) {
    int best = -1;
    for (int c : node_best) {
      if (c >= 0 && (best < 0 || better(c, best))) best = c;
    }
    if (best < 0) break;
    chosen[best] = 1;
    const Candidate& cand = candidates[best];
    free[cand.node].Add(cand.task->resreq);
    ++slots[cand.node];
    int now_cap = Capacity(free[cand.node], slots[cand.node], req);
    total += now_cap - cap[cand.node];
    cap[cand.node] = now_cap;
    assess(cand.node);
  }
  bool enough = total >= e.pods_waiting;
  double last_end = 0;
  e.blocking.clear();
  e.blocked_for_ever = false;
  for (size_t c = 0; c < candidates.size(); ++c) {
    if (!chosen[c]) continue;
    e.blocking.push_back(candidates[c].task->key);
    last_end = std::max(last_end, candidates[c].end);
  }
  std::sort(e.blocking.begin(), e.blocking.end());
  e.blocked_for_ever = !e.blocking.empty() && std::isinf(last_end);

  for (size_t i = 0; i < eligible.size() && e.nodes.size() < kMaxNodesListed; ++i) {
    const NodeInfo& n = *eligible[i];
    NodeVerdict v;
    v.node = n.name;
    v.free = QuantityText(std::max<int64_t>(n.idle.Get(focus), 0));
    v.fits = Capacity(n.idle, n.max_pods - n.pod_count, req);
    for (int tid : n.tasks) {
      const TaskInfo& t = cluster.task(tid);
      if (t.job != job.id && OccupiesNode(t.status) && t.resreq.Get(focus) > 0) {
        v.holders.push_back(t.key);
      }
    }
    std::sort(v.holders.begin(), v.holders.end());
    e.nodes.push_back(std::move(v));
  }

  std::string per_node;
  std::vector<std::string> node_parts;
  for (const NodeVerdict& v : e.nodes) {
    std::string part = fmt::format("{} has {} free", v.node, v.free);
    if (!v.holders.empty()) {
      part += fmt::format(" (held by {})", fmt::join(v.holders.begin(),
                                                     v.holders.begin() +
                                                         std::min<size_t>(v.holders.size(), 4),
                                                     ", "));
      if (v.holders.size() > 4) {
        part.insert(part.size() - 1, fmt::format(", and {} more", v.holders.size() - 4));
      }
    }
    node_parts.push_back(std::move(part));
  }
  if (e.matching_nodes > static_cast<int>(e.nodes.size())) {
    node_parts.push_back(fmt::format("{} more nodes", e.matching_nodes - e.nodes.size()));
  }
  std::string head = fmt::format("needs {} pod{} of {{{}}} on {}", e.pods_waiting,
                                 e.pods_waiting == 1 ? "" : "s", e.pod_request, e.node_filter);
  if (eligible.empty()) {
    e.placement = fmt::format("{}: no ready node matches", head);
    return;
  }
  head += ": " + fmt::format("{}", fmt::join(node_parts, ", "));
  if (e.fitting_pods >= e.pods_waiting) {
    e.placement = head + "; fits now";
  } else if (!enough) {
    e.placement = fmt::format("{}; only {} of {} would fit even with every other pod gone", head,
                              total, e.pods_waiting);
  } else {
    e.placement = fmt::format("{}; fits when {} end{}", head, fmt::join(e.blocking, ", "),
                              e.blocking.size() == 1 ? "s" : "");
  }
}

// Marks, by job id, the admitted gangs this session cannot place: taken in the engine's job
// order (priority, creation, arrival), each is kept in the session while the cluster's free
// resources (allocatable less used, over all nodes) still cover the pods it needs, and those
// are counted as taken; the others sit the session out as settled jobs (JobRole::kSettled: out of
// the actions, still counted by the plugins), as the replay settles the jobs nothing freed could
// help. A session after one pod's end then costs what the gangs it might start cost, not what
// every waiting one would. For gangs of one shape this changes no decision; a smaller gang behind
// a larger one that does not fit for fragmentation may be kept out of a session it could have
// been backfilled in, which makes its estimate later, not earlier.
void SettleHopeless(const Cluster& cluster, std::vector<char>& settled) {
  Resources budget = cluster.TotalAllocatable();
  budget.Sub(cluster.TotalUsed());
  settled.assign(0, 0);
  struct Want {
    const JobInfo* job;
    Resources need;
  };
  std::vector<Want> wants;
  for (int id : cluster.JobIds()) {
    const JobInfo& j = cluster.job(id);
    if (!j.pg || j.phase == PodGroupPhase::kPending) continue;
    int pending = j.Count(TaskStatus::kPending);
    if (pending == 0) continue;
    int needed = std::max(1, std::min(pending, j.min_available - j.ReadyTaskNum()));
    // The smallest request of its pending pods, per resource, that many times.
    std::optional<Resources> least;
    for (int tid : j.tasks) {
      const TaskInfo& t = cluster.task(tid);
      if (t.status != TaskStatus::kPending) continue;
      if (!least) {
        least = t.resreq;
      } else {
        least->Min(t.resreq);
      }
    }
    if (!least) continue;
    Resources need;
    for (ResourceId r = 0; r < least->Size(); ++r) need.Set(r, least->Get(r) * needed);
    wants.push_back({&j, std::move(need)});
  }
  std::sort(wants.begin(), wants.end(), [](const Want& a, const Want& b) {
    return std::make_tuple(-a.job->priority, a.job->creation, a.job->seq, a.job->key) <
           std::make_tuple(-b.job->priority, b.job->creation, b.job->seq, b.job->key);
  });
  for (const Want& w : wants) {
    if (w.need.LessEqual(budget)) {
      budget.Sub(w.need);
      continue;
    }
    if (static_cast<int>(settled.size()) <= w.job->id) settled.resize(w.job->id + 1, 0);
    settled[w.job->id] = 1;
  }
}

}  // namespace

std::map<std::string, int64_t> EstimateStarts(const Cluster& cluster, const SchedulerConf& conf,
                                              const std::vector<std::string>& pod_groups,
                                              const ExplainOptions& options) {
  std::map<std::string, int64_t> out;
  std::unique_ptr<Cluster> sim = cluster.Clone();
  AddPlannedPods(*sim, options.planned_pods);
  std::set<std::string> remaining(pod_groups.begin(), pod_groups.end());
  auto check = [&](double t) {
    for (auto it = remaining.begin(); it != remaining.end();) {
      const JobInfo* j = sim->FindJob(*it);
      bool started = false;
      if (j && j->pg) {
        started = j->tasks.empty() ? j->phase != PodGroupPhase::kPending : Started(*j);
      }
      if (started) out[*it] = static_cast<int64_t>(t);
      it = started || !j || !j->pg ? remaining.erase(it) : std::next(it);
    }
  };
  std::priority_queue<Ending, std::vector<Ending>, std::greater<Ending>> ends;
  for (int nid : sim->NodeIds()) {
    for (int tid : sim->node(nid).tasks) {
      const TaskInfo& t = sim->task(tid);
      double end = ExpectedEndOf(t, options);
      if (std::isfinite(end)) ends.push({end, t.key});
    }
  }
  const double now = static_cast<double>(options.now_unix);
  double t = now;
  check(t);
  std::vector<char> settled;
  for (int s = 0; s < options.max_sessions && !remaining.empty(); ++s) {
    SessionOptions so;
    so.session_id = fmt::format("explain-{}", s);
    so.now_unix = static_cast<int64_t>(t);
    so.diagnostics = false;
    SettleHopeless(*sim, settled);
    so.job_role = [&settled](const JobInfo& j) {
      return j.id < static_cast<int>(settled.size()) && settled[j.id] ? JobRole::kSettled
                                                                       : JobRole::kScheduled;
    };
    CycleResult r;
    {
      Session ssn(*sim, conf, so);
      r = ssn.Run();
    }
    ApplyCycleResult(*sim, r, {.running_since = api::FormatUnixTime(static_cast<int64_t>(t))});
    for (const CycleResult::Bind& b : r.binds) {
      const TaskInfo* task = sim->FindTask(b.pod);
      if (!task) continue;
      double runtime = RuntimeOf(*task, options);
      if (runtime >= 0) ends.push({t + runtime, b.pod});
    }
    check(t);
    if (remaining.empty() || ends.empty()) break;
    if (ends.top().end > now + static_cast<double>(options.horizon_seconds)) break;
    // Exact at each end for the first sessions; then sessions at least a minute, and a twentieth
    // of the time simulated so far, apart, the ends within a step taken together: an estimate
    // an hour ahead is then good to about three minutes.
    const double step =
        s < kExactSessions ? 0 : std::max(kCoarseStepSeconds, (t - now) * kCoarseStepShare);
    t = std::max(t, std::max(ends.top().end, t + step));
    while (!ends.empty() && ends.top().end <= t) {
      std::string key = ends.top().pod;
      ends.pop();
      TaskInfo* task = sim->FindTask(key);
      if (!task || task->node < 0) continue;
      std::string job_key = task->job >= 0 ? sim->job(task->job).key : std::string();
      std::string ns = task->ns, name = task->name;
      // Removing a job's last pod forgets the job when it has no PodGroup (its PodGroup deleted
      // before its pods, or not yet seen): look it up again by key rather than by id.
      sim->RemovePod(ns, name);
      // A job whose pods have all ended is complete: its PodGroup no longer counts in its queue.
      if (const JobInfo* j = job_key.empty() ? nullptr : sim->FindJob(job_key);
          j && j->tasks.empty() && j->pg) {
        std::string job_ns = j->ns, job_name = j->name;
        sim->RemovePodGroup(job_ns, job_name);
      }
    }
  }
  return out;
}

absl::StatusOr<Explanation> Explain(const Cluster& cluster, const SchedulerConf& conf,
                                    const std::string& pod_group, const ExplainOptions& options) {
  // Lookups and the analysis below only read; the cluster's find functions are not const.
  Cluster& live = const_cast<Cluster&>(cluster);
  const JobInfo* job = live.FindJob(pod_group);
  if (!job || !job->pg) return absl::NotFoundError(fmt::format("podgroup {} not found", pod_group));
  Explanation e;
  e.pod_group = job->key;
  e.queue = job->queue_name;
  e.phase = job->PhaseText();
  e.started = Started(*job);
  ExplainPosition(cluster, *job, e);

  std::vector<WaitingPod> pods;
  for (int tid : job->tasks) {
    const TaskInfo& t = cluster.task(tid);
    if (t.status == TaskStatus::kPending && t.node < 0 && t.pod) {
      pods.push_back({t.pod.get(), t.resreq});
    }
  }
  if (job->tasks.empty()) {
    for (const api::Pod& p : options.planned_pods) {
      auto g = p.meta.annotations.find(api::kGroupNameAnnotation);
      if (g != p.meta.annotations.end() && p.meta.namespace_ == job->ns && g->second == job->name) {
        pods.push_back({&p, PodRequests(p)});
      }
    }
  }
  if (!e.started) {
    int want = std::max(1, job->min_available - job->ReadyTaskNum());
    e.pods_waiting = std::min<int>(want, static_cast<int>(pods.size()));
  }

  if (e.started) {
    e.admitted = true;
    e.admission = "admitted by enqueue";
    e.placement = fmt::format("started: {} of its {} pods placed (minAvailable {})",
                              job->ReadyTaskNum(), job->tasks.size(), job->min_available);
    e.estimate = "started";
    e.reason = fmt::format("started in queue {}", e.queue);
    return e;
  }
  ExplainAdmission(live, *job, pods, options, e);
  ExplainPlacement(live, *job, pods, options, e);
  if (e.placement.empty()) {
    e.placement = pods.empty() ? "no pods to place yet (its controller creates them once admitted)"
                               : "nothing left to place";
  }

  std::map<std::string, int64_t> starts;
  if (options.estimate) starts = EstimateStarts(cluster, conf, {job->key}, options);
  auto it = starts.find(job->key);
  if (!options.estimate) {
    e.estimate = "not estimated";
  } else if (it != starts.end()) {
    e.estimated_start = it->second;
    int64_t wait = it->second - options.now_unix;
    std::string at = api::FormatUnixTime(it->second);
    e.estimate = wait <= 0 ? fmt::format("expected to start now ({}, at the next cycle)", at)
                           : fmt::format("expected to start at {} (in {})", at, Duration(wait));
  } else if (e.blocked_for_ever) {
    std::vector<std::string> unknown;
    for (const std::string& key : e.blocking) {
      const TaskInfo* t = live.FindTask(key);
      if (t && std::isinf(ExpectedEndOf(*t, options))) unknown.push_back(key);
    }
    e.estimate = fmt::format("no estimate: {} ha{} no expected end (annotation {})",
                             fmt::join(unknown, ", "), unknown.size() == 1 ? "s" : "ve",
                             kExpectedRuntimeAnnotation);
  } else {
    e.estimate = fmt::format(
        "no estimate: the pods in its way have no expected end within {} simulated cycles and {}",
        options.max_sessions, Duration(options.horizon_seconds));
  }

  // No position and no time: the condition is rewritten when this changes (explain.h).
  std::string state = e.admitted ? "waits for placement" : "waits for admission";
  if (!e.blocking.empty()) {
    e.reason = fmt::format("{} in queue {}; fits when {} end{}", state, e.queue,
                           fmt::join(e.blocking, ", "), e.blocking.size() == 1 ? "s" : "");
  } else {
    std::string placed = "does not fit even on emptied matching nodes";
    if (e.pods_waiting == 0) {
      placed = "no pods to place yet";
    } else if (e.matching_nodes == 0) {
      placed = "no ready node matches its pods";
    } else if (e.fitting_pods >= e.pods_waiting) {
      placed = "fits now";
    }
    e.reason = fmt::format("{} in queue {}: {}", state, e.queue, e.admitted ? placed : e.admission);
  }
  return e;
}

}  // namespace muster::core
