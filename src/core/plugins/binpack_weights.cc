// BinpackWeights (binpack_weights.h).

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

}  // namespace muster::core
