#pragma once

// Volcano's Command (bus.volcano.sh/v1alpha1 in volcano-sh/volcano: pkg/apis/bus/v1alpha1), what
// `vcctl job suspend|resume|...` and `vcctl queue operate` create: an action for one object, its
// target (an OwnerReference to a Volcano Job or Queue), a reason and a message. The job
// controller takes those whose target is a Job, the queue controller those whose target is a
// Queue; each deletes the Command before acting on it, so that it is carried out at most once.
//
// Thread-safety: all functions are pure.

#include <optional>
#include <string>
#include <string_view>

#include "boost/json/object.hpp"
#include "controller/job_state.h"

namespace muster::controller {

inline constexpr char kQueueApiVersion[] = "scheduling.volcano.sh/v1beta1";
inline constexpr char kQueueKind[] = "Queue";

// The target's identity (an OwnerReference's apiVersion, kind, name and uid).
struct CommandTarget {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string uid;

  bool operator==(const CommandTarget&) const = default;
};

struct Command {
  std::string ns;
  std::string name;
  std::string uid;
  std::string action;
  std::optional<CommandTarget> target;  // nullopt when the Command names none
  std::string reason;
  std::string message;
};

// Reads a Command as the API serves it; fields of the wrong type read as absent.
Command DecodeCommand(const boost::json::object& object);

// The job controller's filter: the target is a batch.volcano.sh/v1alpha1 Job.
bool TargetsJob(const Command& command);
// The queue controller's (IsQueueReference): the target is a scheduling.volcano.sh/v1beta1 Queue.
bool TargetsQueue(const Command& command);

// What a Job's Command becomes on its Job (processNextCommand): a CommandIssued request whose
// action overrides the lifecycle policies.
Request JobCommandRequest(const Command& command);

// The CommandIssued event Volcano records on the Job when it takes the Command (Normal).
std::string CommandIssuedMessage(std::string_view action);

}  // namespace muster::controller
