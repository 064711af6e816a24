#!/usr/bin/env bash
# End-to-end: kubectl exec, attach, cp and port-forward against `muster up` with a process node
# and a simulated one, driven by the real kubectl (WebSocket v5.channel.k8s.io for exec, attach
# and cp; SPDY/3.1 tunnelled in WebSocket for port-forward). A process pod runs python's
# http.server in its working directory: exec sees the pod's environment and reports a failing
# command's exit code, `exec -i` takes piped stdin, `exec -it` runs under a pseudo-terminal whose
# size kubectl sets, `kubectl cp` copies a file in (then served by http.server, fetched through
# `kubectl port-forward`, also over its SPDY fallback) and out again; `kubectl attach -i` feeds a
# container's stdin and reads its output; a simulated pod is refused saying it has nothing to exec
# into.
# One PASS/FAIL line per check; the last line is "N passed, M failed". Exit 0 only when nothing
# failed, 77 (skipped) when kubectl is not installed.
#
# Usage: exec_e2e.sh MUSTER_BINARY        (KUBECTL=... to use another kubectl)
set -u

MUSTER=${1:?usage: exec_e2e.sh MUSTER_BINARY}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=e2e_lib.sh
. "$here/e2e_lib.sh"
begin_e2e
for tool in python3 script curl tar; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool not found"; exit 77; }
done

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
pod_port=$(free_port)
local_port=$(free_port)

cat >"$work/cluster.yaml" <<'EOF'
nodePools:
  - {name: work, runtime: process, allocatable: {cpu: "4", memory: 8Gi}}
  - {name: sim, runtime: simulated}
EOF
start_muster up "$MUSTER" up --config "$work/cluster.yaml" --data-dir "$work/data" \
  --listen 127.0.0.1:0 --no-summary || exit_not_started up "muster up"
export KUBECONFIG=$muster_kubeconfig

