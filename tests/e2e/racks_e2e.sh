#!/usr/bin/env bash
# End-to-end: racks and spines of a cluster file (its `topology` section) in `muster up`, with
# the real kubectl, on examples/racks/ (eight simulated 8-GPU nodes, racks of two, spines of two
# racks):
#   - `muster up` creates the HyperNodes rack-0 .. rack-3 (tier 1) and spine-0, spine-1 (tier 2),
#     kubectl get hypernodes lists them with their NODECOUNT (two a rack, four a spine), and the
#     nodes carry their rack and spine as labels;
#   - with network-topology-aware in --scheduler-conf, the example's hard tier-1 gang of two 8-GPU
#     pods lands in rack-3, the one rack with two free nodes (the others have one each, which a
#     topology-blind choice among the five free nodes would take four times in five);
#   - a restart with the same file rewrites no HyperNode; one with a changed file brings them to
#     what it says (racks of four, no spines: rack-2, rack-3 and the spines go, and so do the
#     nodes' spine labels; NODECOUNT 4);
#   - a cluster file with an unknown tier stops `muster up` with a message naming the field and a
#     non-zero exit.
# One PASS/FAIL line per check; the last line is "N passed, M failed". Exit 0 only when nothing
# failed, 77 (skipped) when kubectl is not installed.
#
# Usage: racks_e2e.sh MUSTER_BINARY        (KUBECTL=... to use another kubectl)
set -u

MUSTER=${1:?usage: racks_e2e.sh MUSTER_BINARY}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=e2e_lib.sh
. "$here/e2e_lib.sh"
begin_e2e
files=$(cd "$here/../../examples/racks" && pwd)

up() {  # up CLUSTER_FILE: muster up on $work/data with the example's scheduler conf
  start_muster up "$MUSTER" up --config "$1" --data-dir "$work/data" \
    --scheduler-conf "$files/scheduler.conf" --listen 127.0.0.1:0 --no-summary
}
up "$files/cluster.yaml" || exit_not_started up "muster up"
export KUBECONFIG=$muster_kubeconfig
eventually "the eight nodes Ready" 60 k wait --for=condition=Ready node --all --timeout=1s
expect "muster up says how many HyperNodes it made" "muster up: 8 nodes in 6 HyperNodes" \
  cat "$work/up.out"

names() { k get hypernodes -o jsonpath='{range .items[*]}{.metadata.name}/{.spec.tier} {end}'; }
expect_eq "kubectl get hypernodes: four racks of tier 1, two spines of tier 2" \
  "rack-0/1 rack-1/1 rack-2/1 rack-3/1 spine-0/2 spine-1/2 " names
expect_re "listed with their tier names" '^spine-1 +2 +spine ' k get hypernodes --no-headers
counts() { k get hypernodes -o jsonpath='{range .items[*]}{.metadata.name}={.status.nodeCount} {end}'; }
counts_are() { [ "$(counts)" = "$1" ]; }
eventually "NODECOUNT: two nodes in each rack, four in each spine" 30 counts_are \
  "rack-0=2 rack-1=2 rack-2=2 rack-3=2 spine-0=4 spine-1=4 "
expect_re "kubectl get hypernodes shows the count" '^spine-1 +2 +spine +4 ' k get hypernodes --no-headers
expect_eq "a rack's members are its nodes by exact name" "gpu-6 gpu-7" \
  k get hypernode rack-3 -o 'jsonpath={.spec.members[*].selector.exactMatch.name}'
expect_eq "a spine's members are its racks" "HyperNode:rack-2 HyperNode:rack-3 " \
  k get hypernode spine-1 \
  -o 'jsonpath={range .spec.members[*]}{.type}:{.selector.exactMatch.name} {end}'
expect_eq "the nodes carry their rack and spine" "gpu-4 gpu-5" \
  sh -c "$(printf '%q ' "$KUBECTL") --cache-dir $work/cache get nodes \
    -l topology.muster.dev/rack=rack-2,topology.muster.dev/spine=spine-1 -o name | sed 's|node/||' | xargs"

