#include "sim/sweep.h"

#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <mutex>
#include <thread>

#include "common/thread.h"
#include "fmt/format.h"
#include "sim/json.h"

namespace muster::sim {
namespace {

// Mean of the runs' KPIs; curves averaged per X over the runs with a value there.
PackingRun Mean(const std::vector<PackingRun>& runs) {
  PackingRun m;
  if (runs.empty()) return m;
  double k = static_cast<double>(runs.size());
  size_t curve = 0;
  for (const auto& r : runs) {
    m.alloc_100 += r.alloc_100 / k;
    m.alloc_130 += r.alloc_130 / k;
    m.frag_100 += r.frag_100 / k;
    m.frag_130 += r.frag_130 / k;
    m.frag_ratio_100 += r.frag_ratio_100 / k;
    m.frag_ratio_130 += r.frag_ratio_130 / k;
    m.seconds += r.seconds / k;
    m.cpu_seconds += r.cpu_seconds / k;
    m.pods += r.pods;
    m.failed_pods += r.failed_pods;
    curve = std::max(curve, r.alloc_curve.size());
  }
  m.pods = static_cast<int>(std::lround(m.pods / k));
  m.failed_pods = static_cast<int>(std::lround(m.failed_pods / k));
  auto average = [&](auto member) {
    std::vector<double> out(curve, std::nan(""));
    for (size_t x = 0; x < curve; ++x) {
      double s = 0;
      int n = 0;
      for (const auto& r : runs) {
        const std::vector<double>& c = r.*member;
        if (x < c.size() && !std::isnan(c[x])) {
          s += c[x];
          ++n;
        }
      }
      if (n > 0) out[x] = s / n;
    }
    return out;
  };
  m.alloc_curve = average(&PackingRun::alloc_curve);
  m.frag_curve = average(&PackingRun::frag_curve);
  m.policy = runs.front().policy;
  return m;
}

void RunFields(JsonWriter& j, const PackingRun& r) {
  j.Number("alloc_100", r.alloc_100, 2);
  j.Number("alloc_130", r.alloc_130, 2);
  j.Number("frag_100", r.frag_100, 2);
  j.Number("frag_130", r.frag_130, 2);
  j.Number("frag_ratio_100", r.frag_ratio_100, 2);
  j.Number("frag_ratio_130", r.frag_ratio_130, 2);
  j.Int("pods", r.pods);
  j.Int("failed_pods", r.failed_pods);
  j.Number("seconds", r.seconds, 3);
  j.Number("cpu_seconds", r.cpu_seconds, 3);
  if (!r.failed_by_kind_100.empty()) {
    j.BeginObject("failed_by_kind_100");
    for (const auto& [kind, v] : r.failed_by_kind_100) {
      j.BeginObject(kind);
      j.Int("pods", v.first);
      j.Int("gpu_milli", v.second);
      j.End();
    }
    j.End();
  }
}

void PolicyObject(JsonWriter& j, const PolicyResults& p) {
  j.String("policy", p.policy);
  j.BeginArray("per_seed");
  for (const auto& r : p.runs) {
    j.BeginObject();
    j.Int("seed", r.seed);
    RunFields(j, r);
    j.End();
  }
  j.End();
  j.BeginObject("mean");
  RunFields(j, p.mean);
  j.End();
  j.BeginArray("alloc_curve");  // mean allocation ratio at arrived demand X = 0, 1, ...
  for (double v : p.mean.alloc_curve) j.Number(v, 2);
  j.End();
  j.BeginArray("frag_curve");
  for (double v : p.mean.frag_curve) j.Number(v, 2);
  j.End();
}

}  // namespace

namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool ParseInt(std::string_view s, int64_t& out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return !s.empty() && ec == std::errc() && end == s.data() + s.size();
}

}  // namespace

absl::StatusOr<std::vector<int64_t>> ParseSeeds(std::string_view text) {
  std::vector<int64_t> out;
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view item = Trim(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    if (item.empty()) continue;
    size_t dash = item.find('-', 1);
    int64_t lo = 0, hi = 0;
    if (dash == std::string_view::npos) {
      if (!ParseInt(item, lo)) {
        return absl::InvalidArgumentError(fmt::format("seeds: \"{}\" is not a number", item));
      }
      hi = lo;
    } else if (!ParseInt(Trim(item.substr(0, dash)), lo) ||
               !ParseInt(Trim(item.substr(dash + 1)), hi)) {
      return absl::InvalidArgumentError(fmt::format("seeds: \"{}\" is not a range like 42-51", item));
    }
    if (hi < lo) return absl::InvalidArgumentError(fmt::format("seeds: \"{}\" is reversed", item));
    if (hi - lo > 100000) {
      return absl::InvalidArgumentError(fmt::format("seeds: \"{}\" is too many", item));
    }
    for (int64_t s = lo; s <= hi; ++s) out.push_back(s);
  }
  if (out.empty()) return absl::InvalidArgumentError("seeds: none given (for example 42-51)");
  return out;
}

