#!/usr/bin/env bash
# The data directory of `muster apiserver`: what muster creates is owner-only (directories 0700,
# store.db and its -wal 0600, the kubeconfig 0600) while a directory the user made keeps its mode;
# a store.db that is not a muster store (empty, not SQLite, another program's SQLite) is refused
# at start with exit status 1 and a message naming the file and --reset, never served as an empty
# cluster; --reset starts over.
# Usage: apiserver_data_dir_test.sh MUSTER_BINARY
set -u
muster=$1
tmp=$(mktemp -d /tmp/muster-datadir-XXXXXX)
server=0
trap '[ "$server" -ne 0 ] && kill "$server" 2>/dev/null; rm -rf "$tmp"' EXIT
umask 022
pass=0
fail=0

ok() { pass=$((pass + 1)); }
bad() {
  echo "FAIL $*"
  fail=$((fail + 1))
}
mode() { stat -c %a "$1"; }
expect_mode() {  # path, mode
  local got
  got=$(mode "$1" 2>/dev/null)
  if [ "$got" = "$2" ]; then ok; else bad "$1: mode ${got:-missing}, want $2"; fi
}

# Starts the server on $1 and waits for its address; stops it again.
start() {
  "$muster" apiserver --data-dir "$1" --listen 127.0.0.1:0 "${@:2}" >"$tmp/out" 2>"$tmp/err" &
  server=$!
  for _ in $(seq 100); do
    grep -q '^listening on' "$tmp/out" 2>/dev/null && return 0
    kill -0 "$server" 2>/dev/null || break
    sleep 0.1
  done
  bad "muster apiserver --data-dir $1 did not start: $(cat "$tmp/err")"
  return 1
}
stop() {
  kill -TERM "$server" && wait "$server"
  server=0
}

# Refused at start: exit 1, the message names the file, says why and offers --reset.
expect_refused() {  # data dir, why
  local out rc
  out=$(timeout 20 "$muster" apiserver --data-dir "$1" --listen 127.0.0.1:0 2>&1)
  rc=$?
  if [ "$rc" -eq 1 ] && grep -qF -- "$1/store.db" <<<"$out" && grep -qF -- "$2" <<<"$out" &&
    grep -qF -- "--reset" <<<"$out"; then
    ok
  else
    bad "$1: exit $rc, output: $out (wanted exit 1, the file, \"$2\" and --reset)"
  fi
}

# Created by muster: owner-only, parents included.
if start "$tmp/new/data"; then
  expect_mode "$tmp/new" 700
  expect_mode "$tmp/new/data" 700
  expect_mode "$tmp/new/data/store.db" 600
  expect_mode "$tmp/new/data/store.db-wal" 600
  expect_mode "$tmp/new/data/kubeconfig" 600
  stop
fi

# Made by the user: its mode stays; the files muster creates in it are 0600.
mkdir -m 755 "$tmp/mine"
if start "$tmp/mine"; then
  expect_mode "$tmp/mine" 755
  expect_mode "$tmp/mine/store.db" 600
  stop
fi

# Not a muster store: refused, the file left as it was.
mkdir "$tmp/empty" && : >"$tmp/empty/store.db"
expect_refused "$tmp/empty" "the file is empty (zero length)"
if [ -s "$tmp/empty/store.db" ]; then bad "the empty store.db was written to"; else ok; fi
mkdir "$tmp/text" && echo "not a database" >"$tmp/text/store.db"
expect_refused "$tmp/text" "not an SQLite database"
if [ "$(cat "$tmp/text/store.db")" = "not a database" ]; then ok; else bad "store.db changed"; fi

# --reset starts over with an empty store.
if start "$tmp/empty" --reset; then
  ok
  stop
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
