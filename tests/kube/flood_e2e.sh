#!/usr/bin/env bash
# kube/flood: muster beside kube-scheduler on one real control plane. 1,000 plain pods (no
# schedulerName: kube-scheduler's, 500m and 1Gi each) and 125 Volcano gangs of 8 one-GPU pods
# (muster's, 1 CPU and 2Gi each) are created together onto 100 simulated nodes of 16 CPUs and 12
# GPUs, which they fill to 15 CPUs each. Checked: every pod is bound, kube-scheduler bound the plain
# ones, and no node ever runs more than its allocatable in CPU, memory, GPUs or pods
# (node_sampler.py, from the API, as often as a full list of 2,000 pods allows); no call of
# muster's is refused. Two schedulers can each bind onto one node from a cache that does not yet
# hold the other's pod: muster rechecks its gangs' nodes against the binds watched during its cycle
# before binding (scheduler.cc), and a node refuses what no longer fits as a kubelet does
# (OutOfcpu); the run reports how often either happened.
#
# Usage: flood_e2e.sh MUSTER_BINARY
set -u
MUSTER=${1:?usage: flood_e2e.sh MUSTER_BINARY}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=kube_lib.sh
. "$here/kube_lib.sh"
begin_kube
install_muster
sched_kc=$(sa_kubeconfig muster-scheduler) && ctrl_kc=$(sa_kubeconfig muster-controller) ||
  exit_not_started control-plane "ServiceAccount tokens"

start_component nodes "$MUSTER" nodes --config "$here/manifests/flood-nodes.yaml" \
  --kubeconfig "$KUBECONFIG" --data-dir "$work/nodes" --lease-renew-seconds 10 --no-events
eventually "nodes: 100 nodes Ready" 120 \
  sh -c "[ \$($KUBECTL get nodes --no-headers 2>/dev/null | grep -c ' Ready ') = 100 ]"
start_component controller "$MUSTER" controller --kubeconfig "$ctrl_kc" --leader-elect=false \
  --listen-address=127.0.0.1:0
start_component scheduler "$MUSTER" scheduler --kubeconfig "$sched_kc" --leader-elect=false \
  --scheduler-conf "$kube_root/deploy/volcano-scheduler.conf" --listen-address=127.0.0.1:0
eventually "scheduler and controller running" 60 sh -c \
  "grep -q 'scheduler running' '$work/scheduler.out' && grep -q 'controller running' '$work/controller.out'"

for i in $(seq -w 1 1000); do cat <<POD
apiVersion: v1
kind: Pod
metadata: {name: plain-$i, labels: {app: plain}}
spec:
  containers: [{name: c, image: busybox, resources: {requests: {cpu: 500m, memory: 1Gi}}}]
---
POD
done >"$work/plain.yaml"
for i in $(seq -w 1 125); do cat <<JOB
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: gang-$i}
spec:
  minAvailable: 8
  schedulerName: volcano
  tasks:
    - replicas: 8
      name: worker
      template:
        spec:
          containers:
            - name: worker
              image: busybox
              resources: {requests: {cpu: "1", memory: 2Gi}, limits: {nvidia.com/gpu: 1}}
---
JOB
done >"$work/gangs.yaml"

"$here/node_sampler.py" "$KUBECTL" "$work/samples.jsonl" "$work/stop-sampler" 2>"$work/sampler.err" &
stop_at_exit "$!"
k create -f "$work/gangs.yaml" >/dev/null 2>&1 &
gangs_pid=$!
k create -f "$work/plain.yaml" >/dev/null 2>&1
wait "$gangs_pid"
ok "created 1,000 plain pods and 125 gangs of 8"
all_bound() {
  [ "$(k get pods --no-headers -o custom-columns=N:.spec.nodeName 2>/dev/null | grep -vc '<none>')" = 2000 ]
}
eventually "every one of the 2,000 pods is bound" 300 all_bound
sleep 3
touch "$work/stop-sampler"
sleep 3
verdict=$(/usr/bin/python3 - "$work/samples.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
samples = [r for r in rows if "over" in r]
over = sorted({o for r in samples for o in r["over"]})
raced = sum(1 for r in samples if r["over_bound"])
print("samples=%d max-bound=%d refused-by-node=%d samples-over-bound=%d over=%s" % (
    len(samples), max([r["bound"] for r in samples] or [0]),
    max([r["refused"] for r in samples] or [0]), raced, "; ".join(over[:10]) or "none"))
PY
)
if [ "$(grep -c '"over"' "$work/samples.jsonl")" -lt 10 ]; then
  bad "the sampler saw the flood" "at least 10 samples" "$(head -c 600 "$work/samples.jsonl"; cat "$work/sampler.err")"
elif [ "${verdict%over=none}" != "$verdict" ]; then
  ok "no node ever ran more than its allocatable ($verdict)"
else
  bad "no node ever ran more than its allocatable" "over=none" "$verdict"
fi
ok "muster held back $(grep -c 'not binding gang' "$work/scheduler.out") gang(s) whose node kube-scheduler filled during the cycle"
expect_eq "kube-scheduler bound the plain pods" "1000" sh -c \
  "$KUBECTL get events -A --field-selector reason=Scheduled -o jsonpath='{range .items[*]}{.source.component}{.reportingComponent}{\" \"}{.involvedObject.name}{\"\\n\"}{end}' | grep -c 'default-scheduler plain-'"
expect_eq "rbac: no call of muster's was refused (403)" "" forbidden_calls

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
