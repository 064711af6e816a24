#pragma once

// The batch/v1 CronJob controller: kube-controller-manager's (pkg/controller/cronjob,
// cronjob_controllerv2.go) through a client::Client. Informers on CronJobs and Jobs trigger syncs
// keyed by CronJob; a sync reads the CronJob and the Jobs it controls (controller ownerReference
// with its uid) fresh from the API server, takes the decisions of cronjob_state.h and carries
// them out: Jobs deleted (Replace; Background propagation), the scheduled Job created, old
// finished Jobs deleted (history limits), status.active, lastScheduleTime and lastSuccessfulTime
// written, events recorded on the CronJob (SuccessfulCreate, SawCompletedJob, MissSchedule,
// JobAlreadyActive, ...) as component "cronjob-controller". Each CronJob is synced again at its
// next schedule time, by the controller's clock (`now_unix`, fake in tests).
//
// `muster up` runs it (cmd/cluster.h); on a Kubernetes cluster kube-controller-manager does, so
// `muster controller` does not.
//
// Lifecycle: construct, Start(), Stop() (or destroy). The Client must outlive the controller.
// Thread-safety: Start, Stop and WaitIdle may be called from any thread.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "controller/controller.h"

namespace muster::controller {

struct CronJobControllerOptions {
  int workers = 2;
  std::chrono::milliseconds backoff_base{5};
  std::chrono::milliseconds backoff_max{30000};
  // Seconds since the epoch; the wall clock when unset.
  std::function<int64_t()> now_unix;
  // The zone of a CronJob without spec.timeZone: the process's, as kube-controller-manager's.
  absl::TimeZone local_zone = absl::LocalTimeZone();
  std::string component = "cronjob-controller";
};

// The CronJob controller: every CronJob present is synced once at Start.
std::unique_ptr<Controller> NewCronJobController(client::Client& client,
                                                 CronJobControllerOptions options = {});

}  // namespace muster::controller
