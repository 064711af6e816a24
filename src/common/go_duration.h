#pragma once

// Durations as Go reads and prints them (time.ParseDuration, time.Duration.String), for what Volcano and its users write that way:
// the scheduler conf's duration arguments, duration-valued annotations and the scheduler's
// duration flags.

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace muster::common {

// Go's time.ParseDuration grammar ("300ms", "-1.5h", "2h45m", "0"; units ns us µs ms s m h) in
// seconds. Also used for duration-valued annotations such as a job's sla-waiting-time.
absl::StatusOr<double> ParseGoDurationSeconds(std::string_view text);

// Go's time.Duration.String, digit for digit: "0s", "1.5s", "2m3s", "1h0m0.25s", "150ms", "1.1µs"
// (U+00B5). How kube prints a metav1.Duration (protobuf.cc) and Volcano a job's age.
std::string FormatGoDuration(int64_t nanoseconds);

}  // namespace muster::common
