// Replay through the scheduling engine: the cluster is a core::Cluster kept up to date in
// virtual time (nodes once; pods and PodGroups as jobs arrive, removed as they finish), and every
// virtual second at which a job arrives or leaves runs one core::Session, whose binds (and
// evictions) are applied back to the cluster as the API server and kubelet would: a bound pod
// gets its node and GPU devices and runs. A job runs once all its pods are bound and leaves after
// its duration. Between those seconds nothing changes, so a session there would decide nothing:
// the replay runs Volcano's one-second schedule period without the idle cycles.
//
//   volcano  Volcano's default volcano-scheduler.conf (core::DefaultSchedulerConf: enqueue,
//            allocate, backfill; priority, gang, conformance | overcommit, drf, predicates,
//            proportion, nodeorder). One PodGroup per job (minMember = its pods, minResources =
//            their requests), created Pending for enqueue to admit.
//   kube     the live scheduler's session for default-scheduler pods (scheduler/cluster_mirror's
//            KubeSchedulerConf: allocate, backfill; priority | predicates, nodeorder), one
//            one-member PodGroup per pod, admitted from the start: every pod on its own.
//   fifo     allocate with strictOrder: true, then backfill; priority, gang, conformance |
//            predicates, nodeorder (no queue admission: allocate admits every job). One PodGroup
//            per job as for volcano; the first job that does not fit stops the queue.
//   muster   the same conf with allocate's reserveGpus and reserveAfter from the options instead
//            of strictOrder: a reservation for the first gang of that many GPUs that does not
//            fit (core/actions/reserve.h). Every pod carries its job's trace duration as
//            muster.dev/expected-runtime and gets status.startTime when bound, which is what
//            the reservation plans with (the trace's durations as perfect estimates).
//
// A pod that shares a GPU (openb's gpu_milli < 1000 on one GPU) asks muster.dev/gpu-milli, which
// the engine places per device; one that names GPU models (openb's gpu_spec) has a required node
// affinity on nvidia.com/gpu.product, which every node carries with its model.
//
// With racks (ReplayOptions::rack_nodes), the cluster holds HyperNodes: racks of that many
// consecutive nodes of the workload's node list (tier 1, nodes by exact name) and, with
// spine_racks, spines of consecutive racks (tier 2).
// Under muster the conf gets network-topology-aware and every gang's PodGroup the
// networkTopology of ReplayOptions::topology. Whatever the scheduler, a gang whose pods span
// racks runs cross_rack_slowdown times its duration, and where each gang landed is tallied.
//
// With --placement other than spread, nodeorder gives way to the gpu-<policy> plugin. Ties between
// nodes go to the first in name order; nodes are named by their seeded rank (Go's rand.Perm, as
// the simulator's own disciplines use), so the seed orders ties the same way in both.
//
// Jobs that a cycle tried and could not place or admit are settled (core::JobRole::kSettled: out
// of the session's job set, still counted by the plugins) until something leaves the cluster:
// with nothing freed, a job that did not fit does not fit now, and one that enqueue did not
// admit is not admitted now (what it is compared with, the queue's allocated and admitted
// requests and the cluster's used resources, only grows until something leaves). Only newly
// arrived jobs are tried then, and a session costs what they cost, not what the thousands
// waiting would (under fifo, only the oldest kFifoWindow of them are). Two exceptions keep the
// decisions those jobs take part in: under fifo the
// oldest waiting job is never settled (it is the head that keeps every later arrival waiting),
// and under muster no gang large enough for a reservation is (the first of them that does not
// fit holds its reservation against the arrivals in every cycle).

#include "sim/replay_engine.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <queue>
#include <tuple>

#include "api/hypernode_exact.h"
#include "api/time.h"
#include "core/apply_cycle_result.h"
#include "core/cluster.h"
#include "core/explain/explain.h"
#include "core/framework/conf.h"
#include "core/framework/session.h"
#include "core/podgroup_phase.h"
#include "fmt/format.h"
#include "sim/go_rand.h"

