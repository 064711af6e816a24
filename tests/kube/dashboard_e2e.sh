#!/usr/bin/env bash
# kube/dashboard: the dashboard on a cluster. A real control plane (scripts/kube-control-plane,
# with kube-scheduler), muster installed with `kubectl apply -k deploy/`, the seed's two GPU nodes
# from `muster nodes`, the controller and `muster scheduler --dashboard-address` as processes with
# the deploy's ServiceAccounts. The scheduler prints the page's URL once; its server gives the
# page's files without a token, refuses the rest without it (401), forwards only lists and
# watches of the five kinds the page reads (a POST 405, Secrets 404). Headless Chromium (driven
# over the DevTools protocol by tests/e2e/dashboard_cdp.py) opens the URL while the real kubectl
# plays the seed's story: the page shows the blocker on one GPU and the gang waiting with its
# PodGroup's reason and the scheduler's cycle latency, then both trainers on the two GPUs; with
# the scheduler stopped, its banner says the watches are down. Every forwarded call goes through
# the scheduler's RBAC: none may be refused (403, from the audit log). Screenshots (1280x800) are
# left in SCREENSHOT_DIR. Also: an address that does not parse, or a port taken, exits 2 naming it.
# About 25 s.
# One PASS/FAIL line per check; the last line is "N passed, M failed". Exit 0 only when nothing
# failed, 77 (skipped) when chromium or python3-websocket is missing.
#
# Usage: dashboard_e2e.sh MUSTER_BINARY SCREENSHOT_DIR   (CHROMIUM=... to use another)
set -u
MUSTER=${1:?usage: dashboard_e2e.sh MUSTER_BINARY SCREENSHOT_DIR}
shots=${2:?usage: dashboard_e2e.sh MUSTER_BINARY SCREENSHOT_DIR}
here=$(cd "$(dirname "$0")" && pwd)
CHROMIUM=${CHROMIUM:-chromium}
PYTHON=/usr/bin/python3
command -v "$CHROMIUM" >/dev/null || { echo "SKIP: $CHROMIUM not found"; exit 77; }
"$PYTHON" -c 'import websocket' 2>/dev/null || { echo "SKIP: python3-websocket not found"; exit 77; }
# shellcheck source=kube_lib.sh
. "$here/kube_lib.sh"
begin_kube
demo=$kube_root/examples/gpu-gang
mkdir -p "$shots"
rm -f "$shots"/*.png

install_muster
sched_kc=$(sa_kubeconfig muster-scheduler) && ctrl_kc=$(sa_kubeconfig muster-controller) ||
  exit_not_started control-plane "ServiceAccount tokens"
start_component nodes "$MUSTER" nodes --config "$demo/cluster.yaml" --kubeconfig "$KUBECONFIG" \
  --data-dir "$work/nodes" --lease-renew-seconds 2
eventually "nodes: the seed's two GPU nodes are Ready" 60 \
  k wait --for=condition=Ready node/gpu-node-0 node/gpu-node-1 --timeout=2s
start_component controller "$MUSTER" controller --kubeconfig "$ctrl_kc" --leader-elect=false \
  --listen-address=127.0.0.1:0
start_component scheduler "$MUSTER" scheduler --kubeconfig "$sched_kc" \
  --scheduler-conf "$kube_root/deploy/volcano-scheduler.conf" --leader-elect=false \
  --listen-address=127.0.0.1:0 --schedule-period=500ms --dashboard-address=127.0.0.1:0
scheduler_pid=$component_pid
eventually "scheduler: prints the dashboard's URL" 30 wait_line scheduler 0 '^dashboard: '
url=$(sed -n 's/^dashboard: //p' "$work/scheduler.out" | head -1)
expect_re "scheduler: the URL is plain HTTP on loopback with a 64-digit token in its fragment" \
  '^http://127\.0\.0\.1:[0-9]+/ui/#token=[0-9a-f]{64}$' echo "$url"
base=${url%%/ui/*}
token=${url##*#token=}
# exits_with RC TEXT CMD...: CMD exits with RC and says TEXT.
exits_with() {
  local want=$1 text=$2 out rc
  shift 2
  out=$(timeout 20 "$@" 2>&1)
  rc=$?
  [ "$rc" = "$want" ] && grep -qF -- "$text" <<<"$out" || { echo "exit $rc: $out"; return 1; }
}
expect_eq "bad input: an address that does not parse is named, exit 2" "" \
  exits_with 2 '--dashboard-address: address "nowhere": want host:port' \
  "$MUSTER" scheduler --kubeconfig "$sched_kc" --leader-elect=false --listen-address=127.0.0.1:0 \
  --dashboard-address nowhere
expect_eq "bad input: a port already taken is named, exit 2" "" \
  exits_with 2 "--dashboard-address: " "$MUSTER" scheduler --kubeconfig "$sched_kc" \
  --leader-elect=false --listen-address=127.0.0.1:0 --dashboard-address "${base#http://}"
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
# codes [CURL_ARGS... --] PATH...: the status of each path, space-separated.
codes() {
  local args=() p out=()
  while [ "$1" != -- ]; do args+=("$1"); shift; done
  shift
  for p in "$@"; do out+=("$(code "${args[@]}" "$base$p")"); done
  echo "${out[*]}"
}
expect_eq "dashboard: the page's files need no token" "200 200 200" \
  codes -- /ui/ /ui/dashboard.js /ui/dashboard.css
expect_eq "dashboard: /ui/status without the token is refused" "401" code "$base/ui/status"
expect_eq "dashboard: the cluster's pods without the token are refused" "401" code "$base/api/v1/pods"
expect_eq "dashboard: ... and with another token" "401" \
  code -H "Authorization: Bearer ${token//?/0}" "$base/api/v1/pods"
auth=(-H "Authorization: Bearer $token")
expect_eq "dashboard: a POST is refused" "405" code -X POST "${auth[@]}" -d '{}' "$base/api/v1/pods"
expect_eq "dashboard: Secrets are not forwarded" "404" code "${auth[@]}" "$base/api/v1/secrets"
expect_eq "dashboard: nor one namespace's pods" "404" \
  code "${auth[@]}" "$base/api/v1/namespaces/default/pods"
expect_eq "dashboard: the five kinds the page reads are listed through the scheduler's RBAC" \
  "200 200 200 200 200" codes "${auth[@]}" -- /api/v1/nodes /api/v1/pods /api/v1/events \
  /apis/scheduling.volcano.sh/v1beta1/podgroups /apis/scheduling.volcano.sh/v1beta1/queues

start_chromium

cdp open "$url"
eventually "page: goes live and shows the two nodes with one free GPU each" 30 \
  page "s['live'] and s['gpus'] == {'gpu-node-0/0': 'free', 'gpu-node-1/0': 'free'}"

expect "demo: apply the queue" "queue.scheduling.volcano.sh/ml-queue created" \
  k apply -f "$demo/volcano-queue.yaml"
expect "demo: apply the blocker with its limit" "pod/blocker created" \
  k apply -f "$here/manifests/gpu-blocker-pod.yaml"
eventually "demo: kube-scheduler places the blocker and it runs" 60 phase_is pod/blocker Running
expect "demo: apply the gang job" "job.batch.volcano.sh/gang-tf-job created" \
  k apply -f "$demo/tensorflow-job.yaml"
reason() {  # the message of the gang's PodGroup's Unschedulable condition
  k get podgroup -o jsonpath='{range .items[*]}{range .status.conditions[?(@.type=="Unschedulable")]}{.message}{end}{end}'
}
has_reason() { [ -n "$(reason)" ]; }
eventually "demo: the gang's PodGroup says why it waits" 30 has_reason
eventually "page: the blocker on one GPU, the other free" 30 \
  page "sorted(s['gpus'].values()) == ['default/blocker', 'free']"
WHY=$(reason)
export WHY
eventually "page: the gang waiting with its PodGroup's reason, in its queue" 30 \
  page "env['WHY'] != '' and s['pending'].get('default/gang-tf-job', {}).get('reason') == env['WHY'] and s['pending']['default/gang-tf-job']['queue'] == 'ml-queue'"
eventually "page: the header shows this scheduler's cycle latency" 10 \
  page "__import__('re').fullmatch(r'scheduler cycle [0-9.]+ ms \(p50 [0-9.]+, p99 [0-9.]+ ms over [1-9][0-9]* cycles\)', s['cycle'])"
cdp shot "$shots/1-gang-waits.png"

expect "demo: delete the blocker" 'pod "blocker" deleted' k delete pod blocker --wait=true
eventually "page: both trainers on the two GPUs, no gang waiting" 60 \
  page "sorted(s['gpus'].values()) == ['default/gang-tf-job-trainer-0', 'default/gang-tf-job-trainer-1'] and s['pending'] == {}"
cdp shot "$shots/2-gang-runs.png"
expect_eq "rbac: no call of muster's was refused (403)" "" forbidden_calls

stop_process "$scheduler_pid" 15
eventually "page: with the scheduler stopped, a banner says the watches are down" 30 \
  page "not s['live'] and s['banner'].startswith('Live updates are down, reconnecting')"
cdp shot "$shots/3-scheduler-gone.png"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
