#pragma once

// What the batch Job controller makes for a batch/v1 Job: its pods, as kube's Job controller
// makes them (pkg/controller/job: the template's labels and annotations, the job-tracking
// finalizer, a controller ownerReference to the Job, generateName "<job>-" or, for an Indexed
// Job, "<job>-<index>-" with the index as annotation, label and JOB_COMPLETION_INDEX, and hostname
// "<job>-<index>" beside the template's subdomain), and whether the Job asks for a gang.
//
// Gangs are Volcano's, for a Job its podgroup controller would group: pods of one of the
// scheduler's names (`schedulerName: volcano`) whose Job carries the annotation
// scheduling.volcano.sh/group-min-member (minMember that value), or whose template names a
// PodGroup with scheduling.k8s.io/group-name (minMember the Job's parallelism). The PodGroup is
// `podgroup-<job uid>` (Volcano's name for a controller's pods) or the one the template names.
//
// Thread-safety: pure functions.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "boost/json/object.hpp"
#include "controller/batch_job.h"
#include "controller/batch_job_state.h"

namespace muster::controller {

struct BatchGang {
  std::string pod_group;  // the PodGroup's name
  int32_t min_member = 1;

  bool operator==(const BatchGang&) const = default;
};

// The gang the Job's pods form, nullopt when they are scheduled one by one.
std::optional<BatchGang> BatchJobGang(const BatchJob& job,
                                      const std::vector<std::string>& scheduler_names);

// The pod to create (no name: generateName), in the Job's namespace; in the gang's PodGroup
// (annotation scheduling.k8s.io/group-name) when `gang` is set.
boost::json::object MakeBatchJobPod(const BatchJob& job, const BatchPodToCreate& pod,
                                    const std::optional<BatchGang>& gang);

}  // namespace muster::controller
