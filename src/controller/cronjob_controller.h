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

class CronJobController {
 public:
  explicit CronJobController(client::Client& client, CronJobControllerOptions options = {});
  ~CronJobController();  // Stop()

  CronJobController(const CronJobController&) = delete;
  CronJobController& operator=(const CronJobController&) = delete;

  // Starts the watches, waits until their first lists are in (DeadlineExceeded after
  // `sync_timeout`, the controller then stopped) and starts the workers; every CronJob present is
  // synced once.
  absl::Status Start(std::chrono::milliseconds sync_timeout = std::chrono::seconds(30));
  // Stops the watches and workers; a sync in progress finishes first. Idempotent.
  void Stop();
  // Syncs the CronJob ns/name now (tests that move the fake clock).
  void Resync(const std::string& ns, const std::string& name);
  // Waits until no CronJob is queued or being synced (syncs scheduled for later do not count);
  // false on timeout.
  bool WaitIdle(std::chrono::milliseconds timeout);

  struct State;

 private:
  std::unique_ptr<State> state_;
};

}  // namespace muster::controller
