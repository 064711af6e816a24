#!/usr/bin/env bash
# End-to-end: replicas of `muster scheduler` and `muster controller` against `muster apiserver`
# elect a leader over a Lease in kube-system, as kube-scheduler's replicas do (client-go's
# leaderelection; src/client/leader_election.h): one leads and the others stand by; a leader
# stopped with SIGTERM releases the Lease and a standby takes over at once; a leader killed with
# SIGKILL is replaced once its Lease expires; a leader that cannot reach the API server stops
# leading before its Lease could expire and exits 1 ("leaderelection lost"). Short durations: a
# 4 s lease, 2 s renew deadline, 250 ms retry period. Each check prints PASS or FAIL; the last
# line is "N passed, M failed". Exit 0 only when nothing failed, 77 when kubectl is missing.
#
# Usage: leader_election_e2e.sh MUSTER_BINARY
set -u

MUSTER=${1:?usage: leader_election_e2e.sh MUSTER_BINARY}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=e2e_lib.sh
. "$here/e2e_lib.sh"
begin_e2e

start_muster server "$MUSTER" apiserver --listen 127.0.0.1:0 --data-dir "$work/data" ||
  exit_not_started server "muster apiserver"
server_pid=$muster_pid
export KUBECONFIG=$muster_kubeconfig
election=(--leader-elect-lease-duration 4s --leader-elect-renew-deadline 2s
  --leader-elect-retry-period 250ms)

# replica NAME COMMAND FLAGS...: starts `muster COMMAND` in the background, its stderr in
# $work/NAME.err; sets replica_pid.
replica() {
  local name=$1
  shift
  # Each replica's /healthz and /metrics on a port of its own (the default, :8080, is one).
  # Emptied before the child starts: a restarted NAME must not be read from the last run's lines.
  : >"$work/$name.out"
  : >"$work/$name.err"
  "$MUSTER" "$@" --listen-address=127.0.0.1:0 >>"$work/$name.out" 2>>"$work/$name.err" &
  replica_pid=$!
  stop_at_exit "$replica_pid"
}
# logged NAME TEXT: NAME's stderr holds TEXT.
logged() { grep -qF -- "$2" "$work/$1.err" 2>/dev/null; }
# within SECONDS CMD...: true once CMD succeeds, polling every 50 ms; false after SECONDS.
within() {
  local tries=$(($1 * 20))
  shift
  for _ in $(seq "$tries"); do
    "$@" && return 0
    sleep 0.05
  done
  "$@"
}
# exited PID: the process is gone or a zombie (kill -0 still succeeds on one).
exited() {
  local state
  state=$(ps -o stat= -p "$1" 2>/dev/null)
  [ -z "$state" ] || [[ $state == Z* ]]
}
# identity NAME: the identity NAME campaigns as.
identity() { sed -n 's/.* as \([^ ]*\)$/\1/p' "$work/$1.err" | head -1; }
holder() { k get lease -n kube-system "$1" -o 'jsonpath={.spec.holderIdentity}'; }
transitions() { k get lease -n kube-system "$1" -o 'jsonpath={.spec.leaseTransitions}'; }
check() {  # NAME CMD...: PASS when CMD succeeds
  local name=$1
  shift
  if "$@"; then ok "$name"; else bad "$name" "success of: $*" "$(tail -n 5 "$work"/*.err)"; fi
}

# --- One of two leads ---------------------------------------------------------------------------
replica a scheduler "${election[@]}"
a=$replica_pid
within 10 logged a "became leader (lease kube-system/muster-scheduler, identity "
check "the first scheduler becomes leader" logged a "became leader"
replica b scheduler "${election[@]}"
b=$replica_pid
check "the second stands by" within 10 logged b "is held by $(identity a); standing by"
expect_eq "the Lease names the leader" "$(identity a)" holder muster-scheduler
expect_eq "...for the lease duration in whole seconds" "4" \
  k get lease -n kube-system muster-scheduler -o 'jsonpath={.spec.leaseDurationSeconds}'
sleep 1  # four retry periods: the standby must still be standing by
check "the standby does not lead while the leader renews" eval '! logged b "became leader"'

# --- SIGTERM: the lease is released and the standby takes over at once ---------------------------
kill -TERM "$a"
check "the stopped leader exits" within 10 exited "$a"
stop_process "$a" 1
expect_eq "...with status 0" "0" echo "$?"
check "...after releasing the lease" logged a "released lease kube-system/muster-scheduler"
# Without the release the standby would wait for the 4 s lease to expire.
check "the standby leads within 2 s" within 2 logged b "became leader"
expect_eq "the Lease names it" "$(identity b)" holder muster-scheduler
expect_eq "...after one transition" "1" transitions muster-scheduler

# --- SIGKILL: replaced once the lease expires ------------------------------------------------------
replica c scheduler "${election[@]}"
c=$replica_pid
check "a third stands by" within 10 logged c "is held by $(identity b); standing by"
kill -KILL "$b"
stop_process "$b" 1
expect_eq "the killed leader's Lease still names it" "$(identity b)" holder muster-scheduler
check "the standby leads once the lease expires" within 10 logged c "became leader"
expect_eq "...two transitions in all" "2" transitions muster-scheduler

# --- The API server stops answering: the leader exits 1 before its lease could expire -------------
kill -STOP "$server_pid"
check "a leader that cannot renew exits" within 10 exited "$c"
kill -CONT "$server_pid"
stop_process "$c" 1
expect_eq "...with status 1" "1" echo "$?"
check "...saying so" logged c "leaderelection lost (lease kube-system/muster-scheduler"

# --- The controller has its own lease ----------------------------------------------------------------
replica ctl controller "${election[@]}"
ctl=$replica_pid
check "the controller becomes leader of muster-controller" \
  within 10 logged ctl "became leader (lease kube-system/muster-controller"
expect_eq "...its Lease names it" "$(identity ctl)" holder muster-controller
stop_process "$ctl" 10
expect_eq "...and SIGINT releases it" "" holder muster-controller

# --- --leader-elect=false: no election --------------------------------------------------------------
replica solo scheduler --leader-elect=false
solo=$replica_pid
check "--leader-elect=false schedules at once" \
  within 10 grep -q "scheduler running against" "$work/solo.out"
check "...without campaigning" eval '! logged solo campaigning'
stop_process "$solo" 10

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
