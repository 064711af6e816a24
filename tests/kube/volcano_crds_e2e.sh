#!/usr/bin/env bash
# kube/volcano-crds: muster installed on a cluster that runs Volcano already. Volcano v1.15.1's own
# CRDs (tests/kube/manifests/volcano-v1.15.1, as Volcano's installer creates them) hold the seed's
# Queue and gang Job before muster comes; `kubectl apply -k deploy/` must then install muster over
# them (its CRDs replace Volcano's schemas with muster's, which accept the same objects), keep the
# Job and the Queue as they were, and muster's scheduler and controller must run that Job; the
# scheduler makes the root queue, and kubectl get queue prints the CRD's columns.
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
expect_re "queues: kubectl get queue prints the shipped CRD's columns, ALLOCATED among them" \
  '^ml-queue +\{[^ ]*"nvidia.com/gpu":"2"[^ ]*\}$' k get queue ml-queue --no-headers
expect_re "queues: and with -o wide the capability" \
  '^ml-queue +\{[^ ]*\} +\{"cpu":"8","memory":"32Gi","nvidia.com/gpu":2\} *$' \
  k get queue ml-queue -o wide --no-headers
expect_eq "rbac: no call of muster's was refused (403)" "" forbidden_calls

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
