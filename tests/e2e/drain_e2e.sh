#!/usr/bin/env bash
# End-to-end: node maintenance against `muster up` with two simulated nodes, driven by the real
# kubectl. A Volcano Job's gang of two runs on sim-0 (sim-1 cordoned meanwhile); a
# PodDisruptionBudget over its pods (`kubectl create pdb`, shown by `kubectl get pdb`) makes
# `kubectl drain sim-0` fail with kube's disruption budget message; relaxed, the drain cordons
# sim-0, evicts both pods through pods/eviction and succeeds, and the Job's PodEvicted ->
# RestartJob policy brings the whole gang back Running on sim-1. Then a NoExecute taint
# (`kubectl taint node sim-1 ...:NoExecute`) deletes a pod that does not tolerate it, with kube's
# TaintManagerEviction event, while the gang (tolerating it) stays. Bad PDBs and Evictions are
# refused naming the field, and nothing is stored.
# One PASS/FAIL line per check; the last line is "N passed, M failed". Exit 0 only when nothing
# failed, 77 (skipped) when kubectl is not installed.
#
# Usage: drain_e2e.sh MUSTER_BINARY        (KUBECTL=... to use another kubectl)
set -u

MUSTER=${1:?usage: drain_e2e.sh MUSTER_BINARY}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=e2e_lib.sh
. "$here/e2e_lib.sh"
begin_e2e

cat >"$work/cluster.yaml" <<'EOF'
nodePools:
  - name: sim
    count: 2
    allocatable: {cpu: "4", memory: 8Gi, pods: "20"}
EOF
start_muster up "$MUSTER" up --config "$work/cluster.yaml" --data-dir "$work/data" \
  --listen 127.0.0.1:0 --no-summary || exit_not_started up "muster up"
up_pid=$muster_pid
export KUBECONFIG=$muster_kubeconfig

cat >"$work/job.yaml" <<'EOF'
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: train}
spec:
  minAvailable: 2
  schedulerName: volcano
  policies:
    - {event: PodEvicted, action: RestartJob}
  tasks:
    - name: worker
      replicas: 2
      template:
        spec:
          tolerations: [{key: maint, operator: Exists, effect: NoExecute}]
          containers:
            - {name: main, image: busybox, resources: {requests: {cpu: "1"}}}
EOF
gang=volcano.sh/job-name=train
nodes_of_gang() {
  k get pods -l "$gang" --field-selector=status.phase=Running \
    -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' 2>/dev/null | sort | xargs
}
gang_on() { [ "$(nodes_of_gang)" = "$1 $1" ]; }

eventually "up: both nodes Ready" 60 k wait --for=condition=Ready node --all --timeout=1s
expect "cordon sim-1 while the gang starts" "node/sim-1 cordoned" k cordon sim-1
expect "apply the Volcano Job" "job.batch.volcano.sh/train created" k apply -f "$work/job.yaml"
eventually "the gang runs on sim-0" 60 gang_on sim-0
expect "uncordon sim-1" "node/sim-1 uncordoned" k uncordon sim-1

# --- PodDisruptionBudgets: bad ones refused, nothing stored -------------------------------------
cat >"$work/both.yaml" <<'EOF'
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: bad}
spec: {minAvailable: 1, maxUnavailable: 1}
EOF
expect "a PDB with both minAvailable and maxUnavailable is refused" \
  "minAvailable and maxUnavailable cannot be both set" k create -f "$work/both.yaml"
expect "a PDB with a percentage over 100% is refused naming the field" \
  'spec.minAvailable: Invalid value' k create pdb bad --selector=app=x --min-available=120%
expect "nothing is stored for the refused PDBs" 'NotFound' k get pdb bad

# --- a budget blocks the drain -------------------------------------------------------------------
expect "create pdb over the gang" "poddisruptionbudget.policy/train created" \
  k create pdb train --selector="$gang" --min-available=2