namespace muster::sim {
namespace {

constexpr char kNamespace[] = "sim";
constexpr char kGpuProductLabel[] = "nvidia.com/gpu.product";
// Virtual time 0 as a wall-clock instant, for creation timestamps (job order): 2017-10-01.
constexpr int64_t kEpochDays = 17440;

// "2017-10-01T00:00:05Z" for `seconds` after the epoch above (fixed width: text order is time
// order, which is how the engine compares creation timestamps).
std::string Rfc3339(int64_t seconds) { return api::FormatUnixTime(kEpochDays * 86400 + seconds); }

// A GPU share asks muster.dev/gpu-milli, as a live pod would; whole GPUs nvidia.com/gpu.
api::ResourceList PodResources(const core::GpuPodRequest& r) {
  api::ResourceList l;
  l["cpu"] = api::Quantity::FromMilli(r.cpu_milli);
  l["memory"] = api::Quantity::FromUnits(r.memory * 1024 * 1024);  // MiB
  if (r.SharesGpu()) {
    l[core::kGpuShareResource] = api::Quantity::FromUnits(r.gpu_milli);
  } else if (r.UsesGpu()) {
    l[api::kGpuResource] = api::Quantity::FromUnits(r.gpus);
  }
  return l;
}

// The GPU models a pod accepts (openb's gpu_spec) as a required node affinity on the label
// NVIDIA's GPU feature discovery sets, nvidia.com/gpu.product, which the nodes carry.
void RequireGpuModels(const core::GpuPodRequest& r, const core::GpuModels& models, api::Pod& p) {
  if (r.models.empty()) return;
  api::NodeSelectorRequirement req;
  req.key = kGpuProductLabel;
  req.op = "In";
  for (int m : r.models) req.values.push_back(models.Name(m));
  api::NodeSelectorTerm term;
  term.match_expressions.push_back(std::move(req));
  if (!p.spec.affinity) p.spec.affinity.emplace();
  if (!p.spec.affinity->node_affinity) p.spec.affinity->node_affinity.emplace();
  p.spec.affinity->node_affinity->required.emplace({std::move(term)});
}

// Under fifo a session holds at most this many waiting jobs, the oldest: strict order starts a
// job only once every job before it has started, so the jobs behind the window cannot start in
// that session; when the whole window has started, another session at the same second takes the
// next window. Without it, every departure would bring all waiting jobs (thousands, under strict
// FIFO) into a session that stops at the first.
constexpr size_t kFifoWindow = 32;

// Job index from an engine name: "j0000012" (a PodGroup) or "j0000012-3" (a pod, or kube's
// per-pod group).
int JobIndex(const std::string& name) { return std::atoi(name.c_str() + 1); }

class EngineReplayer {
 public:
  EngineReplayer(const ReplayWorkload& w, const ReplayOptions& o) : w_(w), o_(o) {}

