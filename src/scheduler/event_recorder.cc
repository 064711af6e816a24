#include "scheduler/event_recorder.h"

#include <utility>

namespace muster::scheduler {

void EventRecorder::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] { Run(); });
}

void EventRecorder::Record(client::EventRecord event) {
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
    client::EventRecord event = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    absl::Status st = client_.RecordEvent(event);
    if (st.ok())
      ++written_;
    else
      ++failed_;
    lock.lock();
  }
}

}  // namespace muster::scheduler
