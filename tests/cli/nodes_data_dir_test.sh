#!/usr/bin/env bash
# `muster nodes` without --data-dir makes its own directory under $TMPDIR and removes it when it
# exits, after a SIGINT and after a failed start alike; a --data-dir it was given stays.
# Usage: nodes_data_dir_test.sh MUSTER_BINARY
set -u
muster=$1
# shellcheck source=../e2e/e2e_lib.sh
. "$(dirname "$0")/../e2e/e2e_lib.sh"
work=$(mktemp -d /tmp/muster-nodes-test-XXXXXX)
trap 'stop_background; rm -rf "$work"' EXIT

cat >"$work/cluster.yaml" <<'EOF'
nodePools:
  - name: sim
    count: 2
    allocatable: {cpu: "4", memory: 16Gi, pods: 110}
    gpu: {count: 1, model: Tesla-T4, memory: 15360Mi}
    runtime: simulated
EOF
mkdir -p "$work/t"

start_muster api "$muster" apiserver --data-dir "$work/api" --listen 127.0.0.1:0 --insecure-http ||
  exit_not_started api "muster apiserver"
server_pid=$muster_pid
kubeconfig=$muster_kubeconfig

# run_nodes FLAGS...: starts muster nodes with $work/t as TMPDIR and waits for its "data in DIR"
# line; sets nodes_pid and dir.
run_nodes() {
  TMPDIR=$work/t "$muster" nodes --config "$work/cluster.yaml" --kubeconfig "$kubeconfig" "$@" \
    >"$work/nodes.out" 2>"$work/nodes.err" &
  nodes_pid=$!
  stop_at_exit "$nodes_pid"
  dir=""
  for _ in $(seq 200); do
    dir=$(sed -n 's/.*registered at .*, data in //p' "$work/nodes.out")
    [ -n "$dir" ] && return 0
    kill -0 "$nodes_pid" 2>/dev/null || break
    sleep 0.1
  done
  bad "muster nodes $* starts" "its 'data in DIR' line" "$(cat "$work/nodes.err")"
  return 1
}
stop_nodes() {
  stop_process "$nodes_pid"
  local rc=$?
  if [ "$rc" -eq 0 ]; then
    ok "$1: SIGINT stops it, exit 0"
  else
    bad "$1: SIGINT" "exit 0" "exit $rc"
  fi
}

# Its own directory: under $TMPDIR while it runs, gone once it has stopped.
if run_nodes; then
  case $dir in
    "$work/t"/muster-nodes-*) ok "its own data directory is under TMPDIR" ;;
    *) bad "its own data directory" "under TMPDIR ($work/t)" "$dir" ;;
  esac
  if [ -d "$dir" ]; then ok "... and exists while it runs"; else bad "$dir" "a directory" "none"; fi
  stop_nodes "its own data directory"
  if [ -e "$dir" ]; then
    bad "once stopped" "$dir removed" "still there"
  else
    ok "... removed at exit"
  fi
fi

# A --data-dir it was given is the user's: kept.
if run_nodes --data-dir "$work/mine"; then
  if [ "$dir" = "$work/mine" ]; then
    ok "--data-dir is used"
  else
    bad "--data-dir" "$work/mine" "$dir"
  fi
  stop_nodes "--data-dir"
  if [ -d "$work/mine" ]; then
    ok "... and kept at exit"
  else
    bad "--data-dir at exit" "kept" "removed"
  fi
fi

# A start that fails (the API server gone): exit 1, and nothing left under TMPDIR.
stop_process "$server_pid"
out=$(TMPDIR=$work/t timeout 60 "$muster" nodes --config "$work/cluster.yaml" \
  --kubeconfig "$kubeconfig" 2>&1)
rc=$?
if [ "$rc" -eq 1 ]; then
  ok "no API server: exit 1"
else
  bad "no API server" "exit 1" "exit $rc: $out"
fi
left=$(ls -A "$work/t")
if [ -z "$left" ]; then
  ok "... and nothing left in TMPDIR"
else
  bad "a failed start" "nothing left in TMPDIR" "$left"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
