#!/usr/bin/env bash
# End-to-end: muster up's dashboard (/ui/) in headless Chromium, driven over the DevTools protocol
# (dashboard_cdp.py, python3-websocket), while the real kubectl plays the seed's gang story on two
# simulated one-T4 nodes: a one-GPU blocker pod, then the 2-trainer gang that waits whole, then the
# blocker deleted. The page must show the blocker on one GPU and the gang waiting with the reason
# its PodGroup's condition gives, then both trainers on the two GPUs; Tab reaches the GPU cells;
# with the API server stopped a banner says the watches are down, and once it is back (same port,
# same data) the page reconnects by itself; a gang with one of its two pods bound has its GPU
# marked idle. Chromium opens the URL `muster up` prints (HTTPS, the
# token in the fragment) and trusts only the server's own certificate (its key's SPKI hash).
# Screenshots (1280x800) are left in SCREENSHOT_DIR for a person to look at.
# One PASS/FAIL line per check; the last line is "N passed, M failed". Exit 0 only when nothing
# failed, 77 (skipped) when kubectl, chromium or python3-websocket is missing.
#
# Usage: dashboard_e2e.sh MUSTER_BINARY SCREENSHOT_DIR   (KUBECTL=..., CHROMIUM=... to use others)
set -u

MUSTER=${1:?usage: dashboard_e2e.sh MUSTER_BINARY SCREENSHOT_DIR}
shots=${2:?usage: dashboard_e2e.sh MUSTER_BINARY SCREENSHOT_DIR}
here=$(cd "$(dirname "$0")" && pwd)
examples=$(cd "$here/../../examples/gpu-gang" && pwd)
# shellcheck source=e2e_lib.sh
. "$here/e2e_lib.sh"
begin_e2e
CHROMIUM=${CHROMIUM:-chromium}
# Debian's python3 with python3-websocket, whatever python3 comes first on PATH.
PYTHON=/usr/bin/python3
command -v "$CHROMIUM" >/dev/null || { echo "SKIP: $CHROMIUM not found"; exit 77; }
command -v openssl >/dev/null || { echo "SKIP: openssl not found"; exit 77; }
"$PYTHON" -c 'import websocket' 2>/dev/null || { echo "SKIP: python3-websocket not found"; exit 77; }
mkdir -p "$shots"
rm -f "$shots"/*.png

port=$("$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
up() {
  start_muster "$1" "$MUSTER" up --config "$examples/cluster.yaml" --data-dir "$work/data" \
    --listen "127.0.0.1:$port" --no-summary || exit_not_started "$1" "muster up"
}
up up
export KUBECONFIG=$muster_kubeconfig
url=$(sed -n 's/^dashboard: //p' "$work/up.out")
expect_re "muster up prints the dashboard's URL with the token in its fragment" \
  "^https://127\.0\.0\.1:$port/ui/#token=[0-9a-f]+$" echo "$url"

# Only this server's certificate is trusted, not any.
spki=$(openssl x509 -in "$work/data/server.crt" -pubkey -noout | openssl pkey -pubin -outform der |
  openssl dgst -sha256 -binary | base64)
start_chromium --ignore-certificate-errors-spki-list="$spki"

cdp open "$url"
eventually "the page goes live and shows two nodes with one free GPU each" 30 \
  page "s['live'] and s['gpus'] == {'gpu-node-0/0': 'free', 'gpu-node-1/0': 'free'}"

expect "create the queue" "queue.scheduling.volcano.sh/ml-queue created" \
  k apply -f "$examples/volcano-queue.yaml"
expect "create the blocker" "pod/blocker created" k apply -f "$examples/gpu-blocker-pod.yaml"
eventually "the blocker runs" 30 phase_is pod/blocker Running
expect "create the gang" "job.batch.volcano.sh/gang-tf-job created" \
  k apply -f "$examples/tensorflow-job.yaml"
reason() {  # the message of the gang's PodGroup's Unschedulable condition
  k get podgroup -o jsonpath='{range .items[*]}{range .status.conditions[?(@.type=="Unschedulable")]}{.message}{end}{end}'
}
eventually "the gang's PodGroup says why it waits" 30 test -n "$(reason)"
eventually "the page shows the blocker on one GPU, the other free" 30 \
  page "sorted(s['gpus'].values()) == ['default/blocker', 'free']"
why=$(reason)
export WHY=$why
eventually "the page shows the gang waiting with its PodGroup's reason" 30 \
  page "s['pending'].get('default/gang-tf-job', {}).get('reason') == env['WHY'] and s['pending']['default/gang-tf-job']['queue'] == 'ml-queue'"
# The estimate is the scheduler's to write (`muster explain`); whatever the PodGroup holds is shown.
# The scheduler writes its answer once a second cycle has left the gang waiting; then the
# annotation is set by hand, and the scheduler, whose answer has not moved, leaves it.
pg=$(k get podgroup -o name)
has_wait_reason() {
  [ -n "$(k get "$pg" -o jsonpath='{.metadata.annotations.muster\.dev/wait-reason}')" ]
}
eventually "the scheduler writes the gang's wait reason" 30 has_wait_reason
expect "annotate the gang's PodGroup with an estimated start" "annotated" \
  k annotate --overwrite "$pg" muster.dev/estimated-start=2030-01-02T03:04:05Z
estimate() { k get "$pg" -o jsonpath='{.metadata.annotations.muster\.dev/estimated-start}'; }
shows_estimate() {
  START=$(estimate) page "s['pending']['default/gang-tf-job']['startAt'] == env['START'] != ''"
}
eventually "the page shows the PodGroup's estimated start" 30 shows_estimate
cdp shot "$shots/1-gang-waits.png"
white='rgb(255, 255, 255)'
expect_eq "the blocker's GPU is coloured, the free one is white" "" \
  page "all((c != '$white') == (s['gpus'][g] != 'free') for g, c in s['colours'].items())"
expect_re "the summary counts the waiting gang" "1/2 GPUs free . 1 gang waiting" \
  cdp state
eventually "the header shows the scheduler's cycle latency" 10 \
  page "__import__('re').fullmatch(r'scheduler cycle [0-9.]+ ms \(p50 [0-9.]+, p99 [0-9.]+ ms over [1-9][0-9]* cycles\)', s['cycle'])"
expect_eq "without the token /ui/status is refused" "401" \
  curl -sk -o /dev/null -w '%{http_code}' "${url%%#*}status"

expect "delete the blocker" 'pod "blocker" deleted' k delete pod blocker --wait=true
eventually "the page shows both trainers on the two GPUs and no gang waiting" 60 \
  page "sorted(s['gpus'].values()) == ['default/gang-tf-job-trainer-0', 'default/gang-tf-job-trainer-1'] and s['pending'] == {} and s['partial'] == []"
cdp shot "$shots/2-gang-runs.png"
expect_eq "both trainers' GPUs have their job's one colour" "" \
  page "s['colours']['gpu-node-0/0'] == s['colours']['gpu-node-1/0'] != '$white'"
expect_re "Tab reaches the first GPU, named with its pod for a screen reader" \
  "^GPU 0 of gpu-node-0: default/gang-tf-job-trainer-[01], job default/gang-tf-job$" cdp keys 2

stop_process
eventually "with the API server stopped, a banner says the watches are down" 30 \
  page "not s['live'] and s['banner'].startswith('Live updates are down, reconnecting')"
cdp shot "$shots/3-watch-down.png"
up up-again
eventually "the server back, the page reconnects by itself: banner gone, trainers shown" 60 \
  page "s['live'] and s['banner'] == '' and sorted(s['gpus'].values()) == ['default/gang-tf-job-trainer-0', 'default/gang-tf-job-trainer-1']"

# A gang of 2 with one pod bound (placed by hand, as a crashed or foreign binder may leave it):
# its GPU is idle and marked.
expect "delete the gang" "deleted" k delete vcjob gang-tf-job --wait=true
eventually "its trainers are gone" 60 no_pods volcano.sh/job-name=gang-tf-job
cat >"$work/half.yaml" <<'YAML'
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: half}
spec: {minMember: 2, queue: ml-queue}
---
apiVersion: v1
kind: Pod
metadata:
  name: half-0
  annotations: {scheduling.k8s.io/group-name: half}
spec:
  nodeName: gpu-node-1
  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
  containers:
    - name: main
      image: busybox
      resources: {limits: {nvidia.com/gpu: 1}}
YAML
expect "create a gang of 2 with one pod bound by hand" "pod/half-0 created" k apply -f "$work/half.yaml"
eventually "the page marks the GPU held by the partly bound gang" 30 \
  page "s['gpus']['gpu-node-1/0'] == 'default/half-0' and s['partial'] == ['gpu-node-1/0'] and 'partly bound' in s['summary']"
cdp shot "$shots/4-partial-gang.png"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
