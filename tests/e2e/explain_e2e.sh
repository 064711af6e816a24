#!/usr/bin/env bash
# End-to-end: `kubectl muster explain` (the kubectl-muster link beside the muster binary, found by
# the real kubectl on PATH) against `muster up` running the seed's story on two simulated T4
# nodes. While the blocker runs with muster.dev/expected-runtime: 10m, explain of the gang's
# vcjob names default/blocker and estimates the start at the blocker's expected end (its
# startTime + 10 m, within one cycle); the scheduler writes the same estimate on the PodGroup
# (annotations muster.dev/estimated-start and muster.dev/wait-reason, which kubectl describe
# shows). Once the blocker is deleted the
# trainers start and explain says so. A missing object exits 1 with "not found"; a kind explain
# does not take is named in the error. A running pod without an expected runtime is estimated
# from its job's earlier run, or ends by its activeDeadlineSeconds.
# One PASS/FAIL line per check; the last line is "N passed, M failed". Exit 0 only when nothing
# failed, 77 (skipped) when kubectl is not installed.
#
# Usage: explain_e2e.sh MUSTER_BINARY        (KUBECTL=... to use another kubectl)
set -u

MUSTER=${1:?usage: explain_e2e.sh MUSTER_BINARY}
here=$(cd "$(dirname "$0")" && pwd)
examples=$here/../../examples/gpu-gang
# shellcheck source=e2e_lib.sh
. "$here/e2e_lib.sh"
begin_e2e
if ! command -v python3 >/dev/null 2>&1; then
  echo "SKIP: python3 not found"
  exit 77
fi
bindir=$(cd "$(dirname "$MUSTER")" && pwd)
export PATH="$bindir:$PATH"

start_muster up "$MUSTER" up --config "$examples/cluster.yaml" --data-dir "$work/data" \
  --listen 127.0.0.1:0 --no-summary || exit_not_started up "muster up"
export KUBECONFIG=$muster_kubeconfig

eventually "up: both nodes Ready" 60 k wait --for=condition=Ready node --all --timeout=1s
expect "the plugin is listed" "kubectl-muster" k plugin list

# The seed's blocker, with the expected runtime the estimate plans with.
python3 - "$examples/gpu-blocker-pod.yaml" >"$work/blocker.yaml" <<'EOF'
import sys
text = open(sys.argv[1]).read()
print(text.replace("  name: blocker\n",
                   "  name: blocker\n  annotations:\n    muster.dev/expected-runtime: 10m\n", 1))
EOF
expect "the queue" "created" k apply -f "$examples/volcano-queue.yaml"
expect "the blocker" "pod/blocker created" k apply -f "$work/blocker.yaml"
if wait_phase blocker Running; then ok "the blocker runs"; else bad "the blocker runs" Running "$(k get pod blocker -o yaml)"; fi
started=$(k get pod blocker -o jsonpath='{.status.startTime}')
expect "the gang job" "created" k apply -f "$examples/tensorflow-job.yaml"
pg_of_job() { k get podgroup -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | grep '^gang-tf-job-'; }
pg_waits() { [ "$(k get podgroup -o jsonpath='{.items[*].status.phase}' 2>/dev/null)" = Pending ]; }
eventually "the gang's PodGroup is made and waits" 30 pg_waits
pg=$(pg_of_job)

expect "explain names the blocker" "Blocking:   default/blocker" \
  kubectl muster explain vcjob/gang-tf-job
expect "explain gives the placement verdict" \
  "gpu-node-0 has 0 free (held by default/blocker), gpu-node-1 has 1 free; fits when default/blocker ends" \
  kubectl muster explain vcjob/gang-tf-job
expect "explain gives the admission verdict" "nvidia.com/gpu short by 1" \
  kubectl muster explain vcjob/gang-tf-job -n default
kubectl muster explain vcjob/gang-tf-job -o json >"$work/explain.json" 2>&1
# The estimate is the blocker's startTime + 10 m, within one cycle (1 s).
check_estimate() {
  python3 - "$1" "$started" <<'EOF'
import sys, datetime
def t(s): return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ").timestamp()
est, start = sys.argv[1], sys.argv[2]
diff = t(est) - (t(start) + 600)
print(f"estimate {est}, blocker started {start}, off by {diff:+.0f}s")
sys.exit(0 if abs(diff) <= 1 else 1)
EOF
}
estimate=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["estimate"]["start"] or "")' \
  "$work/explain.json" 2>/dev/null)
if out=$(check_estimate "$estimate" 2>&1); then ok "explain -o json: start at the blocker's expected end"; else bad "explain -o json: start at the blocker's expected end" "startTime + 600 s" "$out $(cat "$work/explain.json")"; fi
expect "explain -o yaml" "- default/blocker" kubectl muster explain vcjob/gang-tf-job -o yaml
expect "explain of the PodGroup itself" "Blocking:   default/blocker" \
  "$MUSTER" explain "podgroup/$pg" --kubeconfig "$KUBECONFIG"

