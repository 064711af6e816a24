#!/usr/bin/env bash
# kube/volcano-crds: muster installed on a cluster that runs Volcano already. Volcano v1.15.1's own
# CRDs (tests/kube/manifests/volcano-v1.15.1, as Volcano's installer creates them) hold the seed's
# Queue and gang Job before muster comes; `kubectl apply -k deploy/` must then install muster over
# them (its CRDs replace Volcano's schemas with muster's, which accept the same objects), keep the
# Job and the Queue as they were, and muster's scheduler and controller must run that Job; the
# scheduler makes the root queue, and kubectl get queue prints the CRD's columns.
# Then what Volcano's queue controller does on a cluster, done by muster's controller (no API
# server of muster's admits queues here): default and root made before any scheduler runs, the
# Queue Volcano's schema stored opened under root, new queues opened, a CloseQueue Command on a
# parent closing its child (volcano.sh/closed-by-parent) and an OpenQueue reopening it, and
# Volcano's PodGroup gauges by phase on the controller's /metrics; and HyperNodes' NODECOUNT.
#
# Usage: volcano_crds_e2e.sh MUSTER_BINARY
set -u
MUSTER=${1:?usage: volcano_crds_e2e.sh MUSTER_BINARY}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=kube_lib.sh
. "$here/kube_lib.sh"
begin_kube
demo=$kube_root/examples/gpu-gang
volcano=$here/manifests/volcano-v1.15.1
crds="crd/jobs.batch.volcano.sh crd/podgroups.scheduling.volcano.sh crd/queues.scheduling.volcano.sh"

# Volcano's installer creates its CRDs (the Job's is too large for a client-side apply's
# last-applied annotation).
expect "volcano: its v1.15.1 CRDs are created" "customresourcedefinition.apiextensions.k8s.io/jobs.batch.volcano.sh created" \
  k create -f "$volcano/batch.volcano.sh_jobs.yaml" -f "$volcano/scheduling.volcano.sh_podgroups.yaml" \
  -f "$volcano/scheduling.volcano.sh_queues.yaml"
# shellcheck disable=SC2086
eventually "volcano: the CRDs are established" 60 k wait --for=condition=Established $crds --timeout=2s
expect "volcano: the seed's queue is stored under Volcano's schema" "queue.scheduling.volcano.sh/ml-queue created" \
  k apply -f "$demo/volcano-queue.yaml"
expect "volcano: the seed's gang job is stored under Volcano's schema" "job.batch.volcano.sh/gang-tf-job created" \
  k apply -f "$demo/tensorflow-job.yaml"
uid=$(k get vcjob gang-tf-job -o jsonpath='{.metadata.uid}')

install_muster
expect_eq "install: the live CRDs are muster's manifest (kubectl diff finds nothing)" "" \
  k diff -f "$kube_root/deploy/crds/volcano-crds.yaml"
# shellcheck disable=SC2086
expect_re "install: the versions Volcano's CRDs stored are still served" \
  '^\["v1alpha1"\] \["v1beta1"\] \["v1beta1"\] $' \
  k get $crds -o jsonpath='{range .items[*]}{.status.storedVersions}{" "}{end}'
expect_eq "install: the Job Volcano's schema stored is the same object" "$uid 2" \
  k get vcjob gang-tf-job -o jsonpath='{.metadata.uid} {.spec.minAvailable}'
expect_eq "install: and so is the Queue" "1" k get queue ml-queue -o jsonpath='{.spec.weight}'
sched_kc=$(sa_kubeconfig muster-scheduler) && ctrl_kc=$(sa_kubeconfig muster-controller) ||
  exit_not_started control-plane "ServiceAccount tokens"
start_component nodes "$MUSTER" nodes --config "$demo/cluster.yaml" --kubeconfig "$KUBECONFIG" \
  --data-dir "$work/nodes" --lease-renew-seconds 2
start_component controller "$MUSTER" controller --kubeconfig "$ctrl_kc" --leader-elect=false \
  --listen-address=127.0.0.1:0
# queue_is NAME WANT: "state/parent/closed-by-parent" of the queue is WANT.
queue_is() {
  [ "$(k get queue "$1" -o jsonpath='{.status.state}/{.spec.parent}/{.metadata.annotations.volcano\.sh/closed-by-parent}' 2>/dev/null)" = "$2" ]
}
eventually "queues: the controller makes default and root before any scheduler runs, as Volcano's scheduler would" 30 \
  k get queue default root
expect_eq "queues: root as Volcano makes it (weight 1, not reclaimable)" "1 false" \
  k get queue root -o jsonpath='{.spec.weight} {.spec.reclaimable}'
expect_eq "queues: default reclaimable" "true" k get queue default -o jsonpath='{.spec.reclaimable}'
eventually "queues: the controller opens the queue Volcano's schema stored and gives it root as parent" 30 \
  queue_is ml-queue "Open/root/"
start_component scheduler "$MUSTER" scheduler --kubeconfig "$sched_kc" --leader-elect=false \
  --scheduler-conf "$kube_root/deploy/volcano-scheduler.conf" --listen-address=127.0.0.1:0 \
  --schedule-period=500ms
trainers=volcano.sh/job-name=gang-tf-job
eventually "run: the Job created before muster came runs, both trainers together" 90 \
  pods_are "$trainers" Running 2
