#!/usr/bin/env bash
# End-to-end: the real kubectl against `muster apiserver` (port 0, a temporary data dir, an
# isolated --cache-dir, HTTPS with the CA and token of the kubeconfig it writes), over the seed's
# manifests (manifests/README.md) and Volcano objects.
# Each check asserts what kubectl (or, for raw protocol details, curl) printed, and prints one
# PASS or FAIL line; the last line is "N passed, M failed". Exit 0 only when nothing failed,
# 77 (skipped) when kubectl is not installed.
#
# Usage: kubectl_e2e.sh MUSTER_BINARY        (KUBECTL=... to use another kubectl)
set -u

MUSTER=${1:?usage: kubectl_e2e.sh MUSTER_BINARY}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=e2e_lib.sh
. "$here/e2e_lib.sh"
begin_e2e
manifests=$here/manifests
data=$work/data

start_muster server "$MUSTER" apiserver --listen 127.0.0.1:0 --data-dir "$data" ||
  exit_not_started server "muster apiserver"
addr=$(sed -n 's/^listening on //p' "$work/server.out")
port=${addr##*:}
base=https://$addr
export KUBECONFIG=$muster_kubeconfig
# What a raw client needs besides the URL: the CA the kubeconfig names and its bearer token.
token=$(cat "$data/token")

# needs_curl NAME: false (and a SKIP line) when curl is not installed; the raw-protocol checks
# use it.
needs_curl() {
  command -v curl >/dev/null 2>&1 && return 0
  echo "SKIP $1 (curl not found)"
  return 1
}
# HTTP status of a curl request: http_code METHOD PATH [curl args...]
http_code() {
  local method=$1 path=$2
  shift 2
  curl -s -o "$work/curl.body" -w '%{http_code}' --cacert "$data/ca.crt" \
    -H "Authorization: Bearer $token" -X "$method" "$base$path" "$@"
}

# --- discovery --------------------------------------------------------------------------------
expect "version: dispatcher runs kubectl 1.32 against server v1.32" "Server Version: v1.32" k version
expect_re "api-resources: Volcano jobs with short names vcjob,vj" \
  '^jobs +vcjob,vj +batch.volcano.sh/v1alpha1 +true +Job' k api-resources
expect_re "api-resources: queues cluster-scoped" \
  '^queues +q,queue-v1beta1 +scheduling.volcano.sh/v1beta1 +false +Queue' k api-resources
expect "cluster-info" "Kubernetes control plane is running at https://127.0.0.1:$port" k cluster-info
expect_re "get ns: the default namespaces exist" '^kube-system +Active' k get ns
expect_re "get q: the built-in queues exist" '^root( |$)' k get q

# --- apply -f: create, unchanged, change ------------------------------------------------------
expect "apply -f: create the Queue ml-queue" "queue.scheduling.volcano.sh/ml-queue created" \
  k apply -f "$manifests/volcano-queue.yaml"
expect "apply -f: create the Volcano Job gang-tf-job" "job.batch.volcano.sh/gang-tf-job created" \
  k apply -f "$manifests/tensorflow-job.yaml"
expect "apply -f: create the pytorch Pod" "pod/pytorch-gpu-job created" \
  k apply -f "$manifests/pytorch-gpu-job.yaml"
# Upstream refuses an extended resource requested without a limit; muster takes the seed's
# blocker pod unchanged, its GPU request becoming its limit.
expect "apply -f: the seed's blocker Pod (GPU request without limit) is accepted" \
  "pod/blocker created" k apply -f "$manifests/gpu-blocker-pod.yaml"
expect_eq "apply -f: the blocker's GPU limit is its request" "1" \
  k get pod blocker -o "jsonpath={.spec.containers[0].resources.limits['nvidia\.com/gpu']}"
expect "apply -f: unchanged Queue" "queue.scheduling.volcano.sh/ml-queue unchanged" \
  k apply -f "$manifests/volcano-queue.yaml"
expect "apply -f: unchanged Pod" "pod/pytorch-gpu-job unchanged" \
  k apply -f "$manifests/pytorch-gpu-job.yaml"
sed 's/weight: 1/weight: 2/' "$manifests/volcano-queue.yaml" >"$work/queue-w2.yaml"
expect "apply -f: changed Queue is configured" "queue.scheduling.volcano.sh/ml-queue configured" \
  k apply -f "$work/queue-w2.yaml"
expect_eq "apply -f: the change is stored" "2" k get q ml-queue -o 'jsonpath={.spec.weight}'
expect_eq "Volcano Job defaults: queue kept, maxRetry 3" "ml-queue 3" \
  k get vj gang-tf-job -o 'jsonpath={.spec.queue} {.spec.maxRetry}'

# --- apply --server-side --------------------------------------------------------------------
cat >"$work/ssa-pod.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata:
  name: ssa-pod
  labels: {app: ssa}
spec:
  containers:
  - name: main
    image: busybox:1.36
EOF
expect "apply --server-side: creates" "pod/ssa-pod serverside-applied" \
  k apply --server-side -f "$work/ssa-pod.yaml"
sed 's/busybox:1.36/busybox:1.37/' "$work/ssa-pod.yaml" >"$work/ssa-pod2.yaml"
expect "apply --server-side: updates" "pod/ssa-pod serverside-applied" \
  k apply --server-side -f "$work/ssa-pod2.yaml"
expect_eq "apply --server-side: the change is stored" "busybox:1.37" \
  k get pod ssa-pod -o 'jsonpath={.spec.containers[0].image}'

# --- apply --server-side by two field managers ------------------------------------------------
# Each manager owns what it applied (metadata.managedFields); changing another's field is a
# conflict unless forced; a field a manager stops applying, owned by no one else, is removed; an
# update (kubectl patch) takes the fields it changes.
cm_yaml() { printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ssa-cm}\ndata: %s\n' "$1"; }
cm_yaml '{a: "1"}' >"$work/cm-a.yaml"
cm_yaml '{b: "2"}' >"$work/cm-b.yaml"
cm_yaml '{a: "3", b: "2"}' >"$work/cm-b2.yaml"
managers() {
  k get cm ssa-cm --show-managed-fields \
    -o 'jsonpath={range .metadata.managedFields[*]}{.manager}/{.operation} {end}'
}
expect "field managers: team-a applies data.a" "configmap/ssa-cm serverside-applied" \
  k apply --server-side --field-manager=team-a -f "$work/cm-a.yaml"
expect "field managers: team-b applies data.b" "configmap/ssa-cm serverside-applied" \
  k apply --server-side --field-manager=team-b -f "$work/cm-b.yaml"
expect_eq "field managers: both fields stored" "1 2" k get cm ssa-cm -o 'jsonpath={.data.a} {.data.b}'
expect_eq "field managers: managedFields names both appliers" "team-a/Apply team-b/Apply " managers
expect "field managers: team-b changing data.a is a conflict naming team-a and the field" \
  'Apply failed with 1 conflict: conflict with "team-a": .data.a' \
  k apply --server-side --field-manager=team-b -f "$work/cm-b2.yaml"
expect_eq "field managers: the conflict exits 1" "1" \
  sh -c "'$KUBECTL' --cache-dir '$work/cache' apply --server-side --field-manager=team-b \
           -f '$work/cm-b2.yaml' >/dev/null 2>&1; echo \$?"
expect_eq "field managers: the refused apply stored nothing" "1" k get cm ssa-cm -o 'jsonpath={.data.a}'
expect "field managers: --force-conflicts takes data.a" "configmap/ssa-cm serverside-applied" \
  k apply --server-side --field-manager=team-b --force-conflicts -f "$work/cm-b2.yaml"
expect_eq "field managers: the forced value is stored" "3" k get cm ssa-cm -o 'jsonpath={.data.a}'
expect_eq "field managers: team-a owned only data.a and is gone" "team-b/Apply " managers
expect "field managers: team-b applies without data.a" "configmap/ssa-cm serverside-applied" \
  k apply --server-side --field-manager=team-b -f "$work/cm-b.yaml"
expect_eq "field managers: data.a, dropped and owned by no one, is removed" "{\"b\":\"2\"}" \
  k get cm ssa-cm -o 'jsonpath={.data}'
expect "field managers: kubectl patch changes data.b" "configmap/ssa-cm patched" \
  k patch cm ssa-cm -p '{"data":{"b":"9"}}'
expect_eq "field managers: the patch's manager took data.b" "kubectl-patch/Update " managers
expect "field managers: re-applying data.b conflicts with the patch's manager" \
  'conflict with "kubectl-patch" using v1: .data.b' \
  k apply --server-side --field-manager=team-b -f "$work/cm-b.yaml"

# --- get ---------------------------------------------------------------------------------------
expect_re "get pods: table with READY and STATUS" '^pytorch-gpu-job +0/1 +Pending +0 +[0-9]+s' \
  k get pods
expect_re "get pods -A: NAMESPACE column" '^default +pytorch-gpu-job +0/1 +Pending' k get pods -A
expect_re "get pods -o wide: priority-1 columns" \
  '^NAME +READY +STATUS +RESTARTS +AGE +IP +NODE +NOMINATED NODE +READINESS GATES' k get pods -o wide
expect "get pod -o yaml" "name: pytorch-gpu-job" k get pod pytorch-gpu-job -o yaml
expect_re "get pod -o yaml: server-set uid" \
  'uid: [0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}' \
  k get pod pytorch-gpu-job -o yaml
expect "get pod -o json" '"kind": "Pod"' k get pod pytorch-gpu-job -o json
expect_eq "get pods -o name" "$(printf 'pod/blocker\npod/pytorch-gpu-job\npod/ssa-pod')" k get pods -o name
expect_re "get vj: Volcano printer columns" '^NAME +STATUS +MINAVAILABLE +RUNNINGS +AGE$' k get vj
expect_re "get vj -o wide: QUEUE column" '^gang-tf-job +.*ml-queue$' k get vj -o wide
expect "get po,vj,q: several types" "job.batch.volcano.sh/gang-tf-job" k get po,vj,q
expect_eq "get -l: label selector" "pod/ssa-pod" k get pods -l app=ssa -o name
expect_eq "get -l: set-based selector" "pod/ssa-pod" k get pods -l 'app in (ssa,other)' -o name
expect "get -l: no match" "No resources found in default namespace." k get pods -l app=none
expect_eq "get --field-selector" "pod/pytorch-gpu-job" \
  k get pods --field-selector metadata.name=pytorch-gpu-job -o name
expect_eq "get --field-selector status.phase!=" "" \
  k get pods --field-selector 'status.phase!=Pending' -o name
expect "get --field-selector: unsupported field is a 400" "field label not supported: spec.foo" \
  k get pods --field-selector spec.foo=bar
expect_eq "get --chunk-size=1: limit/continue pages" \
  "$(printf 'pod/blocker\npod/pytorch-gpu-job\npod/ssa-pod')" \
  k get pods --chunk-size=1 -o name

# --- create -f, dry run, field validation --------------------------------------------------------
pod_uid=$(k get pod pytorch-gpu-job -o 'jsonpath={.metadata.uid}')
sed "s/POD_UID/$pod_uid/" "$manifests/event.yaml" >"$work/event.yaml"
expect "create -f: an Event about the pod" "event/pytorch-gpu-job.e2e created" \
  k create -f "$work/event.yaml"
expect "create -f: the same again is AlreadyExists" \
  'Error from server (AlreadyExists): error when creating' k create -f "$work/event.yaml"
cat >"$work/gen.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata:
  generateName: gen-
spec:
  containers:
  - name: main
    image: busybox
EOF
expect_re "create -f: generateName" '^pod/gen-[bcdfghjklmnpqrstvwxz2456789]{5} created$' \
  k create -f "$work/gen.yaml"
cat >"$work/dry.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata:
  name: dry
spec:
  containers:
  - name: main
    image: busybox
EOF
expect "create --dry-run=server" "pod/dry created (server dry run)" \
  k create -f "$work/dry.yaml" --dry-run=server
expect "create --dry-run=server: nothing stored" 'pods "dry" not found' k get pod dry
sed 's/^spec:/spec:\n  bogusField: 1/' "$work/dry.yaml" >"$work/strict.yaml"
expect "create -f: fieldValidation=Strict refuses unknown fields" 'unknown field "spec.bogusField"' \
  k create -f "$work/strict.yaml"
expect "get events --field-selector involvedObject.name" "FailedScheduling" \
  k get events --field-selector involvedObject.name=pytorch-gpu-job

# --- replace -f --------------------------------------------------------------------------------
k get q ml-queue -o yaml >"$work/queue-stale.yaml"
k label q ml-queue touched=yes >/dev/null 2>&1
expect "replace -f: stale resourceVersion refused" \
  "the object has been modified; please apply your changes to the latest version" \
  k replace -f "$work/queue-stale.yaml"
k get q ml-queue -o yaml | sed 's/weight: 2/weight: 5/' >"$work/queue-fresh.yaml"
expect "replace -f: fresh resourceVersion accepted" "queue.scheduling.volcano.sh/ml-queue replaced" \
  k replace -f "$work/queue-fresh.yaml"
expect_eq "replace -f: the change is stored" "5" k get q ml-queue -o 'jsonpath={.spec.weight}'

# --- patch, label, annotate -----------------------------------------------------------------
expect "patch --type merge" "pod/pytorch-gpu-job patched" \
  k patch pod pytorch-gpu-job --type merge -p '{"metadata":{"labels":{"merge":"yes"}}}'
expect "patch --type json" "pod/pytorch-gpu-job patched" \
  k patch pod pytorch-gpu-job --type json -p '[{"op":"add","path":"/metadata/labels/json","value":"yes"}]'
expect "patch (strategic, the default)" "pod/pytorch-gpu-job patched" \
  k patch pod pytorch-gpu-job -p '{"spec":{"containers":[{"name":"training-container","image":"nvcr.io/nvidia/pytorch:24.01-py3"}]}}'
expect_eq "patch: all three landed; strategic merged the container by name" \
  "yes yes nvcr.io/nvidia/pytorch:24.01-py3 /app/train.py" \
  k get pod pytorch-gpu-job -o 'jsonpath={.metadata.labels.merge} {.metadata.labels.json} {.spec.containers[0].image} {.spec.containers[0].command[1]}'
expect "patch: strategic merge on a Volcano Job is 415" \
  "the body of the request was in an unknown format" \
  k patch vj gang-tf-job -p '{"metadata":{"labels":{"x":"y"}}}'
expect "patch --type merge on a Volcano Job" "job.batch.volcano.sh/gang-tf-job patched" \
  k patch vj gang-tf-job --type merge -p '{"metadata":{"labels":{"team":"ml"}}}'
expect "label" "pod/pytorch-gpu-job labeled" k label pod pytorch-gpu-job tier=gpu
expect_re "label: shown by --show-labels" 'tier=gpu' k get pod pytorch-gpu-job --show-labels
expect "annotate" "pod/pytorch-gpu-job annotated" k annotate pod pytorch-gpu-job owner=ml-team
expect_eq "annotate: stored" "ml-team" \
  k get pod pytorch-gpu-job -o 'jsonpath={.metadata.annotations.owner}'

# --- describe, explain, logs ----------------------------------------------------------------
expect_re "describe pod: shows the Event" \
  'Warning +FailedScheduling +.* +volcano +0/3 nodes are available: 3 Insufficient nvidia.com/gpu.' \
  k describe pod pytorch-gpu-job
expect_re "describe pod: shows the labels" 'tier=gpu' k describe pod pytorch-gpu-job
expect "explain vcjob.spec" "minAvailable" k explain vcjob.spec
expect_re "explain vcjob.spec: kind and group" '^KIND: +Job' k explain vcjob.spec
logdir=$data/logs/default/pytorch-gpu-job
mkdir -p "$logdir"
printf 'epoch 1 loss 0.9\nepoch 2 loss 0.5\nepoch 3 loss 0.1\n' >"$logdir/training-container.log"
expect "logs" "epoch 2 loss 0.5" k logs pytorch-gpu-job
expect_eq "logs --tail=1" "epoch 3 loss 0.1" k logs pytorch-gpu-job --tail=1
expect_eq "logs of a pod without output" "" k logs ssa-pod
timeout 10 "$KUBECTL" --cache-dir "$work/cache" logs -f pytorch-gpu-job >"$work/follow.out" 2>&1 &
stop_at_exit "$!"
sleep 1.5
printf 'epoch 4 loss 0.05\n' >>"$logdir/training-container.log"
sleep 1
expect "logs -f: streams lines appended later" "epoch 4 loss 0.05" cat "$work/follow.out"

# --- get -w ------------------------------------------------------------------------------------
timeout 8 "$KUBECTL" --cache-dir "$work/cache" get pods -w >"$work/watch.out" 2>&1 &
watch_pid=$!
stop_at_exit "$watch_pid"
timeout 8 "$KUBECTL" --cache-dir "$work/cache" get vj -w --output-watch-events >"$work/watch-vj.out" 2>&1 &
stop_at_exit "$!"
sleep 2
cat >"$work/late.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata:
  name: late-pod
spec:
  containers:
  - name: main
    image: busybox
EOF
k create -f "$work/late.yaml" >/dev/null 2>&1
k patch vj gang-tf-job --type merge -p '{"spec":{"minAvailable":2}}' >/dev/null 2>&1
k label vj gang-tf-job watched=yes >/dev/null 2>&1
sleep 2
expect_re "get -w: sees a pod created later" '^late-pod +0/1 +Pending' cat "$work/watch.out"
expect_re "get -w --output-watch-events: sees the Job modified" '^MODIFIED +gang-tf-job' \
  cat "$work/watch-vj.out"

# --- binding, graceful delete, delete -f ------------------------------------------------------
needs_curl "pods/binding" && expect_eq "pods/binding: 201" "201" http_code POST /api/v1/namespaces/default/pods/late-pod/binding \
  -H 'Content-Type: application/json' \
  -d '{"apiVersion":"v1","kind":"Binding","metadata":{"name":"late-pod"},"target":{"kind":"Node","name":"gpu-node-1"}}'
needs_curl "pods/binding" && expect_re "pods/binding: NODE column" '^late-pod +.* gpu-node-1 ' k get pod late-pod -o wide
needs_curl "pods/binding" &&
  http_code POST /api/v1/namespaces/default/pods/late-pod/binding -H 'Content-Type: application/json' \
    -d '{"apiVersion":"v1","kind":"Binding","metadata":{"name":"late-pod"},"target":{"kind":"Node","name":"gpu-node-2"}}' >/dev/null &&
  expect "pods/binding: already bound is 409" 'pod late-pod is already assigned to node \"gpu-node-1\"' \
  cat "$work/curl.body"
expect 'delete pod --grace-period=2: a bound pod is deleted gracefully, kubectl waits' \
  'pod "late-pod" deleted' k delete pod late-pod --grace-period=2
expect "delete: gone afterwards" 'pods "late-pod" not found' k get pod late-pod
expect "delete -f" 'pod "ssa-pod" deleted' k delete -f "$work/ssa-pod.yaml"
expect "delete -f: gone afterwards" 'pods "ssa-pod" not found' k get pod ssa-pod
expect "delete -f: Volcano Job" 'job.batch.volcano.sh "gang-tf-job" deleted' \
  k delete -f "$manifests/tensorflow-job.yaml"
cat >"$work/held.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata:
  name: held
  finalizers: [example.com/hold]
spec:
  containers: [{name: main, image: busybox}]
EOF
k create -f "$work/held.yaml" >/dev/null 2>&1
expect 'delete --wait=false: a finalizer holds the pod' 'pod "held" deleted' \
  k delete pod held --wait=false
expect_re "delete: held pod shows Terminating" '^held +0/1 +Terminating' k get pod held
expect "patch: removing the last finalizer" "pod/held patched" \
  k patch pod held --type merge -p '{"metadata":{"finalizers":null}}'
expect "delete: the pod is gone once its finalizers are" 'pods "held" not found' k get pod held

# --- namespaces and nodes ----------------------------------------------------------------------
expect "create namespace (a protobuf body)" "namespace/team-a created" k create namespace team-a
expect "run: a pod in the new namespace" "pod/web created" k run web --image=nginx -n team-a
expect_re "get -n: the pod is there" '^web +0/1 +Pending' k get pods -n team-a
expect 'delete namespace: waits until it is gone' 'namespace "team-a" deleted' \
  k delete namespace team-a --timeout=30s
expect "delete namespace: its pods are gone" 'No resources found' k get pods -A -l run=web
cat >"$work/node.yaml" <<'EOF'
apiVersion: v1
kind: Node
metadata:
  name: gpu-node-1
  labels: {node.kubernetes.io/instance-type: g4dn.xlarge}
status:
  capacity: {cpu: "4", memory: 16Gi, nvidia.com/gpu: "1", pods: "110"}
  allocatable: {cpu: "4", memory: 16Gi, nvidia.com/gpu: "1", pods: "110"}
  conditions:
  - {type: Ready, status: "True", reason: KubeletReady, message: kubelet is posting ready status}
EOF
expect "apply -f: a Node with status" "node/gpu-node-1 created" k apply -f "$work/node.yaml"
expect_re "get nodes" '^gpu-node-1 +Ready ' k get nodes
expect "cordon (strategic merge on a Node)" "node/gpu-node-1 cordoned" k cordon gpu-node-1
expect "taint" "node/gpu-node-1 tainted" k taint nodes gpu-node-1 nvidia.com/gpu=present:NoSchedule
expect_re "get nodes: SchedulingDisabled" '^gpu-node-1 +Ready,SchedulingDisabled ' k get nodes
expect_re "describe node: taints" '^Taints: +nvidia.com/gpu=present:NoSchedule' \
  k describe node gpu-node-1
expect_eq "get nodes --field-selector spec.unschedulable=true" "node/gpu-node-1" \
  k get nodes --field-selector spec.unschedulable=true -o name

# --- protocol details (curl) ------------------------------------------------------------------
if needs_curl "protocol details"; then
  expect '/version: minor 32 (no token needed)' '"minor":"32"' curl -s --cacert "$data/ca.crt" "$base/version"
  expect_eq "unknown path: 404" "404" http_code GET /api/v1/frobs
  expect "unknown path: a Status body" '"kind":"Status"' cat "$work/curl.body"
  head -c 4194304 /dev/zero | tr '\0' 'a' >"$work/big.json"
  expect_eq "request body over 3 MiB: 413" "413" http_code POST /api/v1/namespaces/default/pods \
    -H 'Content-Type: application/json' --data-binary @"$work/big.json"
  expect "request body over 3 MiB: RequestEntityTooLarge" '"reason":"RequestEntityTooLarge"' \
    cat "$work/curl.body"
  expect_eq "malformed JSON: 400" "400" http_code POST /api/v1/namespaces/default/pods \
    -H 'Content-Type: application/json' -d '{"apiVersion": '
  expect_eq "missing namespace: 404" "404" http_code POST /api/v1/namespaces/nope/pods \
    -H 'Content-Type: application/json' \
    -d '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"},"spec":{"containers":[{"name":"c","image":"i"}]}}'
  expect "missing namespace: message" 'namespaces \"nope\" not found' cat "$work/curl.body"
fi
expect "patch --subresource=status" "pod/pytorch-gpu-job patched" \
  k patch pod pytorch-gpu-job --subresource=status --type merge \
  -p '{"status":{"phase":"Running"},"spec":{"nodeName":"sneaky"}}'
expect_eq "pods/status: only .status changed" "Running " \
  k get pod pytorch-gpu-job -o 'jsonpath={.status.phase} {.spec.nodeName}'
expect_re "get pods after the status update" '^pytorch-gpu-job +0/1 +Running' k get pods

# --- beyond loopback: bearer token and TLS ----------------------------------------------------
start_muster tls "$MUSTER" apiserver --listen 0.0.0.0:0 --data-dir "$work/tls"
tls_port=$(sed -n 's/^listening on .*://p' "$work/tls.out")
expect "TLS: kubeconfig points at https" "server: https://127.0.0.1:$tls_port" cat "$work/tls/kubeconfig"
expect_eq "TLS: secrets are mode 0600" "$(printf '600\n600\n600')" \
  stat -c '%a' "$work/tls/token" "$work/tls/kubeconfig" "$work/tls/server.key"
expect_re "TLS: kubectl with the written kubeconfig (token + CA)" '^kube-system +Active' \
  env KUBECONFIG="$work/tls/kubeconfig" "$KUBECTL" --cache-dir "$work/tls-cache" get ns
needs_curl "TLS: 401" && expect_eq "TLS: a request without the token gets 401" "401" \
  curl -s -o /dev/null -w '%{http_code}' --cacert "$work/tls/ca.crt" "https://127.0.0.1:$tls_port/api/v1/namespaces"
needs_curl "TLS: plain HTTP" && expect_eq "TLS: plain HTTP is refused" "000" \
  curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$tls_port/version"
needs_curl "TLS: anonymous /readyz" && expect_eq "TLS: /readyz needs no token (kube's public-info paths)" \
  "ok" curl -s --cacert "$work/tls/ca.crt" "https://127.0.0.1:$tls_port/readyz"
expect "TLS: loopback is HTTPS too" "server: https://127.0.0.1:$port" cat "$data/kubeconfig"
mkdir -p "$work/tls-before"
cp "$work/tls/ca.crt" "$work/tls/server.crt" "$work/tls/token" "$work/tls/kubeconfig" "$work/tls-before/"
stop_process  # the TLS server, the last one started
start_muster tls "$MUSTER" apiserver --listen "127.0.0.1:$tls_port" --data-dir "$work/tls"
expect_eq "TLS: the CA, the certificate and the token are kept across a restart" "" \
  sh -c "for f in ca.crt server.crt token kubeconfig; do
           cmp -s '$work/tls-before/'\$f '$work/tls/'\$f || echo \$f changed; done"
expect_re "TLS: the kubeconfig from before the restart still works" '^kube-system +Active' \
  env KUBECONFIG="$work/tls-before/kubeconfig" "$KUBECTL" --cache-dir "$work/tls-cache" get ns
# --insecure-http: plain HTTP without a token, loopback only.
start_muster plain "$MUSTER" apiserver --listen 127.0.0.1:0 --data-dir "$work/plain" --insecure-http
plain_port=$(sed -n 's/^listening on .*://p' "$work/plain.out")
expect "insecure-http: kubeconfig points at http" "server: http://127.0.0.1:$plain_port" \
  cat "$work/plain/kubeconfig"
expect_re "insecure-http: kubectl without credentials" '^kube-system +Active' \
  env KUBECONFIG="$work/plain/kubeconfig" "$KUBECTL" --cache-dir "$work/plain-cache" get ns
expect_eq "insecure-http: refused beyond loopback (exit 1)" "1" \
  sh -c "'$MUSTER' apiserver --listen 0.0.0.0:0 --data-dir '$work/plain2' --insecure-http \
           >/dev/null 2>&1; echo \$?"
expect "insecure-http: the refusal says why" "serves loopback addresses only" \
  "$MUSTER" apiserver --listen 0.0.0.0:0 --data-dir "$work/plain2" --insecure-http

# --- apply -f of an unchanged Volcano Job ------------------------------------------------------
# Creation defaults tasks[].template.spec.schedulerName (and task minAvailable); kubectl's merge
# patch for a custom resource replaces the whole tasks list without them. Re-applying must not
# look like a forbidden change, while a real change of a template field still is one.
sed 's/name: gang-tf-job/name: reapply-job/' "$manifests/tensorflow-job.yaml" >"$work/reapply-job.yaml"
sed 's/tf-volcano-demo:v1/tf-volcano-demo:v2/' "$work/reapply-job.yaml" >"$work/reapply-job-v2.yaml"
expect "re-apply: create the Volcano Job" "job.batch.volcano.sh/reapply-job created" \
  k apply -f "$work/reapply-job.yaml"
expect_re "re-apply: the unchanged Volcano Job is accepted" \
  '^job.batch.volcano.sh/reapply-job (unchanged|configured)$' k apply -f "$work/reapply-job.yaml"
expect_re "re-apply: accepted again" \
  '^job.batch.volcano.sh/reapply-job (unchanged|configured)$' k apply -f "$work/reapply-job.yaml"
# An unchanged apply writes nothing: no new revision for watchers to wake up to, nothing to diff.
rv_gen() { k get vj reapply-job -o 'jsonpath={.metadata.resourceVersion} {.metadata.generation}'; }
before=$(rv_gen)
k apply -f "$work/reapply-job.yaml" >/dev/null 2>&1
expect_eq "re-apply: resourceVersion and generation unchanged" "$before" rv_gen
expect_eq "diff -f: exit 0 on the unchanged Volcano Job" "0" \
  sh -c "'$KUBECTL' --cache-dir '$work/cache' diff -f '$work/reapply-job.yaml' >/dev/null 2>&1; echo \$?"
# The first server-side apply records kubectl as a field manager (a write of metadata only, as on
# kube-apiserver, where kubectl then moves client-side apply's fields to it); after that an
# unchanged server-side apply writes nothing either.
gen() { k get vj reapply-job -o 'jsonpath={.metadata.generation}'; }
generation=$(gen)
expect_re "apply --server-side: the unchanged Volcano Job" \
  '^job.batch.volcano.sh/reapply-job serverside-applied$' \
  k apply --server-side -f "$work/reapply-job.yaml"
expect_eq "apply --server-side: generation unchanged" "$generation" gen
before=$(rv_gen)
expect_re "apply --server-side: the unchanged Volcano Job again" \
  '^job.batch.volcano.sh/reapply-job serverside-applied$' \
  k apply --server-side -f "$work/reapply-job.yaml"
expect_eq "apply --server-side: resourceVersion and generation unchanged" "$before" rv_gen
expect_eq "apply --server-side: kubectl moved client-side apply's fields to apply entries" \
  "kubectl/Apply kubectl-last-applied/Apply " k get vj reapply-job --show-managed-fields \
  -o 'jsonpath={range .metadata.managedFields[*]}{.manager}/{.operation} {end}'
expect_eq "diff --server-side -f: exit 0 on the unchanged Volcano Job" "0" \
  sh -c "'$KUBECTL' --cache-dir '$work/cache' diff --server-side -f '$work/reapply-job.yaml' \
           >/dev/null 2>&1; echo \$?"
expect_eq "diff -f: exit 1 on a changed replica count" "1" \
  sh -c "sed 's/replicas: 2/replicas: 3/' '$work/reapply-job.yaml' |
           '$KUBECTL' --cache-dir '$work/cache' diff -f - >/dev/null 2>&1; echo \$?"
expect_eq "re-apply: the template keeps the job's scheduler and the task minimum" "volcano 2" \
  k get vj reapply-job -o 'jsonpath={.spec.tasks[0].template.spec.schedulerName} {.spec.tasks[0].minAvailable}'
expect "re-apply: a changed template image is still refused" \
  'job updates may not change fields other than `minAvailable`, `tasks[*].replicas under spec`' \
  k apply -f "$work/reapply-job-v2.yaml"
expect_eq "re-apply: the refused change is not stored" "akash202k/tf-volcano-demo:v1" \
  k get vj reapply-job -o 'jsonpath={.spec.tasks[0].template.spec.containers[0].image}'
k delete -f "$work/reapply-job.yaml" >/dev/null 2>&1

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
