#!/usr/bin/env bash
# End-to-end: hierarchical queues (Volcano's capacity plugin with enableHierarchy) against
# `muster up`, driven by the real kubectl, on two simulated 4-GPU nodes. A three-level tree under
# the root queue muster up makes, root -> org -> team-a and team-b, each team deserving four of
# org's eight GPUs, and root -> lab -> team-c under lab's capability of two GPUs:
#   - the tree's bad input is refused naming the field, and nothing of it stored (a queue its own
#     parent, a parent that closes a cycle, a child guarantee above what its parent guarantees, a
#     queue deserving less than it is guaranteed, a child's capability above its ancestor's, a
#     parent's capability below its child's); deleting a queue that has children is refused, and
#     a job is refused in a queue that has children;
#   - lab's capability caps its child: team-c runs two of its four one-GPU pods;
#   - team-a takes all eight GPUs while team-b is idle, then team-b's gang of four reclaims the
#     four team-a holds beyond its deserved share, and runs whole; team-a, holding pods, cannot
#     become a parent;
#   - kubectl get queue (no custom columns) shows each queue's parent, deserved and allocated
#     resources (pods counted, one per running pod), org's counting both teams; -o wide lab's
#     capability.
# One PASS/FAIL line per check; the last line is "N passed, M failed". Exit 0 only when nothing
# failed, 77 (skipped) when kubectl is not installed.
#
# Usage: queues_e2e.sh MUSTER_BINARY        (KUBECTL=... to use another kubectl)
set -u

MUSTER=${1:?usage: queues_e2e.sh MUSTER_BINARY}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=e2e_lib.sh
. "$here/e2e_lib.sh"
begin_e2e
files=$here/queues

start_muster up "$MUSTER" up --config "$files/cluster.yaml" \
  --scheduler-conf "$files/scheduler.conf" --data-dir "$work/data" --listen 127.0.0.1:0 \
  --no-summary || exit_not_started up "muster up"
export KUBECONFIG=$muster_kubeconfig
eventually "both nodes Ready" 60 k wait --for=condition=Ready node --all --timeout=1s

expect_eq "muster up made the root queue, not reclaimable, as Volcano's scheduler does" \
  "false Open" k get queue root -o 'jsonpath={.spec.reclaimable} {.status.state}'
expect_re "apply the tree under it" 'queue.scheduling.volcano.sh/team-c created' \
  k apply -f "$files/queues.yaml"
expect_re "kubectl get queue shows each queue's parent and deserved share, nothing allocated yet" \
  '^team-a +org +\{"nvidia.com/gpu":4\} *$' k get queue team-a --no-headers
expect_re "and -o wide its capability and state" '^lab +root +\{"nvidia.com/gpu":2\} +Open$' \
  k get queue lab -o wide --no-headers

# --- bad input ---------------------------------------------------------------------------------
queue() {  # queue NAME SPEC: a Queue's manifest
  printf 'apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: %s}\nspec: %s\n' \
    "$1" "$2"
}
queue self '{parent: self}' >"$work/self.yaml"
expect "a queue that is its own parent is refused naming spec.parent" \
  'requestBody.spec.parent: Invalid value: "self": queue self cannot use itself as parent' \
  k apply -f "$work/self.yaml"
expect "a parent that closes a cycle is refused naming spec.parent" \
  'requestBody.spec.parent: Invalid value: "team-a": queue org cannot have parent team-a: the parents form a cycle (org -> team-a -> org)' \
  k patch queue org --type=merge -p '{"spec":{"parent":"team-a"}}'
expect_eq "org keeps its parent" "root" k get queue org -o 'jsonpath={.spec.parent}'
queue team-x '{parent: org, deserved: {nvidia.com/gpu: 1}, guarantee: {resource: {nvidia.com/gpu: 1}}}' \
  >"$work/team-x.yaml"
expect "a child guarantee above its parent's is refused naming spec.guarantee" \
  "requestBody.spec.guarantee.resource: Invalid value: \"{nvidia.com/gpu: 3}\": parent queue org validation failed: sum of children's guarantee ({nvidia.com/gpu: 3}) exceeds parent's guarantee limit ({nvidia.com/gpu: 2})" \
  k apply -f "$work/team-x.yaml"
expect_eq "nothing of it is stored" "" k get queue team-x -o name --ignore-not-found
queue solo '{deserved: {nvidia.com/gpu: 1}, guarantee: {resource: {nvidia.com/gpu: 2}}}' \
  >"$work/solo.yaml"
expect "a queue deserving less than its guarantee is refused naming spec.deserved" \
  'requestBody.spec.deserved.nvidia.com/gpu: Invalid value: "1": deserved[nvidia.com/gpu]=1 must be >= guarantee[nvidia.com/gpu]=2' \
  k apply -f "$work/solo.yaml"
