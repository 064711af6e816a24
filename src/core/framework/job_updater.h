#pragma once

// What a closing session writes back for its jobs: each PodGroup's phase, counts and condition
// (Volcano's jobStatus, pkg/scheduler/framework/session.go, written by job_updater.go's
// UpdateAll), the PodGroup and pod events, and the PodScheduled=False condition of each pod left
// unscheduled, with its fit errors (Volcano's session.go and pkg/scheduler/cache/cache.go,
// RecordJobStatusEvent).

namespace muster::core {

class Session;

// Sets the phase of each of ssn.jobs() and adds to ssn.result() the status of those whose phase
// changed or that the session touched; with diagnostics on, their events and pod conditions too.
void UpdateJobStatuses(Session& ssn);

}  // namespace muster::core
