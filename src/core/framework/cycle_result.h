#pragma once

// What one scheduling cycle decided, for the adapter to apply: the binds and evictions Volcano's
// statement.go commits through the cache, and the PodGroup status, pod conditions and events
// its job_updater.go and session.go write back (pkg/scheduler/framework).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "api/model.h"
#include "core/resources.h"

namespace muster::core {

// Everything a cycle decided, for the adapter to apply (binds, evictions, status writes, events).
struct CycleResult {
  struct Bind {
    std::string pod;  // ns/name
    std::string node;
    std::vector<int> gpus;
  };
  struct Eviction {
    std::string pod;
    std::string reason;
  };
  struct PodGroupStatus {
    std::string pod_group;  // ns/name
    std::string phase;
    std::optional<api::Condition> condition;
    int32_t running = 0;
    int32_t succeeded = 0;
    int32_t failed = 0;
  };
  struct PodCondition {  // PodScheduled=False on a pod that stays unscheduled
    std::string pod;
    std::string reason;  // Unschedulable, Schedulable
    std::string message;
    std::string nominated_node;
  };
  struct Event {
    std::string kind;    // Pod, PodGroup
    std::string object;  // ns/name
    std::string type;    // Normal, Warning
    std::string reason;
    std::string message;
  };
  std::vector<Bind> binds;
  std::vector<Eviction> evictions;
  std::map<std::string, std::string> pipelined;  // pod -> node held for it
  std::vector<PodGroupStatus> pod_groups;
  std::vector<PodCondition> pod_conditions;
  std::vector<Event> events;
  // Where the proportion plugin ran: every queue's deserved resources, by queue name.
  std::map<std::string, Resources> queue_deserved;
};

}  // namespace muster::core
