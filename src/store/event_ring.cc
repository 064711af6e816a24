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
  ~RingWatch() override { ring_->Close(cursor_); }  // unlists a ready callback

  absl::StatusOr<std::optional<Event>> Next(std::chrono::milliseconds timeout) override {
    return ring_->Next(cursor_, timeout);
  }
  void Close() override { ring_->Close(cursor_); }
  void SetReadyCallback(std::function<void()> ready) override {
    ring_->SetReady(cursor_, std::move(ready));
  }

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
  std::vector<ReadyCallback> to_call;
  {
    std::lock_guard lock(mu_);
    ++appends_;
    for (Event& event : events) {
      assert(event.revision == head_ + 1);
      if (auto it = wake_.find(event.key.resource); it != wake_.end()) {
        if (std::find(to_wake.begin(), to_wake.end(), it->second.get()) == to_wake.end()) {
          to_wake.push_back(it->second.get());
        }
      }
      if (auto it = ready_.find(event.key.resource); it != ready_.end()) {
        for (Cursor* cursor : it->second) {
          if (cursor->called_at == appends_) continue;  // once per append
          if (!cursor->ns.empty() && cursor->ns != event.key.ns) continue;
          cursor->called_at = appends_;
          to_call.push_back(cursor->ready);
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
  for (const ReadyCallback& ready : to_call) (*ready)();
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
  std::vector<ReadyCallback> to_call;
  {
    std::lock_guard lock(mu_);
    shutdown_ = true;
    for (auto& [resource, wake] : wake_) wake->notify_all();
    for (auto& [resource, cursors] : ready_) {
      for (Cursor* cursor : cursors) to_call.push_back(cursor->ready);
    }
  }
  for (const ReadyCallback& ready : to_call) (*ready)();
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
  ReadyCallback last;
  {
    std::lock_guard lock(mu_);
    if (!cursor.closed) last = UnlistLocked(cursor);
    cursor.closed = true;
    cursor.wake->notify_all();
  }
  if (last) (*last)();
}

void EventRing::SetReady(Cursor& cursor, std::function<void()> ready) {
  ReadyCallback old;  // destroyed outside mu_
  std::lock_guard lock(mu_);
  if (cursor.closed) return;
  old = UnlistLocked(cursor);
  if (!ready) return;
  cursor.ready = std::make_shared<const std::function<void()>>(std::move(ready));
  ready_[cursor.resource].push_back(&cursor);
}

EventRing::ReadyCallback EventRing::UnlistLocked(Cursor& cursor) {
  if (!cursor.ready) return nullptr;
  auto it = ready_.find(cursor.resource);
  if (it != ready_.end()) {
    std::vector<Cursor*>& cursors = it->second;
    auto at = std::find(cursors.begin(), cursors.end(), &cursor);
    if (at != cursors.end()) {
      *at = cursors.back();
      cursors.pop_back();
    }
  }
  return std::exchange(cursor.ready, nullptr);
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
