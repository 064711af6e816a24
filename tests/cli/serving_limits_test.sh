#!/usr/bin/env bash
# The API server's limits reach it from the command line of both commands that run it:
# `muster apiserver` and `muster up` with --max-watches-per-client 1 answer a client's second
# watch with 429 and Retry-After: 1 while its first runs (a list still gets 200); without the flag
# the second watch is served. The limits themselves are apiserver_server_test's; this is the
# wiring from the flags (cmd/apiserver.cc, cmd/up.cc, cmd/cluster.cc) to the server.
# Usage: serving_limits_test.sh MUSTER_BINARY
set -u
muster=$1
# shellcheck source=../e2e/e2e_lib.sh
. "$(dirname "$0")/../e2e/e2e_lib.sh"
work=$(mktemp -d /tmp/muster-limits-XXXXXX)
trap 'stop_background; rm -rf "$work"' EXIT

# start NAME COMMAND FLAGS...: starts `muster COMMAND` on a free loopback port over plain HTTP
# (start_muster) and sets port from the kubeconfig it writes; exits the test when it does not start.
start() {
  local name=$1
  shift
  start_muster "$name" "$muster" "$@" --data-dir "$work/$name" --listen 127.0.0.1:0 \
    --insecure-http || exit_not_started "$name" "muster $*"
  port=$(sed -n 's#^ *server: http://127\.0\.0\.1:\([0-9]*\)$#\1#p' "$muster_kubeconfig")
}

watch_url() { echo "http://127.0.0.1:$port/api/v1/namespaces/default/configmaps?watch=true"; }

# check NAME WANT: opens one watch and keeps it, then a second one: its status is WANT (and with
# 429, Retry-After: 1); a plain list is 200 either way.
check() {
  local name=$1 want=$2 headers code
  curl -sN "$(watch_url)" >"$work/$name.watch" 2>/dev/null &
  watcher=$!
  stop_at_exit "$watcher"
  # The first watch is open once a configmap made now arrives on it.
  curl -s -o /dev/null -X POST -H 'Content-Type: application/json' \
    --data '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"seen"}}' \
    "http://127.0.0.1:$port/api/v1/namespaces/default/configmaps"
  for _ in $(seq 100); do
    grep -q '"seen"' "$work/$name.watch" 2>/dev/null && break
    sleep 0.05
  done
  grep -q '"seen"' "$work/$name.watch" || bad "$name: first watch" "the configmap's event" \
    "$(cat "$work/$name.watch")"
  headers=$(curl -s -D - -o /dev/null --max-time 1 "$(watch_url)" 2>/dev/null | tr -d '\r')
  code=$(sed -n '1s#^HTTP/1.1 \([0-9]*\).*#\1#p' <<<"$headers")
  if [ "$code" = "$want" ]; then
    ok "$name: a second watch is $want"
  else
    bad "$name: second watch" "HTTP $want" "$headers"
  fi
  if [ "$want" = 429 ]; then
    if grep -qx 'Retry-After: 1' <<<"$headers"; then
      ok "$name: ... with Retry-After: 1"
    else
      bad "$name: 429's Retry-After" "Retry-After: 1" "$headers"
    fi
  fi
  code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 \
    "http://127.0.0.1:$port/api/v1/namespaces/default/configmaps")
  if [ "$code" = 200 ]; then
    ok "$name: a list beside them is 200"
  else
    bad "$name: list" "HTTP 200" "HTTP $code"
  fi
  stop_process "$watcher" 1
  stop_process
}

start apiserver-limited apiserver --max-watches-per-client 1 && check apiserver-limited 429
start apiserver-default apiserver && check apiserver-default 200
start up-limited up --max-watches-per-client 1 --no-summary && check up-limited 429
start up-default up --no-summary && check up-default 200

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
