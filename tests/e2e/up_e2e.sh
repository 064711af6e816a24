#!/usr/bin/env bash
# End-to-end: `muster up` (API server, scheduler, job controller, node agents in one process)
# driven by the real kubectl. Covers the seed's three demo phases (asserting from a watch that no
# trainer ever ran alone), restart by policy until maxRetry, completion and TTL clean-up, deleting
# a Job removes its pods, a process-runtime pod's logs and exit code, a queue's capability
# refusing a job beyond it, and priority preemption within one queue.
# One PASS/FAIL line per check; exit 0 only when nothing failed, 77 when kubectl is missing.
#
# Usage: up_e2e.sh MUSTER_BINARY        (KUBECTL=... to use another kubectl)
set -u

MUSTER=${1:?usage: up_e2e.sh MUSTER_BINARY}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=e2e_lib.sh
. "$here/e2e_lib.sh"
begin_e2e
root=$(cd "$here/../.." && pwd)
files=$here/up
demo=$root/examples/gpu-gang
data=$work/data

start_muster up "$MUSTER" up --config "$files/cluster.yaml" \
  --scheduler-conf "$files/scheduler.conf" --data-dir "$data" --listen 127.0.0.1:0 \
  --no-summary || exit_not_started up "muster up"
up_pid=$muster_pid
export KUBECONFIG=$muster_kubeconfig


eventually "up: all five nodes Ready" 60 \
  k wait --for=condition=Ready node --all --timeout=1s
expect_re "up: a T4 node shows its GPU in allocatable" '^1$' \
  k get node gpu-node-0 -o "jsonpath={.status.allocatable['nvidia\.com/gpu']}"

# --- the seed's demo, three phases ------------------------------------------------------------
trainers=volcano.sh/job-name=gang-tf-job
# Every change to a trainer, as NAME NODE PHASE lines, for the whole demo.
k get pods -l "$trainers" -w -o 'custom-columns=NAME:.metadata.name,NODE:.spec.nodeName,PHASE:.status.phase' \
  --no-headers >"$work/trainers.watch" 2>&1 &
stop_at_exit "$!"

expect "demo 1: apply the queue" "queue.scheduling.volcano.sh/ml-queue created" k apply -f "$demo/volcano-queue.yaml"
expect "demo 1: apply the gang job" "job.batch.volcano.sh/gang-tf-job created" k apply -f "$demo/tensorflow-job.yaml"
eventually "demo 1: both trainers Running" 60 pods_are "$trainers" Running 2
expect_eq "demo 1: the trainers are on the two GPU nodes" "gpu-node-0 gpu-node-1" \
  sh -c "$KUBECTL --cache-dir $work/cache get pods -l $trainers -o jsonpath='{.items[*].spec.nodeName}' | tr ' ' '\n' | sort | xargs"
eventually "demo 1: the job is Running" 30 job_phase_is gang-tf-job Running

expect "demo 2: delete the job" 'job.batch.volcano.sh "gang-tf-job" deleted' k delete -f "$demo/tensorflow-job.yaml" --wait=true
eventually "demo 2: deleting the job removes its pods" 60 no_pods "$trainers"
expect "demo 2: apply the blocker" "pod/blocker created" k apply -f "$demo/gpu-blocker-pod.yaml"
eventually "demo 2: the blocker (default scheduler) runs" 60 phase_is pod/blocker Running
expect "demo 2: apply the job again" "job.batch.volcano.sh/gang-tf-job created" k apply -f "$demo/tensorflow-job.yaml"
sleep 4
expect_eq "demo 2: after several cycles no trainer is placed" "" \
  k get pods -l "$trainers" -o jsonpath='{.items[*].spec.nodeName}'
expect_re "demo 2: the job waits (Pending)" '^Pending$' k get vcjob gang-tf-job -o jsonpath='{.status.state.phase}'
# This cluster has more GPUs elsewhere, so the gang is admitted (its pods exist, Pending) and the
# PodGroup and pods say why they cannot be placed on the two T4 nodes.
expect_re "demo 2: describe podgroup says why (Volcano's gang text)" \
  '[0-9]+/2 tasks in gang unschedulable: pod group is not ready' k describe podgroup
expect_re "demo 2: a trainer's PodScheduled=False message names the GPU shortage" \
  'nodes are unavailable: .*Insufficient nvidia.com/gpu' \
  k get pods -l "$trainers" -o jsonpath='{.items[*].status.conditions[?(@.type=="PodScheduled")].message}'
expect "demo 3: delete the blocker" 'pod "blocker" deleted' k delete pod blocker --wait=true
eventually "demo 3: both trainers Running together" 60 pods_are "$trainers" Running 2

