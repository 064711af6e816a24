#!/usr/bin/env bash
# hostile/apiserver: hostile input over raw sockets against `muster apiserver` on loopback
# (tests/hostile/hostile_suite.py; issue 18, item 2): the issue's defects over the wire, malformed
# request lines, header floods, pipelining, chunked and Content-Length lies, 200 slowloris
# connections and 2,000 idle keep-alive connections, while a kubectl loop must keep answering
# within 1 s; at the end the server must still be alive and its store consistent.
#
# Usage: hostile_e2e.sh MUSTER_BINARY
# Environment: KUBECTL (default /usr/bin/kubectl), HOSTILE_ARGS (extra suite flags, word-split).
set -u
MUSTER=${1:?usage: hostile_e2e.sh MUSTER_BINARY}
here=$(cd "$(dirname "$0")" && pwd)
KUBECTL=${KUBECTL:-/usr/bin/kubectl}
# shellcheck source=../e2e/e2e_lib.sh
. "$here/../e2e/e2e_lib.sh"
begin_e2e
# The EXIT trap (begin_e2e's) stops what was started; a signal exits through it too.
trap 'exit 130' INT
trap 'exit 143' TERM

# 2,000 idle and 200 slowloris connections, plus the suite's own: the suite needs that many
# descriptors (muster raises its own soft limit to the hard one, as Go programs do).
need=4096
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt "$need" ]; then
  hard=$(ulimit -Hn)
  if [ "$hard" = unlimited ] || [ "$hard" -ge "$need" ]; then
    ulimit -n "$need"
  else
    ulimit -n "$hard"
  fi
fi
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt 2400 ]; then
  echo "FAIL the open-file limit is $(ulimit -n) (hard $(ulimit -Hn)); the suite needs 2,400 or more"
  exit 1
fi

# Plain HTTP: the suite speaks to the HTTP layer byte by byte (TLS would only wrap it).
start_muster apiserver "$MUSTER" apiserver --data-dir "$work/data" --listen 127.0.0.1:0 \
    --insecure-http ||
  exit_not_started apiserver "muster apiserver"
server=$(sed -n 's/^ *server: //p' "$muster_kubeconfig" | head -1)
case "$server" in
  http://127.0.0.1:*) ;;
  *)
    echo "FAIL muster apiserver's kubeconfig names server '$server', not http://127.0.0.1:PORT"
    exit 1
    ;;
esac

# Bounded well inside CTest's TIMEOUT, so that the EXIT trap always gets to run.
# shellcheck disable=SC2086
timeout -k 5 110 /usr/bin/python3 "$here/hostile_suite.py" --server "$server" \
  --kubeconfig "$muster_kubeconfig" --kubectl "$KUBECTL" --server-pid "$muster_pid" \
  --work "$work" ${HOSTILE_ARGS:-} &
suite=$!
stop_at_exit "$suite"
wait "$suite"
rc=$?
[ "$rc" = 124 ] && echo "FAIL the suite did not finish within 110 s"

# The server must have survived all of it, and stop cleanly when asked.
if ! kill -0 "$muster_pid" 2>/dev/null; then
  echo "FAIL muster apiserver is no longer running; its stderr:"
  tail -40 "$work/apiserver.err" | sed 's/^/    /'
  exit 1
fi
stop_process "$muster_pid" 10
stop_rc=$?
if [ "$stop_rc" != 0 ] && [ "$stop_rc" != 130 ]; then
  echo "FAIL muster apiserver exited with status $stop_rc when stopped; its stderr:"
  tail -40 "$work/apiserver.err" | sed 's/^/    /'
  [ "$rc" = 0 ] && rc=1
fi
exit "$rc"
