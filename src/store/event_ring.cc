#include "store/event_ring.h"

#include <algorithm>
#include <cassert>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "fmt/format.h"

namespace muster::store {

class RingWatch final : public Watch {
 public:
  RingWatch(std::shared_ptr<EventRing> ring, EventRing::Cursor cursor)
      : ring_(std::move(ring)), cursor_(std::move(cursor)) {}

  absl::StatusOr<std::optional<Event>> Next(std::chrono::milliseconds timeout) override {
    return ring_->Next(cursor_, timeout);
  }
  void Close() override { ring_->Close(cursor_); }

 private:
  const std::shared_ptr<EventRing> ring_;
  EventRing::Cursor cursor_;  // guarded by ring_->mu_
};

namespace {

absl::Status TooOld(int64_t after, int64_t oldest_after) {
  return absl::OutOfRangeError(
      fmt::format("too old resource version: {} ({})", after, oldest_after));
}

// How many of the newest events keep their parsed states.
constexpr int64_t kParsedWindow = 2048;

}  // namespace

EventRing::EventRing(size_t capacity, int64_t start_revision)
    : capacity_(std::max<size_t>(capacity, 1)), base_(start_revision + 1), head_(start_revision) {}

void EventRing::Append(std::vector<Event> events) {
  absl::InlinedVector<std::condition_variable*, 2> to_wake;
  {
    std::lock_guard lock(mu_);
    for (Event& event : events) {
      assert(event.revision == head_ + 1);
      if (auto it = wake_.find(event.key.resource); it != wake_.end()) {
        if (std::find(to_wake.begin(), to_wake.end(), it->second.get()) == to_wake.end()) {
          to_wake.push_back(it->second.get());
        }
      }
      head_ = event.revision;
      // Parsed states are kept for the newest events only (watchers that keep up read those);
      // older slots keep their text, so a long history does not hold every state parsed.
      // (The slots hold revisions head_ - size .. head_ - 1 until this event is stored.)
      const int64_t stale = event.revision - kParsedWindow;
      if (stale >= base_ && stale >= head_ - static_cast<int64_t>(slots_.size())) {
        Event& old = slots_[static_cast<size_t>(stale - base_) % capacity_];
        old.parsed.reset();
        old.previous_parsed.reset();
      }
      if (slots_.size() < capacity_) {
        slots_.push_back(std::move(event));
        continue;
      }
      Event& slot = slots_[static_cast<size_t>(event.revision - base_) % capacity_];
      int64_t& newest = newest_evicted_[slot.key.resource];
      newest = std::max(newest, slot.revision);
      slot = std::move(event);
    }
  }
  for (std::condition_variable* wake : to_wake) wake->notify_all();
}

int64_t EventRing::Head() const {
  std::lock_guard lock(mu_);
  return head_;
}

absl::StatusOr<std::unique_ptr<Watch>> EventRing::WatchFrom(const std::shared_ptr<EventRing>& ring,
                                                            const std::string& resource,
                                                            const std::string& ns, int64_t after) {
  if (resource.empty()) return absl::InvalidArgumentError("watch: resource must not be empty");
  if (after < 0) {
    return absl::InvalidArgumentError(fmt::format("watch: invalid resource version {}", after));
  }
  Cursor cursor{.resource = resource, .ns = ns};
  {
    std::lock_guard lock(ring->mu_);
    cursor.next = after == 0 ? ring->head_ + 1 : after + 1;
    const int64_t oldest = ring->OldestLocked();
    if (cursor.next < oldest && ring->EvictedSinceLocked(resource, cursor.next)) {
      return TooOld(after, oldest - 1);
    }
    cursor.wake = ring->WakeLocked(resource);
  }
  return std::make_unique<RingWatch>(ring, std::move(cursor));
}

void EventRing::Shutdown() {
  std::lock_guard lock(mu_);
  shutdown_ = true;
  for (auto& [resource, wake] : wake_) wake->notify_all();
}

absl::StatusOr<std::optional<Event>> EventRing::Next(Cursor& cursor,
                                                     std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::unique_lock lock(mu_);
  bool timed_out = false;
  while (true) {
    if (cursor.closed || shutdown_) return std::nullopt;
    const int64_t oldest = OldestLocked();
    if (cursor.next < oldest) {
      if (EvictedSinceLocked(cursor.resource, cursor.next)) {
        return TooOld(cursor.next - 1, oldest - 1);
      }
      cursor.next = oldest;  // only other resources' events were lost
    }
    while (cursor.next <= head_) {
      const Event& event = slots_[static_cast<size_t>(cursor.next - base_) % capacity_];
      ++cursor.next;
      if (event.key.resource == cursor.resource &&
          (cursor.ns.empty() || event.key.ns == cursor.ns)) {
        return event;
      }
    }
    if (timed_out) return std::nullopt;
    timed_out = cursor.wake->wait_until(lock, deadline) == std::cv_status::timeout;
  }
}

void EventRing::Close(Cursor& cursor) {
  std::lock_guard lock(mu_);
  cursor.closed = true;
  cursor.wake->notify_all();
}

bool EventRing::EvictedSinceLocked(const std::string& resource, int64_t from) const {
  int64_t newest = base_ - 1;  // everything up to the start revision is unknown
  if (auto it = newest_evicted_.find(resource); it != newest_evicted_.end()) {
    newest = std::max(newest, it->second);
  }
  return newest >= from;
}

std::condition_variable* EventRing::WakeLocked(const std::string& resource) {
  auto& wake = wake_[resource];
  if (wake == nullptr) wake = std::make_unique<std::condition_variable>();
  return wake.get();
}

}  // namespace muster::store