  absl::StatusOr<ReplayResult> Run() {
    auto wall = std::chrono::steady_clock::now();
    kube_ = o_.discipline == Discipline::kKube;
    conf_ = EngineConf(o_);
    if (o_.placement != "spread") {
      // The same check and error as the simulator's disciplines give.
      auto p = core::NewGpuPlacementPolicy(o_.placement, core::GpuPolicyContext{w_.typical});
      if (!p.ok()) return p.status();
      bool replaced = false;
      for (core::Tier& tier : conf_.tiers) {
        for (core::PluginOption& plugin : tier.plugins) {
          if (plugin.name != "nodeorder") continue;
          plugin = core::PluginOption{};
          plugin.name = "gpu-" + o_.placement;
          plugin.arguments[plugin.name + ".seed"] = std::to_string(o_.seed);
          replaced = true;
        }
      }
      if (!replaced) return absl::InternalError("the scheduler conf has no nodeorder plugin");
    }

    api::Queue queue;
    queue.meta.name = "default";
    queue.spec.weight = 1;
    cluster_.UpsertQueue(queue);
    GoRand rng(o_.seed);
    std::vector<int> rank = rng.Perm(static_cast<int>(w_.nodes.size()));
    index_by_rank_.assign(w_.nodes.size(), 0);
    for (size_t i = 0; i < w_.nodes.size(); ++i) {
      const TraceNode& t = w_.nodes[i];
      index_by_rank_[rank[i]] = static_cast<int>(i);
      api::Node n;
      n.meta.name = NodeName(rank[i]);
      api::ResourceList alloc;
      alloc["cpu"] = api::Quantity::FromMilli(t.cpu_milli);
      alloc["memory"] = api::Quantity::FromUnits(t.memory_mib * 1024 * 1024);
      alloc["pods"] = api::Quantity::FromUnits(110);
      if (t.gpus > 0) {
        alloc[api::kGpuResource] = api::Quantity::FromUnits(t.gpus);
        n.meta.labels[kGpuProductLabel] = t.model;
      }
      n.status.capacity = alloc;
      n.status.allocatable = alloc;
      n.status.conditions.push_back({"Ready", "True", "", "", "", ""});
      cluster_.UpsertNode(n);
      tally_.capacity_gpus += t.gpus;
    }
    if (o_.rack_nodes > 0) AddRacks(rank);
    jobs_.assign(w_.jobs.size(), {});
    tally_.start.assign(w_.jobs.size(), -1);
    tally_.end.assign(w_.jobs.size(), -1);

    Loop();

    std::optional<ReplayResult::GangPlacement> racks;
    if (o_.rack_nodes > 0) racks = TallyGangs();

    if (longest_) {
      int j = JobIndex(longest_->job);
      longest_->started = tally_.start[j];
      longest_->job = w_.jobs[j].name;
    }
    tally_.end_time = now_;
    tally_.samples = std::move(samples_);
    ReplayResult r = SummariseReplay(w_, o_, std::move(tally_));
    r.engine = true;
    r.sessions = sessions_;
    r.longest_wait = std::move(longest_);
    r.racks = std::move(racks);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count();
    return r;
  }

 private:
  struct Job {
    std::vector<api::Pod> pods;  // while the job is in the cluster
    std::vector<int> pod_node;   // each pod's node by rank, -1 while unbound
    int tier = -1;               // with racks: where it last started (LandedTier)
    int bound = 0;
    bool tried = false;  // an allocate tried it since something last left
    int generation = 0;  // bumped when an eviction stops it (its pending end is stale)
  };
  struct Running {
    double end;
    int job;
    int generation;
    bool operator>(const Running& o) const { return std::tie(end, job) > std::tie(o.end, o.job); }
  };

  // Whether job j is never settled (see the top of the file): fifo's head, muster's large gangs.
  bool KeptInSessions(int j, int head) const {
    switch (o_.discipline) {
      case Discipline::kFifo:
        return j == head;
      case Discipline::kMuster:
        return w_.jobs[j].Gpus() >= o_.reserve_gpus;
      default:
        return false;
    }
  }

  static std::string NodeName(int rank) { return fmt::format("n{:05d}", rank); }

  // Racks of rack_nodes consecutive nodes of the workload's node list and spines of spine_racks
  // consecutive racks, as HyperNodes (members by the nodes' engine names, n<rank>); the GPUs of the
  // largest of each, for hard mode's highestTierAllowed.
  void AddRacks(const std::vector<int>& rank) {
    const int nodes = static_cast<int>(rank.size());
    const int racks = (nodes + o_.rack_nodes - 1) / o_.rack_nodes;
    auto hypernode = [this](std::string name, int tier, const char* tier_name, const char* type,
                            std::vector<std::string> members) {
      cluster_.UpsertHyperNode(
          api::ExactMembersHyperNode(std::move(name), tier, tier_name, type, std::move(members)));
    };
    std::vector<int64_t> rack_gpus(racks, 0);
    for (int r = 0; r < racks; ++r) {
      std::vector<std::string> members;
      for (int i = r * o_.rack_nodes; i < std::min(nodes, (r + 1) * o_.rack_nodes); ++i) {
        members.push_back(NodeName(rank[i]));
        rack_gpus[r] += w_.nodes[i].gpus;
      }
      rack_gpus_ = std::max(rack_gpus_, rack_gpus[r]);
      hypernode(fmt::format("rack-{}", r), 1, "rack", "Node", std::move(members));
    }
    if (o_.spine_racks <= 0) return;
    for (int s = 0; s * o_.spine_racks < racks; ++s) {
      std::vector<std::string> members;
      int64_t gpus = 0;
      for (int r = s * o_.spine_racks; r < std::min(racks, (s + 1) * o_.spine_racks); ++r) {
        members.push_back(fmt::format("rack-{}", r));
        gpus += rack_gpus[r];
      }
      spine_gpus_ = std::max(spine_gpus_, gpus);
      hypernode(fmt::format("spine-{}", s), 2, "spine", "HyperNode", std::move(members));
    }
  }

