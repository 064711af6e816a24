#include "node/json_access.h"

#include <ctime>

#include "fmt/format.h"

namespace muster::node {

namespace {

std::tm UtcTm(std::chrono::system_clock::time_point t) {
  std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  ::gmtime_r(&secs, &tm);
  return tm;
}

}  // namespace

std::string FormatTime(std::chrono::system_clock::time_point t) {
  std::tm tm = UtcTm(t);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

std::string FormatMicroTime(std::chrono::system_clock::time_point t) {
  std::tm tm = UtcTm(t);
  auto micros = std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count() %
                1000000;
  if (micros < 0) micros += 1000000;
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, micros);
}

std::optional<std::chrono::system_clock::time_point> ParseTime(std::string_view text) {
  int year, month, day, hour, minute, second;
  int consumed = 0;
  std::string s(text);
  if (std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &year, &month, &day, &hour, &minute,
                  &second, &consumed) != 6 ||
      consumed != 19) {
    return std::nullopt;
  }
  std::string_view rest = text.substr(19);
  int64_t micros = 0;
  if (!rest.empty() && rest.front() == '.') {
    rest.remove_prefix(1);
    int digits = 0;
    while (!rest.empty() && rest.front() >= '0' && rest.front() <= '9') {
      if (digits < 6) micros = micros * 10 + (rest.front() - '0');
      ++digits;
      rest.remove_prefix(1);
    }
    if (digits == 0) return std::nullopt;
    for (int d = digits; d < 6; ++d) micros *= 10;
  }
  int offset_minutes = 0;
  if (rest == "Z" || rest == "z") {
  } else if (rest.size() == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':') {
    int oh = 0, om = 0;
    if (std::sscanf(std::string(rest.substr(1)).c_str(), "%2d:%2d", &oh, &om) != 2) {
      return std::nullopt;
    }
    offset_minutes = (rest[0] == '+' ? 1 : -1) * (oh * 60 + om);
  } else {
    return std::nullopt;
  }
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  std::time_t secs = ::timegm(&tm);
  if (secs == static_cast<std::time_t>(-1) && year != 1969) return std::nullopt;
  return std::chrono::system_clock::from_time_t(secs) - std::chrono::minutes(offset_minutes) +
         std::chrono::microseconds(micros);
}

}  // namespace muster::node
