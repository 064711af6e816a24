#include "common/thread.h"

#include <system_error>
#include <utility>

#include "fmt/format.h"

namespace muster::common {

absl::Status StartThread(std::thread& thread, std::string_view what, std::function<void()> body) {
  try {
    thread = std::thread(std::move(body));
  } catch (const std::system_error& e) {
    return absl::ResourceExhaustedError(fmt::format("cannot start a thread for {}: {}", what,
                                                    e.what()));
  }
  return absl::OkStatus();
}

}  // namespace muster::common
