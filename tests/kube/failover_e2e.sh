#!/usr/bin/env bash
# kube/failover: two scheduler and two controller replicas (leader-elected, the deploy's
# ServiceAccounts) on a real control plane while 100 gangs of 4 one-GPU pods are placed on 120
# GPUs in waves (each pod runs 10 s), and the leaders are SIGKILLed twice:
#   1. the scheduler leader kills itself in the middle of a gang (--fault-kill-after-binds), the
#      controller leader is SIGKILLed at the same moment, and plain pods (kube-scheduler's) take
#      every GPU left before the standby can lead, so that a gang left half-bound cannot be
#      completed as it was placed: it must be undone and placed again whole;
#   2. the next scheduler leader kills itself mid-gang too; a restarted replica takes over.
# Checked, from the API sampled every second (gang_sampler.py) and the components' logs: each
# standby leads within the lease duration (plus one retry) of its leader's death; no pod is ever
# bound to a second node; no gang stays partly bound longer than one cycle after a scheduler
# leads; every Job Completes; no call of muster's is refused. With MUSTER_NO_GANG_REPAIR=1 the
# schedulers run with --no-gang-repair and the partly-bound check fails.
#
# Usage: failover_e2e.sh MUSTER_BINARY
set -u
MUSTER=${1:?usage: failover_e2e.sh MUSTER_BINARY}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=kube_lib.sh
. "$here/kube_lib.sh"
begin_kube
install_muster
sched_kc=$(sa_kubeconfig muster-scheduler) && ctrl_kc=$(sa_kubeconfig muster-controller) ||
  exit_not_started control-plane "ServiceAccount tokens"

lease=(--leader-elect=true --leader-elect-resource-namespace=muster-system
       --leader-elect-lease-duration=4s --leader-elect-renew-deadline=3s --leader-elect-retry-period=500ms)
# Seconds from a leader's death to its standby leading: the lease (4 s) from the standby's last
# sight of a renewal, one jittered retry (0.6 s), and up to 2 s for the test to notice on a
# loaded 2-core machine.
lease_limit=7
repair=()
[ "${MUSTER_NO_GANG_REPAIR:-0}" = 1 ] && repair=(--no-gang-repair)
now() { date +%s.%N; }

start_component nodes "$MUSTER" nodes --config "$here/manifests/failover-nodes.yaml" \
  --kubeconfig "$KUBECONFIG" --data-dir "$work/nodes" --lease-renew-seconds 5 --no-events
eventually "nodes: 30 four-GPU nodes Ready" 90 \
  sh -c "[ \$($KUBECTL get nodes --no-headers 2>/dev/null | grep -c ' Ready ') = 30 ]"

scheduler() {  # scheduler NAME EXTRA...: a scheduler replica
  local name=$1
  shift
  start_component "$name" "$MUSTER" scheduler --kubeconfig "$sched_kc" \
    --scheduler-conf "$kube_root/deploy/volcano-scheduler.conf" --listen-address=127.0.0.1:0 \
    "${lease[@]}" "${repair[@]}" "$@"
}
controller() {
  start_component "$1" "$MUSTER" controller --kubeconfig "$ctrl_kc" --listen-address=127.0.0.1:0 \
    "${lease[@]}"
}
controller c1; c1=$component_pid
eventually "controller c1 leads" 60 wait_line c1 1 'became leader'
controller c2; c2=$component_pid
scheduler s1 --fault-kill-after-binds=37; s1=$component_pid
eventually "scheduler s1 leads" 60 wait_line s1 1 'became leader'
scheduler s2 --fault-kill-after-binds=150; s2=$component_pid
eventually "standbys s2 and c2 stand by" 30 sh -c \
  "grep -q 'standing by' '$work/s2.err' && grep -q 'standing by' '$work/c2.err'"

touch "$work/takeovers"
"$here/gang_sampler.py" "$KUBECTL" "$work/samples.jsonl" "$work/stop-sampler" 2>"$work/sampler.err" &
stop_at_exit "$!"

jobs=$work/jobs.yaml
for i in $(seq -w 1 100); do cat <<JOB
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: gang-$i}
spec:
  minAvailable: 4
  schedulerName: volcano
  tasks:
    - replicas: 4
      name: worker
      template:
        metadata:
          annotations: {muster.dev/run-seconds: "10"}
        spec:
          restartPolicy: Never
          tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
          containers:
            - name: worker
              image: busybox
              resources: {limits: {nvidia.com/gpu: 1}}
---
JOB
done >"$jobs"
expect "apply 100 gang Jobs" "job.batch.volcano.sh/gang-100 created" k apply -f "$jobs"

# --- kill 1: s1 dies mid-gang; c1 with it; the free GPUs are taken before s2 leads ------------
wait "$s1"
rc=$?
t1=$(now)
kill -KILL "$c1" 2>/dev/null
if [ "$rc" = 137 ]; then ok "kill 1: s1 SIGKILLed itself after its 37th bind"; else bad "kill 1: s1 dies" "exit 137" "rc=$rc"; fi
free=$(k get pods -A -o jsonpath='{range .items[?(@.spec.nodeName)]}{.status.phase}{" "}{.spec.containers[0].resources.limits.nvidia\.com/gpu}{"\n"}{end}' |
  awk '$1 != "Succeeded" && $1 != "Failed" { used += $2 } END { print 120 - used }')
