#!/usr/bin/env bash
# The API server's limits reach it from the command line of both commands that run it:
# `muster apiserver` and `muster up` with --max-watches-per-client 1 answer a client's second
# watch with 429 and Retry-After: 1 while its first runs (a list still gets 200); without the flag
# the second watch is served. The limits themselves are apiserver_server_test's; this is the
# wiring from the flags (cmd/apiserver.cc, cmd/up.cc, cmd/cluster.cc) to the server.
# Usage: serving_limits_test.sh MUSTER_BINARY
set -u
muster=$1
tmp=$(mktemp -d /tmp/muster-limits-XXXXXX)
server=0
watcher=0
cleanup() {
  [ "$watcher" -ne 0 ] && kill "$watcher" 2>/dev/null
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

# start NAME COMMAND FLAGS...: starts `muster COMMAND` on a free loopback port over plain HTTP and
# sets port from the address it prints ("listening on ADDR:PORT" or "API server at http://...").
start() {
  local name=$1
  shift
  "$muster" "$@" --data-dir "$tmp/$name" --listen 127.0.0.1:0 --insecure-http \
    >"$tmp/$name.out" 2>"$tmp/$name.err" &
  server=$!
  port=""
  for _ in $(seq 200); do
    port=$(sed -n -e 's#^listening on 127\.0\.0\.1:\([0-9]*\)$#\1#p' \
      -e 's#.*API server at http://127\.0\.0\.1:\([0-9]*\),.*#\1#p' "$tmp/$name.out" | head -1)
    [ -n "$port" ] && return 0
    kill -0 "$server" 2>/dev/null || break
    sleep 0.1
  done
  bad "$name: muster $* did not start: $(cat "$tmp/$name.err")"
  return 1
}
stop() {
  [ "$watcher" -ne 0 ] && kill "$watcher" 2>/dev/null && wait "$watcher" 2>/dev/null
  watcher=0
  kill -TERM "$server" && wait "$server"
  server=0
}

watch_url() { echo "http://127.0.0.1:$port/api/v1/namespaces/default/configmaps?watch=true"; }

# check NAME WANT: opens one watch and keeps it, then a second one: its status is WANT (and with
# 429, Retry-After: 1); a plain list is 200 either way.
check() {
  local name=$1 want=$2 headers code
  curl -sN "$(watch_url)" >"$tmp/$name.watch" 2>/dev/null &
  watcher=$!
  # The first watch is open once a configmap made now arrives on it.
  curl -s -o /dev/null -X POST -H 'Content-Type: application/json' \
    --data '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"seen"}}' \
    "http://127.0.0.1:$port/api/v1/namespaces/default/configmaps"
  for _ in $(seq 100); do
    grep -q '"seen"' "$tmp/$name.watch" 2>/dev/null && break
    sleep 0.05
  done
  grep -q '"seen"' "$tmp/$name.watch" || bad "$name: the first watch got no event"
  headers=$(curl -s -D - -o /dev/null --max-time 1 "$(watch_url)" 2>/dev/null | tr -d '\r')
  code=$(sed -n '1s#^HTTP/1.1 \([0-9]*\).*#\1#p' <<<"$headers")
  if [ "$code" = "$want" ]; then ok; else bad "$name: second watch: HTTP ${code:-none}, want $want"; fi
  if [ "$want" = 429 ]; then
    if grep -qx 'Retry-After: 1' <<<"$headers"; then ok; else bad "$name: 429 without Retry-After: 1"; fi
  fi
  code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 \
    "http://127.0.0.1:$port/api/v1/namespaces/default/configmaps")
  if [ "$code" = 200 ]; then ok; else bad "$name: list beside the watches: HTTP $code, want 200"; fi
}

if start apiserver-limited apiserver --max-watches-per-client 1; then
  check apiserver-limited 429
  stop
fi
if start apiserver-default apiserver; then
  check apiserver-default 200
  stop
fi
if start up-limited up --max-watches-per-client 1 --no-summary; then
  check up-limited 429
  stop
fi
if start up-default up --no-summary; then
  check up-default 200
  stop
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
