#pragma once

// The job controller's work queues, as client-go's rate-limited workqueues serve
// vc-controller-manager: items are sharded by Job key over a fixed number of queues, each drained
// by one worker thread, so that one Job's requests run one at a time and in order while
// different Jobs proceed in parallel. An item already waiting is not queued twice. Failed items
// come back after an exponential backoff; items can also be scheduled for a later time (TTL
// deadlines).
//
// Thread-safety: every method may be called from any thread.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "controller/job_state.h"

namespace muster::controller {

struct WorkItem {
  std::string key;  // "namespace/name" of the Job
  enum class Kind { kRequest, kTtl } kind = Kind::kRequest;
  Request request;  // for kRequest

  // A stable identity for de-duplication and retry counting.
  std::string Id() const;
};

class WorkQueues {
 public:
  using Clock = std::chrono::steady_clock;
  // Returns false when the item failed and should be retried.
  using Handler = std::function<bool(const WorkItem& item, int retries)>;

  struct Options {
    int shards = 4;
    std::chrono::milliseconds backoff_base{5};
    std::chrono::milliseconds backoff_max{30000};
  };

  WorkQueues(Options options, Handler handler);
  ~WorkQueues();  // Stop()

  // `on_depth` is called with +1 as an item becomes ready for a worker and -1 as a worker takes
  // it (under the shard's lock: it must not call back into the queues). Call before Start().
  void SetDepthObserver(std::function<void(int delta)> on_depth) {
    on_depth_ = std::move(on_depth);
  }

  // ResourceExhausted when a worker thread cannot be made; then none runs.
  absl::Status Start();
  // Finishes the items being handled, drops the rest and joins the workers. Idempotent.
  void Stop();

  void Add(WorkItem item);
  // Adds the item once `delay` has passed (an earlier schedule of the same item is kept).
  void AddAfter(WorkItem item, std::chrono::nanoseconds delay);

  // Waits until no item is queued, due or being handled (items scheduled for later do not
  // count); false on timeout.
  bool WaitIdle(std::chrono::milliseconds timeout);

 private:
  struct Shard {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<WorkItem> ready;
    std::set<std::string> queued;                        // ids in `ready`
    std::multimap<Clock::time_point, WorkItem> later;    // scheduled items
    std::map<std::string, Clock::time_point> scheduled;  // id -> when, for `later`
    std::map<std::string, int> failures;                 // id -> consecutive failures
    bool busy = false;
    std::thread thread;
  };

  Shard& ShardFor(const std::string& key);
  void Run(Shard& shard);
  // Moves due scheduled items to `ready`. Requires shard.mu.
  void Promote(Shard& shard, Clock::time_point now);
  void Enqueue(Shard& shard, WorkItem item);  // requires shard.mu

  Options options_;
  Handler handler_;
  std::function<void(int)> on_depth_;
  std::vector<std::unique_ptr<Shard>> shards_;
  std::atomic<bool> stop_{false};
  bool started_ = false;
};

}  // namespace muster::controller