for i in $(seq 1 "$free"); do cat <<POD
apiVersion: v1
kind: Pod
metadata: {name: filler-$i, labels: {app: filler}, annotations: {muster.dev/run-seconds: "20"}}
spec:
  restartPolicy: Never
  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
  containers: [{name: c, image: busybox, resources: {limits: {nvidia.com/gpu: 1}}}]
---
POD
done >"$work/fillers.yaml"
[ "$free" -gt 0 ] && k apply -f "$work/fillers.yaml" >/dev/null
# within_lease NAME SINCE WHO: WHO took the lease within $lease_limit s of SINCE. When it took it
# is the Lease's spec.acquireTime, which WHO wrote as it took over; not when this script got round
# to looking, which on a loaded machine (the fillers' apply just above) can be seconds later.
within_lease() {
  local lease at took
  wait_for 30 wait_line "$3" 0 'became leader'
  lease=$(sed -n 's/.*became leader (lease \([^,]*\), identity.*/\1/p' "$work/$3.out" "$work/$3.err" | tail -1)
  at=$(k get lease -n "${lease%%/*}" "${lease#*/}" -o jsonpath='{.spec.acquireTime}' 2>&1)
  if ! at=$(date -d "$at" +%s.%N 2>/dev/null) || [ -z "$lease" ]; then
    bad "$1" "the Lease $3 took, with its acquireTime" "lease '${lease}': ${at}"
    return
  fi
  took=$(awk -v a="$at" -v b="$2" 'BEGIN { printf "%.1f", a - b }')
  if awk -v t="$took" -v l="$lease_limit" 'BEGIN { exit !(t <= l) }'; then
    ok "$1 (${took}s)"
  else
    bad "$1" "within ${lease_limit}s" "after ${took}s"
  fi
  echo "$at" >>"$work/takeovers"
}
within_lease "kill 1: scheduler s2 leads within the lease" "$t1" s2
within_lease "kill 1: controller c2 leads within the lease" "$t1" c2
controller c3
scheduler s3; s3=$component_pid
ok "kill 1: $free plain pods took the GPUs left; replicas c3 and s3 restarted as standbys"

if [ "${MUSTER_NO_GANG_REPAIR:-0}" != 1 ]; then
  eventually "kill 1: s2's first cycles undo the gang s1 left half-bound (its record no longer fits)" 30 \
    grep -q 'was left bound below minAvailable' "$work/s2.err"
fi

# --- kill 2: s2 dies mid-gang; s3 takes over ---------------------------------------------------
wait "$s2"
rc=$?
t2=$(now)
if [ "$rc" = 137 ]; then ok "kill 2: s2 SIGKILLed itself after its 150th bind"; else bad "kill 2: s2 dies" "exit 137" "rc=$rc"; fi
within_lease "kill 2: scheduler s3 leads within the lease" "$t2" s3

# --- the outcome --------------------------------------------------------------------------------
completed() { [ "$(k get vcjob -o jsonpath='{range .items[*]}{.status.state.phase}{"\n"}{end}' | grep -c '^Completed$')" = 100 ]; }
eventually "every one of the 100 Jobs Completes" 300 completed
touch "$work/stop-sampler"
sleep 1.5
verdict=$(/usr/bin/python3 - "$work/samples.jsonl" "$work/takeovers" <<'PY'
import json, sys
samples = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
takeovers = [float(l) for l in open(sys.argv[2]) if l.strip()]
twice = [t for s in samples for t in s.get("twice", [])]
rows = [s for s in samples if "partial" in s]
open_since, worst = {}, []
for s in rows:
    for job in list(open_since):
        if job not in s["partial"]:
            start, last = open_since.pop(job)
            worst.append((job, start, last))
    for job in s["partial"]:
        open_since.setdefault(job, (s["wall"], s["wall"]))
        open_since[job] = (open_since[job][0], s["wall"])
worst += [(j, a, b) for j, (a, b) in open_since.items()]
# Partly bound is allowed for one sampling interval plus one cycle, or until one cycle (plus the
# sampling interval) after a scheduler took over, when no scheduler led meanwhile.
bad = []
for job, start, last in worst:
    if last - start <= 2.0:
        continue
    after = [t for t in takeovers if t >= start - 1.0]
    if after and last <= after[0] + 2.0:
        continue
    bad.append("%s partly bound for %.1fs" % (job, last - start))
print("samples=%d partial-intervals=%d twice=%d bad=%s" % (len(rows), len(worst), len(twice),
      "; ".join(bad + twice[:5]) or "none"))
PY
)
if [ "${verdict%bad=none}" != "$verdict" ]; then
  ok "sampled every second: no pod bound twice, no gang partly bound past one cycle ($verdict)"
else
  bad "sampled every second: no pod bound twice, no gang partly bound past one cycle" "bad=none" "$verdict"
fi
expect_eq "rbac: no call of muster's was refused (403)" "" forbidden_calls

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
