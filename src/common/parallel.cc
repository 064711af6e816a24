#include "common/parallel.h"

#include <algorithm>
#include <atomic>

#include "common/thread.h"

namespace muster::common {

struct WorkerPool::Group {
  const std::function<void(size_t)>* call = nullptr;
  size_t n = 0;
  std::atomic<size_t> next{0};  // the next index to start
  // Guarded by the pool's mu_.
  size_t finished = 0;  // calls returned
  int helpers = 0;      // pool threads working on this group
  std::condition_variable done;
};

WorkerPool::WorkerPool(size_t threads) {
  threads_.reserve(threads);
  for (size_t i = 0; i < threads; ++i) {
    std::thread thread;
    // A thread the system refuses leaves the pool smaller: the caller runs what no thread takes.
    if (!StartThread(thread, "a worker pool", [this] { Run(); }).ok()) break;
    threads_.push_back(std::move(thread));
  }
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void WorkerPool::ParallelFor(size_t n, const std::function<void(size_t)>& call) {
  if (n == 0) return;
  Group g;
  g.call = &call;
  g.n = n;
  if (n > 1 && !threads_.empty()) {
    {
      std::lock_guard lock(mu_);
      groups_.push_back(&g);
    }
    if (n == 2) {
      wake_.notify_one();
    } else {
      wake_.notify_all();
    }
  }
  // The caller works too, so a busy pool never stalls it; it counts its own calls as they end.
  size_t mine = 0;
  for (size_t i = g.next++; i < n; i = g.next++) {
    call(i);
    ++mine;
  }
  std::unique_lock lock(mu_);
  g.finished += mine;
  // No call is left to start: the group must not be handed to another thread.
  if (auto it = std::find(groups_.begin(), groups_.end(), &g); it != groups_.end()) {
    groups_.erase(it);
  }
  g.done.wait(lock, [&] { return g.finished == n && g.helpers == 0; });
}

void WorkerPool::Run() {
  std::unique_lock lock(mu_);
  while (true) {
    wake_.wait(lock, [this] { return stop_ || !groups_.empty(); });
    if (stop_) return;
    Group& g = *groups_.front();
    ++g.helpers;
    lock.unlock();
    size_t mine = 0;
    for (size_t i = g.next++; i < g.n; i = g.next++) {
      (*g.call)(i);
      ++mine;
    }
    lock.lock();
    g.finished += mine;
    --g.helpers;
    if (auto it = std::find(groups_.begin(), groups_.end(), &g); it != groups_.end()) {
      groups_.erase(it);
    }
    if (g.finished == g.n && g.helpers == 0) g.done.notify_all();
  }
}

}  // namespace muster::common
