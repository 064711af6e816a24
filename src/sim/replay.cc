#include "sim/replay.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <queue>
#include <tuple>

#include "fmt/format.h"
#include "sim/go_rand.h"
#include "sim/packing.h"
#include "sim/replay_engine.h"

namespace muster::sim {
namespace {

using core::GpuNodeState;
using core::GpuPodRequest;

double Percentile(std::vector<double> v, double q) {  // nearest rank
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t idx = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size()))) - (q > 0 ? 1 : 0);
  return v[std::min(idx, v.size() - 1)];
}

double Gpus(const GpuPodRequest& r) { return static_cast<double>(r.GpuDemand()) / 1000.0; }

// The cluster and the jobs' progress. Nodes are kept in rank order: ties go to the first.
class Replayer {
 public:
  Replayer(const ReplayWorkload& w, const ReplayOptions& o) : w_(w), o_(o) {}

  absl::StatusOr<ReplayResult> Run() {
    auto start = std::chrono::steady_clock::now();
    if (o_.placement != "spread") {
      auto p = core::NewGpuPlacementPolicy(o_.placement, core::GpuPolicyContext{w_.typical});
      if (!p.ok()) return p.status();
      policy_ = *std::move(p);
    }
    GoRand rng(o_.seed);
    const int n = static_cast<int>(w_.nodes.size());
    std::vector<int> rank = rng.Perm(n);
    nodes_.resize(n);
    for (int i = 0; i < n; ++i) {
      const TraceNode& t = w_.nodes[i];
      GpuNodeState& s = nodes_[rank[i]];
      s.cpu_free = t.cpu_milli;
      s.memory_free = t.memory_mib;
      s.max_pods = 1001;
      s.model = t.gpus > 0 ? w_.models->Find(t.model) : -1;
      s.gpu_free.assign(t.gpus, static_cast<int32_t>(core::kMilliPerGpu));
      capacity_gpus_ += t.gpus;
    }
    version_.assign(n, 1);
    std::map<std::tuple<int64_t, int64_t, int, std::vector<int>>, int> shapes;
    for (const ReplayJob& j : w_.jobs) {
      const GpuPodRequest& r = j.pod;
      shape_.push_back(
          shapes.emplace(std::make_tuple(r.cpu_milli, r.gpu_milli, r.gpus, r.models), shapes.size())
              .first->second);
    }
    shapes_ = static_cast<int>(shapes.size());
    score_.assign(static_cast<size_t>(shapes_) * n, 0);
    score_version_.assign(static_cast<size_t>(shapes_) * n, 0);
    state_.assign(w_.jobs.size(), {});

    Loop();

    ReplayResult r = Summarise();
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return r;
  }

 private:
  struct JobState {
    std::vector<std::pair<int, std::vector<int>>> placed;  // node, GPUs per placed pod
    double start = -1;
    double end = -1;
  };
  struct Running {
    double end;
    int job;
    bool operator>(const Running& o) const { return std::tie(end, job) > std::tie(o.end, o.job); }
  };

  // --- placement -------------------------------------------------------------------------------

