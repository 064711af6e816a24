// BinpackWeights and BinpackFraction (binpack_weights.h).

#include "core/plugins/binpack_weights.h"

#include <cstdint>
#include <string>

#include "fmt/format.h"

namespace muster::core {

Resources BinpackWeights(const PluginOption& opt, std::string_view prefix) {
  auto weight = [&](const std::string& key) {
    return static_cast<int64_t>(opt.Number(fmt::format("{}.{}", prefix, key), 1).value_or(1));
  };
  Resources weights;
  weights.Set(kCpu, weight("cpu"));
  weights.Set(kMemory, weight("memory"));
  weights.Set(kGpu, 1);
  std::string listed = opt.Text(fmt::format("{}.resources", prefix), "");
  size_t start = 0;
  while (start <= listed.size()) {
    size_t end = listed.find(',', start);
    std::string name =
        listed.substr(start, end == std::string::npos ? std::string::npos : end - start);
    name.erase(0, name.find_first_not_of(' '));
    name.erase(name.find_last_not_of(' ') + 1);
    if (!name.empty()) weights.Set(ResourceNames::Id(name), weight("resources." + name));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return weights;
}

double BinpackFraction(const Resources& weights, const Resources& request,
                       const Resources& allocatable, const Resources& used) {
  double score = 0, weight_sum = 0;
  for (ResourceId r = 0; r < weights.Size(); ++r) {
    double w = static_cast<double>(weights.Get(r));
    double req = static_cast<double>(request.Get(r));
    if (w <= 0 || req <= 0) continue;
    double alloc = static_cast<double>(allocatable.Get(r));
    double u = static_cast<double>(used.Get(r));
    if (alloc <= 0 || u + req > alloc) return 0.0;
    score += (u + req) * w / alloc;
    weight_sum += w;
  }
  return weight_sum > 0 ? score / weight_sum : 0.0;
}

}  // namespace muster::core
