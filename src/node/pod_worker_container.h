#pragma once

// PodWorker's record of one container (internal to src/node): its spec, the devices it was
// given, and its runs as the kubelet's container status tells them. The life cycle
// (pod_worker.cc) changes it; the status (pod_status.cc) reads it.
//
// Thread-safety: none; owned by its PodWorker.

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "boost/json/object.hpp"
#include "node/cluster_file.h"
#include "node/pod_worker.h"
#include "node/runtime.h"

namespace muster::node {

struct PodWorker::Container {
  std::string name;
  std::string image;
  bool init = false;
  boost::json::object spec;
  std::map<std::string, int> device_counts;  // nvidia.com/* resource -> devices asked for
  std::vector<const NodeDevice*> devices;    // given at admission

  enum class State { kWaiting, kRunning, kTerminated };
  State state = State::kWaiting;
  std::string waiting_reason;
  std::string waiting_message;

  std::optional<ContainerId> handle;  // while running
  std::shared_ptr<const ContainerLaunch> launch;  // the current or last run's (exec runs beside it)
  std::string container_id;           // of the current or last run
  std::string started_at;             // of the current or last run
  Clock::time_point started_steady{};
  bool ever_started = false;
  bool kill_sent = false;
  std::optional<double> resume_seconds;  // simulated: time left from an adopted run

  // The last run's end (state kTerminated).
  int exit_code = 0;
  int signal = 0;
  std::string term_reason, term_message, finished_at;
  std::optional<boost::json::object> last_state;  // the run before the current one, as "terminated"
  int restart_count = 0;

  bool restart_pending = false;
  Clock::time_point restart_at{};
  std::chrono::milliseconds applied_backoff{0};
  std::chrono::milliseconds backoff{0};  // the next one
  bool backoff_event_sent = false;
  Clock::time_point setup_retry_at{};

  // Ended and not to run again.
  [[nodiscard]] bool StoppedForGood() const {
    return state == State::kTerminated && !restart_pending;
  }
  // Ended for good with exit code 0 (an init container that did its part).
  [[nodiscard]] bool Completed() const { return StoppedForGood() && exit_code == 0; }

  // The last run as the status's "terminated" state.
  [[nodiscard]] boost::json::object Terminated() const {
    boost::json::object t;
    t["exitCode"] = exit_code;
    if (signal != 0) t["signal"] = signal;
    t["reason"] = term_reason;
    if (!term_message.empty()) t["message"] = term_message;
    t["startedAt"] = started_at.empty() ? finished_at : started_at;
    t["finishedAt"] = finished_at;
    if (!container_id.empty()) t["containerID"] = container_id;
    return t;
  }
};

}  // namespace muster::node
