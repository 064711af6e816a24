#include "core/framework/fit_errors.h"

#include <algorithm>
#include <mutex>
#include <unordered_map>

#include "fmt/format.h"

namespace muster::core {

std::string FitHistogram(const std::map<std::string, int>& counts) {
  std::vector<std::string> parts;
  for (const auto& [reason, n] : counts) parts.push_back(fmt::format("{} {}", n, reason));
  std::sort(parts.begin(), parts.end());
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? ", " : "") + parts[i];
  return out;
}

namespace {

struct ReasonTable {
  std::mutex mu;
  std::vector<std::string> texts;
  std::unordered_map<std::string, int> ids;
};

ReasonTable& Reasons() {
  static ReasonTable* table = new ReasonTable();
  return *table;
}

}  // namespace

int FitReasons::Id(std::string_view text) {
  ReasonTable& t = Reasons();
  std::lock_guard<std::mutex> lock(t.mu);
  auto [it, inserted] = t.ids.try_emplace(std::string(text), static_cast<int>(t.texts.size()));
  if (inserted) t.texts.emplace_back(text);
  return it->second;
}

std::string FitReasons::Text(int id) {
  ReasonTable& t = Reasons();
  std::lock_guard<std::mutex> lock(t.mu);
  return id >= 0 && id < static_cast<int>(t.texts.size()) ? t.texts[id] : "unknown reason";
}

void FitErrors::SetNodeError(int node, int reason) {
  (void)node;
  ++nodes_;
  for (auto& [r, n] : counts_) {
    if (r == reason) {
      ++n;
      return;
    }
  }
  counts_.emplace_back(reason, 1);
}

std::string FitErrors::Error() const {
  std::map<std::string, int> counts;
  for (const auto& [reason, n] : counts_) counts[FitReasons::Text(reason)] += n;
  return fmt::format("0/{} nodes are unavailable: {}.", nodes_, FitHistogram(counts));
}

}  // namespace muster::core
