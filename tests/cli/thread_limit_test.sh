#!/usr/bin/env bash
# Thread creation failure is handled, never fatal (issue 18, item 2): `muster scheduler`,
# `controller` (each with and without leader election), `nodes` and `apiserver` started under
# RLIMIT_NPROC limits from 1 to 18 threads, so that each limit runs out at another of its threads
# (the ops server's pool, the event recorder, leader election, each informer, the work queues,
# the pod manager, heartbeats...). Each either exits 1 or 2 with "cannot start" and why, or is
# still serving after 3 s; none dies of a signal (std::terminate's abort, as before). Root
# ignores RLIMIT_NPROC, so the components run as nobody (needs root; else skipped, 77).
# Usage: thread_limit_test.sh MUSTER_BINARY
set -u
muster=$1
if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null || ! command -v prlimit >/dev/null; then
  echo "SKIP: needs root, setpriv and prlimit (util-linux) to run muster as nobody under a limit"
  exit 77
fi
tmp=$(mktemp -d /tmp/muster-threads-XXXXXX)
server=0
trap '[ "$server" -ne 0 ] && kill "$server" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
chmod 755 "$tmp"
# `muster nodes` makes its data directory under $TMPDIR; the runs stopped by SIGKILL below cannot
# remove it, so it is made in here, which goes at exit.
mkdir "$tmp/tmpdir" && chown 65534:65534 "$tmp/tmpdir"
export TMPDIR=$tmp/tmpdir
# shellcheck source=../e2e/check_lib.sh
. "$(dirname "$0")/../e2e/check_lib.sh"

"$muster" apiserver --data-dir "$tmp/data" --listen 127.0.0.1:0 >"$tmp/out" 2>"$tmp/err" &
server=$!
for _ in $(seq 100); do
  grep -q '^listening on' "$tmp/out" 2>/dev/null && break
  sleep 0.1
done
grep -q '^listening on' "$tmp/out" || { echo "FAIL apiserver did not start: $(cat "$tmp/err")"; exit 1; }
# Readable by nobody: a copy of the kubeconfig (the data dir is owner-only) and the nodes' file.
install -m 644 "$tmp/data/kubeconfig" "$tmp/kubeconfig"
cat >"$tmp/cluster.yaml" <<'YAML'
nodePools:
  - name: limited
    count: 2
    allocatable: {cpu: "8", memory: 32Gi, pods: "110"}
    gpu: {count: 2, model: NVIDIA-A100-SXM4-80GB, memory: 81920Mi}
    runtime: simulated
YAML
chmod 644 "$tmp/cluster.yaml"

# Runs `muster ARGS...` as nobody under RLIMIT_NPROC $1 for at most 3 s; checks the outcome.
# Sets `refused` to 1 when it said it cannot start a thread of its own.
limited() {
  local n=$1 rc
  shift
  refused=0
  # (the braces keep bash's "Killed" notice for the stopped ones out of the log)
  { timeout -s KILL 3 setpriv --reuid=65534 --regid=65534 --clear-groups \
    prlimit --nproc="$n" -- "$muster" "$@" >"$tmp/run" 2>&1; } 2>/dev/null
  rc=$?
  local what="muster $1 under --nproc=$n"
  if [ "$rc" -eq 137 ]; then
    ok "${what}: still serving after 3 s"
  elif { [ "$rc" -eq 1 ] || [ "$rc" -eq 2 ]; } && grep -q 'cannot start' "$tmp/run"; then
    ok "${what}: exit ${rc}, $(grep -m1 -o 'cannot start.*' "$tmp/run")"
    grep -q 'cannot start a thread for' "$tmp/run" && refused=1
  else
    bad "$what" "exit 1 or 2 saying \"cannot start\", or still serving" \
      "exit ${rc}: $(tail -n 5 "$tmp/run")"
  fi
}

kc=(--kubeconfig "$tmp/kubeconfig")
run_all() {  # name, args...
  local name=$1 own=0 n
  shift
  for n in 1 2 3 4 5 6 7 8 10 12 14 16 18; do
    limited "$n" "$@"
    own=$((own + refused))
  done
  # Not vacuous: some limit fell on one of the component's own threads, not only the pool's.
  if [ "$own" -gt 0 ]; then
    ok "$name: $own limits fell on one of its own threads"
  else
    bad "$name: a limit falls on one of its own threads" "cannot start a thread for ..." "none did"
  fi
}
run_all scheduler scheduler "${kc[@]}" --leader-elect=false --listen-address 127.0.0.1:0
run_all scheduler-elected scheduler "${kc[@]}" --listen-address 127.0.0.1:0
run_all controller controller "${kc[@]}" --leader-elect=false --listen-address 127.0.0.1:0
run_all nodes nodes "${kc[@]}" --config "$tmp/cluster.yaml"
mkdir -p "$tmp/d2" && chown 65534 "$tmp/d2"
for n in 1 2 3 4 5 6 8; do
  rm -rf "$tmp/d2/"*
  limited "$n" apiserver --data-dir "$tmp/d2" --listen 127.0.0.1:0
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