absl::StatusOr<PackingSweep> RunPackingSweep(const PackingExperiment& experiment,
                                             const std::vector<std::string>& policies,
                                             const std::vector<int64_t>& seeds,
                                             const SweepOptions& options) {
  auto start = std::chrono::steady_clock::now();
  // Check every policy name before starting anything.
  for (const auto& p : policies) {
    auto ok = core::NewGpuPlacementPolicy(
        p, core::GpuPolicyContext{std::make_shared<core::TypicalPods>(experiment.typical())});
    if (!ok.ok()) return ok.status();
  }
  const int total = static_cast<int>(policies.size() * seeds.size());
  std::vector<absl::StatusOr<PackingRun>> results(total, absl::UnknownError("not run"));
  std::atomic<int> next{0};
  std::mutex mu;
  int done = 0;
  auto worker = [&] {
    for (int i = next++; i < total; i = next++) {
      const std::string& policy = policies[i / seeds.size()];
      int64_t seed = seeds[i % seeds.size()];
      results[i] = experiment.Run(policy, seed, options.packing);
      std::lock_guard<std::mutex> lock(mu);
      ++done;
      if (options.progress && results[i].ok()) options.progress(done, total, *results[i]);
    }
  };
  int threads = std::max(1, std::min(options.jobs, total));
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) {
    std::thread thread;
    // A thread the system refuses leaves fewer workers; this one always works.
    if (!common::StartThread(thread, "a sweep worker", worker).ok()) break;
    pool.push_back(std::move(thread));
  }
  worker();
  for (auto& t : pool) t.join();

  PackingSweep sweep;
  sweep.seeds = seeds;
  sweep.gpus = experiment.gpus();
  sweep.trace_pods = static_cast<int>(experiment.pod_count());
  for (size_t p = 0; p < policies.size(); ++p) {
    PolicyResults pr;
    for (size_t s = 0; s < seeds.size(); ++s) {
      auto& r = results[p * seeds.size() + s];
      if (!r.ok()) return r.status();
      pr.runs.push_back(*std::move(r));
    }
    pr.policy = pr.runs.front().policy;
    pr.mean = Mean(pr.runs);
    sweep.results.push_back(std::move(pr));
  }
  sweep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return sweep;
}

std::string PackingTable(const PackingSweep& sweep) {
  std::string out = fmt::format(
      "trace {} ({} pods), nodes {} ({} nodes, {} GPUs)\n"
      "GPU allocation ratio (% of GPU capacity) at 100 % and 130 % arrived GPU demand;\n"
      "frag: fragmentation (FGD's measure, % of capacity) at the same points.\n\n",
      sweep.trace, sweep.trace_pods, sweep.nodes, sweep.node_count, sweep.gpus);
  out += fmt::format("{:<11} {:>6} {:>10} {:>10} {:>9} {:>9} {:>7} {:>7} {:>8}\n", "policy", "seed",
                     "alloc@100", "alloc@130", "frag@100", "frag@130", "pods", "failed", "cpu s");
  for (const auto& p : sweep.results) {
    for (const auto& r : p.runs) {
      out += fmt::format("{:<11} {:>6} {:>10.2f} {:>10.2f} {:>9.2f} {:>9.2f} {:>7} {:>7} {:>8.2f}\n",
                         p.policy, r.seed, r.alloc_100, r.alloc_130, r.frag_100, r.frag_130, r.pods,
                         r.failed_pods, r.cpu_seconds);
    }
    const PackingRun& m = p.mean;
    out += fmt::format("{:<11} {:>6} {:>10.2f} {:>10.2f} {:>9.2f} {:>9.2f} {:>7} {:>7} {:>8.2f}\n",
                       p.policy, "mean", m.alloc_100, m.alloc_130, m.frag_100, m.frag_130, m.pods,
                       m.failed_pods, m.cpu_seconds);
    if (sweep.results.size() > 1) out += "\n";
  }
  out += fmt::format("{} runs in {:.1f} s (wall)\n", sweep.results.size() * sweep.seeds.size(),
                     sweep.seconds);
  return out;
}

std::string PackingJson(const PackingSweep& sweep) {
  JsonWriter j;
  j.BeginObject();
  j.String("trace", sweep.trace);
  j.String("nodes", sweep.nodes);
  j.Int("gpus", sweep.gpus);
  if (sweep.results.size() == 1) {
    PolicyObject(j, sweep.results.front());
  } else {
    j.BeginArray("results");
    for (const auto& p : sweep.results) {
      j.BeginObject();
      PolicyObject(j, p);
      j.End();
    }
    j.End();
  }
  j.Number("seconds", sweep.seconds, 3);
  j.End();
  return j.str() + "\n";
}

std::string PackingCsv(const PackingSweep& sweep) {
  std::string out =
      "trace,policy,seed,alloc_100,alloc_130,frag_100,frag_130,frag_ratio_100,frag_ratio_130,"
      "pods,failed_pods,seconds,cpu_seconds\n";
  auto row = [&](const std::string& policy, const std::string& seed, const PackingRun& r) {
    out += fmt::format("{},{},{},{:.2f},{:.2f},{:.2f},{:.2f},{:.2f},{:.2f},{},{},{:.3f},{:.3f}\n",
                       CsvField(sweep.trace), policy, seed, r.alloc_100, r.alloc_130, r.frag_100,
                       r.frag_130, r.frag_ratio_100, r.frag_ratio_130, r.pods, r.failed_pods,
                       r.seconds, r.cpu_seconds);
  };
  for (const auto& p : sweep.results) {
    for (const auto& r : p.runs) row(p.policy, std::to_string(r.seed), r);
    row(p.policy, "mean", p.mean);
  }
  return out;
}

}  // namespace muster::sim
