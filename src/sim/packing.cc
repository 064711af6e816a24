#include "sim/packing.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <limits>
#include <map>

#include "fmt/format.h"
#include "sim/go_rand.h"

namespace muster::sim {
namespace {

using core::GpuNodeState;
using core::GpuPodRequest;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Per-event measurements, the inputs of the KPI read-off (docs/fgd.md section 2).
struct Event {
  int64_t arrived_milli;  // GPU demand of all pods so far, failed ones included
  int64_t used_milli;     // GPU demand of the placed pods
  double frag_milli;      // sum of F(n) over the nodes
  int64_t idle_milli;     // free GPU milli
};

struct Buckets {
  std::vector<double> alloc_sum, frag_sum, ratio_sum;
  std::vector<int> count;
};

// KSS analysis: events grouped by arrived demand rounded to whole percent.
Buckets Group(const std::vector<Event>& events, int gpus, int max_x) {
  Buckets b;
  b.alloc_sum.assign(max_x + 1, 0);
  b.frag_sum.assign(max_x + 1, 0);
  b.ratio_sum.assign(max_x + 1, 0);
  b.count.assign(max_x + 1, 0);
  const double g = gpus;
  for (const Event& e : events) {
    double arrive = RoundHalfEven(static_cast<double>(e.arrived_milli) / g / 10, 0);
    if (arrive < 0 || arrive > max_x) continue;
    int x = static_cast<int>(arrive);
    b.alloc_sum[x] += RoundHalfEven(static_cast<double>(e.used_milli) / g / 10, 2);
    b.frag_sum[x] += e.frag_milli;
    b.ratio_sum[x] += e.idle_milli > 0 ? 100.0 * e.frag_milli / static_cast<double>(e.idle_milli) : 0;
    ++b.count[x];
  }
  return b;
}

// Mean of a bucket at X, or over X-1..X+1 when X has no events; NaN when none of them has.
double BucketMean(const Buckets& b, const std::vector<double>& sums, int x) {
  if (x < 0 || x >= static_cast<int>(b.count.size())) return kNaN;
  if (b.count[x] > 0) return sums[x] / b.count[x];
  double s = 0;
  int n = 0;
  for (int i = std::max(0, x - 1); i <= std::min<int>(x + 1, static_cast<int>(b.count.size()) - 1); ++i) {
    s += sums[i];
    n += b.count[i];
  }
  return n > 0 ? s / n : kNaN;
}

}  // namespace

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double RoundHalfEven(double x, int digits) {
  if (!std::isfinite(x)) return x;
  if (digits == 0) return std::nearbyint(x);  // default rounding mode: ties to even
  // printf rounds the exact binary value correctly (ties to even), as Python's round() does.
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, x);
  return std::strtod(buf, nullptr);
}

GpuPodRequest PackingExperiment::Request(const TracePod& p, core::GpuModels& models) {
  GpuPodRequest r;
  r.cpu_milli = p.cpu_milli;
  r.memory = p.memory_mib;
  if (p.num_gpu != 0 && p.gpu_milli > 0) {
    r.gpus = p.num_gpu;
    r.gpu_milli = std::min<int64_t>(p.gpu_milli, core::kMilliPerGpu);
    r.models = core::ParseGpuSpec(p.gpu_spec, models);
  }
  return r;
}

