#!/usr/bin/env bash
# End-to-end: Volcano's HyperNode kind (topology.volcano.sh/v1alpha1) and networkTopology against
# `muster up`, driven by the real kubectl, on two racks of two simulated 8-GPU nodes:
#   - kubectl apply creates racks and a spine, kubectl get hypernodes (and hn) lists them with
#     their tiers, kubectl explain reads the schema;
#   - bad input is refused naming the field, with nothing stored: a member cycle, a selector with
#     two matches, a pattern that does not compile, a negative tier, a PodGroup's networkTopology
#     mode other than hard or soft; a member matching no node is accepted, as Volcano accepts it;
#   - a Volcano Job's spec.networkTopology is copied onto its PodGroup.
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
cat >"$work/job.yaml" <<'JOB'
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: train, namespace: default}
spec:
  minAvailable: 2
  schedulerName: volcano
  networkTopology: {mode: hard, highestTierAllowed: 1}
  tasks:
  - name: worker
    replicas: 2
    template:
      spec:
        containers:
        - name: c
          image: busybox
          resources: {requests: {cpu: "1", nvidia.com/gpu: "8"}, limits: {nvidia.com/gpu: "8"}}
JOB
expect "a Volcano Job with a networkTopology is accepted" 'job.batch.volcano.sh/train created' \
  k apply -f "$work/job.yaml"
pg_topology() { k get podgroup -n default -o 'jsonpath={.items[*].spec.networkTopology}'; }
eventually "its PodGroup carries the Job's networkTopology" 30 \
  eval 'pg_topology | grep -qF "\"highestTierAllowed\":1"'

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
