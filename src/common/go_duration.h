#pragma once

// Durations as Go reads them (time.ParseDuration), for what Volcano and its users write that way:
// the scheduler conf's duration arguments, duration-valued annotations and the scheduler's
// duration flags.

#include <string_view>

#include "absl/status/statusor.h"

namespace muster::common {

// Go's time.ParseDuration grammar ("300ms", "-1.5h", "2h45m", "0"; units ns us µs ms s m h) in
// seconds. Also used for duration-valued annotations such as a job's sla-waiting-time.
absl::StatusOr<double> ParseGoDurationSeconds(std::string_view text);

}  // namespace muster::common