  // The node for one pod of job j in `nodes`, or -1. Scores are cached per node version and shape
  // for the live cluster (`cached`); hypothetical copies score afresh.
  int Choose(int j, const std::vector<GpuNodeState>& nodes, bool cached) {
    const GpuPodRequest& req = w_.jobs[j].pod;
    int best = -1;
    double best_score = -kInf;
    const size_t base = static_cast<size_t>(shape_[j]) * nodes.size();
    for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
      if (!core::Fits(req, nodes[i])) continue;
      double s;
      if (!policy_) {
        s = static_cast<double>(nodes[i].GpuFreeTotal()) +
            static_cast<double>(nodes[i].cpu_free) * 1e-9;
      } else if (cached) {
        size_t k = base + i;
        if (score_version_[k] != version_[i]) {
          score_[k] = policy_->Score(req, nodes[i]);
          score_version_[k] = version_[i];
        }
        s = score_[k];
      } else {
        s = policy_->Score(req, nodes[i]);
      }
      if (s > best_score) {
        best_score = s;
        best = i;
      }
    }
    return best;
  }

  std::pair<int, std::vector<int>> PlacePod(int j, std::vector<GpuNodeState>& nodes, bool live) {
    int node = Choose(j, nodes, live);
    if (node < 0) return {-1, {}};
    const GpuPodRequest& req = w_.jobs[j].pod;
    std::vector<int> gpus = policy_ ? policy_->SelectGpus(req, nodes[node], draws_)
                                    : core::BestGpus(req, nodes[node]);
    core::ApplyPlacement(req, gpus, +1, nodes[node]);
    if (live) ++version_[node];
    return {node, std::move(gpus)};
  }

  void Release(int j, const std::pair<int, std::vector<int>>& p, std::vector<GpuNodeState>& nodes,
               bool live) {
    core::ApplyPlacement(w_.jobs[j].pod, p.second, -1, nodes[p.first]);
    if (live) ++version_[p.first];
  }

  // All pods of job j at once, or none (the state is unchanged then).
  bool PlaceGang(int j, std::vector<GpuNodeState>& nodes, bool live,
                 std::vector<std::pair<int, std::vector<int>>>* out) {
    std::vector<std::pair<int, std::vector<int>>> placed;
    for (int p = static_cast<int>(state_[j].placed.size()); p < w_.jobs[j].pods; ++p) {
      auto pl = PlacePod(j, nodes, live);
      if (pl.first < 0) {
        for (auto it = placed.rbegin(); it != placed.rend(); ++it) Release(j, *it, nodes, live);
        return false;
      }
      placed.push_back(std::move(pl));
    }
    if (out) *out = std::move(placed);
    return true;
  }

  // --- job lifecycle ---------------------------------------------------------------------------

  void StartJob(int j, double t) {
    JobState& s = state_[j];
    s.start = t;
    s.end = t + w_.jobs[j].duration;
    double g = Gpus(w_.jobs[j].pod);
    held_ -= g * static_cast<double>(s.placed.size() - placed_now_);  // pods placed earlier
    busy_ += g * w_.jobs[j].pods;
    running_.push({s.end, j});
  }

  // Places all of job j now (gang) and starts it. False when it does not fit.
  bool TryStartGang(int j, double t) {
    std::vector<std::pair<int, std::vector<int>>> placed;
    if (!PlaceGang(j, nodes_, true, &placed)) return false;
    placed_now_ = placed.size();
    for (auto& p : placed) state_[j].placed.push_back(std::move(p));
    StartJob(j, t);
    placed_now_ = 0;
    return true;
  }

  void Complete(int j) {
    for (const auto& p : state_[j].placed) Release(j, p, nodes_, true);
    busy_ -= Gpus(w_.jobs[j].pod) * w_.jobs[j].pods;
    freed_ = true;
  }

  // --- reservations (muster) ------------------------------------------------------------------

  // The earliest time job r fits once running jobs end (given `extra`, a job placed
  // hypothetically that ends at extra_end), or infinity.
  double ShadowTime(int r) {
    std::vector<GpuNodeState> nodes = nodes_;
    if (PlaceGang(r, nodes, false, nullptr)) return now_;
    std::vector<Running> ends;
    auto copy = running_;
    while (!copy.empty()) {
      ends.push_back(copy.top());
      copy.pop();
    }
    for (const Running& e : ends) {
      for (const auto& p : state_[e.job].placed) Release(e.job, p, nodes, false);
      std::vector<GpuNodeState> trial = nodes;
      if (PlaceGang(r, trial, false, nullptr)) return e.end;
    }
    return kInf;
  }

  // Whether job r can still start at `shadow` with job j (just placed, running until j_end).
  bool ReservationHolds(int r, double shadow, int j, double j_end) {
    std::vector<GpuNodeState> nodes = nodes_;
    auto copy = running_;
    while (!copy.empty() && copy.top().end <= shadow) {
      for (const auto& p : state_[copy.top().job].placed) Release(copy.top().job, p, nodes, false);
      copy.pop();
    }
    if (j_end <= shadow) {
      for (const auto& p : state_[j].placed) Release(j, p, nodes, false);
    }
    return PlaceGang(r, nodes, false, nullptr);
  }

  // --- one scheduling pass ---------------------------------------------------------------------

  void Schedule(double t) {
    // Nothing freed since the last pass: jobs that did not fit then do not fit now; only jobs
    // that arrived since are tried (and the reservation does not move).
    size_t from = freed_ ? 0 : first_new_;
    freed_ = false;
    std::vector<int> next_pending;
    next_pending.reserve(pending_.size());
    std::map<std::pair<int, int>, bool> failed;  // (shape, pods left) that did not fit this pass
    auto keep = [&](int j) { next_pending.push_back(j); };
    // fifo: the head did not fit (an older waiting job that nothing has freed room for yet).
    bool blocked = o_.discipline == Discipline::kFifo && from > 0;
    if (o_.discipline == Discipline::kMuster && reserved_ >= 0 && (from == 0)) {
      if (TryStartGang(reserved_, t)) {
        reserved_ = -1;
      } else {
        shadow_ = ShadowTime(reserved_);
      }
    }
    for (size_t i = 0; i < pending_.size(); ++i) {
      int j = pending_[i];
      if (state_[j].start >= 0) continue;  // started (the reserved job above)
      if (i < from || blocked) {
        keep(j);
        continue;
      }
      const ReplayJob& job = w_.jobs[j];
      int left = job.pods - static_cast<int>(state_[j].placed.size());
      auto key = std::make_pair(shape_[j], left);
      if (o_.discipline != Discipline::kKube) {
        if (failed.count(key) && !(o_.discipline == Discipline::kMuster && j == reserved_)) {
          if (o_.discipline == Discipline::kFifo) blocked = true;
          keep(j);
          continue;
        }
      }
      switch (o_.discipline) {
        case Discipline::kKube: {
          // Pod by pod: whatever fits is placed and holds its GPUs until the rest follow.
          if (failed.count(std::make_pair(shape_[j], 1))) {
            keep(j);
            break;
          }
          while (static_cast<int>(state_[j].placed.size()) < job.pods) {
            auto pl = PlacePod(j, nodes_, true);
            if (pl.first < 0) {
              failed[std::make_pair(shape_[j], 1)] = true;
              break;
            }
            state_[j].placed.push_back(std::move(pl));
            held_ += Gpus(job.pod);
          }
          if (static_cast<int>(state_[j].placed.size()) == job.pods) {
            placed_now_ = 0;
            StartJob(j, t);
          } else {
            keep(j);
          }
          break;
        }
        case Discipline::kFifo:
        case Discipline::kVolcano:
          if (TryStartGang(j, t)) {
          } else {
            failed[key] = true;
            if (o_.discipline == Discipline::kFifo) blocked = true;
            keep(j);
          }
          break;
        case Discipline::kMuster: {
          if (j == reserved_) {
            keep(j);
            break;
          }
          std::vector<std::pair<int, std::vector<int>>> placed;
          if (!PlaceGang(j, nodes_, true, &placed)) {
            failed[key] = true;
            if (reserved_ < 0 && job.Gpus() >= o_.reserve_gpus &&
                t - static_cast<double>(job.submit) >= o_.reserve_after) {
              reserved_ = j;
              shadow_ = ShadowTime(j);
              if (!std::isfinite(shadow_)) reserved_ = -1;
            }
            keep(j);
            break;
          }
          for (auto& p : placed) state_[j].placed.push_back(std::move(p));
          if (reserved_ >= 0 && !ReservationHolds(reserved_, shadow_, j, t + job.duration)) {
            for (auto it = state_[j].placed.rbegin(); it != state_[j].placed.rend(); ++it) {
              Release(j, *it, nodes_, true);
            }
            state_[j].placed.clear();
            keep(j);
            break;
          }
          placed_now_ = state_[j].placed.size();
          StartJob(j, t);
          placed_now_ = 0;
          break;
        }
      }
    }
    pending_ = std::move(next_pending);
    first_new_ = pending_.size();
  }

  // --- the event loop --------------------------------------------------------------------------

  void Advance(double t) {
    // Utilisation samples at multiples of the step, with the values that held until t.
    while (next_sample_ <= t) {
      samples_.push_back({next_sample_, busy_, held_});
      next_sample_ += o_.sample_seconds;
    }
    if (t > now_) {
      busy_seconds_ += busy_ * (t - now_);
      held_seconds_ += held_ * (t - now_);
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
        Complete(running_.top().job);
        last_end_ = std::max(last_end_, running_.top().end);
        running_.pop();
      }
      while (next < jobs.size() && static_cast<double>(jobs[next].submit) <= t) {
        pending_.push_back(static_cast<int>(next));
        ++next;
      }
      Schedule(t);
    }
    end_ = now_;
  }

  ReplayResult Summarise() {
    ReplayTally tally;
    tally.start.reserve(state_.size());
    tally.end.reserve(state_.size());
    for (const JobState& s : state_) {
      tally.start.push_back(s.start);
      tally.end.push_back(s.end);
    }
    tally.capacity_gpus = capacity_gpus_;
    tally.busy_seconds = busy_seconds_;
    tally.held_seconds = held_seconds_;
    tally.end_time = end_;
    tally.last_end = last_end_;
    tally.samples = std::move(samples_);
    return SummariseReplay(w_, o_, std::move(tally));
  }

  // A Random placement policy draws; the stream is the seed's, after the node permutation.
  class Draws : public core::RandomSource {
   public:
    explicit Draws(int64_t seed) : rng_(seed) {}
    int Intn(int n) override { return rng_.Intn(n); }

   private:
    GoRand rng_;
  };

  const ReplayWorkload& w_;
  const ReplayOptions& o_;
  std::unique_ptr<core::GpuPlacementPolicy> policy_;
  Draws draws_{o_.seed + 1};
  std::vector<GpuNodeState> nodes_;
  std::vector<uint32_t> version_;
  std::vector<int> shape_;
  int shapes_ = 0;
  std::vector<double> score_;
  std::vector<uint32_t> score_version_;
  std::vector<JobState> state_;
  std::vector<int> pending_;
  size_t first_new_ = 0;
  bool freed_ = false;
  std::priority_queue<Running, std::vector<Running>, std::greater<Running>> running_;
  int reserved_ = -1;
  double shadow_ = kInf;
  size_t placed_now_ = 0;
  double capacity_gpus_ = 0;
  double busy_ = 0, held_ = 0;
  double busy_seconds_ = 0, held_seconds_ = 0;
  double now_ = 0, end_ = 0, last_end_ = 0;
  double next_sample_ = 0;
  std::vector<ReplayResult::Sample> samples_;
};

}  // namespace

