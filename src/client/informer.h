#pragma once

// Informer: a list+watch cache of one resource, as client-go's shared informers keep them. It
// lists, then watches from the list's resourceVersion; when the watch ends it re-watches from the
// last version seen, and when the server answers 410 (expired) it relists and reports the
// difference as adds, updates and deletes, so handlers never miss a change.
//
// Handlers run on the informer's own thread, in event order, after the cache has been updated.
// Thread-safety: Get/List/Synced may be called from any thread.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "boost/json/object.hpp"
#include "client/client.h"

namespace muster::client {

struct InformerHandlers {
  std::function<void(const boost::json::object& object)> on_add;
  std::function<void(const boost::json::object& old_object, const boost::json::object& object)>
      on_update;
  std::function<void(const boost::json::object& last_state)> on_delete;
  // For a handler that keeps what it is given: every add and update (after on_add or on_update)
  // as the cached state itself, immutable and shared, so that keeping it copies nothing.
  std::function<void(const std::shared_ptr<const boost::json::object>& object)> on_upsert;
};

class Informer {
 public:
  // ns "" watches every namespace. Nothing happens until Start().
  Informer(Client& client, Resource resource, std::string ns = {}, ListOptions options = {});
  ~Informer();  // Stop()

  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  // Adds handlers; call before Start(). Objects already cached at Start are delivered as adds.
  void AddHandlers(InformerHandlers handlers);
  // Starts the list+watch thread. ResourceExhausted when no thread can be made (nothing started).
  absl::Status Start();
  // Stops the thread and waits for it. Idempotent.
  void Stop();

  // True once the first list has been delivered to every handler.
  [[nodiscard]] bool Synced() const;
  // Waits for Synced(); false on timeout.
  bool WaitForSync(std::chrono::milliseconds timeout) const;

  // The cached object "ns/name" (or "name" for cluster-scoped resources).
  [[nodiscard]] std::optional<boost::json::object> Get(std::string_view ns,
                                                       std::string_view name) const;
  // Every cached object (in ns when not empty), sorted by namespace then name.
  [[nodiscard]] std::vector<boost::json::object> List(std::string_view ns = {}) const;
  // The resourceVersion of the last event applied.
  [[nodiscard]] std::string LastResourceVersion() const;

  const Resource& resource() const { return resource_; }

 private:
  void Run();
  // Makes the cache the fresh list's items and delivers the difference (all adds the first
  // time, then marks the informer synced).
  void Replace(std::vector<boost::json::object> items, const std::string& resource_version);
  // Applies one watch event to the cache and delivers it.
  void Apply(WatchEvent& event);
  // Waits `duration`; false when Stop() came first.
  bool SleepUnlessStopped(std::chrono::milliseconds duration);

  Client& client_;
  Resource resource_;
  std::string ns_;
  ListOptions options_;
  std::vector<InformerHandlers> handlers_;

  mutable std::mutex mu_;
  mutable std::condition_variable synced_cv_;
  // "ns/name" -> object; immutable, shared with the watch (and, in process, the API server).
  std::map<std::string, std::shared_ptr<const boost::json::object>> cache_;
  std::string last_resource_version_;
  bool synced_ = false;

  std::atomic<bool> stop_{false};
  std::condition_variable stop_cv_;  // wakes the retry pauses on Stop()
  std::thread thread_;
};

}  // namespace muster::client