  // The networkTopology job j's PodGroup gets (ReplayOptions::topology), if any.
  std::optional<api::NetworkTopologySpec> TopologyFor(int j) const {
    if (o_.rack_nodes <= 0 || o_.discipline != Discipline::kMuster || w_.jobs[j].pods < 2 ||
        o_.topology == "none") {
      return std::nullopt;
    }
    api::NetworkTopologySpec spec;
    spec.mode = o_.topology;
    if (o_.topology == "hard") {
      const int64_t gpus = w_.jobs[j].Gpus();
      if (gpus <= rack_gpus_) {
        spec.highest_tier_allowed = 1;
      } else if (o_.spine_racks > 0 && gpus <= spine_gpus_) {
        spec.highest_tier_allowed = 2;
      } else {
        return std::nullopt;
      }
    }
    return spec;
  }

  // The lowest tier that holds every pod of a bound job: 0 one node, 1 one rack, 2 one spine,
  // 3 the cluster.
  int LandedTier(const Job& job) const {
    auto rack_of = [this](int rank) { return index_by_rank_[rank] / o_.rack_nodes; };
    const int first = job.pod_node.front();
    const int rack = rack_of(first);
    bool node = true, in_rack = true, in_spine = o_.spine_racks > 0;
    for (int n : job.pod_node) {
      node = node && n == first;
      in_rack = in_rack && rack_of(n) == rack;
      in_spine = in_spine && rack_of(n) / o_.spine_racks == rack / o_.spine_racks;
    }
    return node ? 0 : in_rack ? 1 : in_spine ? 2 : 3;
  }

  ReplayResult::GangPlacement TallyGangs() const {
    ReplayResult::GangPlacement g;
    g.topology = o_.discipline == Discipline::kMuster ? o_.topology : "none";
    for (size_t j = 0; j < w_.jobs.size(); ++j) {
      if (w_.jobs[j].pods < 2 || tally_.start[j] < 0) continue;
      ++g.gangs;
      switch (jobs_[j].tier) {
        case 0: ++g.one_node; break;
        case 1: ++g.one_rack; break;
        case 2: ++g.one_spine; break;
        default: ++g.cluster; break;
      }
      if (jobs_[j].tier >= 2) ++g.slowed;
    }
    return g;
  }

  // Milli-GPUs, so that the sums of GPU shares return to exactly 0.
  int64_t PodGpus(int j) const { return w_.jobs[j].pod.GpuDemand(); }

  std::string GroupName(int j, int pod) const {
    return kube_ ? fmt::format("j{:07d}-{}", j, pod) : fmt::format("j{:07d}", j);
  }