# No trainer ever ran alone: whenever a trainer became bound while the other was not, the very
# next trainer change is the other one being bound (the gang's bindings are stored together).
sleep 1
alone=$(awk '
  { node[$1] = $2; phase = $3
    other = ($1 ~ /-0$/) ? substr($1, 1, length($1) - 1) "1" : substr($1, 1, length($1) - 1) "0"
    if (expect_bind != "") {
      if ($1 != expect_bind || $2 == "<none>") { print "after " prev ": " $0; }
      expect_bind = ""
    }
    if (was[$1] == "<none>" && $2 != "<none>" && (node[other] == "" || node[other] == "<none>")) {
      expect_bind = other; prev = $0
    }
    if (phase == "Running" && (node[other] == "" || node[other] == "<none>")) {
      print "running alone: " $0
    }
    was[$1] = $2 }
  ' "$work/trainers.watch")
if [ -z "$alone" ] && grep -q Running "$work/trainers.watch"; then
  ok "demo: no trainer ever ran or was bound without the other ($(wc -l <"$work/trainers.watch") watch lines)"
else
  bad "demo: no trainer ever ran or was bound without the other" "no such line" "$alone"
fi
k delete -f "$demo/tensorflow-job.yaml" --wait=true >/dev/null 2>&1
wait_for 60 no_pods "$trainers"

# --- restart by policy until maxRetry ---------------------------------------------------------
expect "retry: apply" "job.batch.volcano.sh/retry-job created" k apply -f "$files/retry-job.yaml"
eventually "retry: the failing job ends Failed after maxRetry" 90 job_phase_is retry-job Failed
expect_eq "retry: it was retried maxRetry (2) times" "2" \
  k get vcjob retry-job -o jsonpath='{.status.retryCount}'
k delete vcjob retry-job --wait=true >/dev/null 2>&1

# --- completion and TTL -----------------------------------------------------------------------
expect "ttl: apply" "job.batch.volcano.sh/ttl-job created" k apply -f "$files/ttl-job.yaml"
eventually "ttl: the job Completes" 60 job_phase_is ttl-job Completed
eventually "ttl: the job is deleted after ttlSecondsAfterFinished" 60 gone vcjob ttl-job
eventually "ttl: its pods are gone too" 60 no_pods volcano.sh/job-name=ttl-job

# --- the process runtime ----------------------------------------------------------------------
expect "process: apply" "pod/hello created" k apply -f "$files/process-pod.yaml"
eventually "process: the pod's exit code 3 makes it Failed" 60 phase_is pod/hello Failed
expect_eq "process: its exit code is recorded" "3" \
  k get pod hello -o 'jsonpath={.status.containerStatuses[0].state.terminated.exitCode}'
expect "process: kubectl logs shows its stdout" "hello from muster" k logs hello
expect "process: and its stderr" "to stderr" k logs hello
k delete pod hello --wait=true >/dev/null 2>&1

# --- queue capability -------------------------------------------------------------------------
expect "queue: apply a 1-GPU queue and a 2-GPU job in it" "job.batch.volcano.sh/too-big created" \
  k apply -f "$files/small-queue.yaml"
sleep 4
expect_eq "queue: the job beyond the queue's capability gets no running pod" "0" \
  count_pods volcano.sh/job-name=too-big Running
expect_re "queue: the job stays Pending" '^Pending$' k get vcjob too-big -o jsonpath='{.status.state.phase}'
k delete -f "$files/small-queue.yaml" --wait=true >/dev/null 2>&1

# --- priority preemption in one queue ---------------------------------------------------------
expect "preempt: apply the low-priority job on all eight A100s" "job.batch.volcano.sh/low-job created" \
  k apply -f "$files/preempt.yaml"
eventually "preempt: the eight low pods run" 60 pods_are volcano.sh/job-name=low-job Running 8
expect "preempt: apply the high-priority job" "job.batch.volcano.sh/high-job created" \
  k apply -f "$files/preempt-high.yaml"
eventually "preempt: the high-priority job's two pods run" 90 pods_are volcano.sh/job-name=high-job Running 2
expect_re "preempt: low pods were evicted (an event says so)" 'Evict|Preempt' k get events
k delete -f "$files/preempt-high.yaml" -f "$files/preempt.yaml" --wait=false >/dev/null 2>&1

# --- /metrics and /readyz of muster up (cmd/component_ops.h) -----------------------------------
ops_port=$(sed -n 's#.*serving /healthz.* at http://127\.0\.0\.1:\([0-9]*\).*#\1#p' "$work/up.err" | head -1)
expect_eq "up: /readyz of the scheduler and controller" "ok" curl -s "http://127.0.0.1:$ops_port/readyz"
expect_eq "up: /metrics has the scheduler's cycle latency, pods bound and the controller's Jobs" "3" \
  sh -c "curl -s http://127.0.0.1:$ops_port/metrics | grep -oE '^(volcano_e2e_scheduling_latency_milliseconds_count|muster_pods_bound_total|muster_controller_jobs)' | sort -u | wc -l"

# --- Ctrl-C stops muster up cleanly -----------------------------------------------------------
stop_process "$up_pid" 15
rc=$?
if [ "$rc" = 0 ]; then ok "up: SIGINT stops it with status 0"; else bad "up: SIGINT stops it" "exit 0 within 15 s" "rc=$rc (137: still running after 15 s, killed)"; fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
