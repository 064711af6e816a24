#!/usr/bin/env bash
# End-to-end: the everyday kubectl commands against `muster up` with one node that runs pods as
# processes (through the kubeconfig muster writes, whatever scheme it serves): `auth can-i`,
# `auth whoami`, `patch` (strategic, kubectl's default) of every built-in kind, `debug` (an
# ephemeral container, a copy), `apply` of a kind muster does not serve or lists but does not
# store, `apply --prune`, `cluster-info dump`, `logs` with --previous,
# --timestamps, --since, --since-time, --tail and --limit-bytes, plus PodLogOptions refusals, `run`
# with args and no command, and a completed Volcano Job deleted and applied again five times.
# One PASS/FAIL line per check; the last line is "N passed, M failed". Exit 0 only when nothing
# failed, 77 (skipped) when kubectl is not installed.
#
# Usage: kubectl_everyday_e2e.sh MUSTER_BINARY        (KUBECTL=... to use another kubectl)
set -u

MUSTER=${1:?usage: kubectl_everyday_e2e.sh MUSTER_BINARY}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=e2e_lib.sh
. "$here/e2e_lib.sh"
begin_e2e
data=$work/data

cat >"$work/cluster.yaml" <<'EOF'
nodePools:
  - name: proc
    labels: {pool: proc}
    allocatable: {cpu: "4", memory: 8Gi, pods: "20"}
    runtime: process
EOF
start_muster up "$MUSTER" up --config "$work/cluster.yaml" --data-dir "$data" \
  --listen 127.0.0.1:0 --no-summary || exit_not_started up "muster up"
up_pid=$muster_pid
export KUBECONFIG=$muster_kubeconfig

# A pod whose first run fails and whose second keeps running (restartPolicy OnFailure, the
# agent's 10 s back-off in between): its logs are checked last, once it has restarted.
cat >"$work/restarts.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: restarts}
spec:
  nodeSelector: {pool: proc}
  restartPolicy: OnFailure
  containers:
    - name: main
      image: busybox
      command: ["/bin/sh", "-c"]
      args:
        - if [ -f ran ]; then echo second run; echo line two; echo line three; exec sleep 3600; fi;
          touch ran; echo first run; exit 1
EOF
cat >"$work/pods.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: once}
spec:
  nodeSelector: {pool: proc}
  restartPolicy: Never
  containers:
    - {name: main, image: busybox, command: ["/bin/sh", "-c", "echo hello; exec sleep 3600"]}
---
apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}}
spec:
  nodeSelector: {pool: proc}
  containers:
    - {name: c, image: busybox, command: ["sleep", "3600"]}
EOF
eventually "up: the process node is Ready" 60 k wait --for=condition=Ready node --all --timeout=1s
expect "logs: apply the restarting pod" "pod/restarts created" k apply -f "$work/restarts.yaml"
expect "apply: the other pods" "pod/web created" k apply -f "$work/pods.yaml"

# --- auth ------------------------------------------------------------------------------------
expect_eq "auth can-i create pods: yes" "yes" k auth can-i create pods
expect_eq "auth can-i: exit status 0" "0" sh -c "$KUBECTL --cache-dir $work/cache auth can-i delete nodes >/dev/null 2>&1; echo \$?"
expect_eq "auth can-i a non-resource URL: yes" "yes" k auth can-i get /healthz
expect_re "auth can-i --list: every verb on every resource" '^\*\.\* +\[\] +\[\] +\[\*\]$' \
  k auth can-i --list
expect_re "auth whoami: muster's admin" '^Username +muster-admin$' k auth whoami
expect_re "auth whoami: in system:masters" '^Groups +\[system:masters system:authenticated\]$' \
  k auth whoami

# --- patch: kubectl's default strategic merge on every built-in kind ------------------------------
cat >"$work/kinds.yaml" <<'EOF'
apiVersion: v1
kind: Namespace
metadata: {name: everyday}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {a: "1"}
---
apiVersion: v1
kind: Service
metadata: {name: front}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80}]
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: everyday-high}
value: 1000
---
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: everyday}
spec: {holderIdentity: a}
---
apiVersion: v1
kind: Event
metadata: {name: web.everyday}
involvedObject: {apiVersion: v1, kind: Pod, name: web, namespace: default}
reason: Testing
message: first
type: Normal
count: 1
EOF
expect "patch: apply one object of each kind" "lease.coordination.k8s.io/everyday created" \
  k apply -f "$work/kinds.yaml"
