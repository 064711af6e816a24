#include "common/go_duration.h"

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "fmt/format.h"

namespace muster::common {
namespace {

// Go's fmtFrac: the fraction of v / 10^precision, without trailing zeros (nor a '.' when 0),
// written before `end` in `buf`; returns the new start and v / 10^precision.
size_t FormatFraction(char* buf, size_t end, uint64_t& v, int precision) {
  bool print = false;
  for (int i = 0; i < precision; ++i) {
    const auto digit = static_cast<char>(v % 10);
    print = print || digit != 0;
    if (print) buf[--end] = static_cast<char>('0' + digit);
    v /= 10;
  }
  if (print) buf[--end] = '.';
  return end;
}

size_t FormatInt(char* buf, size_t end, uint64_t v) {
  if (v == 0) {
    buf[--end] = '0';
    return end;
  }
  while (v > 0) {
    buf[--end] = static_cast<char>('0' + v % 10);
    v /= 10;
  }
  return end;
}

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
    for (; i < rest.size() && absl::ascii_isdigit(rest[i]); ++i) {
      value = value * 10 + (rest[i] - '0');
    }
    bool has_digits = i > 0;
    if (i < rest.size() && rest[i] == '.') {
      ++i;
      double scale = 0.1;
      for (; i < rest.size() && absl::ascii_isdigit(rest[i]); ++i, scale /= 10) {
        value += (rest[i] - '0') * scale;
        has_digits = true;
      }
    }
    if (!has_digits) return malformed("expected a number");
    rest.remove_prefix(i);
    size_t unit_end = 0;
    while (unit_end < rest.size() && rest[unit_end] != '.' &&
           !absl::ascii_isdigit(rest[unit_end])) {
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

std::string FormatGoDuration(int64_t nanoseconds) {
  // time.Duration.String, digit for digit (go/src/time/time.go).
  char buf[32];
  size_t w = sizeof(buf);
  const bool negative = nanoseconds < 0;
  uint64_t u = negative ? -static_cast<uint64_t>(nanoseconds) : static_cast<uint64_t>(nanoseconds);
  if (u < 1000000000) {
    // Less than a second: a smaller unit, like 1.2ms.
    int precision = 0;
    buf[--w] = 's';
    if (u == 0) return "0s";
    if (u < 1000) {
      buf[--w] = 'n';
    } else if (u < 1000000) {
      precision = 3;
      buf[--w] = '\xb5';  // U+00B5 MICRO SIGN in UTF-8
      buf[--w] = '\xc2';
    } else {
      precision = 6;
      buf[--w] = 'm';
    }
    w = FormatFraction(buf, w, u, precision);
    w = FormatInt(buf, w, u);
  } else {
    buf[--w] = 's';
    w = FormatFraction(buf, w, u, 9);
    w = FormatInt(buf, w, u % 60);
    u /= 60;
    if (u > 0) {
      buf[--w] = 'm';
      w = FormatInt(buf, w, u % 60);
      u /= 60;
      if (u > 0) {
        buf[--w] = 'h';
        w = FormatInt(buf, w, u);
      }
    }
  }
  if (negative) buf[--w] = '-';
  return std::string(buf + w, sizeof(buf) - w);
}

}  // namespace muster::common
