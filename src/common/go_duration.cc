#include "common/go_duration.h"

#include <string>

#include "absl/status/status.h"
#include "fmt/format.h"

namespace muster::common {
namespace {

// Returns the scale of one unit in seconds, or 0 for an unknown unit.
double GoDurationUnitSeconds(std::string_view unit) {
  if (unit == "ns") return 1e-9;
  if (unit == "us" || unit == "\u00b5s" || unit == "\u03bcs") return 1e-6;
  if (unit == "ms") return 1e-3;
  if (unit == "s") return 1;
  if (unit == "m") return 60;
  if (unit == "h") return 3600;
  return 0;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

absl::StatusOr<double> ParseGoDurationSeconds(std::string_view text) {
  auto malformed = [text](std::string_view why) {
    return absl::InvalidArgumentError(fmt::format(
        "\"{}\" is not a duration ({}); write it like \"90s\", \"3m\" or \"1h30m\"", text, why));
  };
  std::string_view rest = text;
  double sign = 1;
  if (!rest.empty() && (rest.front() == '-' || rest.front() == '+')) {
    if (rest.front() == '-') sign = -1;
    rest.remove_prefix(1);
  }
  if (rest == "0") return 0.0;
  if (rest.empty()) return malformed("no number");
  double total = 0;
  while (!rest.empty()) {
    double value = 0;
    size_t i = 0;
    for (; i < rest.size() && IsDigit(rest[i]); ++i) value = value * 10 + (rest[i] - '0');
    bool has_digits = i > 0;
    if (i < rest.size() && rest[i] == '.') {
      ++i;
      double scale = 0.1;
      for (; i < rest.size() && IsDigit(rest[i]); ++i, scale /= 10) {
        value += (rest[i] - '0') * scale;
        has_digits = true;
      }
    }
    if (!has_digits) return malformed("expected a number");
    rest.remove_prefix(i);
    size_t unit_end = 0;
    while (unit_end < rest.size() && rest[unit_end] != '.' && !IsDigit(rest[unit_end])) {
      ++unit_end;
    }
    if (unit_end == 0) return malformed("a number without a unit");
    const std::string_view unit = rest.substr(0, unit_end);
    const double unit_seconds = GoDurationUnitSeconds(unit);
    if (unit_seconds == 0) {
      return malformed(fmt::format("unknown unit \"{}\"; units are ns, us, ms, s, m, h", unit));
    }
    total += value * unit_seconds;
    rest.remove_prefix(unit_end);
  }
  return sign * total;
}

}  // namespace muster::common
