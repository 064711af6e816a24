#!/usr/bin/env bash
# jobset/controller: JobSet's own controller (sigs.k8s.io/jobset, the version tests/jobset/go.mod
# pins, built from the Go module proxy into BUILD_DIR/bin and rebuilt only when go.mod, go.sum or
# the Go toolchain change) runs unchanged against `muster up`: its CRD applied with kubectl from the
# module, the controller started on muster's kubeconfig, and a JobSet of 2 replicated Jobs x 2 pods
# whose pods name muster's scheduler and one PodGroup of 4 runs to completion, its four pods bound
# together (gang-scheduled) on four one-GPU simulated nodes, and waits whole while a GPU is taken.
# JobSet's webhooks are not called (muster's API server calls no admission webhooks): the JobSet
# states what its defaulting webhook would fill in (success and startup policy, network, Indexed
# completion), and the structural defaults come from the CRD. One PASS/FAIL line per check; the last line is
# "N passed, M failed". Exit 0 only when nothing failed, 77 (skipped) when kubectl is not installed.
#
# Usage: jobset_e2e.sh MUSTER_BINARY BUILD_DIR
set -u
MUSTER=${1:?usage: jobset_e2e.sh MUSTER_BINARY BUILD_DIR}
build=${2:?usage: jobset_e2e.sh MUSTER_BINARY BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../e2e/e2e_lib.sh
. "$here/../e2e/e2e_lib.sh"
begin_e2e

if ! command -v go >/dev/null 2>&1; then
  echo "FAIL go is not installed (Go 1.26 builds JobSet's controller)"
  echo "$pass passed, $((fail + 1)) failed"
  exit 1
fi
controller=$build/bin/jobset-controller
stamp=$( (go version && cd "$here" && cat go.mod go.sum) | sha256sum | cut -d' ' -f1)
if [ ! -x "$controller" ] || [ "$(cat "$controller.stamp" 2>/dev/null)" != "$stamp" ]; then
  mkdir -p "$build/bin"
  rm -f "$controller.stamp"
  started=$SECONDS
  if ! (cd "$here" && go build -mod=readonly -buildvcs=false -o "$controller" sigs.k8s.io/jobset) \
    >"$work/go-build.log" 2>&1; then
    echo "FAIL go build of sigs.k8s.io/jobset into $build/bin:"
    sed 's/^/    /' "$work/go-build.log"
    echo "$pass passed, $((fail + 1)) failed"
    exit 1
  fi
  echo "$stamp" >"$controller.stamp"
  echo "built $controller in $((SECONDS - started)) s"
fi
module=$(cd "$here" && go list -mod=readonly -m -f '{{.Dir}}' sigs.k8s.io/jobset)
crd=$module/config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml

cat >"$work/cluster.yaml" <<'YAML'
nodePools:
  - name: gpu
    count: 4
    allocatable: {cpu: "4", memory: 16Gi, pods: "20"}
    gpu: {count: 1, model: Tesla-T4, memory: 15360Mi}
YAML
start_muster up "$MUSTER" up --config "$work/cluster.yaml" --data-dir "$work/data" \
  --listen 127.0.0.1:0 --no-summary || exit_not_started up "muster up"
up_pid=$muster_pid
export KUBECONFIG=$muster_kubeconfig

expect "the JobSet CRD applies" "jobsets.jobset.x-k8s.io" k apply --server-side -f "$crd"
wait_for 30 sh -c "$KUBECTL --cache-dir '$work/cache' get jobsets >/dev/null 2>&1"

# The controller as its own process: no leader election, no metrics, health on a port of its own,
# its webhook server (never called here) on loopback with a certificate made for it.
mkdir -p "$work/certs"
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=jobset-webhook" \
  -keyout "$work/certs/tls.key" -out "$work/certs/tls.crt" >/dev/null 2>&1
cat >"$work/jobset-config.yaml" <<YAML
apiVersion: config.jobset.x-k8s.io/v1alpha1
kind: Configuration
leaderElection: {leaderElect: false}
internalCertManagement: {enable: false}
metrics: {bindAddress: "0"}
health: {healthProbeBindAddress: "127.0.0.1:0"}
webhook: {host: 127.0.0.1, port: 0, certDir: "$work/certs"}
YAML
"$controller" --config "$work/jobset-config.yaml" --kubeconfig "$KUBECONFIG" \
  >"$work/jobset-controller.log" 2>&1 &
jobset_pid=$!
stop_at_exit "$jobset_pid"

# A pod that holds one GPU: the gang of four must wait whole while it runs.
cat >"$work/holder.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: holder}
spec:
  containers:
    - name: main
      image: busybox
      resources: {limits: {nvidia.com/gpu: 1}}
YAML
expect "a pod takes one GPU" "pod/holder created" k apply -f "$work/holder.yaml"
wait_for 30 phase_is pod/holder Running

cat >"$work/gang.yaml" <<'YAML'
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: train-gang}
spec: {minMember: 4}
---
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: train}
spec:
  # What JobSet's defaulting webhook would fill in (muster's API server calls no webhooks).
  successPolicy: {operator: All}
  startupPolicy: {startupPolicyOrder: AnyOrder}
  network: {enableDNSHostnames: true, publishNotReadyAddresses: true}
  replicatedJobs:
    - name: workers
      replicas: 2
      template:
        spec:
          completionMode: Indexed
          parallelism: 2
          completions: 2
          backoffLimit: 0
          template:
            metadata:
              annotations:
                scheduling.k8s.io/group-name: train-gang
                muster.dev/run-seconds: "3"
            spec:
              schedulerName: volcano
              restartPolicy: Never
              containers:
                - name: main
                  image: busybox
                  resources: {limits: {nvidia.com/gpu: 1}}
