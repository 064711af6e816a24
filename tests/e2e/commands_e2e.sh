#!/usr/bin/env bash
# End-to-end: Volcano Commands (bus.volcano.sh/v1alpha1) created with kubectl, as `vcctl job
# suspend|resume` and `vcctl queue operate` create them, against `muster up` with one simulated
# node. A running Job suspended (AbortJob: its pods go, it shows Aborted) and resumed (ResumeJob:
# it runs again); a Command for a Job that does not exist refused naming target.name; a queue
# closed (CloseQueue: Closing while it has PodGroups, new Jobs refused, a waiting Job stays
# Pending with the reason), opened (OpenQueue: the waiting Job runs) and closed for good once its
# last PodGroup is gone. Every Command is deleted once carried out. One PASS/FAIL line per check;
# the last line is "N passed, M failed". Exit 0 only when nothing failed, 77 (skipped) when
# kubectl is not installed.
#
# Usage: commands_e2e.sh MUSTER_BINARY        (KUBECTL=... to use another kubectl)
set -u

MUSTER=${1:?usage: commands_e2e.sh MUSTER_BINARY}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=e2e_lib.sh
. "$here/e2e_lib.sh"
begin_e2e

cat >"$work/cluster.yaml" <<'EOF'
nodePools:
  - name: sim
    allocatable: {cpu: "4", memory: 8Gi, pods: "20"}
EOF
start_muster up "$MUSTER" up --config "$work/cluster.yaml" --data-dir "$work/data" \
  --listen 127.0.0.1:0 --no-summary || exit_not_started up "muster up"
export KUBECONFIG=$muster_kubeconfig

# A queue with room for one 1-CPU job at a time, and a job with one 1-CPU worker in it.
job() {  # job NAME: the Job's manifest
  cat <<EOF
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: $1}
spec:
  minAvailable: 1
  schedulerName: volcano
  queue: cmdq
  tasks:
    - name: worker
      replicas: 1
      template:
        spec:
          containers:
            - {name: w, image: busybox, resources: {requests: {cpu: "1"}}}
EOF
}
cat >"$work/queue.yaml" <<'EOF'
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: cmdq}
spec:
  weight: 1
  reclaimable: false
  capability: {cpu: "1"}
EOF
job work >"$work/work.yaml"
job waiter >"$work/waiter.yaml"
job late >"$work/late.yaml"

# command ACTION KIND NAME: a Command as vcctl makes it, the target's uid read from the cluster.
command() {
  local api plural uid
  case $2 in
    Job) api=batch.volcano.sh/v1alpha1 plural=vcjob ;;
    Queue) api=scheduling.volcano.sh/v1beta1 plural=queue ;;
  esac
  uid=$(k get "$plural" "$3" -o jsonpath='{.metadata.uid}' 2>/dev/null)
  cat <<EOF
apiVersion: bus.volcano.sh/v1alpha1
kind: Command
metadata: {generateName: $3-$(tr '[:upper:]' '[:lower:]' <<<"$1")-}
action: $1
target: {apiVersion: $api, kind: $2, name: $3, uid: "${uid:-none}", controller: true}
EOF
}
# issue ACTION KIND NAME: kubectl create -f of that Command.
issue() { command "$@" >"$work/command.yaml" && k create -f "$work/command.yaml"; }

queue_is() { [ "$(k get queue cmdq -o jsonpath='{.status.state}' 2>/dev/null)" = "$1" ]; }
no_commands() { [ -z "$(k get commands -o name 2>/dev/null)" ]; }
job_event() {  # job_event JOB REASON: the messages of the Job's events with that reason
  k get events --field-selector "involvedObject.name=$1,reason=$2" \
    -o jsonpath='{range .items[*]}{.message}{"\n"}{end}'
}

eventually "up: the node is Ready" 60 k wait --for=condition=Ready node --all --timeout=1s
expect "apply the queue" "queue.scheduling.volcano.sh/cmdq created" k apply -f "$work/queue.yaml"
expect "apply a job in it" "job.batch.volcano.sh/work created" k apply -f "$work/work.yaml"
eventually "the job runs" 60 pods_are volcano.sh/job-name=work Running 1

