#pragma once

// Starting a thread that the system may refuse. std::thread's constructor throws
// std::system_error when no thread can be created (RLIMIT_NPROC, the PID limit, address space for
// its stack); uncaught, on a component's own thread or at start, that ends the process with
// std::terminate and under `muster up` takes the whole cluster down. Every long-lived thread of
// muster starts through StartThread, and its caller reports the error (a component that cannot
// start says so and exits 1; one that is running keeps running with what it has).

#include <functional>
#include <string_view>
#include <thread>

#include "absl/status/status.h"

namespace muster::common {

// Starts `body` on a new thread, stored in `thread` (which must not be joinable). When the system
// cannot create it: ResourceExhausted "cannot start a thread for <what>: <reason>", `thread`
// untouched and `body` never called.
absl::Status StartThread(std::thread& thread, std::string_view what, std::function<void()> body);

}  // namespace muster::common
