#pragma once

// The watch fan-out behind Store::WatchFrom, private to the store.
//
// Rationale: every write produces exactly one event and revisions are dense (each op of a commit
// has its own revision), so the history is a ring indexed by revision: the event with revision r
// sits in slot (r - base) % capacity. All watchers share that one ring; a watcher is a cursor (the
// next revision it will read) plus its filter, so an event costs the same memory whether one or a
// thousand watchers see it, and a commit costs one append plus one notify, not one push per
// watcher. Filtering happens in Next, on the watcher's own thread.
//
// Waking: watchers block on a condition variable per resource, so a write to "events" does not
// wake the thousand watchers of "pods". A watcher that sleeps through writes of other resources may
// find its cursor overtaken when it wakes; that only means it missed something if an event of its
// own resource was evicted past its cursor, which the ring tracks per resource (the revision of
// the newest evicted event of each resource). Events from before the store was opened are unknown,
// so they count as evicted for every resource.
//
// Event loops (a server serving many watches on a few threads) do not wait in Next: they set a
// ready callback, which an append calls for the watchers of its resources (outside the lock),
// and then read with Next(0).
//
// Thread-safety: all methods may be called from any thread; one mutex guards the ring.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "store/store.h"

namespace muster::store {

class EventRing {
 public:
  // `capacity` events are retained (at least 1). `start_revision` is the store's revision when it
  // was opened: the first appended event has revision start_revision + 1.
  EventRing(size_t capacity, int64_t start_revision);
  EventRing(const EventRing&) = delete;
  EventRing& operator=(const EventRing&) = delete;

  // Appends `events`, whose revisions must be Head()+1, Head()+2, ... in order, evicting the
  // oldest ones beyond capacity, then wakes the watchers of the resources involved.
  void Append(std::vector<Event> events);

  // The revision of the newest appended event (start_revision before any).
  int64_t Head() const;

  // A watcher of `resource` (in `ns` when not empty) that sees events with revision > `after`;
  // `after` == 0 means after Head(). OutOfRange ("too old resource version: N (M)", M being the
  // oldest `after` still served) when events of `resource` after `after` were already evicted.
  static absl::StatusOr<std::unique_ptr<Watch>> WatchFrom(const std::shared_ptr<EventRing>& ring,
                                                          const std::string& resource,
                                                          const std::string& ns, int64_t after);

  // Ends every watcher: Next returns nullopt from now on. Called when the store goes away (the
  // watchers keep the ring alive).
  void Shutdown();

 private:
  friend class RingWatch;

  using ReadyCallback = std::shared_ptr<const std::function<void()>>;

  // Per-watcher state, guarded by mu_.
  struct Cursor {
    std::string resource;
    std::string ns;
    std::condition_variable* wake = nullptr;  // owned by wake_, stable for the ring's lifetime
    int64_t next = 0;                         // the next revision to read
    bool closed = false;
    ReadyCallback ready = nullptr;  // set: listed in ready_ under `resource`
    uint64_t called_at = 0;  // the append that last called `ready`
  };

  absl::StatusOr<std::optional<Event>> Next(Cursor& cursor, std::chrono::milliseconds timeout);
  void Close(Cursor& cursor);
  void SetReady(Cursor& cursor, std::function<void()> ready);
  // Requires mu_. Drops the cursor from ready_ and returns its callback, to be called once more
  // (outside mu_) when `notify`.
  ReadyCallback UnlistLocked(Cursor& cursor);

  // Requires mu_. The oldest revision still in the ring (Head()+1 when empty).
  int64_t OldestLocked() const { return head_ - static_cast<int64_t>(slots_.size()) + 1; }
  // Requires mu_. Whether an event of `resource` with revision >= `from` was evicted (or predates
  // the ring).
  bool EvictedSinceLocked(const std::string& resource, int64_t from) const;
  // Requires mu_.
  std::condition_variable* WakeLocked(const std::string& resource);

  const size_t capacity_;
  const int64_t base_;  // revision of the first event ever appended

  mutable std::mutex mu_;
  std::vector<Event> slots_;  // grows to capacity_, then wraps
  int64_t head_;
  bool shutdown_ = false;
  uint64_t appends_ = 0;
  absl::flat_hash_map<std::string, int64_t> newest_evicted_;                         // by resource
  absl::flat_hash_map<std::string, std::unique_ptr<std::condition_variable>> wake_;  // by resource
  // Cursors with a ready callback, by resource: an append calls each of its resource's.
  absl::flat_hash_map<std::string, std::vector<Cursor*>> ready_;
};

}  // namespace muster::store