node=$(k get nodes -o jsonpath='{.items[0].metadata.name}')
expect "patch ns" "namespace/everyday patched" k patch ns everyday -p '{"metadata":{"labels":{"team":"a"}}}'
expect_eq "patch ns: stored" "a" k get ns everyday -o jsonpath='{.metadata.labels.team}'
expect "patch node" "node/$node patched" k patch node "$node" -p '{"metadata":{"labels":{"rack":"r1"}}}'
expect_eq "patch node: stored" "r1" k get node "$node" -o jsonpath='{.metadata.labels.rack}'
expect "patch cm" "configmap/settings patched" k patch cm settings -p '{"data":{"k":"v"}}'
expect_eq "patch cm: the data merged" '{"a":"1","k":"v"}' k get cm settings -o jsonpath='{.data}'
# Strategic: ports merge by port (a merge patch would leave one).
expect "patch svc" "service/front patched" k patch svc front -p '{"spec":{"ports":[{"name":"metrics","port":9100}]}}'
expect_eq "patch svc: ports merged by port" "80 9100" \
  sh -c "$KUBECTL --cache-dir $work/cache get svc front -o jsonpath='{.spec.ports[*].port}' | tr ' ' '\n' | sort -n | xargs"
# Strategic: containers merge by name (a merge patch would drop the command).
expect "patch pod" "pod/web patched" k patch pod web -p '{"spec":{"containers":[{"name":"c","image":"busybox:1.37"}]}}'
expect_eq "patch pod: the container merged by name" "busybox:1.37 sleep" \
  k get pod web -o 'jsonpath={.spec.containers[0].image} {.spec.containers[0].command[0]}'
# Services read as on a cluster: a type, a cluster IP of their own, node ports, kubectl's columns.
k create service clusterip everyday-web --tcp=80:8080 >/dev/null 2>&1
k create service nodeport everyday-np --tcp=443 >/dev/null 2>&1
expect_re "get svc: type, cluster IP, external IP, ports" \
  '^everyday-web +ClusterIP +10\.[0-9.]+ +<none> +80/TCP ' k get svc everyday-web
expect_re "get svc: a NodePort Service's node port" \
  '^everyday-np +NodePort +10\.[0-9.]+ +<none> +443:3[0-9]{4}/TCP ' k get svc everyday-np
web_ip=$(k get svc everyday-web -o jsonpath='{.spec.clusterIP}')
k get svc everyday-web -o json |
  python3 -c 'import json, sys; o = json.load(sys.stdin); o["spec"].pop("clusterIP"); o["spec"].pop("clusterIPs"); print(json.dumps(o))' |
  k replace -f - >/dev/null 2>&1
expect_eq "replace of a Service without its cluster IP keeps the address" "$web_ip" \
  k get svc everyday-web -o jsonpath='{.spec.clusterIP}'
expect_re "get pc: kube-apiserver's system classes are there" \
  '^system-node-critical +2000001000 +false' k get pc
expect "patch priorityclass" "priorityclass.scheduling.k8s.io/everyday-high patched" \
  k patch priorityclass everyday-high -p '{"description":"for tests"}'
expect_eq "patch priorityclass: stored" "for tests" k get pc everyday-high -o jsonpath='{.description}'
expect "patch lease" "lease.coordination.k8s.io/everyday patched" \
  k patch lease everyday -p '{"spec":{"holderIdentity":"b"}}'
expect_eq "patch lease: stored" "b" k get lease everyday -o jsonpath='{.spec.holderIdentity}'
expect "patch event" "event/web.everyday patched" k patch event web.everyday -p '{"message":"second"}'
expect_eq "patch event: stored" "second" k get event web.everyday -o jsonpath='{.message}'

# --- a kind muster up lists but runs no controller for: refused saying why, not stored ----------
cat >"$work/deployment.yaml" <<'EOF'
apiVersion: apps/v1
kind: Deployment
metadata: {name: d}
spec:
  selector: {matchLabels: {app: d}}
  template:
    metadata: {labels: {app: d}}
    spec: {containers: [{name: c, image: busybox}]}
EOF
expect "apply a Deployment: refused, saying why" \
  "muster up runs no controller for apps/v1 Deployment objects" k apply -f "$work/deployment.yaml"
expect_not "apply a Deployment: no validation error" "turn validation off" \
  k apply -f "$work/deployment.yaml"
expect "get deployments: none stored" "No resources found" k get deployments
# --- apply of a kind muster does not serve: kube's words, not a validation error --------------
printf 'apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n' >"$work/widget.yaml"
expect "apply a CRD kind that is not installed" 'no matches for kind "Widget" in version "example.com/v1"' \
  k apply -f "$work/widget.yaml"