# --- suspend and resume a Job -----------------------------------------------------------------
expect_re "suspend: kubectl create -f an AbortJob Command" \
  '^command\.bus\.volcano\.sh/work-abortjob-[a-z0-9]{5} created$' issue AbortJob Job work
eventually "suspend: the job is Aborted" 30 job_phase_is work Aborted
eventually "suspend: its pod is gone" 30 no_pods volcano.sh/job-name=work
eventually "suspend: the Command is deleted once carried out" 30 no_commands
expect_eq "suspend: kubectl get commands lists none" "No resources found in default namespace." \
  k get commands
expect "suspend: CommandIssued is recorded on the job" \
  "Start to execute command AbortJob, and clean it up to make sure executed not more than once." \
  job_event work CommandIssued
expect "resume: kubectl create -f a ResumeJob Command" "created" issue ResumeJob Job work
eventually "resume: the job runs again" 60 job_phase_is work Running
eventually "resume: with its pod" 30 pods_are volcano.sh/job-name=work Running 1
expect_eq "resume: the resume counts as a retry" "1" \
  k get vcjob work -o jsonpath='{.status.retryCount}'

# --- refusals -----------------------------------------------------------------------------------
expect "a Command for a Job that does not exist is refused, naming the field" \
  'is invalid: target.name: Not found: "nope"' issue AbortJob Job nope
expect "a Command whose action does not fit its target is refused" \
  'action: Unsupported value: "CloseQueue"' issue CloseQueue Job work
expect_eq "nothing refused was stored" "" k get commands -o name

# --- close and open a queue ---------------------------------------------------------------------
expect "close: apply a second job, which the queue has no room for yet" \
  "job.batch.volcano.sh/waiter created" k apply -f "$work/waiter.yaml"
expect "close: kubectl create -f a CloseQueue Command" "created" issue CloseQueue Queue cmdq
eventually "close: the queue is Closing while its jobs' PodGroups remain" 30 queue_is Closing
expect "close: recorded on the queue" "Close queue succeed" \
  k get events --field-selector involvedObject.kind=Queue,reason=CloseQueue
expect "close: a new job in the closing queue is refused" \
  'can only submit job to queue with state `Open`, queue `cmdq` status is `Closing`' \
  k create -f "$work/late.yaml"
expect "close: suspending the running job frees the queue's room" "created" issue AbortJob Job work
eventually "close: the running job is Aborted" 30 job_phase_is work Aborted
# The scheduler has seen the room free once it writes the queue's allocation back as none; its
# enqueue ran in that cycle and left the waiting job's PodGroup Pending.
room_free() { [ -z "$(k get queue cmdq -o jsonpath='{.status.allocated.cpu}' 2>/dev/null)" ]; }
eventually "close: the queue's allocation is back to none" 30 room_free
waiter_state() {
  echo "$(k get vcjob waiter -o jsonpath='{.status.state.phase}')" \
    "$(k get podgroups -o jsonpath='{.items[*].status.phase}')"
}
expect_eq "close: the waiting job stays Pending, its PodGroup too" "Pending Pending" waiter_state
says_not_open() {
  k get events --field-selector involvedObject.kind=PodGroup,reason=Unschedulable \
    -o jsonpath='{.items[*].message}' 2>/dev/null | grep -q 'queue cmdq is not open'
}
eventually "close: an event on its PodGroup says why" 30 says_not_open
expect "open: kubectl create -f an OpenQueue Command" "created" issue OpenQueue Queue cmdq
eventually "open: the queue is Open" 30 queue_is Open
eventually "open: the waiting job runs" 60 pods_are volcano.sh/job-name=waiter Running 1
expect "close again while the job runs" "created" issue CloseQueue Queue cmdq
eventually "close again: Closing" 30 queue_is Closing
k delete vcjob waiter work --wait=false >/dev/null 2>&1
eventually "close again: Closed once the last PodGroup is gone" 60 queue_is Closed
eventually "every Command was deleted once carried out" 30 no_commands

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