blocker() {  # blocker NODE: a pod of four GPUs bound to NODE
  printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: hold-%s, namespace: default}\nspec:\n  nodeName: %s\n  containers:\n  - name: c\n    image: busybox\n    resources: {requests: {nvidia.com/gpu: "4"}, limits: {nvidia.com/gpu: "4"}}\n' \
    "$1" "$1"
}
for n in gpu-0 gpu-2 gpu-4; do blocker "$n"; echo ---; done >"$work/blockers.yaml"
expect "four GPUs taken on one node of rack-0, rack-1 and rack-2" 'pod/hold-gpu-4 created' \
  k apply -f "$work/blockers.yaml"
held() { phase_is pod/hold-gpu-0 Running && phase_is pod/hold-gpu-2 Running && phase_is pod/hold-gpu-4 Running; }
eventually "they run" 30 held
expect "the example's hard tier-1 gang is accepted" 'job.batch.volcano.sh/rack-train created' \
  k apply -f "$files/rack-job.yaml"
eventually "its two pods run" 60 pods_are volcano.sh/job-name=rack-train Running 2
expect_eq "both in rack-3, the one rack with two free nodes" "gpu-6 gpu-7" \
  sh -c "$(printf '%q ' "$KUBECTL") --cache-dir $work/cache get pods -l volcano.sh/job-name=rack-train -o jsonpath='{.items[*].spec.nodeName}' | tr ' ' '\n' | sort | xargs"

# --- restarts ------------------------------------------------------------------------------------
versions() { k get hypernodes -o jsonpath='{range .items[*]}{.metadata.name}={.metadata.resourceVersion} {end}'; }
before=$(versions)
stop_process "$muster_pid" 15
up "$files/cluster.yaml" || exit_not_started up "muster up (restarted)"
export KUBECONFIG=$muster_kubeconfig
eventually "restarted, the nodes Ready" 60 k wait --for=condition=Ready node --all --timeout=1s
expect_eq "a restart with the same file rewrites no HyperNode" "$before" versions

sed -e 's/nodesPerRack: 2/nodesPerRack: 4/' -e '/racksPerSpine/d' "$files/cluster.yaml" \
  >"$work/fours.yaml"
stop_process "$muster_pid" 15
up "$work/fours.yaml" || exit_not_started up "muster up (racks of four)"
export KUBECONFIG=$muster_kubeconfig
expect_eq "a restart with racks of four and no spines: two racks are left" "rack-0/1 rack-1/1 " names
expect_eq "rack-1 now holds gpu-4 .. gpu-7" "gpu-4 gpu-5 gpu-6 gpu-7" \
  k get hypernode rack-1 -o 'jsonpath={.spec.members[*].selector.exactMatch.name}'
eventually "and NODECOUNT says four" 30 counts_are "rack-0=4 rack-1=4 "
expect_eq "no node keeps the spine label of the file before" "" \
  k get nodes -l topology.muster.dev/spine -o name
expect_eq "and gpu-4 carries its new rack" "rack-1" \
  k get node gpu-4 -o 'jsonpath={.metadata.labels.topology\.muster\.dev/rack}'
stop_process "$muster_pid" 15

# --- bad input -----------------------------------------------------------------------------------
printf 'nodePools:\n  - {name: gpu, count: 2}\ntopology:\n  nodesPerRack: 1\n  zones: 2\n' \
  >"$work/bad.yaml"
bad_up() {
  timeout 20 "$MUSTER" up --config "$work/bad.yaml" --data-dir "$work/bad" --listen 127.0.0.1:0 \
    --no-summary
  echo "exit $?"
}
expect "an unknown tier stops muster up naming the field" \
  'bad.yaml: line 5: topology: unknown key "zones"; expected one of: nodesPerRack, racks, racksPerSpine, spines' \
  bad_up
expect "with a non-zero exit" "exit 1" bad_up

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