ReplayResult SummariseReplay(const ReplayWorkload& w, const ReplayOptions& o, ReplayTally tally) {
  ReplayResult r;
  r.discipline = DisciplineName(o.discipline);
  r.placement = o.placement;
  r.jobs = static_cast<int>(w.jobs.size());
  int finished = 0;
  for (size_t j = 0; j < w.jobs.size(); ++j) {
    if (tally.start[j] >= 0 && tally.end[j] <= tally.end_time) ++finished;
  }
  r.finished = finished;
  r.unfinished = r.jobs - r.finished;
  r.deadlock = r.unfinished > 0;
  r.deadlock_at = r.deadlock ? tally.end_time : 0;
  std::vector<double> jct;
  for (size_t j = 0; j < w.jobs.size(); ++j) {
    if (tally.start[j] < 0) continue;
    double submit = static_cast<double>(w.jobs[j].submit);
    r.waits.push_back(tally.start[j] - submit);
    jct.push_back(tally.end[j] - submit);
    if (w.jobs[j].pods > 1) r.gang_wait_max = std::max(r.gang_wait_max, tally.start[j] - submit);
  }
  if (!r.waits.empty()) {
    double sum = 0;
    for (double v : r.waits) sum += v;
    r.wait_mean = sum / static_cast<double>(r.waits.size());
    r.wait_p50 = Percentile(r.waits, 0.5);
    r.wait_p99 = Percentile(r.waits, 0.99);
    r.wait_max = *std::max_element(r.waits.begin(), r.waits.end());
    sum = 0;
    for (double v : jct) sum += v;
    r.jct_mean = sum / static_cast<double>(jct.size());
    r.jct_p50 = Percentile(jct, 0.5);
    r.jct_p99 = Percentile(jct, 0.99);
  }
  // Gangs that never started waited until the end (at least).
  for (size_t j = 0; j < w.jobs.size(); ++j) {
    if (tally.start[j] < 0 && w.jobs[j].pods > 1) {
      r.gang_wait_max =
          std::max(r.gang_wait_max, tally.end_time - static_cast<double>(w.jobs[j].submit));
    }
  }
  double first = w.jobs.empty() ? 0 : static_cast<double>(w.jobs.front().submit);
  r.makespan = std::max(tally.last_end, tally.end_time) - first;
  if (r.makespan > 0 && tally.capacity_gpus > 0) {
    r.gpu_utilization = tally.busy_seconds / (tally.capacity_gpus * r.makespan);
  }
  r.idle_held_gpu_hours = tally.held_seconds / 3600.0;
  r.idle_held_cost = r.idle_held_gpu_hours * o.gpu_hour_price;
  r.utilization = std::move(tally.samples);
  return r;
}

