#include "api/batch_indexes.h"

#include <charconv>
#include <algorithm>
#include <iterator>
#include <optional>
#include <vector>

#include "fmt/format.h"

namespace muster::api {
namespace {

std::vector<std::string_view> SplitIndexes(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (;;) {
    const size_t at = text.find(sep, start);
    parts.push_back(text.substr(start, at == std::string_view::npos ? at : at - start));
    if (at == std::string_view::npos) return parts;
    start = at + 1;
  }
}

// strconv.Atoi of a part: an optional sign and decimal digits.
std::optional<int64_t> AtoiIndex(std::string_view text) {
  std::string_view digits = text;
  bool negative = false;
  if (!digits.empty() && (digits.front() == '+' || digits.front() == '-')) {
    negative = digits.front() == '-';
    digits.remove_prefix(1);
  }
  int64_t value = 0;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (digits.empty() || ec != std::errc() || ptr != digits.data() + digits.size()) {
    return std::nullopt;
  }
  return negative ? -value : value;
}

}  // namespace

absl::StatusOr<std::set<int32_t>> ParseIndexes(std::string_view text, int32_t completions) {
  std::set<int32_t> out;
  if (text.empty()) return out;
  std::optional<int64_t> last;
  for (std::string_view interval : SplitIndexes(text, ',')) {
    std::vector<std::string_view> limits = SplitIndexes(interval, '-');
    if (limits.size() > 2) {
      return absl::InvalidArgumentError(fmt::format(
          "the fragment \"{}\" violates the requirement that an index interval can have at most "
          "two parts separated by '-'",
          interval));
    }
    int64_t bounds[2] = {0, 0};
    for (size_t i = 0; i < limits.size(); ++i) {
      std::optional<int64_t> v = AtoiIndex(limits[i]);
      if (!v) {
        return absl::InvalidArgumentError(
            fmt::format("cannot convert string to integer for index: \"{}\"", limits[i]));
      }
      if (*v >= completions) {
        return absl::InvalidArgumentError(fmt::format("too large index: \"{}\"", limits[i]));
      }
      bounds[i] = *v;
    }
    if (limits.size() == 1) bounds[1] = bounds[0];
    if (limits.size() == 2 && bounds[0] >= bounds[1]) {
      return absl::InvalidArgumentError(fmt::format(
          "non-increasing order, previous: {}, current: {}", bounds[0], bounds[1]));
    }
    if (last && *last >= bounds[0]) {
      return absl::InvalidArgumentError(
          fmt::format("non-increasing order, previous: {}, current: {}", *last, bounds[0]));
    }
    for (int64_t i = std::max<int64_t>(bounds[0], 0); i <= bounds[1]; ++i) {
      out.insert(static_cast<int32_t>(i));
    }
    last = bounds[1];
  }
  return out;
}

std::string FormatIndexes(const std::set<int32_t>& indexes) {
  std::string out;
  auto it = indexes.begin();
  while (it != indexes.end()) {
    const int32_t first = *it;
    int32_t last = first;
    auto next = std::next(it);
    while (next != indexes.end() && *next == last + 1) {
      last = *next;
      ++next;
    }
    if (!out.empty()) out += ",";
    if (last - first >= 2) {
      out += fmt::format("{}-{}", first, last);
    } else {
      out += std::to_string(first);
      if (last != first) out += fmt::format(",{}", last);
    }
    it = next;
  }
  return out;
}

}  // namespace muster::api