  void Arrive(int j) {
    const ReplayJob& rj = w_.jobs[j];
    Job& job = jobs_[j];
    std::string created = Rfc3339(rj.submit);
    api::ResourceList each = PodResources(rj.pod);
    auto group = [&](const std::string& name, int members, core::PodGroupPhase phase) {
      api::PodGroup pg;
      pg.meta.name = name;
      pg.meta.namespace_ = kNamespace;
      pg.meta.uid = name;
      pg.meta.creation_timestamp = created;
      pg.spec.min_member = members;
      pg.spec.queue = "default";
      api::ResourceList total;
      for (const auto& [k, q] : each) total[k] = api::Quantity::FromMilli(q.MilliValue() * members);
      pg.spec.min_resources = std::move(total);
      pg.status.phase = core::PodGroupPhaseName(phase);
      pg.spec.network_topology = TopologyFor(j);
      cluster_.UpsertPodGroup(pg);
    };
    // Volcano: the gang's PodGroup waits for enqueue. kube: nothing to admit.
    if (!kube_) group(GroupName(j, 0), rj.pods, core::PodGroupPhase::kPending);
    job.pods.resize(rj.pods);
    job.pod_node.assign(rj.pods, -1);
    for (int k = 0; k < rj.pods; ++k) {
      if (kube_) group(GroupName(j, k), 1, core::PodGroupPhase::kInqueue);
      api::Pod& p = job.pods[k];
      p.meta.name = fmt::format("j{:07d}-{}", j, k);
      p.meta.namespace_ = kNamespace;
      p.meta.uid = p.meta.name;
      p.meta.creation_timestamp = created;
      p.meta.annotations[api::kGroupNameAnnotation] = GroupName(j, k);
      p.meta.annotations[core::kExpectedRuntimeAnnotation] = fmt::format("{}s", rj.duration);
      p.spec.scheduler_name = kube_ ? "default-scheduler" : "volcano";
      api::Container c;
      c.name = "main";
      c.resources.requests = each;
      p.spec.containers.push_back(std::move(c));
      if (w_.models) RequireGpuModels(rj.pod, *w_.models, p);
      p.status.phase = "Pending";
      cluster_.UpsertPod(p);
    }
    waiting_.push_back(j);
  }

  void Start(int j, double t) {
    Job& job = jobs_[j];
    const ReplayJob& rj = w_.jobs[j];
    double duration = rj.duration;
    if (o_.rack_nodes > 0 && rj.pods > 1) {
      job.tier = LandedTier(job);
      if (job.tier >= 2) duration *= o_.cross_rack_slowdown;
    }
    tally_.start[j] = t;
    tally_.end[j] = t + duration;
    held_ -= PodGpus(j) * rj.pods;
    busy_ += PodGpus(j) * rj.pods;
    running_.push({tally_.end[j], j, job.generation});
  }

  void Leave(int j) {
    Job& job = jobs_[j];
    const ReplayJob& rj = w_.jobs[j];
    for (int k = 0; k < rj.pods; ++k) {
      cluster_.RemovePod(kNamespace, job.pods[k].meta.name);
      if (kube_) cluster_.RemovePodGroup(kNamespace, GroupName(j, k));
    }
    if (!kube_) cluster_.RemovePodGroup(kNamespace, GroupName(j, 0));
    busy_ -= PodGpus(j) * rj.pods;
    job.pods.clear();
    job.pods.shrink_to_fit();
    freed_ = true;
  }

  // One virtual second's scheduling: one session, or under fifo as many as it takes to try every
  // job that could start (see kFifoWindow).
  void Cycle(double t) {
    while (true) {
      int window_last = std::numeric_limits<int>::max();
      if (o_.discipline == Discipline::kFifo && waiting_.size() > kFifoWindow) {
        window_last = waiting_[kFifoWindow - 1];
      }
      RunSession(t, window_last);
      // Every job of the window started: the jobs behind it may start too.
      if (window_last == std::numeric_limits<int>::max() ||
          (!waiting_.empty() && waiting_.front() <= window_last)) {
        return;
      }
      freed_ = true;
    }
  }

