#include "api/gpu_indices.h"

namespace muster::api {

std::string FormatGpuIndices(const std::vector<int>& gpus) {
  std::string out;
  for (int g : gpus) {
    if (!out.empty()) out += ',';
    out += std::to_string(g);
  }
  return out;
}

std::optional<std::vector<int>> ParseGpuIndices(std::string_view text) {
  std::vector<int> out;
  if (text.empty()) return out;
  size_t start = 0;
  while (true) {
    size_t end = text.find(',', start);
    std::string_view item = text.substr(start, end == std::string_view::npos ? end : end - start);
    if (item.empty() || item.size() > 6) return std::nullopt;
    int index = 0;
    for (char c : item) {
      if (c < '0' || c > '9') return std::nullopt;
      index = index * 10 + (c - '0');
    }
    out.push_back(index);
    if (end == std::string_view::npos) return out;
    start = end + 1;
  }
}

}  // namespace muster::api
