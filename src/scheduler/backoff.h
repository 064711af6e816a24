#pragma once

// Backoff of unschedulable gangs. A gang that a cycle tried and could not place is held back
// from the next cycles for an exponentially growing time (initial, 2x initial, ... capped at
// max), as kube-scheduler backs off unschedulable pods; Volcano retries every gang every
// session. A change that could help ends the wait: a change to the gang itself (Reset) or one
// that frees or adds capacity anywhere (ResetAll).
//
// Time is passed in, so that tests need no clock. Thread-safety: none (the scheduler's loop
// owns it).

#include <chrono>
#include <cstddef>
#include <string>
#include <unordered_map>

namespace muster::scheduler {

class GangBackoff {
 public:
  using Clock = std::chrono::steady_clock;

  GangBackoff(std::chrono::milliseconds initial, std::chrono::milliseconds max)
      : initial_(initial), max_(max) {}

  // The gang was tried at `now` and nothing of it was placed: wait longer than last time.
  void Failed(const std::string& job, Clock::time_point now);
  // The gang made progress (or left): forget its history.
  void Succeeded(const std::string& job) { entries_.erase(job); }
  void Reset(const std::string& job) { entries_.erase(job); }
  void ResetAll() { entries_.clear(); }

  // True while the gang waits out its backoff.
  bool HeldBack(const std::string& job, Clock::time_point now) const;
  // The current wait of the gang (zero when it has none), for diagnostics and tests.
  std::chrono::milliseconds Delay(const std::string& job) const;
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    int failures = 0;
    std::chrono::milliseconds delay{0};
    Clock::time_point until;
  };
  std::chrono::milliseconds initial_;
  std::chrono::milliseconds max_;
  std::unordered_map<std::string, Entry> entries_;
};

}  // namespace muster::scheduler
