#pragma once

// Records Kubernetes Events off the caller's path, as client-go's event broadcaster does: a
// bounded queue drained by one thread; when the queue is full, new events are dropped and
// counted rather than slowing the caller (client-go drops them too). What has queued up while
// the previous write ran is written together (Client::RecordEvents: one store commit in
// process), so a burst of Events costs a few commits, not one each.
//
// Thread-safety: Record and the counters may be called from any thread.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>

#include "client/client.h"

namespace muster::client {

class EventRecorder {
 public:
  EventRecorder(Client& client, size_t limit) : client_(client), limit_(limit) {}
  ~EventRecorder() { Stop(); }
  EventRecorder(const EventRecorder&) = delete;
  EventRecorder& operator=(const EventRecorder&) = delete;

  // ResourceExhausted when no thread can be made; Record then drops what it is given.
  absl::Status Start();
  // Queues the event; drops it when `limit` events are already waiting.
  void Record(EventRecord event);
  // Writes what is queued (for at most `drain`), then stops the thread. Idempotent.
  void Stop(std::chrono::milliseconds drain = std::chrono::milliseconds(5000));

  uint64_t written() const { return written_.load(); }
  uint64_t dropped() const { return dropped_.load(); }
  uint64_t failed() const { return failed_.load(); }

 private:
  void Run();

  Client& client_;
  const size_t limit_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<EventRecord> queue_;
  bool stopping_ = false;
  std::chrono::steady_clock::time_point drain_deadline_;
  std::thread thread_;
  std::atomic<uint64_t> written_{0}, dropped_{0}, failed_{0};
};

}  // namespace muster::client
