#include "client/event_recorder.h"

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <utility>
#include <vector>

#include "common/thread.h"

namespace muster::client {

namespace {

// The most Events written in one call.
constexpr size_t kMaxBatch = 256;

}  // namespace

absl::Status EventRecorder::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (thread_.joinable()) return absl::OkStatus();
  absl::Status started = common::StartThread(thread_, "the event recorder", [this] { Run(); });
  // Until a thread writes them, events are dropped (counted) rather than queued for nobody.
  stopping_ = !started.ok();
  return started;
}

void EventRecorder::Record(EventRecord event) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || queue_.size() >= limit_) {
      ++dropped_;
      return;
    }
    queue_.push_back(std::move(event));
  }
  cv_.notify_one();
}

void EventRecorder::Stop(std::chrono::milliseconds drain) {
  std::thread thread;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!thread_.joinable()) return;
    stopping_ = true;
    drain_deadline_ = std::chrono::steady_clock::now() + drain;
    thread = std::move(thread_);
  }
  cv_.notify_one();
  thread.join();
  std::lock_guard<std::mutex> lock(mu_);
  dropped_ += queue_.size();
  queue_.clear();
}

void EventRecorder::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty() || (stopping_ && std::chrono::steady_clock::now() >= drain_deadline_)) {
      if (stopping_) return;
      continue;
    }
    // Bounded, so that one commit does not hold up other writers (a gang's binds) for long.
    const auto end =
        queue_.begin() + static_cast<std::ptrdiff_t>(std::min(queue_.size(), kMaxBatch));
    std::vector<EventRecord> batch(std::make_move_iterator(queue_.begin()),
                                   std::make_move_iterator(end));
    queue_.erase(queue_.begin(), end);
    lock.unlock();
    absl::StatusOr<std::vector<absl::Status>> written = client_.RecordEvents(batch);
    if (!written.ok()) {
      failed_ += batch.size();
    } else {
      for (const absl::Status& st : *written) ++(st.ok() ? written_ : failed_);
    }
    lock.lock();
  }
}

}  // namespace muster::client