absl::StatusOr<std::shared_ptr<const PackingExperiment>> PackingExperiment::Create(
    std::vector<TraceNode> nodes, std::vector<TracePod> pods) {
  std::shared_ptr<PackingExperiment> e(new PackingExperiment());
  std::sort(nodes.begin(), nodes.end(),
            [](const TraceNode& a, const TraceNode& b) { return a.name < b.name; });
  for (const TraceNode& n : nodes) {
    e->gpus_ += n.gpus;
    e->node_models_.push_back(n.gpus > 0 ? e->models_.Id(n.model) : -1);
  }
  if (e->gpus_ == 0) return absl::InvalidArgumentError("the node list has no GPUs");
  e->nodes_ = std::move(nodes);
  std::sort(pods.begin(), pods.end(),
            [](const TracePod& a, const TracePod& b) { return a.name < b.name; });
  std::map<std::tuple<int64_t, int64_t, int, std::vector<int>>, int> shape_ids;
  std::vector<core::PodShape> shapes;
  shapes.reserve(pods.size());
  for (const TracePod& p : pods) {
    Pod pod;
    pod.name = p.name;
    pod.request = Request(p, e->models_);
    const GpuPodRequest& r = pod.request;
    auto key = std::make_tuple(r.cpu_milli, r.gpu_milli, r.gpus, r.models);
    auto [it, added] = shape_ids.emplace(key, static_cast<int>(shape_ids.size()));
    pod.shape = it->second;
    shapes.push_back({r.ScoringCpu(), r.gpu_milli, r.gpus,
                      r.UsesGpu() ? core::NormalizeGpuSpec(p.gpu_spec) : std::string()});
    e->pods_.push_back(std::move(pod));
  }
  e->shapes_ = static_cast<int>(shape_ids.size());
  e->typical_ = std::make_shared<core::TypicalPods>(core::TypicalPods::FromPods(shapes, e->models_));
  return std::shared_ptr<const PackingExperiment>(std::move(e));
}