expect_eq "nothing of it is stored" "" k get queue solo -o name --ignore-not-found
queue team-d '{parent: lab, capability: {nvidia.com/gpu: 4}}' >"$work/team-d.yaml"
expect "a child's capability above its ancestor's is refused naming spec.capability" \
  "requestBody.spec.capability.nvidia.com/gpu: Invalid value: \"4\": queue team-d capability[nvidia.com/gpu]=4 exceeds its ancestor's capability=2 (queue lab)" \
  k apply -f "$work/team-d.yaml"
expect_eq "nothing of it is stored" "" k get queue team-d -o name --ignore-not-found
expect "team-c may be capped as lab is" "queue.scheduling.volcano.sh/team-c patched" \
  k patch queue team-c --type=merge -p '{"spec":{"capability":{"nvidia.com/gpu":"2"}}}'
expect "but lab not below team-c: refused naming spec.capability" \
  "requestBody.spec.capability.nvidia.com/gpu: Invalid value: \"1\": queue lab capability[nvidia.com/gpu]=1 is smaller than its descendants' max capability=2" \
  k patch queue lab --type=merge -p '{"spec":{"capability":{"nvidia.com/gpu":"1"}}}'
expect_eq "lab keeps its capability" "2" k get queue lab -o 'jsonpath={.spec.capability.nvidia\.com/gpu}'
expect "deleting a queue that has children is refused, naming them" \
  'admission webhook "validatequeue.volcano.sh" denied the request: queue org can not be deleted because it has 2 child queues: team-a, team-b' \
  k delete queue org
expect_eq "and org stays" "queue.scheduling.volcano.sh/org" k get queue org -o name
"$files/job.sh" inner org 1 1 >"$work/inner.yaml"
expect "a job in a queue with children is refused" \
  'can only submit job to leaf queue, queue `org` has 2 child queues;' k apply -f "$work/inner.yaml"

# --- a parent's capability caps its children ---------------------------------------------------
"$files/job.sh" lab-job team-c 4 1 >"$work/lab-job.yaml"
expect "team-c asks for four GPUs" "job.batch.volcano.sh/lab-job created" k apply -f "$work/lab-job.yaml"
eventually "lab's capability lets two of them run" 60 \
  pods_are volcano.sh/job-name=lab-job Running 2
sleep 3  # a few more cycles: the other two still wait
expect_eq "and no more" 2 count_pods volcano.sh/job-name=lab-job Running
k delete -f "$work/lab-job.yaml" --wait=false >/dev/null 2>&1
eventually "lab's pods are gone" 60 no_pods volcano.sh/job-name=lab-job

# --- reclaim between teams up to deserved ------------------------------------------------------
"$files/job.sh" greedy team-a 8 1 >"$work/greedy.yaml"
"$files/job.sh" gang team-b 4 4 >"$work/gang.yaml"
expect "team-a asks for all eight GPUs" "job.batch.volcano.sh/greedy created" \
  k apply -f "$work/greedy.yaml"
eventually "team-a runs on all eight while team-b is idle" 60 \
  pods_are volcano.sh/job-name=greedy Running 8
expect "team-b submits a gang of four" "job.batch.volcano.sh/gang created" \
  k apply -f "$work/gang.yaml"
eventually "team-b's gang runs whole" 90 pods_are volcano.sh/job-name=gang Running 4
expect_eq "team-a keeps its deserved four" 4 count_pods volcano.sh/job-name=greedy Running
expect_re "team-a's pods over its share were evicted (an event says so)" 'Evict' \
  k get events --field-selector involvedObject.kind=Pod

teams_show() {  # teams_show WANT: team-a's and team-b's rows of kubectl get queue, joined by ';'
  [ "$(k get queue team-a team-b --no-headers | tr -s ' ' | tr '\n' ';')" = "$1" ]
}
eventually "kubectl get queue shows the teams' deserved and allocated GPUs" 30 \
  teams_show 'team-a org {"nvidia.com/gpu":4} {"nvidia.com/gpu":"4","pods":"4"};team-b org {"nvidia.com/gpu":4} {"nvidia.com/gpu":"4","pods":"4"};'
expect_re "and org's, counting both teams" '^org +root +\{"nvidia.com/gpu":8\} +\{"nvidia.com/gpu":"8","pods":"8"\}$' \
  k get queue org --no-headers
expect_re "with the column headers" '^NAME +PARENT +DESERVED +ALLOCATED$' k get queue org

# --- a leaf holding pods stays a leaf ----------------------------------------------------------
queue sub '{parent: team-a}' >"$work/sub.yaml"
expect "team-a, a leaf with running pods, cannot become a parent: refused naming spec.parent" \
  'requestBody.spec.parent: Invalid value: "team-a": queue team-a cannot be the parent queue of queue sub because it has allocated Pods: 4' \
  k apply -f "$work/sub.yaml"
expect_eq "nothing of it is stored" "" k get queue sub -o name --ignore-not-found

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