sed 's/command: \["sleep", "3600"\]/command: ["sleep", "3600"], bogus: 1/' "$work/pods.yaml" >"$work/bogus.yaml"
expect "apply a served kind still validates it" 'unknown field "spec.containers[0].bogus"' \
  k apply -f "$work/bogus.yaml"

# --- debug -------------------------------------------------------------------------------------
expect "debug: no ephemeral containers, said as kubectl says it" \
  "ephemeral containers are disabled for this cluster" k debug web --image=busybox
expect_not "debug: kubectl does not panic" "panic" k debug web --image=busybox
expect "debug --copy-to: the copy is created" "debugger" \
  k debug web --copy-to=web-copy --image=busybox --profile=general
expect_re "debug --copy-to: the copy has the debug container" '^c debugger-[a-z0-9]+$' \
  k get pod web-copy -o 'jsonpath={.spec.containers[*].name}'

# --- logs ----------------------------------------------------------------------------------------
restarted() {
  [ "$(k get pod restarts -o jsonpath='{.status.containerStatuses[0].restartCount}')" = 1 ] &&
    k logs restarts 2>/dev/null | grep -q 'line three'
}
eventually "logs: the pod failed once and runs again" 60 restarted
eventually "logs: the other pod runs" 30 sh -c "$KUBECTL --cache-dir $work/cache logs once | grep -q hello"
expect_eq "logs: the current run's output, as written" "$(printf 'second run\nline two\nline three')" \
  k logs restarts
expect_eq "logs --previous: the run before" "first run" k logs restarts --previous
expect "logs --previous without an earlier run: kubelet's 400" \
  'previous terminated container "main" in pod "once" not found' k logs once --previous
expect_eq "logs: unchanged output without --timestamps" "hello" k logs once
expect_re "logs --timestamps: RFC 3339 with nanoseconds before each line" \
  '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{9}Z line three$' \
  k logs restarts --timestamps --tail=1
expect_re "logs --previous --timestamps" '^[0-9-]+T[0-9:]+\.[0-9]{9}Z first run$' \
  k logs restarts --previous --timestamps
expect_eq "logs --tail=2" "$(printf 'line two\nline three')" k logs restarts --tail=2
expect_eq "logs --limit-bytes=6" "second" k logs restarts --limit-bytes=6
expect "logs --since=1h: recent lines" "line three" k logs restarts --since=1h
sleep 2
expect_eq "logs --since=1s: lines written before are left out" "" k logs restarts --since=1s
past=$(date -u -d '-1 hour' +%Y-%m-%dT%H:%M:%SZ)
future=$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)
expect "logs --since-time in the past" "line three" k logs restarts --since-time="$past"
expect_eq "logs --since-time in the future" "" k logs restarts --since-time="$future"
log_api=/api/v1/namespaces/default/pods/restarts/log
expect "logs: an unparsable sinceTime is 400 with Go's message" \
  'parsing time "yesterday" as "2006-01-02T15:04:05Z07:00"' k get --raw "$log_api?sinceTime=yesterday"
expect "logs: both since parameters are refused" \
  'at most one of `sinceTime` or `sinceSeconds` may be specified' \
  k get --raw "$log_api?sinceSeconds=5&sinceTime=$past"
expect "logs: a negative limitBytes is refused naming it" \
  'limitBytes: Invalid value: -1: must be greater than 0' k get --raw "$log_api?limitBytes=-1"

# `kubectl run NAME --image=IMG -- CMD...` (no --command) gives args and no command: on the
# process node the args are the command line, as users expect of it.
k run args-only --image=busybox --restart=Never -- sh -c 'echo args are the command' >/dev/null 2>&1
eventually "run -- CMD without --command: the args run as the command" 30 \
  phase_is pod/args-only Succeeded
expect_eq "run -- CMD without --command: its output" "args are the command" k logs args-only

# A completed Volcano Job deleted and applied again is another Job each time (another uid): its own
# PodGroup and its own two pods run to completion, never a Completed counted from the pods the
# deleted run left behind.
cat >"$work/again.yaml" <<'EOF'
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: again}
spec:
  minAvailable: 2
  schedulerName: volcano
  tasks:
    - name: worker
      replicas: 2
      template:
        spec:
          nodeSelector: {pool: proc}
          restartPolicy: Never
          containers:
            - {name: main, image: busybox, command: ["/bin/sh", "-c", "echo run"]}