const char* DisciplineName(Discipline d) {
  switch (d) {
    case Discipline::kKube: return "kube";
    case Discipline::kFifo: return "fifo";
    case Discipline::kVolcano: return "volcano";
    case Discipline::kMuster: return "muster";
  }
  return "?";
}

absl::StatusOr<Discipline> ParseDiscipline(std::string_view name) {
  if (name == "kube") return Discipline::kKube;
  if (name == "fifo") return Discipline::kFifo;
  if (name == "volcano") return Discipline::kVolcano;
  if (name == "muster") return Discipline::kMuster;
  return absl::InvalidArgumentError(
      fmt::format("unknown scheduler \"{}\"; known: kube, fifo, volcano, muster", name));
}

absl::StatusOr<ReplayWorkload> PhillyWorkload(const std::vector<PhillyJob>& jobs, int nodes) {
  if (nodes <= 0) return absl::InvalidArgumentError("the cluster needs at least one node");
  constexpr int kGpusPerNode = 8;
  ReplayWorkload w;
  w.source = "philly";
  w.models = std::make_shared<core::GpuModels>();
  int model = w.models->Id("philly-gpu");
  (void)model;
  for (int i = 0; i < nodes; ++i) {
    w.nodes.push_back({fmt::format("node-{:04d}", i), 64000, 512 * 1024, kGpusPerNode, "philly-gpu"});
  }
  int64_t t0 = std::numeric_limits<int64_t>::max();
  for (const auto& j : jobs) t0 = std::min(t0, j.submit_time);
  std::vector<core::PodShape> shapes;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const PhillyJob& p = jobs[i];
    ReplayJob j;
    j.name = fmt::format("job-{}", i);
    j.submit = p.submit_time - t0;
    j.duration = p.duration;
    if (p.gpus == 0) {
      j.pod.cpu_milli = 1000;
      j.pod.memory = 8 * 1024;
    } else {
      j.pods = (p.gpus + kGpusPerNode - 1) / kGpusPerNode;
      int per = (p.gpus + j.pods - 1) / j.pods;
      j.pod.gpus = per;
      j.pod.gpu_milli = core::kMilliPerGpu;
      j.pod.cpu_milli = 4000 * per;
      j.pod.memory = 32 * 1024 * per;
    }
    if (j.pods > nodes) {
      ++w.skipped;
      continue;
    }
    for (int k = 0; k < j.pods; ++k) {
      shapes.push_back({j.pod.ScoringCpu(), j.pod.gpu_milli, j.pod.gpus, ""});
    }
    w.jobs.push_back(std::move(j));
  }
  std::stable_sort(w.jobs.begin(), w.jobs.end(),
                   [](const ReplayJob& a, const ReplayJob& b) { return a.submit < b.submit; });
  if (w.jobs.empty()) return absl::InvalidArgumentError("no job of the trace fits the cluster");
  w.typical = std::make_shared<core::TypicalPods>(core::TypicalPods::FromPods(shapes, *w.models));
  return w;
}

