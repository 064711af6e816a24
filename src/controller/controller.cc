// StartInformers (controller.h).

#include "controller/controller.h"

#include <algorithm>

#include "fmt/format.h"

namespace muster::controller {

absl::Status StartInformers(std::string_view who,
                            std::initializer_list<client::Informer*> informers,
                            std::chrono::steady_clock::time_point deadline,
                            std::chrono::milliseconds sync_timeout) {
  for (client::Informer* informer : informers) {
    if (absl::Status started = informer->Start(); !started.ok()) return started;
  }
  for (client::Informer* informer : informers) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::max(deadline - std::chrono::steady_clock::now(),
                 std::chrono::steady_clock::duration::zero()));
    if (!informer->WaitForSync(left)) {
      return absl::DeadlineExceededError(fmt::format("{}: the {} watch did not sync within {} ms",
                                                     who, informer->resource().plural,
                                                     sync_timeout.count()));
    }
  }
  return absl::OkStatus();
}

}  // namespace muster::controller
