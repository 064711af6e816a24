#include "api/time.h"

#include "api/text.h"
#include "fmt/format.h"

namespace muster::api {

namespace {

// Civil dates from and to days since 1970-01-01, proleptic Gregorian (Howard Hinnant's
// days_from_civil and civil_from_days): plain arithmetic, right for any year, where timegm and
// gmtime_r depend on the C library.
int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2 ? 1 : 0;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

struct CivilDate {
  int64_t year, month, day;
};

CivilDate CivilFromDays(int64_t days) {
  const int64_t z = days + 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  const int64_t day = doy - (153 * mp + 2) / 5 + 1;
  const int64_t month = mp < 10 ? mp + 3 : mp - 9;
  return {yoe + era * 400 + (month <= 2 ? 1 : 0), month, day};
}

// Floor division: the day of a negative time is the one before the epoch.
int64_t FloorDiv(int64_t a, int64_t b) { return a / b - (a % b != 0 && (a < 0) != (b < 0)); }

// "YYYY-MM-DDTHH:MM:SS" of `unix_seconds`, the part both formats share.
std::string DateTime(int64_t unix_seconds) {
  const int64_t days = FloorDiv(unix_seconds, 86400);
  const int64_t rem = unix_seconds - days * 86400;
  const CivilDate date = CivilFromDays(days);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}", date.year, date.month, date.day,
                     rem / 3600, rem / 60 % 60, rem % 60);
}

bool Digits(std::string_view s, size_t pos, size_t count, int64_t& out) {
  if (pos + count > s.size()) return false;
  out = 0;
  for (size_t i = pos; i < pos + count; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    out = out * 10 + (s[i] - '0');
  }
  return true;
}

struct Instant {
  int64_t seconds;  // since the epoch
  int64_t nanos;    // [0, 1e9)
};

std::optional<Instant> Parse(std::string_view ts) {
  int64_t year, month, day, hour, minute, second;
  if (ts.size() < 20 || !Digits(ts, 0, 4, year) || ts[4] != '-' || !Digits(ts, 5, 2, month) ||
      ts[7] != '-' || !Digits(ts, 8, 2, day) || (ts[10] != 'T' && ts[10] != 't') ||
      !Digits(ts, 11, 2, hour) || ts[13] != ':' || !Digits(ts, 14, 2, minute) || ts[16] != ':' ||
      !Digits(ts, 17, 2, second)) {
    return std::nullopt;
  }
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) {
    return std::nullopt;
  }
  size_t pos = 19;
  int64_t nanos = 0;
  if (ts[pos] == '.') {
    ++pos;
    int64_t scale = 100000000;
    const size_t start = pos;
    while (pos < ts.size() && ts[pos] >= '0' && ts[pos] <= '9') {
      nanos += (ts[pos] - '0') * scale;
      scale /= 10;
      ++pos;
    }
    if (pos == start) return std::nullopt;
  }
  int64_t offset = 0;
  if (pos < ts.size() && (ts[pos] == 'Z' || ts[pos] == 'z')) {
    ++pos;
  } else if (pos < ts.size() && (ts[pos] == '+' || ts[pos] == '-')) {
    int64_t oh, om;
    if (!Digits(ts, pos + 1, 2, oh) || pos + 3 >= ts.size() || ts[pos + 3] != ':' ||
        !Digits(ts, pos + 4, 2, om)) {
      return std::nullopt;
    }
    offset = (ts[pos] == '+' ? 1 : -1) * (oh * 3600 + om * 60);
    pos += 6;
  } else {
    return std::nullopt;
  }
  if (pos != ts.size()) return std::nullopt;
  return Instant{
      DaysFromCivil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second - offset,
      nanos};
}

}  // namespace

std::string FormatTime(std::chrono::system_clock::time_point t) {
  return FormatUnixTime(
      std::chrono::floor<std::chrono::seconds>(t.time_since_epoch()).count());
}

std::string FormatUnixTime(int64_t unix_seconds) { return DateTime(unix_seconds) + "Z"; }

std::string FormatMicroTime(std::chrono::system_clock::time_point t) {
  const auto micros = std::chrono::floor<std::chrono::microseconds>(t.time_since_epoch()).count();
  const int64_t seconds = FloorDiv(micros, 1000000);
  return fmt::format("{}.{:06}Z", DateTime(seconds), micros - seconds * 1000000);
}

std::optional<std::chrono::system_clock::time_point> ParseTime(std::string_view text) {
  const std::optional<Instant> instant = Parse(text);
  if (!instant) return std::nullopt;
  // system_clock counts nanoseconds in 64 bits here (years 1678-2261): a time outside does not
  // fit (converting it would overflow).
  using Duration = std::chrono::system_clock::duration;
  constexpr int64_t kLimit =
      std::chrono::duration_cast<std::chrono::seconds>(Duration::max()).count() - 1;
  if (instant->seconds > kLimit || instant->seconds < -kLimit) return std::nullopt;
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::seconds(instant->seconds) + std::chrono::nanoseconds(instant->nanos)));
}

