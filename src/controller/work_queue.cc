#include "controller/work_queue.h"

#include <algorithm>
#include <utility>

#include "common/thread.h"
#include "fmt/format.h"

namespace muster::controller {

std::string WorkItem::Id() const {
  if (kind == Kind::kTtl) return "ttl|" + key;
  return fmt::format("req|{}|{}|{}|{}|{}|{}|{}", key, request.event, request.task, request.pod,
                     request.exit_code, request.job_version, request.action);
}

WorkQueues::WorkQueues(Options options, Handler handler)
    : options_(options), handler_(std::move(handler)) {
  const int shards = std::max(1, options_.shards);
  for (int i = 0; i < shards; ++i) shards_.push_back(std::make_unique<Shard>());
}

WorkQueues::~WorkQueues() { Stop(); }

absl::Status WorkQueues::Start() {
  if (started_) return absl::OkStatus();
  started_ = true;
  for (auto& shard : shards_) {
    Shard* s = shard.get();
    absl::Status started = common::StartThread(s->thread, "a work queue", [this, s] { Run(*s); });
    if (!started.ok()) {
      Stop();
      return started;
    }
  }
  return absl::OkStatus();
}

void WorkQueues::Stop() {
  stop_ = true;
  for (auto& shard : shards_) {
    { std::lock_guard lock(shard->mu); }
    shard->cv.notify_all();
  }
  for (auto& shard : shards_) {
    if (shard->thread.joinable()) shard->thread.join();
  }
}

WorkQueues::Shard& WorkQueues::ShardFor(const std::string& key) {
  return *shards_[std::hash<std::string>{}(key) % shards_.size()];
}

void WorkQueues::Enqueue(Shard& shard, WorkItem item) {
  std::string id = item.Id();
  if (!shard.queued.insert(id).second) return;
  shard.ready.push_back(std::move(item));
  if (on_depth_) on_depth_(+1);
}

void WorkQueues::Add(WorkItem item) {
  Shard& shard = ShardFor(item.key);
  {
    std::lock_guard lock(shard.mu);
    Enqueue(shard, std::move(item));
  }
  shard.cv.notify_one();
}

void WorkQueues::AddAfter(WorkItem item, std::chrono::nanoseconds delay) {
  if (delay <= std::chrono::nanoseconds::zero()) {
    Add(std::move(item));
    return;
  }
  Shard& shard = ShardFor(item.key);
  const Clock::time_point when = Clock::now() + std::chrono::duration_cast<Clock::duration>(delay);
  {
    std::lock_guard lock(shard.mu);
    std::string id = item.Id();
    auto it = shard.scheduled.find(id);
    if (it != shard.scheduled.end()) {
      if (it->second <= when) return;  // already due no later than that
      auto range = shard.later.equal_range(it->second);
      for (auto l = range.first; l != range.second; ++l) {
        if (l->second.Id() == id) {
          shard.later.erase(l);
          break;
        }
      }
    }
    shard.scheduled[id] = when;
    shard.later.emplace(when, std::move(item));
  }
  shard.cv.notify_one();
}

void WorkQueues::Promote(Shard& shard, Clock::time_point now) {
  while (!shard.later.empty() && shard.later.begin()->first <= now) {
    WorkItem item = std::move(shard.later.begin()->second);
    shard.later.erase(shard.later.begin());
    shard.scheduled.erase(item.Id());
    Enqueue(shard, std::move(item));
  }
}

void WorkQueues::Run(Shard& shard) {
  std::unique_lock lock(shard.mu);
  while (!stop_) {
    Promote(shard, Clock::now());
    if (shard.ready.empty()) {
      if (shard.later.empty()) {
        shard.cv.wait(lock);
      } else {
        // A copy: AddAfter may erase that entry while the wait has the lock released.
        const Clock::time_point next = shard.later.begin()->first;
        shard.cv.wait_until(lock, next);
      }
      continue;
    }
    WorkItem item = std::move(shard.ready.front());
    shard.ready.pop_front();
    if (on_depth_) on_depth_(-1);
    const std::string id = item.Id();
    shard.queued.erase(id);
    const int retries = shard.failures.contains(id) ? shard.failures[id] : 0;
    shard.busy = true;
    lock.unlock();
    const bool ok = handler_(item, retries);
    lock.lock();
    shard.busy = false;
    if (ok) {
      shard.failures.erase(id);
      continue;
    }
    const int failures = ++shard.failures[id];
    // client-go's exponential failure rate limiter: base * 2^(failures-1), capped.
    auto delay = options_.backoff_base * (int64_t{1} << std::min(failures - 1, 30));
    delay = std::min<std::chrono::milliseconds>(delay, options_.backoff_max);
    const Clock::time_point when = Clock::now() + delay;
    if (!shard.scheduled.contains(id)) {
      shard.scheduled[id] = when;
      shard.later.emplace(when, std::move(item));
    }
  }
}

bool WorkQueues::WaitIdle(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (true) {
    bool idle = true;
    const Clock::time_point now = Clock::now();
    for (auto& shard : shards_) {
      std::lock_guard lock(shard->mu);
      const bool due = !shard->later.empty() && shard->later.begin()->first <= now;
      if (shard->busy || !shard->ready.empty() || due) idle = false;
    }
    if (idle) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace muster::controller
