#!/usr/bin/env bash
# End-to-end: the kubectl generators that send their objects as application/vnd.kubernetes.protobuf
# (`create configmap`, `create priorityclass`, `create service clusterip|nodeport|loadbalancer|
# externalname`, `create namespace`, `debug --copy-to`, `auth can-i`) against `muster apiserver`
# (port 0, a temporary data dir), each object read back with `kubectl get` to see that what
# kubectl meant arrived (src/apiserver/protobuf/protobuf.h). Then, with curl, malformed protobuf bodies:
# 400 with what was wrong, and a kind without a schema: 415. The server is reached only as the
# kubeconfig it writes says (http or https, token or none). One PASS or FAIL line per check,
# "N passed, M failed" last; exit 0 only when nothing failed, 77 (skipped) when kubectl is not
# installed.
#
# Usage: kubectl_protobuf_e2e.sh MUSTER_BINARY        (KUBECTL=... to use another kubectl)
set -u

MUSTER=${1:?usage: kubectl_protobuf_e2e.sh MUSTER_BINARY}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=e2e_lib.sh
. "$here/e2e_lib.sh"
begin_e2e

start_muster server "$MUSTER" apiserver --listen 127.0.0.1:0 --data-dir "$work/data" ||
  exit_not_started server "muster apiserver"
export KUBECONFIG=$muster_kubeconfig

# --- create configmap: data from literals and files, binaryData from a file that is not UTF-8 ----
printf 'line one\nline two: "quoted"\n\ttabbed ✓\n' >"$work/notes.txt"
printf '\x00\x01\x02\xfe\xff\x80binary' >"$work/blob.bin"
expect "create configmap (a protobuf body)" "configmap/c1 created" \
  k create configmap c1 --from-literal=a=b --from-literal=empty= \
  --from-file="$work/notes.txt" --from-file="$work/blob.bin"
expect_eq "configmap: a literal" "b" k get configmap c1 -o 'jsonpath={.data.a}'
expect_eq "configmap: an empty literal is kept" '""' \
  k get configmap c1 -o 'go-template={{printf "%q" (index .data "empty")}}'
k get configmap c1 -o 'go-template={{index .data "notes.txt"}}' >"$work/notes.back" 2>&1
if cmp -s "$work/notes.txt" "$work/notes.back"; then
  ok "configmap: a file's text round-trips byte for byte"
else
  bad "configmap: a file's text round-trips byte for byte" "$(cat "$work/notes.txt")" \
    "$(cat "$work/notes.back")"
fi
expect_eq "configmap: a binary file is binaryData (base64)" "$(base64 -w0 "$work/blob.bin")" \
  k get configmap c1 -o 'jsonpath={.binaryData.blob\.bin}'
expect "configmap: get -o yaml shows the data" "a: b" k get configmap c1 -o yaml
expect_not "configmap: no creationTimestamp of year 1" "0001-01-01" k get configmap c1 -o yaml
expect_re "configmap: the server set creationTimestamp" 'creationTimestamp: "?20[0-9]{2}-' \
  k get configmap c1 -o yaml

# --- create priorityclass: an int32 value, a description, preemptionPolicy ------------------------
expect "create priorityclass (a protobuf body)" "priorityclass.scheduling.k8s.io/p1 created" \
  k create priorityclass p1 --value=10 --description="batch jobs" --preemption-policy=Never
expect_eq "priorityclass: value, description, preemptionPolicy, globalDefault" \
  "10|batch jobs|Never|false" \
  k get priorityclass p1 -o 'jsonpath={.value}|{.description}|{.preemptionPolicy}|{.globalDefault}'
expect "create priorityclass: a negative value" "priorityclass.scheduling.k8s.io/p-low created" \
  k create priorityclass p-low --value=-5
expect_eq "priorityclass: the negative value is stored" "-5" \
  k get priorityclass p-low -o 'jsonpath={.value}'

# --- create service clusterip: ports with an IntOrString targetPort -------------------------------
expect "create service clusterip (a protobuf body)" "service/s1 created" \
  k create service clusterip s1 --tcp=80:8080 --tcp=443:https
expect_eq "service: ports, targetPort as a number and as a name" \
  "80-8080 TCP 80 8080;443-https TCP 443 https;" \
  k get service s1 \
  -o 'jsonpath={range .spec.ports[*]}{.name} {.protocol} {.port} {.targetPort};{end}'
expect_eq "service: selector and type" "s1 ClusterIP" \
  k get service s1 -o 'jsonpath={.spec.selector.app} {.spec.type}'
expect "service: get -o yaml shows targetPort 8080" "targetPort: 8080" k get service s1 -o yaml

# --- the other service generators: nodeport, loadbalancer, externalname ---------------------------
expect "create service nodeport (a protobuf body)" "service/s-node created" \
  k create service nodeport s-node --tcp=8080:80 --node-port=30080
expect_eq "service nodeport: type, port, targetPort and nodePort" "NodePort 8080 80 30080" \
  k get service s-node -o 'jsonpath={.spec.type} {.spec.ports[0].port} {.spec.ports[0].targetPort} {.spec.ports[0].nodePort}'
expect "create service loadbalancer (a protobuf body)" "service/s-lb created" \
  k create service loadbalancer s-lb --tcp=443:8443
expect_eq "service loadbalancer: type and ports" "LoadBalancer 443 8443" \
  k get service s-lb -o 'jsonpath={.spec.type} {.spec.ports[0].port} {.spec.ports[0].targetPort}'
expect "create service externalname (a protobuf body)" "service/s-ext created" \
  k create service externalname s-ext --external-name=storage.example.com
expect_eq "service externalname: type and external name" "ExternalName storage.example.com" \
  k get service s-ext -o 'jsonpath={.spec.type} {.spec.externalName}'

