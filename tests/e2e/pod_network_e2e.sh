#!/usr/bin/env bash
# End-to-end: multi-pod rendezvous on a process node (`muster up` with one process node, driven by
# the real kubectl). Each pod gets a loopback address of its own (status.podIP, the IP column of
# `kubectl get pods -o wide`) and, in private mount and UTS namespaces, an /etc/hosts naming the
# pods and headless Services of the process nodes, and its own hostname (docs/cluster-file.md,
# "Addresses and names"). Python's socket.getaddrinfo resolves them, as torchrun would:
# - a Volcano Job with the pytorch plugin (--master=master --worker=worker --port=23456; the Job
#   webhook adds svc): rank 0 listens on MASTER_ADDR:MASTER_PORT (pt-master-0.pt), rank 1
#   connects, they exchange a message, both exit 0, the Job is Completed;
# - two plain pods with hostname/subdomain and a headless Service: w1 reaches w0 at
#   w0.rdv.default.svc.cluster.local, and the Service name rdv resolves to both pods;
# - the same convention from an Indexed batch/v1 Job (hostname <job>-<index>, the template's
#   subdomain naming a headless Service): index 1 reaches index 0 at ix-0.ixs;
# - a Volcano Job with the mpi plugin (the webhook adds svc and ssh): MPI_HOST on the master and
#   the <job>-ssh Secret's key pair mounted at $MUSTER_ROOT/root/.ssh, a valid 0600 private key
#   (the Secret deleted once the Job completes, as in Volcano).
# Then everything is deleted: no pod, hosts file or mount is left.
# Where this machine allows neither mount nor user namespaces the names do not resolve in pods:
# the pytorch Job still meets (MASTER_ADDR is rewritten to the master's address) and the checks
# that need names are skipped, saying so. About 15 s.
# One PASS/FAIL line per check; the last line is "N passed, M failed". Exit 0 only when nothing
# failed, 77 (skipped) when kubectl or python3 is not installed.
#
# Usage: pod_network_e2e.sh MUSTER_BINARY        (KUBECTL=... to use another kubectl)
set -u

MUSTER=${1:?usage: pod_network_e2e.sh MUSTER_BINARY}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=e2e_lib.sh
. "$here/e2e_lib.sh"
if ! command -v python3 >/dev/null 2>&1; then
  echo "SKIP: python3 not found"
  exit 77
fi
begin_e2e

# Whether pods get names of their own here: what muster probes, tried with util-linux.
names=yes
if ! unshare --mount --uts true 2>/dev/null &&
  ! unshare --user --map-root-user --mount --uts true 2>/dev/null; then
  names=no
  echo "NOTE: neither mount nor user namespaces are allowed here: name checks are skipped"
fi

printf '%s\n' 'nodePools:' '  - name: box' \
  '    allocatable: {cpu: "8", memory: 8Gi, pods: "20"}' '    runtime: process' \
  >"$work/cluster.yaml"
start_muster up "$MUSTER" up --config "$work/cluster.yaml" --data-dir "$work/data" \
  --listen 127.0.0.1:0 --no-summary || exit_not_started up "muster up"
up_pid=$muster_pid
export KUBECONFIG=$muster_kubeconfig
eventually "up: the process node is Ready" 60 k wait --for=condition=Ready node --all --timeout=1s

# Rank 0 (RANK, else JOB_COMPLETION_INDEX) listens on ADDR:PORT (default MASTER_ADDR:MASTER_PORT),
# rank 1 connects; each resolves
# ADDR with getaddrinfo (retrying while the peer has no address yet) and says what it got; ALSO
# names more names to resolve.
cat >"$work/rdv.py" <<'PY'
import os, socket, sys, time
env = os.environ
addr, port = env.get("ADDR", env.get("MASTER_ADDR")), int(env.get("PORT", env.get("MASTER_PORT")))
rank = int(env.get("RANK", env.get("JOB_COMPLETION_INDEX")))
deadline = time.time() + 30
while True:
    try:
        where = socket.getaddrinfo(addr, port, socket.AF_INET, socket.SOCK_STREAM)[0][4]
        break
    except socket.gaierror:
        if time.time() > deadline:
            raise
        time.sleep(0.1)
print(f"rank {rank} host {socket.gethostname()} resolved {addr} to {where[0]}", flush=True)
if rank == 0:
    server = socket.create_server(where)
    server.settimeout(30)
    conn, _ = server.accept()
    got = conn.recv(64).decode()
    conn.sendall(b"hello from rank 0")
else:
    while True:
        try:
            conn = socket.create_connection(where, timeout=5)
            break
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.1)
    conn.sendall(b"hello from rank 1")
    got = conn.recv(64).decode()
print(f"rank {rank} got: {got}", flush=True)
for name in os.environ.get("ALSO", "").split():
    ips = sorted({a[4][0] for a in socket.getaddrinfo(name, None, socket.AF_INET)})
    print(f"rank {rank} {name} is {' '.join(ips)}", flush=True)
