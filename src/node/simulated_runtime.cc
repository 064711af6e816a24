#include "node/simulated_runtime.h"

#include <cmath>
#include <vector>

#include "common/thread.h"

namespace muster::node {

SimulatedRuntime::SimulatedRuntime() {
  // Without its thread no container would ever exit: every Start then says why it cannot run.
  started_ = common::StartThread(thread_, "the simulated runtime", [this] { Loop(); });
}

SimulatedRuntime::~SimulatedRuntime() { Shutdown(std::chrono::milliseconds(0)); }

absl::StatusOr<ContainerId> SimulatedRuntime::Start(const ContainerLaunch& launch,
                                                    ExitCallback on_exit) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopped_) return absl::FailedPreconditionError("the runtime is shut down");
  if (!started_.ok()) return started_;
  const ContainerId id = next_id_++;
  Container& c = containers_[id];
  c.on_exit = std::move(on_exit);
  c.exit_code = launch.exit_code;
  if (launch.run_seconds >= 0 && std::isfinite(launch.run_seconds)) {
    // Beyond ~30 years is "forever" (and would overflow the clock).
    const double seconds = std::min(launch.run_seconds, 1e9);
    c.due = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(seconds));
    due_.emplace(c.due, id);
    changed_.notify_all();
  }
  return id;
}

void SimulatedRuntime::Kill(ContainerId id, std::chrono::milliseconds grace) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = containers_.find(id);
  if (it == containers_.end()) return;
  Container& c = it->second;
  const int code = grace.count() > 0 ? 128 + 15 : 128 + 9;
  const auto now = Clock::now();
  if (c.due != Clock::time_point::max()) {
    if (c.due <= now) return;  // it is ending on its own right now
    for (auto [b, e] = due_.equal_range(c.due); b != e; ++b) {
      if (b->second == id) {
        due_.erase(b);
        break;
      }
    }
  }
  c.exit_code = code;
  c.signal = code - 128;
  c.due = now;
  due_.emplace(now, id);
  changed_.notify_all();
}

void SimulatedRuntime::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopped_) {
    if (due_.empty()) {
      changed_.wait(lock);
      continue;
    }
    const auto next = due_.begin()->first;
    if (Clock::now() < next) {
      changed_.wait_until(lock, next);
      continue;
    }
    std::vector<std::pair<ExitCallback, std::pair<ContainerId, ContainerExit>>> ended;
    const auto now = Clock::now();
    while (!due_.empty() && due_.begin()->first <= now) {
      const ContainerId id = due_.begin()->second;
      due_.erase(due_.begin());
      auto it = containers_.find(id);
      if (it == containers_.end()) continue;
      ContainerExit exit;
      exit.exit_code = it->second.exit_code;
      exit.signal = it->second.signal;
      exit.finished_at = std::chrono::system_clock::now();
      ended.emplace_back(std::move(it->second.on_exit), std::make_pair(id, exit));
      containers_.erase(it);
    }
    lock.unlock();
    for (auto& [callback, args] : ended) {
      if (callback) callback(args.first, args.second);
    }
    lock.lock();
  }
}

void SimulatedRuntime::Shutdown(std::chrono::milliseconds /*grace*/) {
  std::lock_guard<std::mutex> serial(shutdown_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
    containers_.clear();
    due_.clear();
    changed_.notify_all();
  }
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

size_t SimulatedRuntime::Running() const {
  std::lock_guard<std::mutex> lock(mu_);
  return containers_.size();
}

}  // namespace muster::node
