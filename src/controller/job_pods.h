#pragma once

// What the job controller creates for a Volcano Job, as Volcano's controller makes it
// (pkg/controllers/job: createJobPod, createOrUpdatePodGroup, calcPGMinResources):
//   - a PodGroup "<job>-<uid>": minMember = spec.minAvailable, minTaskMember = each task's
//     minAvailable (replicas where unset), queue, priorityClassName, minResources = the requests
//     of the first minAvailable pods (tasks by template priority, highest first; each task's own
//     minimum first when minAvailable covers them all), the Job's labels and annotations, and a
//     controller ownerReference to the Job;
//   - pods "<job>-<task>-<i>" from the task template, with the template's labels and annotations
//     plus volcano.sh/job-name, job-namespace, queue-name, task-spec, task-index (labels) and
//     scheduling.k8s.io/group-name, volcano.sh/job-name, queue-name, task-spec, task-index,
//     job-version, template-uid (annotations), the Job's schedulerName when the template names
//     none, the Job's volumes, and a controller ownerReference to the Job.
// Plugins (job_plugins.h) then add their part to each pod.
//
// Thread-safety: all functions are pure.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "boost/json/object.hpp"
#include "controller/job.h"

namespace muster::controller {

// The pod for replica `index` of spec.tasks[task], before plugins.
boost::json::object MakePod(const Job& job, size_t task, int index);

// A PriorityClass's value by name; nullopt when unknown (the task then counts as priority 0).
using PriorityLookup = std::function<std::optional<int32_t>(const std::string& name)>;

// The PodGroup for a Job.
boost::json::object MakePodGroup(const Job& job, const PriorityLookup& priority_of);

// The requests summed over the PodGroup's first minAvailable pods, as quantity strings.
std::map<std::string, std::string> MinResources(const Job& job, const PriorityLookup& priority_of);

// The existing PodGroup with its spec brought in line with `desired` (minMember, minTaskMember,
// minResources, priorityClassName, as createOrUpdatePodGroup compares them); nullopt when
// nothing differs.
std::optional<boost::json::object> UpdatedPodGroup(const boost::json::object& existing,
                                                   const boost::json::object& desired);

}  // namespace muster::controller