std::optional<int64_t> ParseUnixTime(std::string_view text) {
  const std::optional<Instant> instant = Parse(text);
  if (!instant) return std::nullopt;
  return instant->seconds;
}

absl::StatusOr<int64_t> ParseGoRfc3339(std::string_view text) {
  constexpr std::string_view kLayout = "2006-01-02T15:04:05Z07:00";
  // newParseError's two forms: "cannot parse <rest> as <element>", or a message of its own.
  const auto cannot_parse = [&](std::string_view rest, std::string_view element) {
    return absl::InvalidArgumentError(fmt::format("parsing time {} as {}: cannot parse {} as {}",
                                                  GoQuote(text), GoQuote(kLayout), GoQuote(rest),
                                                  GoQuote(element)));
  };
  const auto failed = [&](std::string_view message) {
    return absl::InvalidArgumentError(fmt::format("parsing time {}{}", GoQuote(text), message));
  };
  const auto digit = [](std::string_view s, size_t i) {
    return i < s.size() && s[i] >= '0' && s[i] <= '9';
  };
  // getnum: one or two digits (exactly two when `fixed`).
  const auto number = [&](std::string_view& s, bool fixed, int64_t& out) {
    if (!digit(s, 0)) return false;
    if (!digit(s, 1)) {
      if (fixed) return false;
      out = s[0] - '0';
      s.remove_prefix(1);
      return true;
    }
    out = (s[0] - '0') * 10 + (s[1] - '0');
    s.remove_prefix(2);
    return true;
  };
  std::string_view v = text;
  int64_t year = 0;
  if (v.size() < 4 || !digit(v, 0) || !digit(v, 1) || !digit(v, 2) || !digit(v, 3)) {
    return cannot_parse(v, "2006");
  }
  year = (v[0] - '0') * 1000 + (v[1] - '0') * 100 + (v[2] - '0') * 10 + (v[3] - '0');
  v.remove_prefix(4);
  int64_t month = 0, day = 0, hour = 0, minute = 0, second = 0;
  struct Step {
    std::string_view prefix;
    std::string_view element;
    bool fixed;
    int64_t* out;
    int64_t limit;           // the value must be below it (0: checked after the walk)
    std::string_view range;  // what is out of range
  };
  const Step steps[] = {{"-", "01", true, &month, 13, "month"},
                        {"-", "02", true, &day, 0, ""},
                        {"T", "15", false, &hour, 24, "hour"},
                        {":", "04", true, &minute, 60, "minute"},
                        {":", "05", true, &second, 60, "second"}};
  for (const Step& step : steps) {
    if (!v.starts_with(step.prefix)) return cannot_parse(v, step.prefix);
    v.remove_prefix(step.prefix.size());
    const std::string_view hold = v;
    if (!number(v, step.fixed, *step.out)) return cannot_parse(hold, step.element);
    if (step.limit > 0 && (*step.out >= step.limit || (step.out == &month && month == 0))) {
      return failed(fmt::format(": {} out of range", step.range));
    }
  }
  // A fraction the layout does not name is taken all the same.
  if (v.size() >= 2 && (v[0] == '.' || v[0] == ',') && digit(v, 1)) {
    size_t n = 2;
    while (digit(v, n)) ++n;
    v.remove_prefix(n);
  }
  int64_t offset = 0;
  if (!v.empty() && v[0] == 'Z') {
    v.remove_prefix(1);
  } else {
    const std::string_view hold = v;
    if (v.size() < 6 || v[3] != ':') return cannot_parse(hold, "Z07:00");
    std::string_view hh = v.substr(1, 2), mm = v.substr(4, 2);
    int64_t oh = 0, om = 0;
    if (!number(hh, true, oh) || !number(mm, true, om)) return cannot_parse(hold, "Z07:00");
    if (oh > 24) return failed(": time zone offset hour out of range");
    if (om > 60) return failed(": time zone offset minute out of range");
    if (v[0] != '+' && v[0] != '-') return cannot_parse(hold, "Z07:00");
    offset = (v[0] == '+' ? 1 : -1) * (oh * 3600 + om * 60);
    v.remove_prefix(6);
  }
  if (!v.empty()) return failed(fmt::format(": extra text: {}", GoQuote(v)));
  const bool leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
  constexpr int64_t kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (day < 1 || day > kDays[month - 1] + (month == 2 && leap ? 1 : 0)) {
    return failed(": day out of range");
  }
  return DaysFromCivil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second - offset;
}

std::string FormatNanoTimeFixed(int64_t unix_nanos) {
  const int64_t seconds = FloorDiv(unix_nanos, 1000000000);
  return fmt::format("{}.{:09}Z", DateTime(seconds), unix_nanos - seconds * 1000000000);
}

}  // namespace muster::api