cat >"$work/pods.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: box}
spec:
  nodeSelector: {kubernetes.io/hostname: work}
  containers:
    - name: main
      image: python
      env:
        - {name: VAR, value: hello-from-the-pod}
        - {name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
      command: [python3, -m, http.server, "$pod_port", --bind, "\$(POD_IP)"]
---
apiVersion: v1
kind: Pod
metadata: {name: talker}
spec:
  nodeSelector: {kubernetes.io/hostname: work}
  restartPolicy: Never
  containers:
    - name: main
      image: busybox
      stdin: true
      stdinOnce: true
      command: [sh, -c, 'read line; echo "got \$line"']
---
apiVersion: v1
kind: Pod
metadata: {name: simpod}
spec:
  nodeSelector: {kubernetes.io/hostname: sim}
  containers: [{name: main, image: busybox}]
EOF
expect "create the pods" "pod/box created" k apply -f "$work/pods.yaml"
all_running() {
  phase_is pod/box Running && phase_is pod/talker Running && phase_is pod/simpod Running
}
eventually "the pods run" 60 all_running

# --- exec -----------------------------------------------------------------------------------------
expect_eq "exec sees the pod's environment" "hello-from-the-pod" \
  k exec box -- sh -c 'echo $VAR'
out=$(k exec box -- sh -c 'echo partial; exit 3' 2>&1)
rc=$?
if [ "$rc" = 3 ] && grep -q "command terminated with exit code 3" <<<"$out" &&
  grep -q partial <<<"$out"; then
  ok "a failing command's output and exit code 3"
else
  bad "a failing command's output and exit code 3" "rc 3, 'command terminated with exit code 3'" \
    "rc $rc: $out"
fi
expect_eq "exec -i takes piped stdin to its end" "PIPED IN" \
  sh -c "printf 'piped in\n' | '$KUBECTL' exec -i box -- tr a-z A-Z"
expect "exec of a missing command says so" 'executable file not found in $PATH' \
  k exec box -- no-such-command
# Under a terminal of 30x100 (script gives kubectl one): kubectl sends the size, the command's
# terminal takes it (the loop waits for the resize, which comes after the command started).
cat >"$work/tty.sh" <<'SCRIPT'
stty rows 30 cols 100
exec "$KUBECTL" exec -it box -- sh -c 'tty; for i in $(seq 100); do s=$(stty size)
  [ "$s" = "30 100" ] && break; sleep 0.1; done; echo "size $s"'
SCRIPT
tty_cmd="KUBECTL='$KUBECTL' bash '$work/tty.sh'"
tty_out=$(script -qec "$tty_cmd" /dev/null </dev/null 2>&1 | tr -d '\r')
if grep -q "/dev/pts/" <<<"$tty_out" && grep -q "size 30 100" <<<"$tty_out"; then
  ok "exec -it runs under a pseudo-terminal with kubectl's size"
else
  bad "exec -it runs under a pseudo-terminal with kubectl's size" "/dev/pts/N and 'size 30 100'" \
    "$tty_out"
fi

# --- cp both ways, then the file served through port-forward --------------------------------------
head -c 300000 /dev/urandom | base64 >"$work/data.txt"
expect_eq "cp a file into the pod" "" k cp "$work/data.txt" box:data.txt -c main
expect_eq "the file is in the container's working directory" "$(wc -c <"$work/data.txt")" \
  k exec box -- sh -c 'wc -c < data.txt'
k cp box:data.txt "$work/back.txt" -c main >/dev/null 2>&1
if cmp -s "$work/data.txt" "$work/back.txt"; then ok "cp the file back out, unchanged"; else
  bad "cp the file back out, unchanged" "the same bytes" "$(ls -l "$work"/*.txt 2>&1)"; fi

"$KUBECTL" port-forward pod/box "$local_port:$pod_port" >"$work/pf.out" 2>&1 &
pf=$!
stop_at_exit "$pf"
eventually "port-forward listens" 30 grep -q "Forwarding from 127.0.0.1:$local_port" "$work/pf.out"
curl -s --max-time 20 -o "$work/fetched.txt" "http://127.0.0.1:$local_port/data.txt"
if cmp -s "$work/data.txt" "$work/fetched.txt"; then
  ok "port-forward reaches the pod's http.server"
else
  bad "port-forward reaches the pod's http.server" "the file's bytes" "$(cat "$work/pf.out")"
fi
expect "a second connection through the same forward" "Directory listing" \
  curl -s --max-time 20 "http://127.0.0.1:$local_port/"
stop_process "$pf" 5
# kubectl's fallback when the WebSocket tunnel is refused: SPDY over the upgraded connection.
spdy_port=$(free_port)
KUBECTL_PORT_FORWARD_WEBSOCKETS=false "$KUBECTL" port-forward pod/box "$spdy_port:$pod_port" \
  >"$work/pf-spdy.out" 2>&1 &
pf=$!
stop_at_exit "$pf"
eventually "port-forward over a SPDY upgrade listens" 30 \
  grep -q "Forwarding from 127.0.0.1:$spdy_port" "$work/pf-spdy.out"
expect "port-forward over a SPDY upgrade reaches the pod" "Directory listing" \
  curl -s --max-time 20 "http://127.0.0.1:$spdy_port/"
stop_process "$pf" 5

# Nothing listens on the pod's port: the kubelet's error, and the local connection ends.
closed_port=$(free_port)
refused_port=$(free_port)
"$KUBECTL" port-forward pod/box "$refused_port:$closed_port" >"$work/pf-refused.out" 2>&1 &
pf=$!
stop_at_exit "$pf"
eventually "port-forward to a closed port listens" 30 \
  grep -q "Forwarding from 127.0.0.1:$refused_port" "$work/pf-refused.out"
curl -s --max-time 20 "http://127.0.0.1:$refused_port/" >/dev/null 2>&1
eventually "a refused connection is the kubelet's error" 20 \
  grep -q "error forwarding port $closed_port to pod box, uid" "$work/pf-refused.out"
stop_process "$pf" 5

# --- attach ---------------------------------------------------------------------------------------
expect_eq "attach -i feeds the container's stdin and shows its output" "got over-attach" \
  sh -c "echo over-attach | '$KUBECTL' attach -i talker -c main 2>/dev/null"
eventually "the attached container ends once its stdin has" 30 phase_is pod/talker Succeeded

# --- refusals -------------------------------------------------------------------------------------
expect "exec on a simulated pod says there is nothing to exec into" \
  "runs on muster's simulated node \"sim\", where nothing runs" k exec simpod -- true
expect "port-forward to a simulated pod is refused" "no ports to forward to" \
  k port-forward pod/simpod "$(free_port):80"
expect "exec into a missing pod" 'pods "nobody" not found' k exec nobody -- true

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