EOF
runs=0
why=""
# Each pod of the run: its phase and the PodGroup it was scheduled with.
own_filter='{range .items[?(@.metadata.ownerReferences[0].uid=="UID")]}{.status.phase} '
own_filter+='{.metadata.annotations.scheduling\.k8s\.io/group-name}{"\n"}{end}'
for run in 1 2 3 4 5; do
  k apply -f "$work/again.yaml" >/dev/null 2>&1 || { why="run $run: apply failed"; break; }
  uid=$(k get vcjob again -o jsonpath='{.metadata.uid}')
  wait_for 60 job_phase_is again Completed || { why="run $run: not Completed"; break; }
  own=$(k get pods -l volcano.sh/job-name=again -o jsonpath="${own_filter/UID/$uid}" |
    grep -c "^Succeeded again-$uid\$")
  [ "$own" = 2 ] ||
    { why="run $run: Completed with $own pods of its own succeeded in PodGroup again-$uid"; break; }
  k delete vcjob again --wait=false >/dev/null 2>&1 || { why="run $run: delete failed"; break; }
  wait_for 30 gone vcjob again || { why="run $run: still there after delete"; break; }
  runs=$run
done
expect_eq "vcjob deleted and applied again, 5 runs: each its own PodGroup and pods, Completed" \
  "5 runs" echo "$runs runs${why:+ ($why)}"

# Secrets and ServiceAccounts: kubectl's generators, its columns, and a process pod reading a
# Secret's keys from its environment and from a volume; a pod naming no such account is refused.
expect "create secret generic" "secret/db created" \
  k create secret generic db --from-literal=user=ml --from-literal=token=s3cr3t
expect_re "get secret: type and number of keys" '^db +Opaque +2 ' k get secret db
expect_eq "get secret: data is base64" "czNjcjN0" k get secret db -o jsonpath='{.data.token}'
expect_re "get sa: every namespace has default" '^default +0 ' k get sa default
cat >"$work/secret-pod.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: reads-secret}
spec:
  nodeSelector: {pool: proc}
  restartPolicy: Never
  serviceAccountName: default
  volumes: [{name: keys, secret: {secretName: db}}]
  containers:
    - name: main
      image: busybox
      command: ["/bin/sh", "-c", "echo \"$TOKEN $(cat $MUSTER_ROOT/etc/keys/user)\""]
      env: [{name: TOKEN, valueFrom: {secretKeyRef: {name: db, key: token}}}]
      volumeMounts: [{name: keys, mountPath: /etc/keys}]
EOF
expect "apply a pod reading the Secret" "pod/reads-secret created" k apply -f "$work/secret-pod.yaml"
wait_for 60 phase_is pod/reads-secret Succeeded
expect_eq "the pod read the Secret from env and volume" "s3cr3t ml" k logs reads-secret
sed 's/serviceAccountName: default/serviceAccountName: nobody/; s/reads-secret/nobody/' \
  "$work/secret-pod.yaml" >"$work/nobody-pod.yaml"
expect_re "a pod naming an absent ServiceAccount is refused" \
  'error looking up service account default/nobody: serviceaccount "nobody" not found' \
  sh -c "$KUBECTL --cache-dir '$work/cache' apply -f '$work/nobody-pod.yaml' 2>&1"

# --- apply --prune and cluster-info dump: every kind they look for is served -------------------
mkdir -p "$work/prune"
for name in keep drop; do
  printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, labels: {set: prune}}\ndata: {k: v}\n' \
    "$name" >"$work/prune/$name.yaml"
done
expect "apply --prune: creates the set" "configmap/drop created" \
  k apply --prune -l set=prune -f "$work/prune"
rm "$work/prune/drop.yaml"
expect "apply --prune: prunes what left the directory" "configmap/drop pruned" \
  k apply --prune -l set=prune -f "$work/prune"
expect_eq "apply --prune: the rest stays" "keep" \
  k get configmaps -l set=prune -o jsonpath='{.items[*].metadata.name}'
dump=$work/dump
if k cluster-info dump --all-namespaces --output-directory="$dump" >"$work/dump.out" 2>&1 &&
  [ -s "$dump/nodes.json" ] && [ -s "$dump/default/pods.json" ] &&
  [ -s "$dump/default/deployments.json" ]; then
  ok "cluster-info dump writes nodes, pods and deployments"
else
  bad "cluster-info dump writes nodes, pods and deployments" "exit 0 and the files" \
    "$(cat "$work/dump.out"; ls -R "$dump" 2>&1 | head -20)"
fi

stop_process "$up_pid" 15
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
