// PodWorker's status side (pod_worker.h): the phase as the kubelet's getPhase computes it
// (kubelet_pods.go), the Initialized, Ready and ContainersReady conditions (pkg/kubelet/status/
// generate.go), and the whole .status object with the containers' statuses
// (kuberuntime convertToAPIContainerStatuses).

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_join.h"
#include "api/time.h"
#include "boost/json/array.hpp"
#include "node/json_access.h"
#include "node/pod_spec.h"
#include "node/pod_worker.h"
#include "node/pod_worker_container.h"

namespace muster::node {

namespace json = boost::json;

namespace {

constexpr char kUnreadyPrefix[] = "containers with unready status: [";

std::string DurationText(std::chrono::milliseconds d) {
  if (d.count() % 1000 == 0) return Cat(d.count() / 1000, "s");
  return Cat(d.count(), "ms");
}

}  // namespace

std::string PodWorker::ComputePhase() const {
  if (!reason_.empty()) return "Failed";
  for (const auto& c : init_) {
    if (c->Completed()) continue;
    if (c->StoppedForGood()) return "Failed";
    return "Pending";
  }
  int running = 0, waiting = 0, stopped = 0, succeeded = 0;
  for (const auto& c : app_) {
    switch (c->state) {
      case Container::State::kRunning:
        ++running;
        break;
      case Container::State::kTerminated:
        ++stopped;
        if (!c->restart_pending && c->exit_code == 0) ++succeeded;
        break;
      case Container::State::kWaiting:
        ++waiting;
        break;
    }
  }
  if (waiting > 0) return "Pending";
  if (running > 0) return "Running";
  if (stopped > 0) {
    if (restart_policy_ == "Always") return "Running";
    if (stopped == succeeded) return "Succeeded";
    if (restart_policy_ == "Never") return "Failed";
    return "Running";
  }
  return "Pending";
}

void PodWorker::SetCondition(const std::string& type, bool status, const std::string& reason,
                             const std::string& message) {
  ConditionState& c = conditions_[type];
  if (c.time.empty() || c.status != status) {
    c.time = api::FormatTime(std::chrono::system_clock::now());
  }
  c.status = status;
  c.reason = reason;
  c.message = message;
}

void PodWorker::UpdateConditions() {
  std::vector<std::string> incomplete, unready;
  for (const auto& c : init_) {
    if (!c->Completed()) incomplete.push_back(c->name);
  }
  for (const auto& c : app_) {
    if (c->state != Container::State::kRunning) unready.push_back(c->name);
  }
  const bool succeeded = phase_ == "Succeeded";
  if (incomplete.empty()) {
    SetCondition("Initialized", true, succeeded ? "PodCompleted" : "", "");
  } else {
    SetCondition("Initialized", false, "ContainersNotInitialized",
                 Cat("containers with incomplete status: [", absl::StrJoin(incomplete, " "), "]"));
  }
  for (const char* type : {"Ready", "ContainersReady"}) {
    if (succeeded) {
      SetCondition(type, false, "PodCompleted", "");
    } else if (unready.empty()) {
      SetCondition(type, true, "", "");
    } else {
      SetCondition(type, false, "ContainersNotReady",
                   Cat(kUnreadyPrefix, absl::StrJoin(unready, " "), "]"));
    }
  }
}

json::object PodWorker::ContainerStatus(const Container& c) const {
  json::object cs;
  cs["name"] = c.name;
  cs["image"] = c.image;
  cs["imageID"] = "";
  if (!c.container_id.empty() && c.ever_started) cs["containerID"] = c.container_id;
  const bool running = c.state == Container::State::kRunning;
  cs["ready"] = running && !c.init;
  cs["started"] = running;
  cs["restartCount"] = c.restart_count;
  json::object state, last;
  if (running) {
    state["running"] = json::object{{"startedAt", c.started_at}};
  } else if (c.StoppedForGood()) {
    state["terminated"] = c.Terminated();
  } else if (c.state == Container::State::kTerminated) {
    state["waiting"] = json::object{{"reason", "CrashLoopBackOff"},
                                    {"message", Cat("back-off ", DurationText(c.applied_backoff),
                                                    " restarting failed container=", c.name,
                                                    " pod=", PodDescription(ns_, name_, uid_))}};
  } else {
    json::object w{{"reason", c.waiting_reason}};
    if (!c.waiting_message.empty()) w["message"] = c.waiting_message;
    state["waiting"] = std::move(w);
  }
  if (c.state == Container::State::kTerminated && c.restart_pending) {
    last["terminated"] = c.Terminated();
  } else if (c.last_state) {
    last["terminated"] = *c.last_state;
  }
  cs["state"] = std::move(state);
  cs["lastState"] = std::move(last);
  return cs;
}

json::object PodWorker::Status() const {
  if (frozen_status_) return *frozen_status_;
  json::object status;
  status["phase"] = phase_;
  json::array conditions;
  for (const char* type : {"Initialized", "Ready", "ContainersReady"}) {
    auto it = conditions_.find(type);
    if (it == conditions_.end()) continue;
    json::object c;
    c["type"] = type;
    c["status"] = it->second.status ? "True" : "False";
    c["lastProbeTime"] = nullptr;
    c["lastTransitionTime"] = it->second.time;
    if (!it->second.reason.empty()) c["reason"] = it->second.reason;
    if (!it->second.message.empty()) c["message"] = it->second.message;
    conditions.push_back(std::move(c));
  }
  // Conditions others own (PodScheduled, readiness gates) are kept as found.
  if (const json::object* live = ObjectAt(*pod_, "status")) {
    if (const json::array* kept = ArrayAt(*live, "conditions")) {
      for (const json::value& v : *kept) {
        if (!v.is_object()) continue;
        const std::string type = StringAt(v.get_object(), "type");
        if (type == "Initialized" || type == "Ready" || type == "ContainersReady") continue;
        conditions.push_back(v);
      }
    }
  }
  status["conditions"] = std::move(conditions);
  const std::string& host_ip = node_.config().internal_ip;
  status["hostIP"] = host_ip;
  status["hostIPs"] = json::array{json::object{{"ip", host_ip}}};
  if (!pod_ip_.empty()) {
    status["podIP"] = pod_ip_;
    status["podIPs"] = json::array{json::object{{"ip", pod_ip_}}};
  }
  if (!start_time_.empty()) status["startTime"] = start_time_;
  if (!reason_.empty()) status["reason"] = reason_;
  if (!message_.empty()) status["message"] = message_;
  if (!init_.empty()) {
    json::array list;
    for (const auto& c : init_) list.push_back(ContainerStatus(*c));
    status["initContainerStatuses"] = std::move(list);
  }
  json::array list;
  for (const auto& c : app_) list.push_back(ContainerStatus(*c));
  status["containerStatuses"] = std::move(list);
  return status;
}

}  // namespace muster::node