YAML
expect "the JobSet and its PodGroup apply" "jobset.jobset.x-k8s.io/train created" \
  k apply -f "$work/gang.yaml"
child_jobs() { [ "$(k get jobs -l jobset.sigs.k8s.io/jobset-name=train -o name | wc -l)" = "$1" ]; }
if wait_for 120 child_jobs 2; then
  ok "JobSet's controller creates its 2 Jobs"
else
  bad "JobSet's controller creates its 2 Jobs" "2 Jobs" \
    "$(k get jobs 2>&1; tail -20 "$work/jobset-controller.log")"
fi
four_pods() { [ "$(k get pods -l jobset.sigs.k8s.io/jobset-name=train -o name | wc -l)" = "4" ]; }
if wait_for 120 four_pods; then
  ok "its Jobs create the 4 pods"
else
  bad "its Jobs create the 4 pods" "4 pods" \
    "$(k get jobs,pods 2>&1; tail -20 "$work/jobset-controller.log")"
fi
bound() { k get pods -l jobset.sigs.k8s.io/jobset-name=train \
  -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -c .; }
sleep 3
# Three GPUs are free: pods placed one by one would take them; the gang of four waits whole.
expect_eq "while a GPU is taken, none of the gang is bound" "0" bound

expect "the holder goes" "deleted" k delete pod holder --wait=true
if wait_for 60 sh -c "[ \"\$($KUBECTL --cache-dir '$work/cache' get pods -l jobset.sigs.k8s.io/jobset-name=train -o jsonpath='{range .items[*]}{.spec.nodeName}{\"\\n\"}{end}' | grep -c .)\" = 4 ]"; then
  ok "then the four pods are bound together"
else
  bad "then the four pods are bound together" "4 bound" "$(k get pods -o wide 2>&1)"
fi
expect_eq "each on a node of its own" "4" \
  sh -c "$KUBECTL --cache-dir '$work/cache' get pods -l jobset.sigs.k8s.io/jobset-name=train -o jsonpath='{range .items[*]}{.spec.nodeName}{\"\\n\"}{end}' | sort -u | grep -c ."
completed() {
  [ "$(k get jobset train -o jsonpath='{.status.conditions[?(@.type=="Completed")].status}')" = "True" ]
}
if wait_for 90 completed; then
  ok "the JobSet runs to completion (its Completed condition, set by JobSet's controller)"
else
  bad "the JobSet runs to completion" "Completed=True" \
    "$(k get jobset train -o yaml 2>&1 | tail -30; k get jobs,pods 2>&1; tail -20 "$work/jobset-controller.log")"
fi

stop_process "$jobset_pid" 15
stop_process "$up_pid" 15
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