absl::StatusOr<ReplayWorkload> OpenbWorkload(std::vector<TraceNode> nodes,
                                             const std::vector<TracePod>& pods) {
  ReplayWorkload w;
  w.source = "openb";
  w.models = std::make_shared<core::GpuModels>();
  std::sort(nodes.begin(), nodes.end(),
            [](const TraceNode& a, const TraceNode& b) { return a.name < b.name; });
  for (const auto& n : nodes) {
    if (n.gpus > 0) w.models->Id(n.model);
  }
  w.nodes = std::move(nodes);
  int64_t t0 = std::numeric_limits<int64_t>::max();
  for (const auto& p : pods) {
    if (p.creation_time) t0 = std::min(t0, *p.creation_time);
  }
  std::vector<core::PodShape> shapes;
  for (const TracePod& p : pods) {
    if (!p.creation_time || !p.deletion_time || *p.deletion_time < *p.creation_time) {
      ++w.skipped;
      continue;
    }
    ReplayJob j;
    j.name = p.name;
    j.submit = *p.creation_time - t0;
    j.duration = static_cast<double>(*p.deletion_time - *p.creation_time);
    j.pod = PackingExperiment::Request(p, *w.models);
    shapes.push_back({j.pod.ScoringCpu(), j.pod.gpu_milli, j.pod.gpus,
                      j.pod.UsesGpu() ? core::NormalizeGpuSpec(p.gpu_spec) : std::string()});
    w.jobs.push_back(std::move(j));
  }
  if (w.jobs.empty()) {
    return absl::InvalidArgumentError(
        "no pod of the trace has creation_time and deletion_time (replay needs both)");
  }
  std::stable_sort(w.jobs.begin(), w.jobs.end(),
                   [](const ReplayJob& a, const ReplayJob& b) { return a.submit < b.submit; });
  w.typical = std::make_shared<core::TypicalPods>(core::TypicalPods::FromPods(shapes, *w.models));
  return w;
}

