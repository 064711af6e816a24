#pragma once

// What a closing session writes back for its jobs: each PodGroup's phase, counts and condition
// (Volcano's jobStatus, pkg/scheduler/framework/session.go, written by job_updater.go's
// UpdateAll), the PodGroup and pod events, and the PodScheduled=False condition of each pod left
// unscheduled, with its fit errors (Volcano's session.go and pkg/scheduler/cache/cache.go,
// RecordJobStatusEvent).

#include "core/cluster.h"
#include "core/podgroup_phase.h"

namespace muster::core {

class Session;

// The phase a closing session gives a job (Volcano's getPodGroupPhase): Unknown where it runs
// pods but was found unschedulable; Running (Completed when all of them succeeded) once its
// scheduled pods reach its min member, a pod terminating on its node still counted among them;
// else Pending, unless it is Inqueue.
PodGroupPhase PhaseAtClose(const Cluster& c, const JobInfo& j, bool unschedulable);

// Whether a job short of its min member is short only by pods terminating on their nodes, with
// no replacement pending or pipelined: it is then not marked Unschedulable (Volcano's gang,
// shouldSkipUnschedulableForReleasing).
bool ShortOnlyByReleasing(const Cluster& c, const JobInfo& j);

// Sets the phase of each of ssn.jobs() and adds to ssn.result() the status of those whose phase
// changed or that the session touched; with diagnostics on, their events and pod conditions too.
void UpdateJobStatuses(Session& ssn);

}  // namespace muster::core
