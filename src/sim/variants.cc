// openb trace variants with another share of GPU-sharing, multi-GPU or CPU-only pods, drawn from
// a trace as the FGD paper's gpushare, multigpu and cpu pod lists were made (sim/variants.h).

#include "sim/variants.h"

#include <algorithm>
#include <cmath>

#include "fmt/format.h"
#include "sim/go_rand.h"

namespace muster::sim {
namespace {

// `count` indices into a class of `size` pods, in draw order: the first `count` of a
// Fisher-Yates shuffle when the class has enough pods, uniform draws with replacement when not.
std::vector<int> Draw(int size, int count, GoRand& rng) {
  std::vector<int> out;
  out.reserve(count);
  if (count <= size) {
    std::vector<int> pool(size);
    for (int i = 0; i < size; ++i) pool[i] = i;
    for (int i = 0; i < count; ++i) {
      int j = i + rng.Intn(size - i);
      std::swap(pool[i], pool[j]);
      out.push_back(pool[i]);
    }
  } else {
    for (int i = 0; i < count; ++i) out.push_back(rng.Intn(size));
  }
  return out;
}

std::string Optional(const std::optional<int64_t>& v) {
  return v ? fmt::format("{}", *v) : std::string();
}

}  // namespace

bool UsesGpu(const TracePod& pod) { return pod.num_gpu > 0 && pod.gpu_milli > 0; }

bool SharesGpu(const TracePod& pod) {
  return pod.num_gpu == 1 && pod.gpu_milli > 0 && pod.gpu_milli < 1000;
}

bool MultiGpu(const TracePod& pod) { return UsesGpu(pod) && pod.num_gpu >= 2; }

int64_t GpuDemand(const TracePod& pod) {
  return UsesGpu(pod) ? pod.num_gpu * std::min<int64_t>(pod.gpu_milli, 1000) : 0;
}

double ShareOfGpuDemand(const std::vector<TracePod>& pods) {
  int64_t shared = 0, all = 0;
  for (const TracePod& p : pods) {
    all += GpuDemand(p);
    if (SharesGpu(p)) shared += GpuDemand(p);
  }
  return all > 0 ? 100.0 * static_cast<double>(shared) / static_cast<double>(all) : 0;
}

double MultiGpuShareOfGpuDemand(const std::vector<TracePod>& pods) {
  int64_t multi = 0, all = 0;
  for (const TracePod& p : pods) {
    all += GpuDemand(p);
    if (MultiGpu(p)) multi += GpuDemand(p);
  }
  return all > 0 ? 100.0 * static_cast<double>(multi) / static_cast<double>(all) : 0;
}

absl::StatusOr<std::vector<TracePod>> MultiGpuVariant(const std::vector<TracePod>& pods,
                                                       double multi_percent, int64_t seed) {
  if (!(multi_percent >= 0 && multi_percent < 100)) {
    return absl::InvalidArgumentError(
        fmt::format("the share of multi-GPU pods must be within 0..100, 100 excluded (percent "
                    "of the GPU demand), not {}",
                    multi_percent));
  }
  std::vector<const TracePod*> multi;
  int64_t multi_demand = 0, all_demand = 0;
  for (const TracePod& p : pods) {
    all_demand += GpuDemand(p);
    if (MultiGpu(p)) {
      multi.push_back(&p);
      multi_demand += GpuDemand(p);
    }
  }
  if (multi.empty()) {
    return absl::InvalidArgumentError("the trace has no multi-GPU pods to draw from");
  }
  const double x = multi_percent / 100;
  const double have = static_cast<double>(multi_demand) / static_cast<double>(all_demand);
  if (have > x + 1e-12) {
    return absl::InvalidArgumentError(
        fmt::format("multi-GPU pods already carry {:.2f} % of the trace's GPU demand, more than "
                    "{} (a variant only adds them)",
                    100 * have, multi_percent));
  }
  std::vector<TracePod> out = pods;
  GoRand rng(seed);
  // Each added pod has at least 2000 milli of demand, so the loop ends.
  while (static_cast<double>(multi_demand) < x * static_cast<double>(all_demand)) {
    const TracePod& p = *multi[rng.Intn(static_cast<int>(multi.size()))];
    out.push_back(p);
    multi_demand += GpuDemand(p);
    all_demand += GpuDemand(p);
  }
  for (size_t i = 0; i < out.size(); ++i) out[i].name = fmt::format("openb-pod-{:04d}", i);
  return out;
}

absl::StatusOr<std::vector<TracePod>> GpuShareVariant(const std::vector<TracePod>& pods,
                                                       double share_percent, int64_t seed) {
  if (!(share_percent >= 0 && share_percent <= 100)) {
    return absl::InvalidArgumentError(
        fmt::format("the share of GPU-sharing pods must be within 0..100 (percent of the GPU "
                    "demand), not {}",
                    share_percent));
  }
  std::vector<TracePod> out;
  std::vector<const TracePod*> shares, others;
  int64_t share_demand = 0, other_demand = 0;
  for (const TracePod& p : pods) {
    if (!UsesGpu(p)) {
      out.push_back(p);
    } else if (SharesGpu(p)) {
      shares.push_back(&p);
      share_demand += GpuDemand(p);
    } else {
      others.push_back(&p);
      other_demand += GpuDemand(p);
    }
  }
  const int gpu_pods = static_cast<int>(shares.size() + others.size());
  if (gpu_pods == 0) return absl::InvalidArgumentError("the trace has no GPU pods to draw from");
  const double x = share_percent / 100;
  int want_shares = 0;
  if (x >= 1) {
    want_shares = gpu_pods;
  } else if (x > 0) {
    if (shares.empty()) {
      return absl::InvalidArgumentError("the trace has no GPU-sharing pods to draw from");
    }
    if (others.empty()) {
      return absl::InvalidArgumentError(
          "the trace has no whole-GPU pods to draw from (only 100 % sharing is possible)");
    }
    const double ms = static_cast<double>(share_demand) / static_cast<double>(shares.size());
    const double mw = static_cast<double>(other_demand) / static_cast<double>(others.size());
    want_shares = static_cast<int>(std::lround(gpu_pods * x * mw / ((1 - x) * ms + x * mw)));
  }
  if (want_shares > 0 && shares.empty()) {
    return absl::InvalidArgumentError("the trace has no GPU-sharing pods to draw from");
  }
  if (want_shares < gpu_pods && others.empty()) {
    return absl::InvalidArgumentError("the trace has no whole-GPU pods to draw from");
  }
  GoRand rng(seed);
  for (int i : Draw(static_cast<int>(shares.size()), want_shares, rng)) out.push_back(*shares[i]);
  for (int i : Draw(static_cast<int>(others.size()), gpu_pods - want_shares, rng)) {
    out.push_back(*others[i]);
  }
  for (size_t i = 0; i < out.size(); ++i) out[i].name = fmt::format("openb-pod-{:04d}", i);
  return out;
}

double CpuOnlyShareOfPods(const std::vector<TracePod>& pods) {
  if (pods.empty()) return 0;
  int cpu = 0;
  for (const TracePod& p : pods) cpu += UsesGpu(p) ? 0 : 1;
  return 100.0 * cpu / static_cast<double>(pods.size());
}

absl::StatusOr<std::vector<TracePod>> CpuOnlyVariant(const std::vector<TracePod>& pods,
                                                      double cpu_percent, int64_t seed) {
  if (!(cpu_percent >= 0 && cpu_percent < 100)) {
    return absl::InvalidArgumentError(
        fmt::format("the share of CPU-only pods must be within 0..100, 100 excluded (percent of "
                    "the pods), not {}",
                    cpu_percent));
  }
  std::vector<const TracePod*> cpu, gpu;
  for (const TracePod& p : pods) (UsesGpu(p) ? gpu : cpu).push_back(&p);
  if (gpu.empty()) return absl::InvalidArgumentError("the trace has no GPU pods to keep");
  const double x = cpu_percent / 100;
  const int want = static_cast<int>(std::lround(static_cast<double>(gpu.size()) * x / (1 - x)));
  if (want > 0 && cpu.empty()) {
    return absl::InvalidArgumentError("the trace has no CPU-only pods to draw from");
  }
  std::vector<TracePod> out;
  out.reserve(want + gpu.size());
  GoRand rng(seed);
  for (int i : Draw(static_cast<int>(cpu.size()), want, rng)) out.push_back(*cpu[i]);
  for (const TracePod* p : gpu) out.push_back(*p);
  for (size_t i = 0; i < out.size(); ++i) out[i].name = fmt::format("openb-pod-{:04d}", i);
  return out;
}

std::string OpenbPodsCsv(const std::vector<TracePod>& pods) {
  std::string out =
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
      "deletion_time,scheduled_time\n";
  for (const TracePod& p : pods) {
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{}\n", p.name, p.cpu_milli, p.memory_mib,
                       p.num_gpu, p.gpu_milli, p.gpu_spec, p.qos, p.pod_phase,
                       Optional(p.creation_time), Optional(p.deletion_time),
                       Optional(p.scheduled_time));
  }
  return out;
}

}  // namespace muster::sim