void CompressArrivals(ReplayWorkload& workload, double speedup) {
  if (!(speedup > 0) || speedup == 1) return;
  for (auto& j : workload.jobs) {
    j.submit = static_cast<int64_t>(std::llround(static_cast<double>(j.submit) / speedup));
  }
}

absl::Status CheckRackOptions(const ReplayOptions& options) {
  if (options.rack_nodes < 0 || options.spine_racks < 0) {
    return absl::InvalidArgumentError("rack nodes and spine racks must not be negative");
  }
  if (options.spine_racks > 0 && options.rack_nodes == 0) {
    return absl::InvalidArgumentError("spines are made of racks: give the rack nodes too");
  }
  if (!(options.cross_rack_slowdown >= 1) || !std::isfinite(options.cross_rack_slowdown)) {
    return absl::InvalidArgumentError(fmt::format(
        "cross-rack slowdown {} is not a factor of at least 1", options.cross_rack_slowdown));
  }
  if (options.topology != "soft" && options.topology != "hard" && options.topology != "none") {
    return absl::InvalidArgumentError(
        fmt::format("topology \"{}\" is not soft, hard or none", options.topology));
  }
  return absl::OkStatus();
}

absl::StatusOr<ReplayResult> RunReplay(const ReplayWorkload& workload, const ReplayOptions& options) {
  if (options.sample_seconds <= 0) return absl::InvalidArgumentError("sample step must be > 0");
  if (absl::Status s = CheckRackOptions(options); !s.ok()) return s;
  std::string why =
      options.engine ? EngineUnsupported(workload, options) : "the engine was turned off";
  if (why.empty()) return RunEngineReplay(workload, options);
  if (options.rack_nodes > 0) {
    return absl::InvalidArgumentError(
        fmt::format("racks are replayed through the engine only, and {}", why));
  }
  Replayer r(workload, options);
  auto result = r.Run();
  if (result.ok()) result->engine_note = why;
  return result;
}

}  // namespace muster::sim
