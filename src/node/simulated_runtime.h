#pragma once

// SimulatedRuntime: containers that only keep time. A container "runs" for
// ContainerLaunch::run_seconds (forever when negative) and then exits with its exit_code; Kill
// ends it at once with 143 (SIGTERM, when a grace period was given) or 137 (SIGKILL). Nothing is
// started on this machine, so one agent can carry thousands of simulated nodes.
//
// One timer thread delivers the exits in deadline order. Thread-safety: every method may be
// called from any thread.

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include "node/runtime.h"

namespace muster::node {

class SimulatedRuntime final : public Runtime {
 public:
  SimulatedRuntime();
  ~SimulatedRuntime() override;  // Shutdown(0)

  SimulatedRuntime(const SimulatedRuntime&) = delete;
  SimulatedRuntime& operator=(const SimulatedRuntime&) = delete;

  absl::StatusOr<ContainerId> Start(const ContainerLaunch& launch, ExitCallback on_exit) override;
  void Kill(ContainerId id, std::chrono::milliseconds grace) override;
  void Shutdown(std::chrono::milliseconds grace) override;
  [[nodiscard]] size_t Running() const override;

 private:
  using Clock = std::chrono::steady_clock;
  struct Container {
    ExitCallback on_exit;
    int exit_code = 0;
    int signal = 0;  // set by Kill
    Clock::time_point due = Clock::time_point::max();
  };

  void Loop();

  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::map<ContainerId, Container> containers_;
  std::multimap<Clock::time_point, ContainerId> due_;  // exits with a deadline
  ContainerId next_id_ = 1;
  bool stopped_ = false;
  std::mutex shutdown_mu_;  // serialises Shutdown
  std::thread thread_;
  absl::Status started_;  // set once, in the constructor
};

}  // namespace muster::node
