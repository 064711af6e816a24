#!/usr/bin/env bash
# End-to-end: Volcano's HyperNode kind (topology.volcano.sh/v1alpha1) and networkTopology against
# `muster up`, driven by the real kubectl, on two racks of two simulated 8-GPU nodes:
#   - kubectl apply creates racks and a spine, kubectl get hypernodes (and hn) lists them with
#     their tiers, kubectl explain reads the schema;
#   - bad input is refused naming the field, with nothing stored: a member cycle, a selector with
#     two matches, a pattern that does not compile, a negative tier, a PodGroup's networkTopology
#     mode other than hard or soft; a member matching no node is accepted, as Volcano accepts it;
#   - a Volcano Job's spec.networkTopology is copied onto its PodGroup, and the scheduler (with
#     network-topology-aware in its conf) keeps a hard tier-1 gang of two 8-GPU pods to the rack
#     with room for both, though nodeorder alone would spread it, and holds a gang of three that
#     the cluster has room for but no rack does, saying which tier it is held to.
# One PASS/FAIL line per check; the last line is "N passed, M failed". Exit 0 only when nothing
# failed, 77 (skipped) when kubectl is not installed.
#
# Usage: topology_e2e.sh MUSTER_BINARY        (KUBECTL=... to use another kubectl)
set -u

MUSTER=${1:?usage: topology_e2e.sh MUSTER_BINARY}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=e2e_lib.sh
. "$here/e2e_lib.sh"
begin_e2e
files=$here/topology

start_muster up "$MUSTER" up --config "$files/cluster.yaml" --data-dir "$work/data" \
  --scheduler-conf "$files/scheduler.conf" \
  --listen 127.0.0.1:0 --no-summary || exit_not_started up "muster up"
export KUBECONFIG=$muster_kubeconfig
eventually "the four nodes Ready" 60 k wait --for=condition=Ready node --all --timeout=1s

expect "apply two racks and a spine" 'hypernode.topology.volcano.sh/spine created' \
  k apply -f "$files/hypernodes.yaml"
expect_re "kubectl get hypernodes shows each tier" '^rack-a +1 +rack ' k get hypernodes --no-headers
expect_re "and by its short name" '^spine +2 ' k get hn spine --no-headers
expect "kubectl explain reads the schema" 'Tier categorizes the performance level' \
  k explain hypernode.spec.tier

hypernode() {  # hypernode NAME TIER MEMBERS: a HyperNode's manifest
  printf 'apiVersion: topology.volcano.sh/v1alpha1\nkind: HyperNode\nmetadata: {name: %s}\nspec: {tier: %s, members: %s}\n' \
    "$1" "$2" "$3"
}
hypernode core 3 '[{type: HyperNode, selector: {exactMatch: {name: spine}}}]' >"$work/core.yaml"
expect "a core above the spine is accepted" 'hypernode.topology.volcano.sh/core created' \
  k apply -f "$work/core.yaml"
hypernode loop 1 '[{type: HyperNode, selector: {exactMatch: {name: core}}}]' >"$work/loop.yaml"
expect "a member HyperNode that closes no cycle is accepted" 'hypernode.topology.volcano.sh/loop created' \
  k apply -f "$work/loop.yaml"
expect "one that closes a cycle is refused naming the field" \
  'spec.members[0].selector.exactMatch.name: Invalid value: "loop": HyperNode members must not form a cycle: rack-a -> loop -> core -> spine -> rack-a' \
  k patch hypernode rack-a --type=merge \
  -p '{"spec":{"members":[{"type":"HyperNode","selector":{"exactMatch":{"name":"loop"}}}]}}'
expect "a HyperNode is deleted as any object" 'hypernode.topology.volcano.sh "loop" deleted' \
  k delete hypernode loop
expect_eq "rack-a keeps its nodes" '^rack-a-' \
  k get hypernode rack-a -o 'jsonpath={.spec.members[0].selector.regexMatch.pattern}'
hypernode two 1 '[{type: Node, selector: {exactMatch: {name: rack-a-0}, regexMatch: {pattern: a}}}]' >"$work/two.yaml"
expect "a selector with two matches is refused" \
  'spec.members[0].selector: Invalid value: "object": Only one of ExactMatch, RegexMatch, or LabelMatch can be specified' \
  k apply -f "$work/two.yaml"
