#!/usr/bin/env bash
# The seed's GPU gang story, live: `muster up` runs a two-node GPU cluster (simulated T4 nodes
# from examples/gpu-gang/cluster.yaml) and the real kubectl replays the seed article:
#   1. the queue and the gang job are applied   -> both trainers start together;
#   2. a blocker pod takes one GPU, the job is applied again -> the whole gang waits, no trainer
#      holds a GPU;
#   3. the blocker is deleted                   -> both trainers start together.
# Every step is checked; the demo exits non-zero if muster does not behave as described.
# MUSTER overrides the binary (default: the release build); KEEP=1 leaves the data dir.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
muster=${MUSTER:-$root/build/release/src/cmd/muster}
case "$muster" in /*) ;; *) muster="$PWD/$muster" ;; esac
cd "$root"
ex=examples/gpu-gang

if [ ! -x "$muster" ]; then
  echo "demo: $muster is not built; run \`make demo\` (or \`make build\`) first" >&2
  exit 1
fi
command -v kubectl >/dev/null || { echo "demo: kubectl is not installed (scripts/install-deps installs it)" >&2; exit 1; }

data=$(mktemp -d /tmp/muster-demo.XXXXXX)
log=$data/muster-up.log
pid=
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -INT "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  if [ "${KEEP:-0}" = 1 ]; then echo "demo: data kept in $data"; else rm -rf "$data"; fi
}
trap cleanup EXIT

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }
fail() { echo "demo: FAILED: $*" >&2; echo "--- muster up log (last 30 lines)" >&2; tail -n 30 "$log" >&2; exit 1; }

trainers_running() {
  kubectl get pods -l volcano.sh/job-name=gang-tf-job \
    -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' 2>/dev/null | grep -c '^Running$' || true
}
trainers_bound() {
  kubectl get pods -l volcano.sh/job-name=gang-tf-job \
    -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' 2>/dev/null | grep -c . || true
}
wait_trainers_running() {
  for _ in $(seq 300); do
    [ "$(trainers_running)" = 2 ] && return 0
    sleep 0.1
  done
  fail "the two trainers did not both reach Running"
}

say "Starting muster up: API server, scheduler, job controller and two simulated g4dn.xlarge nodes"
echo "\$ muster up --config $ex/cluster.yaml --data-dir $data --listen 127.0.0.1:0 --no-summary"
"$muster" up --config "$ex/cluster.yaml" --data-dir "$data" --listen 127.0.0.1:0 --no-summary >"$log" 2>&1 &
pid=$!
for _ in $(seq 300); do
  grep -q '^export KUBECONFIG=' "$log" && break
  kill -0 "$pid" 2>/dev/null || fail "muster up exited"
  sleep 0.1
done
export KUBECONFIG=$data/kubeconfig
grep '^export KUBECONFIG=' "$log"
run kubectl wait --for=condition=Ready node --all --timeout=60s >/dev/null
run kubectl get nodes -L node.kubernetes.io/instance-type,nvidia.com/gpu.product

say "1. Apply the queue and the gang job (minAvailable: 2): both trainers start together"
run kubectl apply -f "$ex/volcano-queue.yaml"
run kubectl apply -f "$ex/tensorflow-job.yaml"
wait_trainers_running
run kubectl get pods -o wide
run kubectl get vcjob,podgroup

say "2. A blocker pod takes one of the two GPUs; the job is applied again"
run kubectl delete -f "$ex/tensorflow-job.yaml" --wait=true
for _ in $(seq 300); do
  [ -z "$(kubectl get pods -l volcano.sh/job-name=gang-tf-job -o name)" ] && break
  sleep 0.1
done
run kubectl apply -f "$ex/gpu-blocker-pod.yaml"
run kubectl wait --for=jsonpath='{.status.phase}'=Running pod/blocker --timeout=60s >/dev/null
run kubectl apply -f "$ex/tensorflow-job.yaml"
sleep 3   # several scheduling cycles: the gang must still be waiting, whole
run kubectl get vcjob,podgroup,pods -o wide
[ "$(trainers_bound)" = 0 ] || fail "a trainer was placed while the blocker holds a GPU"
echo
echo "Why? The job waits whole in its queue: Volcano's enqueue admits a PodGroup only when its"
echo "minResources (2 GPUs) fit, and its pods are created only then, so none holds a GPU idle:"
pg=$(kubectl get podgroup -o name | head -n 1)
run kubectl describe "$pg" | sed -n '/Events:/,$p' | head -n 6
run kubectl describe vcjob gang-tf-job | sed -n '/Events:/,$p' | head -n 6

say "3. Delete the blocker: both trainers start together"
run kubectl delete pod blocker --wait=true
wait_trainers_running
run kubectl get pods -o wide
run kubectl get vcjob

say "Stopping muster"
kill -INT "$pid"
wait "$pid" || fail "muster up did not stop cleanly"
pid=
echo
echo "demo: the gang ran whole or not at all, as the seed describes"