# --- create namespace -----------------------------------------------------------------------------
expect "create namespace (a protobuf body)" "namespace/n1 created" k create namespace n1
expect_re "namespace: listed Active" '^n1 +Active' k get namespaces
expect "create configmap in the new namespace" "configmap/c2 created" \
  k create configmap c2 -n n1 --from-literal=k=v
expect_eq "configmap in n1 is stored there" "v" k get configmap c2 -n n1 -o 'jsonpath={.data.k}'

# --- debug --copy-to: a whole Pod, quantities and all, as kubectl copies it -----------------------
cat >"$work/pod.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata:
  name: trainer
  labels: {app: trainer}
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: busybox:1.36
    command: ["sleep", "3600"]
    resources:
      requests: {cpu: 500m, memory: 1Gi}
      limits: {cpu: "1", memory: 1536Mi}
    ports:
    - {name: http, containerPort: 8080}
    readinessProbe:
      httpGet: {path: /healthz, port: http}
EOF
expect "debug --copy-to: the original pod (JSON)" "pod/trainer created" k create -f "$work/pod.yaml"
k debug trainer --copy-to=trainer-debug --container=main --image=busybox:1.37 \
  >"$work/debug.out" 2>&1
expect_eq "debug --copy-to: the copy (a protobuf body) is stored" "trainer-debug" \
  k get pod trainer-debug -o 'jsonpath={.metadata.name}'
first='{{with index .spec.containers 0}}{{.resources.requests.cpu}} {{.resources.requests.memory}}'
first+=' {{.resources.limits.memory}} {{.image}} {{.readinessProbe.httpGet.port}}{{end}}'
expect_eq "debug --copy-to: its quantities, image and named probe port" \
  "500m 1Gi 1536Mi busybox:1.37 http" k get pod trainer-debug -o "go-template=$first"

# --- auth can-i: a SelfSubjectAccessReview, where the server serves them --------------------------
if k api-resources --api-group=authorization.k8s.io -o name 2>/dev/null |
  grep -q '^selfsubjectaccessreviews'; then
  expect_eq "auth can-i (a protobuf SelfSubjectAccessReview)" "yes" k auth can-i list pods
else
  echo "SKIP auth can-i (the server serves no selfsubjectaccessreviews)"
fi

# --- malformed bodies through curl ----------------------------------------------------------------
# post_protobuf PATH FILE: POSTs FILE as a protobuf body to the server of $KUBECONFIG, with its
# CA and token when it has them; prints the HTTP status, the response body in $work/curl.body.
post_protobuf() {
  local server ca token args=()
  server=$(k config view --raw -o 'jsonpath={.clusters[0].cluster.server}')
  ca=$(k config view --raw -o 'jsonpath={.clusters[0].cluster.certificate-authority-data}')
  token=$(k config view --raw -o 'jsonpath={.users[0].user.token}')
  if [ -n "$ca" ]; then
    base64 -d <<<"$ca" >"$work/ca.pem"
    args+=(--cacert "$work/ca.pem")
  fi
  [ -z "$token" ] || args+=(-H "Authorization: Bearer $token")
  curl -s -o "$work/curl.body" -w '%{http_code}' -X POST "${args[@]}" \
    -H 'Content-Type: application/vnd.kubernetes.protobuf' --data-binary "@$2" "$server$1"
}
# expect_post NAME CODE TEXT PATH FILE: the POST answers CODE with TEXT in its body.
expect_post() {
  local code
  code=$(post_protobuf "$4" "$5")
  if [ "$code" = "$2" ] && grep -qF -- "$3" "$work/curl.body"; then
    ok "$1"
  else
    bad "$1" "$2 with '$3'" "$code $(cat "$work/curl.body")"
  fi
}
if command -v curl >/dev/null 2>&1; then
  cms=/api/v1/namespaces/default/configmaps
  # k8s\0, typeMeta {v1, ConfigMap}, raw whose length runs past the end.
  printf 'k8s\x00\x0a\x0f\x0a\x02v1\x12\x09ConfigMap\x12\x40\x0a\x04' >"$work/truncated.pb"
  expect_post "a truncated protobuf body is 400 saying where" 400 \
    "couldn't decode the request body as protobuf: the envelope (runtime.Unknown).raw: length 64" \
    "$cms" "$work/truncated.pb"
  printf '{"kind":"ConfigMap"}' >"$work/nomagic.pb"
  expect_post "a protobuf body without the magic number is 400" 400 "magic number" \
    "$cms" "$work/nomagic.pb"
  # metadata (field 1) sent as a varint.
  printf 'k8s\x00\x0a\x0f\x0a\x02v1\x12\x09ConfigMap\x12\x02\x08\x01' >"$work/wiretype.pb"
  expect_post "a field of the wrong wire type is 400" 400 \
    "ConfigMap: field metadata (message) has the wrong wire type" "$cms" "$work/wiretype.pb"
  head -c 20000 /dev/zero | tr '\0' '\013' >"$work/groups.raw"
  { printf 'k8s\x00'; cat "$work/groups.raw"; } >"$work/deep.pb"
  expect_post "deeply nested groups are 400" 400 "nested deeper than 32 levels" \
    "$cms" "$work/deep.pb"
  printf 'k8s\x00\x0a\x15\x0a\x07apps/v1\x12\x0aDeployment\x12\x00' >"$work/deployment.pb"
  expect_post "a kind without a schema is 415" 415 "Deployment\\\": send it as application/json" \
    "$cms" "$work/deployment.pb"
  expect_re "the server is still serving" '^c1 ' k get configmaps
else
  echo "SKIP malformed bodies (curl not found)"
fi

stop_process
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