  // One session at t over the jobs up to `window_last` (by index).
  void RunSession(double t, int window_last) {
    core::SessionOptions so;
    so.session_id = fmt::format("t{:.0f}", t);
    so.now_unix = kEpochDays * 86400 + static_cast<int64_t>(t);
    // The replay applies binds and evictions only: no events or condition texts to build.
    so.diagnostics = false;
    const bool freed = freed_;
    const int head = waiting_.empty() ? -1 : waiting_.front();
    so.job_role = [this, freed, head, window_last](const core::JobInfo& j) {
      int index = JobIndex(j.name);
      return index > window_last || (!freed && jobs_[index].tried && !KeptInSessions(index, head))
                 ? core::JobRole::kSettled
                 : core::JobRole::kScheduled;
    };
    core::CycleResult r;
    {
      core::Session ssn(cluster_, conf_, so);
      r = ssn.Run();
    }
    ++sessions_;
    freed_ = false;
    // A bound pod starts at once: no image to pull, no container to start.
    core::ApplyBinds(cluster_, r.binds, {.running_since = Rfc3339(static_cast<int64_t>(t))});
    std::vector<int> started;
    for (const auto& b : r.binds) {
      const std::string name = b.pod.substr(b.pod.find('/') + 1);
      int j = JobIndex(name);
      Job& job = jobs_[j];
      job.pod_node[std::atoi(name.c_str() + name.find('-') + 1)] = std::atoi(b.node.c_str() + 1);
      ++job.bound;
      held_ += PodGpus(j);
      if (job.bound == w_.jobs[j].pods) started.push_back(j);
    }
    for (const auto& e : r.evictions) {
      // The pod goes; its controller makes a new one, pending. A running job stops (its other
      // pods stay bound, held idle) and starts again once all its pods are bound.
      std::string name = e.pod.substr(e.pod.find('/') + 1);
      int j = JobIndex(name);
      int k = std::atoi(name.c_str() + name.find('-') + 1);
      Job& job = jobs_[j];
      if (tally_.start[j] >= 0) {
        busy_ -= PodGpus(j) * w_.jobs[j].pods;
        held_ += PodGpus(j) * w_.jobs[j].pods;
        tally_.start[j] = tally_.end[j] = -1;
        ++job.generation;
        waiting_.push_back(j);
      }
      // job.pods[k] is the pod as created, pending: the binds above went to the cluster's copy.
      cluster_.RemovePod(kNamespace, name);
      cluster_.UpsertPod(job.pods[k]);
      job.pod_node[k] = -1;
      --job.bound;
      held_ -= PodGpus(j);
      freed_ = true;
    }
    for (int j : started) Start(j, t);
    ExplainLongestWait(t);
    // What is still waiting was tried now: allocate could not place it, or enqueue did not admit
    // it (admission compares the job with the queue's capability less what is allocated and
    // admitted, which only a departure lowers).
    std::vector<int> still;
    still.reserve(waiting_.size());
    for (int j : waiting_) {
      if (tally_.start[j] >= 0) continue;
      jobs_[j].tried = true;
      still.push_back(j);
    }
    std::sort(still.begin(), still.end());
    still.erase(std::unique(still.begin(), still.end()), still.end());
    waiting_ = std::move(still);
  }

  // The oldest waiting job, explained when its wait passes 1.5 times the longest explained so far
  // (ReplayResult::LongestWait).
  void ExplainLongestWait(double t) {
    int oldest = -1;
    for (int j : waiting_) {
      if (tally_.start[j] < 0) {
        oldest = j;
        break;
      }
    }
    if (oldest < 0) return;
    const double wait = t - static_cast<double>(w_.jobs[oldest].submit);
    if (wait < 60 || wait < 1.5 * explained_wait_) return;
    explained_wait_ = wait;
    core::ExplainOptions options;
    options.now_unix = kEpochDays * 86400 + static_cast<int64_t>(t);
    options.max_sessions = 100;
    auto e = core::Explain(cluster_, conf_, fmt::format("{}/{}", kNamespace, GroupName(oldest, 0)),
                           options);
    if (!e.ok()) return;
    ReplayResult::LongestWait lw;
    lw.job = GroupName(oldest, 0);
    lw.submit = static_cast<double>(w_.jobs[oldest].submit);
    lw.explained_at = t;
    if (e->estimated_start) {
      lw.estimated_start = static_cast<double>(*e->estimated_start - kEpochDays * 86400);
    }
    lw.explanation = core::ExplanationText(*e);
    longest_ = std::move(lw);
  }

  void Advance(double t) {
    while (next_sample_ <= t) {
      samples_.push_back({next_sample_, busy_ / 1000.0, held_ / 1000.0});
      next_sample_ += o_.sample_seconds;
    }
    if (t > now_) {
      tally_.busy_seconds += static_cast<double>(busy_) / 1000.0 * (t - now_);
      tally_.held_seconds += static_cast<double>(held_) / 1000.0 * (t - now_);
      now_ = t;
    }
  }

