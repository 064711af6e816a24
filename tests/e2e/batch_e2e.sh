#!/usr/bin/env bash
# End-to-end: Kubernetes' own batch/v1 Jobs and CronJobs with kubectl against `muster up` with a
# process node and four simulated one-GPU nodes (tainted, so that only the gang goes there).
# `kubectl create job` runs to Complete (kubectl wait, get, describe, logs); `kubectl get jobs`
# is batch/v1 while Volcano's stay `vcjob`; `kubectl create cronjob` shows its columns and
# `kubectl create job --from=cronjob/...` runs its template, and the CronJob fires at the next whole
# minute (up to 70 s); an Indexed Job of four gang-scheduled
# one-GPU pods waits whole (no pod bound) while another pod holds a GPU, then starts whole on the
# four nodes; a Job with negative completions is refused naming the field. One PASS/FAIL line
# per check; the last line is "N passed, M failed". Exit 0 only when nothing failed, 77
# (skipped) when kubectl is not installed.
#
# Usage: batch_e2e.sh MUSTER_BINARY        (KUBECTL=... to use another kubectl)
set -u

MUSTER=${1:?usage: batch_e2e.sh MUSTER_BINARY}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=e2e_lib.sh
. "$here/e2e_lib.sh"
begin_e2e

cat >"$work/cluster.yaml" <<'EOF'
nodePools:
  - name: work
    allocatable: {cpu: "4", memory: 8Gi}
    runtime: process
  - name: gpu
    count: 4
    allocatable: {cpu: "4", memory: 8Gi}
    gpu: {count: 1, model: Tesla-T4, memory: 15360Mi}
    taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
EOF
start_muster up "$MUSTER" up --config "$work/cluster.yaml" --data-dir "$work/data" \
  --listen 127.0.0.1:0 --no-summary || exit_not_started up "muster up"
export KUBECONFIG=$muster_kubeconfig
eventually "up: the nodes are Ready" 60 k wait --for=condition=Ready node --all --timeout=1s

# --- kubectl create job on the process node ----------------------------------------------------
expect "create job" "job.batch/hello created" \
  k create job hello --image=busybox -- sh -c 'echo hello from a job'
expect "wait --for=condition=complete" "job.batch/hello condition met" \
  k wait --for=condition=complete job/hello --timeout=60s
expect_re "get jobs: batch/v1 with STATUS and COMPLETIONS" '^hello +Complete +1/1 ' k get jobs
expect "logs job/hello" "hello from a job" k logs job/hello
expect_re "describe job: the controller's events" \
  'Completed +[0-9a-z]+ +job-controller +Job completed' k describe job hello
expect_eq "the pod lost its job-tracking finalizer" "" \
  k get pods -l batch.kubernetes.io/job-name=hello -o 'jsonpath={.items[0].metadata.finalizers}'
expect "Volcano's Jobs stay reachable as vcjob" "No resources found" k get vcjob

# --- CronJobs ------------------------------------------------------------------------------------
expect "create cronjob" "cronjob.batch/tick created" \
  k create cronjob tick --schedule="*/1 * * * *" --image=busybox -- sh -c 'echo tick'
expect_re "get cronjob: SCHEDULE, TIMEZONE, SUSPEND, ACTIVE" \
  '^tick +\*/1 \* \* \* \* +<none> +False +[01] ' k get cronjob tick
expect "create job --from=cronjob" "job.batch/tick-now created" \
  k create job --from=cronjob/tick tick-now
expect "the CronJob's template runs to Complete" "job.batch/tick-now condition met" \
  k wait --for=condition=complete job/tick-now --timeout=60s
expect "an unknown time zone is refused" \
  'spec.timeZone: Invalid value: "Mars/Base": unknown time zone Mars/Base' \
  k patch cronjob tick --type=merge -p '{"spec":{"timeZone":"Mars/Base"}}'

# --- a gang of four one-GPU workers, whole or not at all -----------------------------------------
cat >"$work/blocker.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: blocker}
spec:
  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
  containers:
    - {name: hold, image: busybox, resources: {limits: {nvidia.com/gpu: 1}}}
EOF
cat >"$work/train.yaml" <<'EOF'
apiVersion: batch/v1
kind: Job
metadata:
  name: train
  annotations: {scheduling.volcano.sh/group-min-member: "4"}
spec:
  completionMode: Indexed
  completions: 4
  parallelism: 4
  template:
    spec:
      schedulerName: volcano
      restartPolicy: Never
      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
      containers:
        - {name: worker, image: busybox, resources: {limits: {nvidia.com/gpu: 1}}}
EOF
gang=batch.kubernetes.io/job-name=train
bound() {  # the nodes of the gang's bound pods, sorted
  k get pods -l "$gang" -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' 2>/dev/null |
    grep . | sort | xargs
}
gang_pods() { [ "$(k get pods -l "$gang" -o name 2>/dev/null | wc -l)" = 4 ]; }
unschedulable() {
  k get podgroups -o jsonpath='{.items[*].status.conditions[*].type}' 2>/dev/null |
    grep -q Unschedulable
}
whole() { [ "$(bound)" = "gpu-0 gpu-1 gpu-2 gpu-3" ]; }
hostnames() {
  k get pods -l "$gang" -o jsonpath='{range .items[*]}{.spec.hostname}{"\n"}{end}' | sort | xargs
}
expect "a pod takes one of the four GPUs" "pod/blocker created" k apply -f "$work/blocker.yaml"
eventually "the blocker runs" 30 phase_is pod/blocker Running
expect "create the Indexed gang Job" "job.batch/train created" k apply -f "$work/train.yaml"
eventually "the controller makes the four indexed pods" 30 gang_pods
eventually "the scheduler finds the gang unschedulable" 30 unschedulable
expect_eq "no pod of the gang is bound while a GPU is taken" "" bound
pg_asks() {
  k get podgroups \
    -o 'jsonpath={.items[0].spec.minMember} {.items[0].spec.minResources.nvidia\.com/gpu}'
}
expect_eq "the gang's PodGroup asks for all four" "4 4" pg_asks
expect "free the GPU" 'pod "blocker" deleted' k delete pod blocker --wait=true
eventually "the gang starts whole on the four GPU nodes" 60 whole
expect_eq "each worker has its index's hostname" "train-0 train-1 train-2 train-3" hostnames

# --- validation ----------------------------------------------------------------------------------
cat >"$work/bad.yaml" <<'EOF'
apiVersion: batch/v1
kind: Job
metadata: {name: bad}
spec:
  completions: -1
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox, command: ["true"]}]
EOF
expect "negative completions are refused naming the field" \
  'The Job "bad" is invalid: spec.completions: Invalid value: -1: must be greater than or equal '\
'to 0' k create -f "$work/bad.yaml"
expect "nothing is stored for it" "NotFound" k get job bad

# --- the CronJob fires on its schedule: at the next whole minute (here within 70 s), a Job named
# for that minute (tick-<minutes since the epoch>, as kube's controller names it) runs to Complete.
scheduled_job() { k get jobs -o name | grep -E '^job\.batch/tick-[0-9]+$'; }
eventually "the CronJob fires on its schedule" 70 scheduled_job
fired=$(scheduled_job | head -1 | sed 's|^job.batch/||')
last=$(k get cronjob tick -o jsonpath='{.status.lastScheduleTime}')
expect_eq "the Job is named for the minute of lastScheduleTime" "tick-$(($(date -u -d "$last" +%s) / 60))" \
  echo "$fired"
expect "the scheduled Job runs to Complete" "condition met" \
  k wait --for=condition=complete "job/$fired" --timeout=60s

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