eventually "run: the Job is Running" 30 job_phase_is gang-tf-job Running
expect_eq "queues: the scheduler made root as Volcano's does (weight 1, not reclaimable)" "1 false" \
  k get queue root -o jsonpath='{.spec.weight} {.spec.reclaimable}'
allocated_gpus() { [ "$(k get queue ml-queue -o jsonpath='{.status.allocated.nvidia\.com/gpu}')" = 2 ]; }
eventually "queues: ml-queue's status counts the trainers' two GPUs" 30 allocated_gpus
expect_re "queues: kubectl get queue prints the shipped CRD's columns, PARENT (root, given by the controller) and ALLOCATED among them" \
  '^ml-queue +root +\{[^ ]*"nvidia.com/gpu":"2"[^ ]*\}$' k get queue ml-queue --no-headers
expect_re "queues: and with -o wide the capability" \
  '^ml-queue +root +\{[^ ]*\} +\{"cpu":"8","memory":"32Gi","nvidia.com/gpu":2\} +Open *$' \
  k get queue ml-queue -o wide --no-headers
running_counted() { [ "$(k get queue ml-queue -o jsonpath='{.status.running}')" = 1 ]; }
eventually "queues: ml-queue's status counts its Running PodGroup (written by muster's scheduler)" 30 \
  running_counted
cport=$(listen_port controller)
gauge_is() {  # gauge_is SERIES VALUE: the controller's /metrics has that line
  curl -s "http://127.0.0.1:$cport/metrics" | grep -qxF "$1 $2"
}
eventually "queues: the controller's gauge counts ml-queue's Running PodGroup, as Volcano's" 30 \
  gauge_is 'volcano_queue_pod_group_running_count{queue_name="ml-queue"}' 1

cat >"$work/tree.yaml" <<'EOF'
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: org}
spec: {weight: 1, parent: root}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: team}
spec: {weight: 1, parent: org}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: lab}
spec: {weight: 1}
EOF
expect "tree: apply org, its child team, and lab with no parent" "queue.scheduling.volcano.sh/lab created" \
  k apply -f "$work/tree.yaml"
eventually "tree: org is opened" 30 queue_is org "Open/root/"
eventually "tree: team is opened under org" 30 queue_is team "Open/org/"
eventually "tree: lab is opened and given root as parent" 30 queue_is lab "Open/root/"
# queue_command ACTION QUEUE: kubectl create -f of a Command as `vcctl queue operate` makes it.
queue_command() {
  cat >"$work/command.yaml" <<EOF
apiVersion: bus.volcano.sh/v1alpha1
kind: Command
metadata: {generateName: $2-$(tr '[:upper:]' '[:lower:]' <<<"$1")-, namespace: default}
action: $1
target: {apiVersion: scheduling.volcano.sh/v1beta1, kind: Queue, name: $2, uid: "$(k get queue "$2" -o jsonpath='{.metadata.uid}')", controller: true}
EOF
  k create -f "$work/command.yaml"
}
expect "tree: kubectl create -f a CloseQueue Command for org" "created" queue_command CloseQueue org
eventually "tree: org is Closed" 30 queue_is org "Closed/root/"
eventually "tree: and so is its child team, marked closed by its parent" 30 queue_is team "Closed/org/true"
close_recorded() {
  [ "$(k get events -A --field-selector involvedObject.name=org,reason=CloseQueue \
    -o jsonpath='{.items[*].message}')" = "Close queue succeed" ]
}
eventually "tree: CloseQueue is recorded on org, once" 30 close_recorded
expect "tree: kubectl create -f an OpenQueue Command for org" "created" queue_command OpenQueue org
eventually "tree: org is Open again" 30 queue_is org "Open/root/false"
eventually "tree: and so is team, which its closing closed" 30 queue_is team "Open/org/false"
no_commands() { [ -z "$(k get commands -A -o name 2>/dev/null)" ]; }
eventually "tree: every Command was deleted once carried out" 30 no_commands

# HyperNodes: the status.nodeCount Volcano's hypernode controller keeps, counted by muster's.
cat >"$work/hypernodes.yaml" <<EOF
apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata: {name: rack-0}
spec:
  tier: 1
  members:
  - {type: Node, selector: {labelMatch: {matchLabels: {node.kubernetes.io/instance-type: g4dn.xlarge}}}}
---
apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata: {name: spine-0}
spec:
  tier: 2
  members:
  - {type: HyperNode, selector: {exactMatch: {name: rack-0}}}
EOF
expect "hypernodes: kubectl apply -f a rack of the two GPU nodes by label, and its spine" \
  "hypernode.topology.volcano.sh/spine-0 created" k apply -f "$work/hypernodes.yaml"
hn_counts() { k get hypernodes -o jsonpath='{range .items[*]}{.metadata.name}={.status.nodeCount} {end}'; }
hn_counts_are() { [ "$(hn_counts)" = "$1" ]; }
eventually "hypernodes: the controller writes NODECOUNT, two in the rack and in its spine" 30 \
  hn_counts_are "rack-0=2 spine-0=2 "
expect_eq "rbac: no call of muster's was refused (403)" "" forbidden_calls

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