absl::StatusOr<PackingRun> PackingExperiment::Run(std::string_view policy_name, int64_t seed,
                                                  const PackingOptions& options) const {
  auto start = std::chrono::steady_clock::now();
  const double cpu_start = ThreadCpuSeconds();
  core::GpuPolicyContext context{typical_};
  context.muster = options.muster;
  auto policy = core::NewGpuPlacementPolicy(policy_name, context);
  if (!policy.ok()) return policy.status();
  const core::GpuPlacementPolicy& pol = **policy;
  const core::TypicalPods& typical = *typical_;

  GoRand rng(seed);
  rng.Int();  // KSS logs one rand.Int() right after seeding

  // The workload: all pods by name, shuffled, then tuned to the target demand.
  const int w = static_cast<int>(pods_.size());
  std::vector<int> order(w);
  for (int i = 0; i < w; ++i) order[i] = i;
  rng.Shuffle(w, [&](int64_t i, int64_t j) { std::swap(order[i], order[j]); });
  int64_t demand = 0;
  for (const Pod& p : pods_) demand += p.request.GpuDemand();
  const double target = options.tune_ratio * static_cast<double>(gpus_ * core::kMilliPerGpu);
  if (static_cast<double>(demand) < target) {
    // KSS tuneUpPods: draw from the name-sorted original list with replacement; stop at the
    // first draw whose per-GPU milli (not its total) would overshoot.
    for (;;) {
      int q = rng.Intn(w);
      const GpuPodRequest& r = pods_[q].request;
      if (static_cast<double>(demand + r.gpu_milli) > target) break;
      order.push_back(q);
      demand += r.GpuDemand();
    }
  } else {
    while (static_cast<double>(demand) > target && !order.empty()) {
      int idx = rng.Intn(static_cast<int>(order.size()));
      demand -= pods_[order[idx]].request.GpuDemand();
      order.erase(order.begin() + idx);
    }
  }

  // Node ranks: Perm over the name-sorted nodes; ties go to the lowest rank, so iterate in rank
  // order and keep the first best.
  for (int i = 0; i < options.draws_before_permutation; ++i) rng.Int63();
  const int n = static_cast<int>(nodes_.size());
  std::vector<int> rank = rng.Perm(n);
  std::vector<GpuNodeState> nodes(n);
  for (int i = 0; i < n; ++i) {
    const TraceNode& t = nodes_[i];
    GpuNodeState& s = nodes[rank[i]];
    s.cpu_free = t.cpu_milli;
    s.memory_free = t.memory_mib;
    s.max_pods = 1001;
    s.model = node_models_[i];
    s.gpu_free.assign(t.gpus, static_cast<int32_t>(core::kMilliPerGpu));
  }

  std::vector<uint32_t> version(n, 1);
  std::vector<double> score_cache(static_cast<size_t>(shapes_) * n, 0);
  std::vector<uint32_t> score_version(static_cast<size_t>(shapes_) * n, 0);
  std::vector<double> node_frag(n);
  double frag_total = 0;
  for (int i = 0; i < n; ++i) {
    node_frag[i] = typical.Fragmentation(nodes[i]);
    frag_total += node_frag[i];
  }
  int64_t idle = static_cast<int64_t>(gpus_) * core::kMilliPerGpu;
  int64_t arrived = 0, used = 0;
  std::vector<Event> events;
  events.reserve(order.size());
  std::vector<int> feasible;
  feasible.reserve(n);
  PackingRun run;
  run.policy = std::string(pol.Name());
  run.seed = seed;
  run.pods = static_cast<int>(order.size());

  for (int q : order) {
    const Pod& pod = pods_[q];
    const GpuPodRequest& req = pod.request;
    arrived += req.GpuDemand();
    feasible.clear();
    for (int i = 0; i < n; ++i) {
      if (core::Fits(req, nodes[i])) feasible.push_back(i);
    }
    int chosen = -1;
    if (feasible.size() == 1) {
      chosen = feasible[0];
    } else if (!feasible.empty()) {
      if (pol.PicksNodeAtRandom()) {
        chosen = feasible[rng.Intn(static_cast<int>(feasible.size()))];
      } else {
        double best = -std::numeric_limits<double>::infinity();
        const size_t base = static_cast<size_t>(pod.shape) * n;
        for (int i : feasible) {
          size_t k = base + i;
          if (score_version[k] != version[i]) {
            score_cache[k] = pol.Score(req, nodes[i]);
            score_version[k] = version[i];
          }
          if (score_cache[k] > best) {
            best = score_cache[k];
            chosen = i;
          }
        }
      }
    }
    if (chosen < 0) {
      ++run.failed_pods;
      if (arrived <= static_cast<int64_t>(gpus_) * core::kMilliPerGpu) {
        std::string kind = !req.UsesGpu() ? "cpu"
                           : req.SharesGpu() ? "share"
                                             : fmt::format("{}-gpu", req.gpus);
        auto& [count, milli] = run.failed_by_kind_100[kind];
        ++count;
        milli += req.GpuDemand();
      }
    } else {
      GpuNodeState& s = nodes[chosen];
      std::vector<int> gpus = pol.SelectGpus(req, s, rng);
      core::ApplyPlacement(req, gpus, +1, s);
      ++version[chosen];
      used += req.GpuDemand();
      idle -= req.GpuDemand();
      double f = typical.Fragmentation(s);
      frag_total += f - node_frag[chosen];
      node_frag[chosen] = f;
    }
    events.push_back({arrived, used, frag_total, idle});
  }

  const int max_x = static_cast<int>(std::ceil(options.tune_ratio * 100)) + 1;
  Buckets b = Group(events, gpus_, max_x);
  auto kpi = [&](int x) { return RoundHalfEven(BucketMean(b, b.alloc_sum, x), 2); };
  auto frag = [&](int x) {
    return RoundHalfEven(100 * BucketMean(b, b.frag_sum, x) / (1000.0 * gpus_), 2);
  };
  run.alloc_100 = kpi(100);
  run.alloc_130 = kpi(130);
  run.frag_100 = frag(100);
  run.frag_130 = frag(130);
  run.frag_ratio_100 = BucketMean(b, b.ratio_sum, 100);
  run.frag_ratio_130 = BucketMean(b, b.ratio_sum, 130);
  if (options.curves) {
    for (int x = 0; x <= max_x; ++x) {
      run.alloc_curve.push_back(b.count[x] > 0 ? kpi(x) : kNaN);
      run.frag_curve.push_back(b.count[x] > 0 ? frag(x) : kNaN);
    }
  }
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  run.cpu_seconds = ThreadCpuSeconds() - cpu_start;
  return run;
}

}  // namespace muster::sim
