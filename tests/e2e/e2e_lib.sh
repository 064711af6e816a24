# What the kubectl end-to-end scripts share besides their checks (sourced; it sources
# check_lib.sh): a temporary folder, starting and stopping muster (`muster up`, `muster
# apiserver`) and other background processes, kubectl. A script calls begin_e2e first; from then
# on nothing it starts in the background with start_muster or stop_at_exit outlives it, however
# it ends.
# shellcheck shell=bash

# shellcheck source=check_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/check_lib.sh"

KUBECTL=${KUBECTL:-kubectl}
background_pids=()
muster_pid=
work=

# begin_e2e: exits 77 (CTest's "skipped") when $KUBECTL is not installed; otherwise makes $work, a
# temporary folder, and the EXIT trap that stops the background processes and removes it.
begin_e2e() {
  if ! command -v "$KUBECTL" >/dev/null 2>&1; then
    echo "SKIP: kubectl not found"
    exit 77
  fi
  work=$(mktemp -d)
  trap 'stop_background; rm -rf "$work"' EXIT
}

# k ARGS...: kubectl with the script's own cache and a 30 s request timeout ($KUBECONFIG as set).
k() { "$KUBECTL" --cache-dir "$work/cache" --request-timeout=30s "$@"; }

# wait_phase POD PHASE: true once the pod's status.phase is PHASE, false after 300 tries.
wait_phase() {
  for _ in $(seq 300); do
    [ "$(k get pod "$1" -o jsonpath='{.status.phase}' 2>/dev/null)" = "$2" ] && return 0
    sleep 0.1
  done
  return 1
}

# stop_at_exit PID: stop_background stops this background process of the script's.
stop_at_exit() { background_pids+=("$1"); }

# start_muster NAME CMD...: runs CMD (`muster up` or `muster apiserver`, possibly behind `env`) in
# the background with its stdout in $work/NAME.out and its stderr in $work/NAME.err, and waits up
# to 30 s for the "export KUBECONFIG=FILE" line both print once they serve. Sets muster_pid and
# muster_kubeconfig (FILE); false when the line did not come (the process is stopped at exit all
# the same).
start_muster() {
  local name=$1
  shift
  # Emptied before the child starts, so a restart under the same NAME never reads the last run's
  # line (the child's own redirection happens after this function goes on).
  : >"$work/$name.out"
  : >"$work/$name.err"
  "$@" >>"$work/$name.out" 2>>"$work/$name.err" &
  muster_pid=$!
  stop_at_exit "$muster_pid"
  for _ in $(seq 300); do
    grep -q '^export KUBECONFIG=' "$work/$name.out" 2>/dev/null && break
    kill -0 "$muster_pid" 2>/dev/null || break  # exited (a bad flag, a busy port)
    sleep 0.1
  done
  muster_kubeconfig=$(sed -n 's/^export KUBECONFIG=//p' "$work/$name.out")
  [ -n "$muster_kubeconfig" ]
}

# exit_not_started NAME WHAT: after a failed start_muster, the FAIL line with what NAME printed,
# the tally, and exit 1.
exit_not_started() {
  echo "FAIL $2 did not start:"
  sed 's/^/    /' "$work/$1.err" "$work/$1.out"
  echo "$pass passed, $((fail + 1)) failed"
  exit 1
}

# any_running PID...: true while one of them has not exited.
any_running() {
  local pid
  for pid in "$@"; do kill -0 "$pid" 2>/dev/null && return 0; done
  return 1
}

# stop_processes SECONDS PID...: SIGINT to each PID, SIGKILL to those that have not exited within
# SECONDS, then reaps them all. Returns the last one's exit status (137 when killed).
stop_processes() {
  local secs=$1 pid rc=0 p kept=()
  shift
  for pid in "$@"; do kill -INT "$pid" 2>/dev/null; done
  for _ in $(seq $((secs * 10))); do
    any_running "$@" || break
    sleep 0.1
  done
  for pid in "$@"; do
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    rc=$?
  done
  # Forgotten once reaped: a PID may soon name another process.
  for p in "${background_pids[@]}"; do
    for pid in "$@"; do [ "$p" = "$pid" ] && continue 2; done
    kept+=("$p")
  done
  background_pids=(${kept[@]+"${kept[@]}"})
  for pid in "$@"; do
    if [ "$pid" = "$muster_pid" ]; then muster_pid=; fi
  done
  return "$rc"
}

# stop_process [PID [SECONDS]]: stop_processes for PID (default $muster_pid) with SECONDS
# (default 10).
stop_process() {
  local pid=${1:-$muster_pid}
  [ -n "$pid" ] || return 0
  stop_processes "${2:-10}" "$pid"
}

# stop_background: stops every process still to stop at exit, in 10 s at the most.
stop_background() {
  [ "${#background_pids[@]}" -eq 0 ] || stop_processes 10 "${background_pids[@]}"
}

# --- waiting for what the cluster says (the up and kube suites) -----------------------------------
# wait_for SECONDS CMD...: until CMD succeeds (true) or the time is up (false).
wait_for() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@" >/dev/null 2>&1; do
    [ "$SECONDS" -ge "$deadline" ] && return 1
    sleep 0.2
  done
}
# eventually NAME SECONDS CMD...: a check that passes once CMD succeeds within SECONDS.
eventually() {
  local name=$1 secs=$2
  shift 2
  if wait_for "$secs" "$@"; then ok "$name"; else bad "$name" "success within ${secs}s of: $*" "$("$@" 2>&1)"; fi
}
phase_is() { [ "$(k get "$1" -o jsonpath='{.status.phase}' 2>/dev/null)" = "$2" ]; }
job_phase_is() { [ "$(k get vcjob "$1" -o jsonpath='{.status.state.phase}' 2>/dev/null)" = "$2" ]; }
count_pods() {  # count_pods SELECTOR PHASE
  k get pods -l "$1" -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' 2>/dev/null | grep -c "^$2\$"
}
pods_are() { [ "$(count_pods "$1" "$2")" = "$3" ]; }
no_pods() { [ -z "$(k get pods -l "$1" -o name 2>/dev/null)" ]; }
gone() { ! k get "$@" >/dev/null 2>&1; }

# start_chromium [FLAG...]: headless Chromium ($CHROMIUM, default chromium) on about:blank at
# 1280x800 with its DevTools port on loopback, stopped at exit; FLAGs are added to its command
# line. Exits 1 when it does not start. Then `cdp ARGS...` runs dashboard_cdp.py against it
# (with $PYTHON, Debian's python3 with python3-websocket) and `page PYEXPR` checks that the
# dashboard's state `s` satisfies PYEXPR.
e2e_lib_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
start_chromium() {
  "${CHROMIUM:-chromium}" --headless --no-sandbox --disable-gpu --disable-background-networking \
    --disable-component-update --disable-sync --disable-extensions --no-first-run \
    --no-default-browser-check --disable-dev-shm-usage --user-data-dir="$work/chrome" \
    --remote-debugging-address=127.0.0.1 --remote-debugging-port=0 --window-size=1280,800 \
    "$@" about:blank >"$work/chrome.log" 2>&1 &
  stop_at_exit $!
  if ! wait_for 30 test -s "$work/chrome/DevToolsActivePort"; then
    bad "chromium starts" "its DevToolsActivePort" "$(tail -20 "$work/chrome.log")"
    exit 1
  fi
  devtools=$(head -1 "$work/chrome/DevToolsActivePort")
}
cdp() { "${PYTHON:-/usr/bin/python3}" "$e2e_lib_dir/dashboard_cdp.py" "$devtools" "$@"; }
page() { cdp expect "$1"; }