allowed() {  # allowed GENERATION/ALLOWED: the budget's status, observed at that generation
  local path='{.status.observedGeneration}/{.status.disruptionsAllowed}'
  [ "$(k get pdb train -o jsonpath="$path")" = "$1" ]
}
eventually "the disruption controller counts the gang: none may go" 30 allowed 1/0
expect_re "get pdb: kube's columns" \
  '^train +2 +N/A +0 +[0-9]+s$' k get pdb train
drain_out=$(k drain sim-0 --ignore-daemonsets --delete-emptydir-data --timeout=6s 2>&1)
drain_rc=$?
if [ "$drain_rc" -ne 0 ]; then ok "drain with the budget spent fails"; else
  bad "drain with the budget spent fails" "a non-zero exit" "$drain_out"; fi
expect "drain says the disruption budget stopped it" \
  "Cannot evict pod as it would violate the pod's disruption budget." echo "$drain_out"
expect_eq "the gang still runs on sim-0" "sim-0 sim-0" nodes_of_gang
first_uids=$(k get pods -l "$gang" -o jsonpath='{.items[*].metadata.uid}')

# A bad Eviction: another pod's name in the body.
pod0=$(k get pods -l "$gang" -o jsonpath='{.items[0].metadata.name}')
printf '{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"someone-else"}}' \
  >"$work/eviction.json"
expect "an Eviction naming another pod is refused" \
  "name in URL does not match name in Eviction object" \
  k create --raw "/api/v1/namespaces/default/pods/$pod0/eviction" -f "$work/eviction.json"

# --- relaxed, the drain evicts the gang and the Job restarts it whole on sim-1 ------------------
expect "relax the budget" "poddisruptionbudget.policy/train patched" \
  k patch pdb train --type merge -p '{"spec":{"minAvailable":0}}'
eventually "the relaxed budget allows both" 30 allowed 2/2
drain_out=$(k drain sim-0 --ignore-daemonsets --delete-emptydir-data --timeout=60s 2>&1)
drain_rc=$?
if [ "$drain_rc" -eq 0 ]; then ok "drain sim-0 succeeds"; else
  bad "drain sim-0 succeeds" "exit 0" "$drain_out"; fi
expect "drain evicted the gang's pods" "evicting pod default/train-worker-" echo "$drain_out"
expect "drain says the node is drained" "node/sim-0 drained" echo "$drain_out"
expect_eq "sim-0 is cordoned" "true" k get node sim-0 -o jsonpath='{.spec.unschedulable}'
eventually "the gang runs again, whole, on sim-1" 60 gang_on sim-1
expect_not "the gang's pods are new ones" "$(echo "$first_uids" | cut -d' ' -f1)" \
  k get pods -l "$gang" -o jsonpath='{.items[*].metadata.uid}'
retried_once() { [ "$(k get vcjob train -o jsonpath='{.status.retryCount}')" = 1 ]; }
eventually "the Job applied RestartJob (retryCount 1)" 30 retried_once

# --- a NoExecute taint: a pod that does not tolerate it goes, the gang stays ---------------------
cat >"$work/victim.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: victim}
spec:
  nodeSelector: {kubernetes.io/hostname: sim-1}
  containers: [{name: main, image: busybox}]
EOF
expect "apply a pod on sim-1" "pod/victim created" k apply -f "$work/victim.yaml"
eventually "the pod runs on sim-1" 60 phase_is pod/victim Running
expect "taint sim-1 NoExecute" "node/sim-1 tainted" k taint node sim-1 maint=now:NoExecute
eventually "the pod that does not tolerate the taint is deleted" 30 gone pod victim
expect_re "kube's event for it" \
  'TaintManagerEviction +Pod +Marking for deletion Pod default/victim' \
  k get events --field-selector involvedObject.name=victim \
  -o 'custom-columns=REASON:.reason,OBJ:.involvedObject.kind,MSG:.message' --no-headers
expect_eq "the gang, tolerating the taint, still runs on sim-1" "sim-1 sim-1" nodes_of_gang

stop_process "$up_pid" 15
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
