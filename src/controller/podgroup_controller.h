#pragma once

// The PodGroup controller: vc-controller-manager's podgroup controller
// (pkg/controllers/podgroup/pg_controller.go and pg_controller_handler.go in volcano-sh/volcano),
// running against any API server through a client::Client, beside the JobController.
//
// A pending pod of one of muster's schedulers (schedulerName among `scheduler_names`) that names
// no PodGroup (no scheduling.k8s.io/group-name annotation) gets a one-member PodGroup
// (StandalonePodGroup, createNormalPodPGIfNotExist) and is annotated with its name, so that the
// scheduler places it as a gang of one. The scheduler does not place such a pod until both
// writes have reached it (scheduler/cluster_mirror.h: PodsWithoutGroup). A group that already
// exists (a pod of the same ReplicaSet made it) is fine; any other refused write is retried with
// backoff until it is done or the pod is gone.
//
// Lifecycle: construct, Start(), Stop() (or destroy). The Client must outlive the controller.
// Thread-safety: Start, Stop and WaitIdle may be called from any thread.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "api/model.h"
#include "boost/json/object.hpp"
#include "client/client.h"
#include "controller/controller.h"

namespace muster::controller {

// Volcano's annotation naming a standalone pod's queue.
inline constexpr char kQueueNameAnnotation[] = "scheduling.volcano.sh/queue-name";

struct PodGroupControllerOptions {
  // The schedulerNames the scheduler serves as gangs (`muster scheduler --scheduler-name`,
  // SchedulerOptions::scheduler_names). Pods it serves as kube-scheduler would
  // (--serve-default-scheduler) never get a PodGroup: the scheduler groups them itself, in its
  // core only, so that option does not change which pods come here.
  std::vector<std::string> scheduler_names = {"volcano", "muster"};
  // Worker threads; one pod's writes always run on the same one.
  int workers = 4;
  std::chrono::milliseconds backoff_base{5};
  std::chrono::milliseconds backoff_max{30000};
};

// Whether `pod` should get a standalone PodGroup: one of `scheduler_names`' pods, naming no
// group, not bound, not finished and not being deleted.
bool NeedsStandalonePodGroup(const api::Pod& pod, const std::vector<std::string>& scheduler_names);
// Volcano's GeneratePodgroupName: "podgroup-" + the UID of the pod's controller, or of the pod.
std::string StandalonePodGroupName(const api::Pod& pod);
// The PodGroup Volcano's podgroup controller creates for such a pod (createNormalPodPGIfNotExist):
// named by StandalonePodGroupName, owned by the pod's controller or else by the pod, minMember 1,
// queue from the pod's annotation scheduling.volcano.sh/queue-name (else "default"), the pod's
// priorityClassName, minResources the pod's requests, phase Pending.
boost::json::object StandalonePodGroup(const api::Pod& pod);
// The PodGroup of a gang of one controller's pods (a batch/v1 Job that asks for one, with
// Volcano's scheduling.volcano.sh/group-min-member): StandalonePodGroup of one of them, named
// `name`, with minMember `min_member` and minResources that many pods' requests.
boost::json::object GangPodGroup(const api::Pod& pod, const std::string& name,
                                 int32_t min_member);

// The PodGroup controller: every pod present that needs a group is handled once at Start.
std::unique_ptr<Controller> NewPodGroupController(client::Client& client,
                                                  PodGroupControllerOptions options = {});

}  // namespace muster::controller
