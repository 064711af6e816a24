// robfig/cron v3 (parser.go ParseStandard, spec.go SpecSchedule.Next, constantdelay.go), read
// for its grammar and messages; the search for the next time walks civil time in the zone.

#include "api/cron_schedule.h"

#include <charconv>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/time/civil_time.h"
#include "common/go_duration.h"
#include "fmt/format.h"

namespace muster::api {
namespace {

constexpr uint64_t kStar = uint64_t{1} << 63;

struct Bounds {
  int min;
  int max;
  const char* const* names;  // lower-case names from `min` on, or nullptr
};

constexpr const char* kMonthNames[] = {"jan", "feb", "mar", "apr", "may", "jun",
                                       "jul", "aug", "sep", "oct", "nov", "dec", nullptr};
constexpr const char* kDowNames[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat", nullptr};

constexpr Bounds kMinutes{0, 59, nullptr};
constexpr Bounds kHours{0, 23, nullptr};
constexpr Bounds kDom{1, 31, nullptr};
constexpr Bounds kMonths{1, 12, kMonthNames};
constexpr Bounds kDow{0, 6, kDowNames};

// strings.Split (absl's string_view is not std's in every Abseil build, so none of its splitters).
std::vector<std::string_view> SplitCron(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (;;) {
    const size_t at = text.find(sep, start);
    parts.push_back(text.substr(start, at == std::string_view::npos ? at : at - start));
    if (at == std::string_view::npos) return parts;
    start = at + 1;
  }
}

bool IsCronSpace(char ch) { return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r'; }

std::string_view TrimCron(std::string_view text) {
  while (!text.empty() && IsCronSpace(text.front())) text.remove_prefix(1);
  while (!text.empty() && IsCronSpace(text.back())) text.remove_suffix(1);
  return text;
}

// Go's %s of a []string: "[a b c]".
std::string GoStrings(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i > 0 ? " " : "") + items[i];
  return out + "]";
}

// strconv.Atoi's error, as mustParseInt wraps it.
absl::StatusOr<int> ParseCronInt(std::string_view text) {
  int value = 0;
  std::string_view digits = text;
  if (!digits.empty() && (digits.front() == '+' || digits.front() == '-')) digits.remove_prefix(1);
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  const bool whole = !digits.empty() && ptr == digits.data() + digits.size();
  if (ec == std::errc::result_out_of_range && whole) {
    return absl::InvalidArgumentError(fmt::format(
        "failed to parse int from {}: strconv.Atoi: parsing \"{}\": value out of range", text,
        text));
  }
  if (ec != std::errc() || !whole) {
    return absl::InvalidArgumentError(fmt::format(
        "failed to parse int from {}: strconv.Atoi: parsing \"{}\": invalid syntax", text, text));
  }
  if (text.front() == '-') value = -value;
  if (value < 0) {
    return absl::InvalidArgumentError(
        fmt::format("negative number ({}) not allowed: {}", value, text));
  }
  return value;
}

absl::StatusOr<int> ParseIntOrName(std::string_view text, const Bounds& bounds) {
  if (bounds.names != nullptr) {
    std::string lower(text);
    for (char& ch : lower) ch = absl::ascii_tolower(static_cast<unsigned char>(ch));
    for (int i = 0; bounds.names[i] != nullptr; ++i) {
      if (lower == bounds.names[i]) return bounds.min + i;
    }
  }
  return ParseCronInt(text);
}

// getRange: "*", "?", "a", "a-b", each optionally "/step".
absl::StatusOr<uint64_t> ParseRange(std::string_view expr, const Bounds& r) {
  std::vector<std::string_view> range_and_step = SplitCron(expr, '/');
  std::vector<std::string_view> low_and_high = SplitCron(range_and_step[0], '-');
  const bool single = low_and_high.size() == 1;
  int start = 0;
  int end = 0;
  uint64_t extra = 0;
  if (low_and_high[0] == "*" || low_and_high[0] == "?") {
    start = r.min;
    end = r.max;
    extra = kStar;
  } else {
    absl::StatusOr<int> low = ParseIntOrName(low_and_high[0], r);
    if (!low.ok()) return low.status();
    start = *low;
    if (low_and_high.size() == 1) {
      end = start;
    } else if (low_and_high.size() == 2) {
      absl::StatusOr<int> high = ParseIntOrName(low_and_high[1], r);
      if (!high.ok()) return high.status();
      end = *high;
    } else {
      return absl::InvalidArgumentError(fmt::format("too many hyphens: {}", expr));
    }
  }
  int step = 1;
  if (range_and_step.size() == 2) {
    absl::StatusOr<int> parsed = ParseCronInt(range_and_step[1]);
    if (!parsed.ok()) return parsed.status();
    step = *parsed;
    // "N/step" means "N-max/step".
    if (single) end = r.max;
    if (step > 1) extra = 0;
  } else if (range_and_step.size() > 2) {
    return absl::InvalidArgumentError(fmt::format("too many slashes: {}", expr));
  }
  if (start < r.min) {
    return absl::InvalidArgumentError(
        fmt::format("beginning of range ({}) below minimum ({}): {}", start, r.min, expr));
  }
  if (end > r.max) {
    return absl::InvalidArgumentError(
        fmt::format("end of range ({}) above maximum ({}): {}", end, r.max, expr));
  }
  if (start > end) {
    return absl::InvalidArgumentError(
        fmt::format("beginning of range ({}) beyond end of range ({}): {}", start, end, expr));
  }
  if (step == 0) {
    return absl::InvalidArgumentError(
        fmt::format("step of range should be a positive number: {}", expr));
  }
  uint64_t bits = extra;
  for (int i = start; i <= end; i += step) bits |= uint64_t{1} << i;
  return bits;
}

absl::StatusOr<uint64_t> ParseField(std::string_view field, const Bounds& r) {
  uint64_t bits = 0;
  for (std::string_view expr : SplitCron(field, ',')) {
    absl::StatusOr<uint64_t> range = ParseRange(expr, r);
    if (!range.ok()) return range.status();
    bits |= *range;
  }
  return bits;
}

bool HasBit(uint64_t bits, int value) { return (bits & (uint64_t{1} << value)) != 0; }

}  // namespace

absl::StatusOr<CronSchedule> CronSchedule::Parse(std::string_view spec) {
  if (spec.empty()) return absl::InvalidArgumentError("empty spec string");
  CronSchedule s;
  // Go's strings.Fields separators are Unicode spaces; cron specs are ASCII.
  spec = TrimCron(spec);
  for (std::string_view prefix : {"TZ=", "CRON_TZ="}) {
    if (!spec.starts_with(prefix)) continue;
    const size_t space = spec.find(' ');
    const std::string_view name = spec.substr(prefix.size(), space - prefix.size());
    absl::StatusOr<absl::TimeZone> zone = LoadCronTimeZone(name);
    if (!zone.ok()) {
      return absl::InvalidArgumentError(
          fmt::format("provided bad location {}: {}", name, std::string(zone.status().message())));
    }
    s.zone_ = *zone;
    spec = space == std::string_view::npos ? std::string_view{} : TrimCron(spec.substr(space));
  }
  if (spec.starts_with("@")) {
    static constexpr std::pair<std::string_view, std::string_view> kDescriptors[] = {
        {"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
        {"@weekly", "0 0 * * 0"}, {"@daily", "0 0 * * *"},    {"@midnight", "0 0 * * *"},
        {"@hourly", "0 * * * *"}};
    for (const auto& [name, fields] : kDescriptors) {
      if (spec != name) continue;
      absl::StatusOr<CronSchedule> parsed = Parse(fields);
      if (parsed.ok()) parsed->zone_ = s.zone_;
      return parsed;
    }
    constexpr std::string_view kEvery = "@every ";
    if (spec.starts_with(kEvery)) {
      absl::StatusOr<double> seconds = common::ParseGoDurationSeconds(spec.substr(kEvery.size()));
      if (!seconds.ok()) {
        return absl::InvalidArgumentError(
            fmt::format("failed to parse duration {}: {}", spec, std::string(seconds.status().message())));
      }
      // Every: at least a second, sub-second parts dropped.
      s.every_ = absl::Seconds(std::max(1.0, std::floor(*seconds)));
      return s;
    }
    return absl::InvalidArgumentError(fmt::format("unrecognized descriptor: {}", spec));
  }
  std::vector<std::string> fields;
  for (std::string_view field : SplitCron(spec, ' ')) {
    field = TrimCron(field);
    if (!field.empty()) fields.emplace_back(field);
  }
  if (fields.size() != 5) {
    return absl::InvalidArgumentError(fmt::format("expected exactly 5 fields, found {}: {}",
                                                  fields.size(), GoStrings(fields)));
  }
  const Bounds* bounds[] = {&kMinutes, &kHours, &kDom, &kMonths, &kDow};
  uint64_t* targets[] = {&s.minute_, &s.hour_, &s.dom_, &s.month_, &s.dow_};
  for (size_t i = 0; i < 5; ++i) {
    absl::StatusOr<uint64_t> bits = ParseField(fields[i], *bounds[i]);
    if (!bits.ok()) return bits.status();
    *targets[i] = *bits;
  }
  return s;
}

std::optional<absl::Time> CronSchedule::Next(absl::Time after, const absl::TimeZone& zone) const {
  if (every_) {
    // ConstantDelaySchedule: the next whole second `every` after.
    const absl::Time next = after + *every_;
    return absl::FromUnixSeconds(absl::ToUnixSeconds(next));
  }
  const absl::TimeZone& tz = zone_ ? *zone_ : zone;
  const absl::CivilSecond start = absl::ToCivilSecond(after, tz);
  absl::CivilMinute t = absl::CivilMinute(start) + 1;
  const absl::CivilYear limit = absl::CivilYear(start) + 5;
  auto day_matches = [this](absl::CivilDay day) {
    const int weekday = (static_cast<int>(absl::GetWeekday(day)) + 1) % 7;  // Sunday = 0
    const bool dom = HasBit(dom_, day.day());
    const bool dow = HasBit(dow_, weekday);
    if ((dom_ & kStar) != 0 || (dow_ & kStar) != 0) return dom && dow;
    return dom || dow;
  };
  while (absl::CivilYear(t) <= limit) {
    if (!HasBit(month_, t.month())) {
      t = absl::CivilMinute(absl::CivilMonth(t) + 1);
      continue;
    }
    if (!day_matches(absl::CivilDay(t))) {
      t = absl::CivilMinute(absl::CivilDay(t) + 1);
      continue;
    }
    if (!HasBit(hour_, t.hour())) {
      t = absl::CivilMinute(absl::CivilHour(t) + 1);
      continue;
    }
    if (!HasBit(minute_, t.minute())) {
      t += 1;
      continue;
    }
    // A civil time a DST change skips is read with the offset before the change (02:30 EST on
    // the day clocks jump to 03:00 EDT is 03:30 EDT), as Go's time.Date normalises it; one it
    // repeats is its first instant. Either way never at or before `after`.
    const absl::Time found = tz.At(absl::CivilSecond(t)).pre;
    if (found > after) return found;
    t += 1;
  }
  return std::nullopt;
}

absl::StatusOr<absl::TimeZone> LoadCronTimeZone(std::string_view name) {
  if (name.empty() || name == "UTC") return absl::UTCTimeZone();
  absl::TimeZone zone;
  // "localtime" is absl's name for the process's zone; Go has no such name.
  if (name != "localtime" && absl::LoadTimeZone(std::string(name), &zone)) return zone;
  return absl::InvalidArgumentError(fmt::format("unknown time zone {}", name));
}

}  // namespace muster::api
