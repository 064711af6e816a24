#include "core/plugins/gpuplacement/typical_pods.h"

#include <algorithm>
#include <map>

namespace muster::core {

double FragBreakdown::Fragment() const {
  double out = 0;
  for (int i = 0; i < kCount; ++i) {
    if (i != kQ3Satisfied) out += amount[i];
  }
  return out;
}

const char* FragBreakdown::Name(int category) {
  static constexpr const char* kNames[kCount] = {"q1_lack_both", "q2_lack_gpu", "q3_satisfied",
                                                 "q4_lack_cpu",  "xl_satisfied", "xr_lack_cpu",
                                                 "no_access"};
  return category >= 0 && category < kCount ? kNames[category] : "unknown";
}

std::string NormalizeGpuSpec(std::string_view spec) {
  std::string out;
  size_t start = 0;
  while (start <= spec.size()) {
    size_t end = spec.find('|', start);
    if (end == std::string_view::npos) end = spec.size();
    std::string_view item = spec.substr(start, end - start);
    if (!item.empty()) {
      if (!out.empty()) out += '|';
      out += item;
    }
    start = end + 1;
  }
  return out;
}

std::vector<int> ParseGpuSpec(std::string_view spec, GpuModels& models) {
  std::vector<int> out;
  std::string normal = NormalizeGpuSpec(spec);
  std::string_view rest = normal;
  while (!rest.empty()) {
    size_t end = rest.find('|');
    int id = models.Id(rest.substr(0, end));
    if (std::find(out.begin(), out.end(), id) == out.end()) out.push_back(id);
    if (end == std::string_view::npos) break;
    rest.remove_prefix(end + 1);
  }
  return out;
}

TypicalPods TypicalPods::FromPods(const std::vector<PodShape>& pods, GpuModels& models,
                                  const TypicalPodsOptions& options) {
  std::map<PodShape, int64_t> counts;
  for (const PodShape& p : pods) ++counts[p];
  return FromCounts({counts.begin(), counts.end()}, models, options);
}

TypicalPods TypicalPods::FromCounts(const std::vector<std::pair<PodShape, int64_t>>& shape_counts,
                                    GpuModels& models, const TypicalPodsOptions& options) {
  std::map<PodShape, int64_t> merged;
  for (const auto& [shape, n] : shape_counts) merged[shape] += n;
  std::vector<TypicalPod> all;
  all.reserve(merged.size());
  for (const auto& [shape, n] : merged) {
    TypicalPod t;
    t.shape = shape;
    t.models = ParseGpuSpec(shape.spec, models);
    t.count = static_cast<double>(n);
    all.push_back(std::move(t));
  }
  return Cut(std::move(all), options);
}

TypicalPods TypicalPods::Recut(const TypicalPodsOptions& options) const {
  return Cut(all_, options);
}

TypicalPods TypicalPods::Cut(std::vector<TypicalPod> all, const TypicalPodsOptions& options) {
  TypicalPods out;
  out.all_ = all;
  std::vector<TypicalPod> list;
  double total = 0;
  for (TypicalPod& t : all) {
    if (!options.include_cpu_pods && t.shape.gpus == 0) continue;
    double weighted = 1;
    if (options.gpu_res_weight > 0 && t.shape.gpu_milli == kMilliPerGpu) {
      weighted = 1 + static_cast<double>(t.shape.gpus) * options.gpu_res_weight;
    }
    t.count *= weighted;
    total += t.count;
    list.push_back(std::move(t));
  }
  // Most frequent first; among equal counts the larger shape first (KSS sorts the reverse of
  // "count, then shape" ascending).
  std::sort(list.begin(), list.end(), [](const TypicalPod& a, const TypicalPod& b) {
    if (a.count != b.count) return a.count > b.count;
    return b.shape < a.shape;
  });
  if (list.empty() || total <= 0) return out;
  double threshold = std::clamp(options.popularity_threshold, 0.0, 100.0);
  double expected = threshold * total / 100.0;
  double cum = 0;
  size_t kept = 0;
  while (cum < expected && kept < list.size()) {
    cum += list[kept].count;
    list[kept].weight = list[kept].count / total;
    ++kept;
  }
  if (kept < list.size()) {
    list.resize(kept);
    for (auto& t : list) t.weight /= cum / total;
    out.coverage_ = cum / total;
  } else {
    for (auto& t : list) t.weight = t.count / total;
    out.coverage_ = 1;
  }
  out.pods_ = std::move(list);
  return out;
}

FragBreakdown TypicalPods::Breakdown(int64_t cpu_free, const int32_t* gpu_free, int gpus,
                                     int model) const {
  FragBreakdown b;
  int64_t left = 0;
  for (int g = 0; g < gpus; ++g) left += gpu_free[g];
  const double left_d = static_cast<double>(left);
  for (const TypicalPod& t : pods_) {
    const double w = t.weight;
    const PodShape& s = t.shape;
    if (s.gpu_milli == 0) {
      b.amount[cpu_free >= s.cpu_milli ? FragBreakdown::kXlSatisfied : FragBreakdown::kXrLackCpu] +=
          w * left_d;
      continue;
    }
    if (!t.models.empty() &&
        (model < 0 || std::find(t.models.begin(), t.models.end(), model) == t.models.end())) {
      b.amount[FragBreakdown::kNoAccess] += w * left_d;
      continue;
    }
    int fit = 0;
    int64_t too_small = 0;
    for (int g = 0; g < gpus; ++g) {
      if (gpu_free[g] >= s.gpu_milli) {
        ++fit;
      } else {
        too_small += gpu_free[g];
      }
    }
    bool cpu_ok = cpu_free >= s.cpu_milli;
    if (fit >= s.gpus && s.gpus > 0) {
      if (cpu_ok) {
        b.amount[FragBreakdown::kQ2LackGpu] += w * static_cast<double>(too_small);
        b.amount[FragBreakdown::kQ3Satisfied] += w * static_cast<double>(left - too_small);
      } else {
        b.amount[FragBreakdown::kQ4LackCpu] += w * left_d;
      }
    } else {
      b.amount[cpu_ok ? FragBreakdown::kQ2LackGpu : FragBreakdown::kQ1LackBoth] += w * left_d;
    }
  }
  return b;
}

double TypicalPods::Fragmentation(int64_t cpu_free, const int32_t* gpu_free, int gpus,
                                  int model) const {
  return Breakdown(cpu_free, gpu_free, gpus, model).Fragment();
}

}  // namespace muster::core
