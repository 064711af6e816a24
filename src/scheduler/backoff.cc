#include "scheduler/backoff.h"

#include <algorithm>

namespace muster::scheduler {

void GangBackoff::Failed(const std::string& job, Clock::time_point now) {
  Entry& e = entries_[job];
  ++e.failures;
  e.delay = e.failures == 1 ? initial_ : std::min(max_, e.delay * 2);
  e.delay = std::min(e.delay, max_);
  e.until = now + e.delay;
}

bool GangBackoff::HeldBack(const std::string& job, Clock::time_point now) const {
  auto it = entries_.find(job);
  return it != entries_.end() && now < it->second.until;
}

std::chrono::milliseconds GangBackoff::Delay(const std::string& job) const {
  auto it = entries_.find(job);
  return it == entries_.end() ? std::chrono::milliseconds(0) : it->second.delay;
}

}  // namespace muster::scheduler