hypernode badre 1 '[{type: Node, selector: {regexMatch: {pattern: "rack-["}}}]' >"$work/badre.yaml"
expect "a pattern that does not compile is refused by the webhook" \
  'admission webhook "validatehypernode.volcano.sh" denied the request: spec.members.selector.regexMatch.pattern: Invalid value: "rack-["' \
  k apply -f "$work/badre.yaml"
hypernode neg -1 '[{type: Node, selector: {exactMatch: {name: rack-a-0}}}]' >"$work/neg.yaml"
expect "a negative tier is refused" \
  'spec.tier: Invalid value: -1: spec.tier in body should be greater than or equal to 0' \
  k apply -f "$work/neg.yaml"
expect_eq "none of them is stored" "" k get hypernode two badre neg -o name --ignore-not-found
hypernode later 1 '[{type: Node, selector: {exactMatch: {name: rack-c-0}}}]' >"$work/later.yaml"
expect "a member matching no node yet is accepted" 'hypernode.topology.volcano.sh/later created' \
  k apply -f "$work/later.yaml"

# --- networkTopology ---------------------------------------------------------------------------
cat >"$work/pg.yaml" <<'PG'
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: strict, namespace: default}
spec: {minMember: 1, networkTopology: {mode: strict, highestTierAllowed: 1}}
PG
expect "a PodGroup's networkTopology mode other than hard or soft is refused" \
  'spec.networkTopology.mode: Unsupported value: "strict": supported values: "hard", "soft"' \
  k apply -f "$work/pg.yaml"
cat >"$work/blocker.yaml" <<'POD'
apiVersion: v1
kind: Pod
metadata: {name: blocker, namespace: default}
spec:
  nodeName: rack-a-0
  containers:
  - name: c
    image: busybox
    resources: {requests: {nvidia.com/gpu: "8"}, limits: {nvidia.com/gpu: "8"}}
POD
expect "a pod takes rack-a-0's eight GPUs" 'pod/blocker created' k apply -f "$work/blocker.yaml"
eventually "it runs" 30 phase_is pod/blocker Running
job() {  # job NAME PODS: a Volcano Job of PODS pods of 8 GPUs, all needed, hard at tier 1
  printf 'apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: %s, namespace: default}\nspec:\n  minAvailable: %s\n  schedulerName: volcano\n  networkTopology: {mode: hard, highestTierAllowed: 1}\n  tasks:\n  - name: worker\n    replicas: %s\n    template:\n      spec:\n        containers:\n        - name: c\n          image: busybox\n          resources: {requests: {cpu: "1", nvidia.com/gpu: "8"}, limits: {nvidia.com/gpu: "8"}}\n' \
    "$1" "$2" "$2"
}
job train 2 >"$work/job.yaml"
expect "a Volcano Job with a networkTopology is accepted" 'job.batch.volcano.sh/train created' \
  k apply -f "$work/job.yaml"
pg_topology() { k get podgroup -n default -o 'jsonpath={.items[*].spec.networkTopology}'; }
eventually "its PodGroup carries the Job's networkTopology" 30 \
  eval 'pg_topology | grep -qF "\"highestTierAllowed\":1"'

eventually "its two pods run" 60 pods_are volcano.sh/job-name=train Running 2
expect_eq "both in rack-b, the one rack with room for the gang" "rack-b-0 rack-b-1" \
  sh -c "$(printf '%q ' "$KUBECTL") --cache-dir $work/cache get pods -l volcano.sh/job-name=train -o jsonpath='{.items[*].spec.nodeName}' | tr ' ' '\n' | sort | xargs"
# With train gone, 24 GPUs are free (8 in rack-a, 16 in rack-b): enough for a gang of three, in
# no one rack.
expect "train is deleted" 'job.batch.volcano.sh "train" deleted' k delete vcjob train
eventually "and its pods are gone" 60 no_pods volcano.sh/job-name=train
job wide 3 >"$work/wide.yaml"
expect "a gang of three is accepted" 'job.batch.volcano.sh/wide created' k apply -f "$work/wide.yaml"
wide_waits() {
  k get pods -l volcano.sh/job-name=wide \
    -o 'jsonpath={.items[*].status.conditions[?(@.type=="PodScheduled")].message}' |
    grep -qF 'network topology hard mode: no HyperNode of tier <= 1 can hold the gang'
}
eventually "no rack holds it: its pods wait naming the tier" 60 wide_waits
expect_eq "and none of them is bound" "" \
  k get pods -l volcano.sh/job-name=wide -o 'jsonpath={.items[*].spec.nodeName}'

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