# The scheduler writes the same estimate where kubectl describe shows it.
annotated() { k get podgroup "$pg" -o jsonpath='{.metadata.annotations.muster\.dev/estimated-start}' 2>/dev/null; }
has_estimate() { [[ "$(annotated)" == *T* ]]; }
eventually "the PodGroup carries muster.dev/estimated-start" 30 has_estimate
annotated=$(annotated)
if out=$(check_estimate "$annotated" 2>&1); then ok "the annotation is the blocker's expected end"; else bad "the annotation is the blocker's expected end" "startTime + 600 s" "$out"; fi
expect "kubectl describe shows the reason" "fits when default/blocker ends" k describe podgroup "$pg"
# And as a condition of its own beside Volcano's Unschedulable, whose message stays Volcano's.
estimated_condition() {
  k get podgroup "$pg" -o jsonpath='{.status.conditions[?(@.type=="Estimated")].message}' 2>/dev/null
}
wait_reason() { k get podgroup "$pg" -o jsonpath='{.metadata.annotations.muster\.dev/wait-reason}' 2>/dev/null; }
condition_says_it() {  # prints what it found when it does not
  local reason condition
  reason=$(wait_reason) condition=$(estimated_condition)
  [[ "$reason" == *"default/blocker"* ]] && [ "$condition" = "$reason; estimated start $annotated" ] &&
    return 0
  echo "condition: $condition; wait-reason: $reason; estimated-start: $annotated"
  return 1
}
eventually "the PodGroup's Estimated condition says the same" 30 condition_says_it
expect "kubectl describe shows the Estimated condition" "StartEstimated" k describe podgroup "$pg"
volcano_message=$(k get podgroup "$pg" -o jsonpath='{.status.conditions[?(@.type=="Unschedulable")].message}')
if [ -n "$volcano_message" ] && [[ "$volcano_message" != *"estimated start"* ]]; then
  ok "Volcano's Unschedulable message is kept as it was"
else
  bad "Volcano's Unschedulable message is kept as it was" "Volcano's message" "$volcano_message"
fi

# Bad input.
expect_exit() {  # name, wanted exit status, wanted text, command...
  local name=$1 want=$2 text=$3 out rc
  shift 3
  out=$("$@" 2>&1)
  rc=$?
  if [ "$rc" = "$want" ] && [[ "$out" == *"$text"* ]]; then ok "$name"; else bad "$name" "exit $want, $text" "exit $rc: $out"; fi
}
expect_exit "a missing vcjob: exit 1, not found" 1 "not found" kubectl muster explain vcjob/nope
expect_exit "a missing pod: exit 1, not found" 1 "not found" kubectl muster explain pod/nope
expect_exit "a kind explain does not take is named" 1 '"deployment"' \
  kubectl muster explain deployment/web
expect_exit "no kind" 1 "KIND/NAME" kubectl muster explain gang-tf-job

# The blocker goes: the trainers start, and explain says so.
expect "delete the blocker" "deleted" k delete pod blocker --wait=true
if wait_phase gang-tf-job-trainer-0 Running && wait_phase gang-tf-job-trainer-1 Running; then
  ok "both trainers start"
else
  bad "both trainers start" Running "$(k get pods -o wide 2>&1)"
fi
expect "explain says the gang started" "Running (started)" kubectl muster explain vcjob/gang-tf-job
expect "explain -o json: started" '"started":true' kubectl muster explain vcjob/gang-tf-job -o json
no_estimated_condition() { [ -z "$(estimated_condition)" ] && [ -z "$(annotated)" ]; }
eventually "the estimate's condition and annotation go once the gang runs" 40 no_estimated_condition

# A running pod without an expected runtime is expected to last as long as its job's earlier runs:
# job "nightly" ran once for 3 s (simulated), its second run holds the CPU a second gang needs.
cat >"$work/nightly.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata:
  name: RUN
  labels: {job-name: nightly}
  annotations: {muster.dev/run-seconds: "SECONDS"}
spec:
  restartPolicy: Never
  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
  containers: [{name: main, image: busybox, resources: {requests: {cpu: "2"}}}]
EOF
sed 's/RUN/nightly-1/; s/SECONDS/3/' "$work/nightly.yaml" | k apply -f - >/dev/null
eventually "the nightly job's first run completes" 30 phase_is pod/nightly-1 Succeeded
sed 's/RUN/nightly-2/; /run-seconds/d' "$work/nightly.yaml" | k apply -f - >/dev/null
eventually "its second run runs" 30 phase_is pod/nightly-2 Running
cat >"$work/cpu-gang.yaml" <<'EOF'
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: cpu-gang}
spec:
  minAvailable: 2
  schedulerName: volcano
  queue: ml-queue
  tasks:
    - name: worker
      replicas: 2
      template:
        spec:
          tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
          containers: [{name: main, image: busybox, resources: {requests: {cpu: "2"}}}]
EOF
expect "a gang of two 2-cpu pods" "created" k apply -f "$work/cpu-gang.yaml"
expect "explain names the second run" "Blocking:   default/nightly-2" \
  kubectl muster explain vcjob/cpu-gang
expect_re "explain estimates it from the first run's 3 s" "Estimate: +expected to start" \
  kubectl muster explain vcjob/cpu-gang

# activeDeadlineSeconds bounds a pod without an expected runtime: it ends by then. The gang is
# made again once an ad-hoc pod (no job) holds the CPU in the second run's place.
expect "the gang is deleted" "deleted" k delete vcjob cpu-gang --wait=true
expect "the second run is stopped" "deleted" k delete pod nightly-2 --wait=true
sed 's/RUN/adhoc/; /run-seconds/d; s/{job-name: nightly}/{app: adhoc}/' "$work/nightly.yaml" |
  sed 's/^  restartPolicy: Never/  restartPolicy: Never\n  activeDeadlineSeconds: 600/' |
  k apply -f - >/dev/null
eventually "an ad-hoc pod with activeDeadlineSeconds: 600 runs" 30 phase_is pod/adhoc Running
expect "the gang again" "created" k apply -f "$work/cpu-gang.yaml"
expect "explain names the ad-hoc pod" "Blocking:   default/adhoc" \
  kubectl muster explain vcjob/cpu-gang
expect_re "explain estimates the gang's start at its deadline" \
  "Estimate: +expected to start at .* \(in (9m[0-9]{2}s|10m00s)\)" \
  kubectl muster explain vcjob/cpu-gang

stop_process "" 15
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