sys.exit(0 if got.startswith("hello from rank") else 1)
PY
expect "the script as a ConfigMap" "configmap/rdv created" \
  k create configmap rdv --from-file=rdv.py="$work/rdv.py"

# container INDENT ENV: the pod spec's containers and volumes running the script, indented by
# INDENT spaces; ENV is YAML flow items for its env.
container() {
  local pad
  pad=$(printf '%*s' "$1" '')
  sed "s/^/$pad/" <<YAML
containers:
  - name: main
    image: python
    command: [sh, -c, 'exec python3 "\$MUSTER_ROOT/etc/rdv/rdv.py"']
    volumeMounts: [{name: rdv, mountPath: /etc/rdv}]
    env: [$2]
volumes: [{name: rdv, configMap: {name: rdv}}]
YAML
}
ip_of() { k get pod "$1" -o jsonpath='{.status.podIP}'; }
logs_of() { k logs "$1" 2>&1; }

# --- a Volcano Job with the pytorch plugin -------------------------------------------------------
{
  printf '%s\n' 'apiVersion: batch.volcano.sh/v1alpha1' 'kind: Job' 'metadata: {name: pt}' \
    'spec:' '  minAvailable: 2' '  schedulerName: volcano' \
    '  plugins: {pytorch: ["--master=master", "--worker=worker", "--port=23456"]}' '  tasks:'
  for task in master worker; do
    printf '%s\n' "    - name: $task" '      replicas: 1' '      template:' '        spec:' \
      '          restartPolicy: Never'
    container 10 ""
  done
} >"$work/pt.yaml"
expect "apply the pytorch Job" "job.batch.volcano.sh/pt created" k apply -f "$work/pt.yaml"
eventually "the pytorch Job is Completed" 60 job_phase_is pt Completed
expect_eq "both pods Succeeded" "Succeeded Succeeded" \
  k get pods -l volcano.sh/job-name=pt -o jsonpath='{.items[*].status.phase}'
master_ip=$(ip_of pt-master-0)
worker_ip=$(ip_of pt-worker-0)
if [[ $master_ip =~ ^127\.[1-9][0-9]*\. ]] && [[ $worker_ip =~ ^127\.[1-9][0-9]*\. ]] &&
  [ "$master_ip" != "$worker_ip" ]; then
  ok "each pod has a loopback address of its own ($master_ip, $worker_ip)"
else
  bad "each pod has a loopback address of its own" "two 127.x addresses" "$master_ip $worker_ip"
fi
expect_re "kubectl get pods -o wide shows it" "^pt-master-0 .* ${master_ip//./\\.} +box " \
  k get pods -o wide
expect "rank 0 heard rank 1" "rank 0 got: hello from rank 1" logs_of pt-master-0
expect "rank 1 heard rank 0" "rank 1 got: hello from rank 0" logs_of pt-worker-0
if [ "$names" = yes ]; then
  expect "the worker resolved pt-master-0.pt to the master's address, with its own hostname" \
    "rank 1 host pt-worker-0 resolved pt-master-0.pt to $master_ip" logs_of pt-worker-0
else
  expect "the worker was given the master's address" "resolved $master_ip to $master_ip" \
    logs_of pt-worker-0
fi

# --- plain pods with hostname/subdomain and a headless Service ----------------------------------
if [ "$names" = yes ]; then
  {
    printf '%s\n' 'apiVersion: v1' 'kind: Service' 'metadata: {name: rdv}' 'spec:' \
      '  clusterIP: None' '  selector: {app: rdv}' '  ports: [{port: 29500}]'
    for i in 0 1; do
      addr=w0.rdv.default.svc.cluster.local
      [ "$i" = 0 ] && addr=w0.rdv
      printf '%s\n' '---' 'apiVersion: v1' 'kind: Pod' "metadata: {name: w$i, labels: {app: rdv}}" \
        'spec:' "  hostname: w$i" '  subdomain: rdv' '  restartPolicy: Never'
      container 2 "{name: RANK, value: \"$i\"}, {name: PORT, value: \"29500\"},
        {name: ADDR, value: $addr}, {name: ALSO, value: rdv}"
    done
  } >"$work/rdv.yaml"
  expect "apply the headless Service and its two pods" "pod/w1 created" k apply -f "$work/rdv.yaml"
  eventually "both pods Succeeded" 60 pods_are app=rdv Succeeded 2
  w0_ip=$(ip_of w0)
  w1_ip=$(ip_of w1)
  expect "w0 listened on w0.rdv, its own address" "rank 0 host w0 resolved w0.rdv to $w0_ip" \
    logs_of w0
  expect "w1 reached w0 at w0.rdv.default.svc.cluster.local" \
    "rank 1 host w1 resolved w0.rdv.default.svc.cluster.local to $w0_ip" logs_of w1
  expect "they exchanged a message" "rank 1 got: hello from rank 0" logs_of w1
  expect "the Service name resolves to both pods" \
    "rank 1 rdv is $(printf '%s\n' "$w0_ip" "$w1_ip" | sort | xargs)" logs_of w1

  # An Indexed batch/v1 Job: its pods are ix-0 and ix-1 by hostname, in the subdomain ixs.
  {
    printf '%s\n' 'apiVersion: v1' 'kind: Service' 'metadata: {name: ixs}' 'spec:' \
      '  clusterIP: None' '  selector: {app: ix}' '  ports: [{port: 29501}]' '---' \
      'apiVersion: batch/v1' 'kind: Job' 'metadata: {name: ix}' 'spec:' \
      '  completionMode: Indexed' '  completions: 2' '  parallelism: 2' '  template:' \
      '    metadata: {labels: {app: ix}}' '    spec:' '      subdomain: ixs' \
      '      restartPolicy: Never'
    container 6 '{name: ADDR, value: ix-0.ixs}, {name: PORT, value: "29501"}'
  } >"$work/ix.yaml"
  expect "apply an Indexed Job and its headless Service" "job.batch/ix created" \
    k apply -f "$work/ix.yaml"
  eventually "the Indexed Job is Complete" 60 k wait --for=condition=Complete job/ix --timeout=1s
  ix0=$(k get pods -l batch.kubernetes.io/job-completion-index=0 -o name | head -1)
  ix1=$(k get pods -l batch.kubernetes.io/job-completion-index=1 -o name | head -1)
  expect "index 1 reached index 0 at ix-0.ixs" \
    "rank 1 host ix-1 resolved ix-0.ixs to $(k get "$ix0" -o jsonpath='{.status.podIP}')" \
    logs_of "$ix1"
  expect "index 0 heard index 1" "rank 0 got: hello from rank 1" logs_of "$ix0"
