#pragma once

// Runs independent blocking calls (API requests) side by side, as Volcano's controllers and
// scheduler do from goroutines: the calls wait on the API server, not on each other, and an
// in-process store writes calls that arrive together in one transaction (group commit).
//
// The threads are made once (WorkerPool), not per call: a thread costs tens of microseconds to
// start and stop (stack, allocator caches), more than the request it would carry.

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace muster::common {

class WorkerPool {
 public:
  // `threads` helper threads (0: every call runs on the caller).
  explicit WorkerPool(size_t threads);
  ~WorkerPool();  // joins the threads; no ParallelFor may be running
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Calls call(i) for every i in [0, n) on the caller's thread and the pool's idle threads, and
  // returns when every call has returned. Calls may run in any order and concurrently: `call`
  // must be safe to run concurrently with itself. Thread-safe: several callers may share a pool
  // (each is served in turn, and always works on its own calls).
  void ParallelFor(size_t n, const std::function<void(size_t)>& call);

 private:
  struct Group;
  void Run();

  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<Group*> groups_;  // groups with calls not yet started, oldest first
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace muster::common