  void Loop() {
    const auto& jobs = w_.jobs;
    size_t next = 0;
    while (next < jobs.size() || !running_.empty()) {
      double t_arrive = next < jobs.size() ? static_cast<double>(jobs[next].submit) : kInf;
      double t_end = running_.empty() ? kInf : running_.top().end;
      double t = std::min(t_arrive, t_end);
      Advance(t);
      while (!running_.empty() && running_.top().end <= t) {
        Running done = running_.top();
        running_.pop();
        if (done.generation != jobs_[done.job].generation) continue;
        Leave(done.job);
        tally_.last_end = std::max(tally_.last_end, done.end);
      }
      while (next < jobs.size() && static_cast<double>(jobs[next].submit) <= t) {
        Arrive(static_cast<int>(next));
        ++next;
      }
      Cycle(t);
      if (o_.progress && sessions_ % 5000 == 0) o_.progress(next, waiting_.size(), sessions_);
    }
  }

  const ReplayWorkload& w_;
  const ReplayOptions& o_;
  bool kube_ = false;
  core::SchedulerConf conf_;
  core::Cluster cluster_;
  std::vector<Job> jobs_;
  std::vector<int> waiting_;  // jobs not running, in arrival order
  std::priority_queue<Running, std::vector<Running>, std::greater<Running>> running_;
  bool freed_ = false;
  ReplayTally tally_;
  int64_t busy_ = 0, held_ = 0;  // milli-GPUs running jobs, and held by jobs not running
  double now_ = 0, next_sample_ = 0;
  int64_t sessions_ = 0;
  std::vector<ReplayResult::Sample> samples_;
  std::optional<ReplayResult::LongestWait> longest_;
  double explained_wait_ = 0;
  int64_t rack_gpus_ = 0, spine_gpus_ = 0;  // of the largest rack and spine
  std::vector<int> index_by_rank_;           // a node's place in the workload's node list
};

}  // namespace

core::SchedulerConf EngineConf(const ReplayOptions& options) {
  switch (options.discipline) {
    case Discipline::kKube:
      return core::KubeSchedulerConf();
    case Discipline::kVolcano:
      return core::DefaultSchedulerConf();
    case Discipline::kFifo:
    case Discipline::kMuster:
      break;
  }
  core::SchedulerConf conf;
  conf.actions = {"allocate", "backfill"};
  for (const auto& names : {std::vector<std::string>{"priority", "gang", "conformance"},
                            std::vector<std::string>{"predicates", "nodeorder"}}) {
    core::Tier& tier = conf.tiers.emplace_back();
    for (const std::string& name : names) tier.plugins.push_back(core::PluginOption{name, {}, {}});
  }
  auto& allocate = conf.configurations["allocate"];
  if (options.discipline == Discipline::kFifo) {
    allocate["strictOrder"] = "true";
  } else {
    allocate["reserveGpus"] = std::to_string(options.reserve_gpus);
    allocate["reserveAfter"] = fmt::format("{}s", std::max(options.reserve_after, 0.0));
    if (options.rack_nodes > 0 && options.topology != "none") {
      conf.tiers.back().plugins.push_back(core::PluginOption{"network-topology-aware", {}, {}});
    }
  }
  return conf;
}

std::string EngineUnsupported(const ReplayWorkload& workload, const ReplayOptions& options) {
  for (const ReplayJob& j : workload.jobs) {
    const core::GpuPodRequest& r = j.pod;
    if (r.UsesGpu() && r.gpus > 1 && r.gpu_milli < core::kMilliPerGpu) {
      return fmt::format("{} asks {}m of each of {} GPUs; the engine shares one GPU at most",
                         j.name, r.gpu_milli, r.gpus);
    }
    if (!r.models.empty() && !workload.models) {
      return fmt::format("{} asks for a GPU model the workload does not name", j.name);
    }
  }
  return "";
}

absl::StatusOr<ReplayResult> RunEngineReplay(const ReplayWorkload& workload,
                                             const ReplayOptions& options) {
  std::string why = EngineUnsupported(workload, options);
  if (!why.empty()) return absl::InvalidArgumentError(why);
  EngineReplayer r(workload, options);
  return r.Run();
}

}  // namespace muster::sim