else
  echo "SKIP the hostname/subdomain rendezvous: no pod namespaces here"
fi

# --- a Volcano Job with the mpi plugin (svc and ssh added) ---------------------------------------
key_script='echo "MPI_HOST=$MPI_HOST"; ssh=$MUSTER_ROOT/root/.ssh;
  ssh-keygen -y -f "$ssh/id_rsa" | cut -d" " -f2; cut -d" " -f2 "$ssh/authorized_keys";
  stat -c %a "$ssh/id_rsa"'
if ! command -v ssh-keygen >/dev/null 2>&1; then
  key_script='echo "MPI_HOST=$MPI_HOST"; echo no-ssh-keygen'
fi
python3 - "$key_script" >"$work/mpi.json" <<'PY'
import json, sys
master = {"name": "main", "image": "mpi", "command": ["sh", "-c", sys.argv[1]]}
worker = {"name": "main", "image": "mpi", "command": ["true"]}
task = lambda name, n, c: {"name": name, "replicas": n,
                           "template": {"spec": {"restartPolicy": "Never", "containers": [c]}}}
print(json.dumps({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                  "metadata": {"name": "mj"},
                  "spec": {"minAvailable": 3, "schedulerName": "volcano",
                           "plugins": {"mpi": ["--master=master", "--worker=worker"]},
                           "tasks": [task("master", 1, master), task("worker", 2, worker)]}}))
PY
expect "apply the mpi Job" "job.batch.volcano.sh/mj created" k apply -f "$work/mpi.json"
eventually "the mpi Job is Completed" 60 job_phase_is mj Completed
expect "the master has MPI_HOST" "MPI_HOST=mj-worker-0.mj,mj-worker-1.mj" logs_of mj-master-0
expect "the Secret went with the Job's completion, as Volcano's killJob takes it" "NotFound" \
  k get secret mj-ssh -o name
if command -v ssh-keygen >/dev/null 2>&1; then
  read -r -a keys <<<"$(logs_of mj-master-0 | sed -n '2,4p' | xargs)"
  if [ "${#keys[@]}" -eq 3 ] && [ "${keys[0]}" = "${keys[1]}" ] && [ "${keys[2]}" = 600 ] &&
    [ "${#keys[0]}" -gt 300 ]; then
    ok "the mounted id_rsa is a 0600 key whose public half is authorized_keys"
  else
    bad "the mounted id_rsa is a 0600 key whose public half is authorized_keys" \
      "<key> <the same key> 600" "$(logs_of mj-master-0)"
  fi
else
  echo "SKIP the key check: ssh-keygen is not installed"
fi

# --- clean-up: pods, their hosts files and mounts gone ------------------------------------------
expect "delete the Jobs" "deleted" k delete vcjob pt mj --wait=true
k delete pod w0 w1 --ignore-not-found --wait=true >/dev/null 2>&1
k delete job ix --ignore-not-found --wait=true >/dev/null 2>&1
no_pods_left() { [ -z "$(k get pods -o name 2>/dev/null)" ]; }
eventually "no pod is left" 60 no_pods_left
no_hosts_files() { [ -z "$(find "$work/data/pods" -name etc-hosts 2>/dev/null)" ]; }
eventually "their hosts files are gone" 30 no_hosts_files
stop_process "$up_pid" 15
expect_eq "nothing of the pods is mounted here" "0" grep -c etc-hosts /proc/self/mountinfo
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
