#!/usr/bin/env bash
# `muster nodes` without --data-dir makes its own directory under $TMPDIR and removes it when it
# exits, after a SIGTERM and after a failed start alike; a --data-dir it was given stays.
# Usage: nodes_data_dir_test.sh MUSTER_BINARY
set -u
muster=$1
tmp=$(mktemp -d /tmp/muster-nodes-test-XXXXXX)
server=0
nodes=0
cleanup() {
  [ "$nodes" -ne 0 ] && kill "$nodes" 2>/dev/null && wait "$nodes" 2>/dev/null
  [ "$server" -ne 0 ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() {
  echo "FAIL $*"
  fail=$((fail + 1))
}

cat >"$tmp/cluster.yaml" <<'EOF'
nodePools:
  - name: sim
    count: 2
    allocatable: {cpu: "4", memory: 16Gi, pods: 110}
    gpu: {count: 1, model: Tesla-T4, memory: 15360Mi}
    runtime: simulated
EOF
mkdir -p "$tmp/t"

"$muster" apiserver --data-dir "$tmp/api" --listen 127.0.0.1:0 --insecure-http \
  >"$tmp/api.out" 2>"$tmp/api.err" &
server=$!
for _ in $(seq 200); do
  grep -q '^export KUBECONFIG=' "$tmp/api.out" 2>/dev/null && break
  sleep 0.1
done
kubeconfig=$tmp/api/kubeconfig
[ -f "$kubeconfig" ] || { bad "muster apiserver did not start: $(cat "$tmp/api.err")"; exit 1; }

# run_nodes FLAGS...: starts muster nodes with $tmp/t as TMPDIR and waits for its "data in DIR"
# line; sets nodes (the pid) and dir.
run_nodes() {
  TMPDIR=$tmp/t "$muster" nodes --config "$tmp/cluster.yaml" --kubeconfig "$kubeconfig" "$@" \
    >"$tmp/nodes.out" 2>"$tmp/nodes.err" &
  nodes=$!
  dir=""
  for _ in $(seq 200); do
    dir=$(sed -n 's/.*registered at .*, data in //p' "$tmp/nodes.out")
    [ -n "$dir" ] && return 0
    kill -0 "$nodes" 2>/dev/null || break
    sleep 0.1
  done
  bad "muster nodes $* did not start: $(cat "$tmp/nodes.err")"
  return 1
}
stop_nodes() {
  kill -TERM "$nodes"
  wait "$nodes"
  local rc=$?
  nodes=0
  if [ "$rc" -eq 0 ]; then ok; else bad "muster nodes: SIGTERM: exit $rc, want 0"; fi
}

# Its own directory: under $TMPDIR while it runs, gone once it has stopped.
if run_nodes; then
  case $dir in
    "$tmp/t"/muster-nodes-*) ok ;;
    *) bad "data directory $dir is not under TMPDIR ($tmp/t)" ;;
  esac
  if [ -d "$dir" ]; then ok; else bad "data directory $dir does not exist while it runs"; fi
  stop_nodes
  if [ -e "$dir" ]; then bad "muster nodes left its data directory $dir"; else ok; fi
fi

# A --data-dir it was given is the user's: kept.
if run_nodes --data-dir "$tmp/mine"; then
  if [ "$dir" = "$tmp/mine" ]; then ok; else bad "data in $dir, want $tmp/mine"; fi
  stop_nodes
  if [ -d "$tmp/mine" ]; then ok; else bad "muster nodes removed the --data-dir it was given"; fi
fi

# A start that fails (the API server gone): exit 1, and nothing left under TMPDIR.
kill -TERM "$server" && wait "$server"
server=0
out=$(TMPDIR=$tmp/t timeout 60 "$muster" nodes --config "$tmp/cluster.yaml" \
  --kubeconfig "$kubeconfig" 2>&1)
rc=$?
if [ "$rc" -eq 1 ]; then ok; else bad "muster nodes against no server: exit $rc, want 1: $out"; fi
left=$(ls -A "$tmp/t")
if [ -z "$left" ]; then ok; else bad "a failed start left in TMPDIR: $left"; fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
