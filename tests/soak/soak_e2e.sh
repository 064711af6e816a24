#!/usr/bin/env bash
# soak/processes: a soak of the split `muster up` (tests/soak/soak.py; issue 18, acceptance 4).
# `muster apiserver`, `muster scheduler`, `muster controller` and `muster nodes` (four simulated
# nodes of four GPUs, tests/soak/cluster.yaml), each its own process on one data directory, while
# Volcano Jobs (gangs of 1-4 one-GPU pods that run a few seconds) are created and deleted
# continuously: the API server is SIGKILLed and restarted on the same port every 2 minutes and the
# nodes every 3 (every 60 s and 90 s for runs of 5 minutes or less, so that the 3-minute CI run
# restarts the API server twice and the nodes once), with a `kubectl get pods -A` loop and a raw
# watch on pods throughout. Checked: no acknowledged write lost, no resourceVersion going
# backwards, no pod bound twice, no gang partly bound after recovery, every Job reaching a final
# phase, kubectl answering whenever the API server is up, the scheduler and the controller
# reconnecting by themselves. Prints the figures, one PASS/FAIL line per check and "N passed, M
# failed"; exit 0 only when nothing failed, 77 when kubectl is missing.
#
# Usage: soak_e2e.sh MUSTER_BINARY [--minutes M] [soak.py flags...]
#   CI: --minutes 3 (the default; about 3 min 15 s in all); benchmark: --minutes 30 (about 31 min).
# Environment: KUBECTL (default /usr/bin/kubectl); SOAK_KEEP=DIR copies the logs there at exit.
set -u
MUSTER=${1:?usage: soak_e2e.sh MUSTER_BINARY [--minutes M] [soak.py flags...]}
shift
minutes=3
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) minutes=${2:?--minutes needs a value}; shift 2 ;;
    --minutes=*) minutes=${1#--minutes=}; shift ;;
    *) args+=("$1"); shift ;;
  esac
done
case "$minutes" in
  '' | *[!0-9.]* | *.*.*)
    echo "FAIL --minutes must be a number of minutes, not '$minutes'"
    exit 2
    ;;
esac
here=$(cd "$(dirname "$0")" && pwd)
KUBECTL=${KUBECTL:-/usr/bin/kubectl}
# shellcheck source=../e2e/e2e_lib.sh
. "$here/../e2e/e2e_lib.sh"
begin_e2e

# soak.py starts (and restarts) the muster processes itself, each with a parent-death signal, and
# lists them in $work/pids; whatever of them is left when this script ends is SIGKILLed here,
# after soak.py itself was stopped (stop_background). A PID is only signalled while its command
# line still names $work, so that a PID reused since is left alone.
# shellcheck disable=SC2317  # run by the EXIT trap
kill_listed() {
  local pid name
  [ -f "$work/pids" ] || return 0
  while read -r pid name; do
    [ -r "/proc/$pid/cmdline" ] || continue
    if tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$work"; then
      kill -KILL "$pid" 2>/dev/null && echo "killed a leftover muster $name ($pid)"
    fi
  done <"$work/pids"
}
# shellcheck disable=SC2317
keep_logs() {
  [ -n "${SOAK_KEEP:-}" ] || return 0
  mkdir -p "$SOAK_KEEP" &&
    cp "$work"/*.out "$work"/*.err "$work"/*.json "$work"/*.jsonl "$SOAK_KEEP"/ 2>/dev/null
  echo "logs kept in $SOAK_KEEP"
}
trap 'stop_background; kill_listed; keep_logs; rm -rf "$work"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Bounded well inside CTest's TIMEOUT (360 s for 3 minutes): the soak, 120 s at most for the Jobs
# to finish, and the start and the checks.
limit=$(awk -v m="$minutes" 'BEGIN { printf "%d", m * 60 + 165 }')
start=$SECONDS
timeout -k 5 "$limit" /usr/bin/python3 "$here/soak.py" --muster "$MUSTER" \
  --cluster "$here/cluster.yaml" --work "$work" --minutes "$minutes" --kubectl "$KUBECTL" \
  --summary "$work/soak-summary.json" ${args[@]+"${args[@]}"} &
soak=$!
stop_at_exit "$soak"
wait "$soak"
rc=$?
background_pids=()  # reaped: its PID may soon name another process
[ "$rc" = 124 ] && echo "FAIL the soak did not finish within $limit s"
echo "soak took $((SECONDS - start)) s"
exit "$rc"
