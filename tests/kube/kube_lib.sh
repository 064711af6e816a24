# What the kube/* suites share (sourced; it sources tests/e2e/e2e_lib.sh): a real control plane
# (scripts/kube-control-plane: etcd, kube-apiserver, kube-controller-manager and kube-scheduler
# on loopback), muster installed on it with `kubectl apply -k deploy/`, and muster's components
# run as local processes (no kubelet runs here) with the ServiceAccount tokens of the deploy's
# own ServiceAccounts, so that every call they make goes through the deploy's RBAC.
#
# A suite calls begin_kube first (which calls begin_e2e): from then on the control plane and every
# process started with start_component are stopped when the script exits, however it ends.
# shellcheck shell=bash

kube_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../e2e/e2e_lib.sh
. "$kube_here/../e2e/e2e_lib.sh"
kube_root=$(cd "$kube_here/../.." && pwd)
control_plane=$kube_root/scripts/kube-control-plane
kube_dir=

# kube_down: stops the components, then the control plane (the EXIT trap calls it).
kube_down() {
  stop_background
  if [ -n "$kube_dir" ]; then "$control_plane" down "$kube_dir" >/dev/null 2>&1 || true; fi
}

# begin_kube: begin_e2e, then the control plane up (with kube-scheduler, and an audit log of
# every request's metadata for forbidden_calls) in $work/kube, and KUBECONFIG set to its admin
# kubeconfig. Exits 1 with the control plane's own words when it does not come up: the suite must
# not pass by skipping.
begin_kube() {
  begin_e2e
  kube_dir=$work/kube
  trap 'kube_down; rm -rf "$work"' EXIT
  mkdir -p "$kube_dir/logs"
  export KUBE_APISERVER_FLAGS="--audit-policy-file=$kube_here/manifests/audit-policy.yaml \
--audit-log-path=$kube_dir/logs/audit.log ${KUBE_APISERVER_FLAGS:-}"
  if ! "$control_plane" up --with-kube-scheduler "$kube_dir" >"$work/control-plane.out" 2>&1; then
    echo "FAIL the control plane did not come up:"
    sed 's/^/    /' "$work/control-plane.out" | tail -40
    echo "0 passed, 1 failed"
    exit 1
  fi
  export KUBECONFIG=$kube_dir/admin.kubeconfig
  server=$(k config view --raw -o jsonpath='{.clusters[0].cluster.server}')
  ok "control plane up at $server ($(k version -o json 2>/dev/null | sed -n 's/.*"gitVersion": "\(v[^"]*\)".*/\1/p' | tail -1))"
}

# install_muster: `kubectl apply -k deploy/` and wait for the CRDs to be served. The Deployments
# and the DaemonSet stay without running pods (no kubelet): their containers run as processes.
install_muster() {
  expect "install: kubectl apply -k deploy/" "customresourcedefinition.apiextensions.k8s.io/jobs.batch.volcano.sh" \
    k apply -k "$kube_root/deploy"
  eventually "install: the CRDs are established" 60 \
    k wait --for=condition=Established crd/jobs.batch.volcano.sh crd/podgroups.scheduling.volcano.sh \
    crd/queues.scheduling.volcano.sh crd/commands.bus.volcano.sh --timeout=2s
}

# sa_kubeconfig NAME: a kubeconfig (printed: its path) for ServiceAccount muster-system/NAME with a
# token from the TokenRequest API, the control plane's server and CA.
sa_kubeconfig() {
  local token
  token=$(k -n muster-system create token "$1" --duration=2h) || return 1
  kubeconfig_with "$1" "$server" "$token"
}

# kubeconfig_with NAME SERVER TOKEN: a kubeconfig (printed: its path) for SERVER with the control
# plane's CA and TOKEN.
kubeconfig_with() {
  local name=$1 file=$work/$1.kubeconfig server=$2 token=$3 ca
  ca=$(k config view --raw -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')
  cat >"$file" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: kube
  cluster: {server: "$server", certificate-authority-data: "$ca"}
users:
- name: $name
  user: {token: "$token"}
contexts:
- name: $name
  context: {cluster: kube, user: $name, namespace: muster-system}
current-context: $name
KUBECONFIG
  echo "$file"
}

# start_component NAME CMD...: runs CMD in the background (stdout $work/NAME.out, stderr
# $work/NAME.err), stopped at exit; sets component_pid.
start_component() {
  local name=$1
  shift
  # Emptied here, not by the background child's redirection: that runs after this returns, so a
  # restarted NAME's first lines were waited for in the last run's files (kube/seed read the old
  # process's port, or none, once the child had emptied them).
  : >"$work/$name.out"
  : >"$work/$name.err"
  "$@" >>"$work/$name.out" 2>>"$work/$name.err" &
  component_pid=$!
  stop_at_exit "$component_pid"
}

# wait_line NAME SECONDS REGEX: true once $work/NAME.out or .err has a line matching REGEX.
wait_line() {
  local deadline=$((SECONDS + $2))
  until grep -qE -- "$3" "$work/$1.out" "$work/$1.err" 2>/dev/null; do
    [ "$SECONDS" -ge "$deadline" ] && return 1
    sleep 0.2
  done
}

# listen_port NAME: the port of the health and metrics endpoint NAME printed.
listen_port() {
  sed -n 's#.*serving /healthz.* at http://127\.0\.0\.1:\([0-9]*\).*#\1#p' "$work/$1.out" "$work/$1.err" 2>/dev/null | head -1
}


# forbidden_calls: the API calls the control plane refused with 403 to the scheduler's and the
# controller's ServiceAccounts,
# from its audit log (one line each: user, verb, URI); empty when there were none.
forbidden_calls() {
  local log=$kube_dir/logs/audit.log
  [ -f "$log" ] || { echo "no audit log at $log"; return; }
  /usr/bin/python3 - "$log" <<'PY'
import json, sys
ours = ("system:serviceaccount:muster-system:muster-scheduler",
        "system:serviceaccount:muster-system:muster-controller")
seen = 0
for line in open(sys.argv[1]):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if e.get("user", {}).get("username", "") not in ours:
        continue
    seen += 1
    if e.get("responseStatus", {}).get("code") == 403:
        print(e["user"]["username"], e.get("verb"), e.get("requestURI"))
if not seen:
    print("the audit log holds no request of muster's ServiceAccounts")
PY
}

# check_metrics NAME PORT SERIES...: /metrics of the component at PORT parses as Prometheus text
# (Debian's python3-prometheus-client parser) and holds each named series.
check_metrics() {
  local name=$1 port=$2 out
  shift 2
  out=$(curl -sf "http://127.0.0.1:$port/metrics" | /usr/bin/python3 -c '
import sys
from prometheus_client.parser import text_string_to_metric_families
names = set()
for family in text_string_to_metric_families(sys.stdin.read()):
    names.add(family.name)
    for sample in family.samples:
        names.add(sample.name)
missing = [n for n in sys.argv[1:] if n not in names]
print("missing: " + " ".join(missing) if missing else "all %d series present" % (len(sys.argv) - 1))
' "$@" 2>&1)
  if [ "${out#all }" != "$out" ]; then ok "$name: /metrics parses and has $out"; else bad "$name: /metrics" "the series $*" "$out"; fi
}
