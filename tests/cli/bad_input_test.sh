#!/usr/bin/env bash
# Bad input to `muster scenario` gives a clear error naming the problem and a non-zero exit,
# never a crash; a file whose expectations fail prints FAIL with the difference.
# Usage: bad_input_test.sh MUSTER_BINARY
set -u
muster=$1
dir=$(cd "$(dirname "$0")" && pwd)/bad
pass=0
fail=0

check() {  # file, expected exit (1), text that must appear in the output
  local file=$1 want=$2
  local out rc
  out=$("$muster" scenario "$dir/$file" 2>&1)
  rc=$?
  if [ "$rc" -ne 1 ] || ! grep -qF -- "$want" <<<"$out"; then
    echo "FAIL $file: exit $rc, output:"
    echo "$out" | sed 's/^/    /'
    echo "    wanted exit 1 and: $want"
    fail=$((fail + 1))
  else
    pass=$((pass + 1))
  fi
}

check bad-quantity.yaml 'bad-quantity.yaml:3: objects[0]: status.allocatable.cpu: quantity "4x": unknown suffix "x"'
check unknown-action.yaml 'unknown action "frobnicate" in actions; known actions: enqueue, allocate, backfill, preempt, reclaim'
check unknown-plugin.yaml 'unknown plugin "gangx"'
check missing-expect.yaml 'missing-expect.yaml:1: missing field "expect"'
check missing-name.yaml 'missing field "name"'
check malformed.yaml 'malformed.yaml:3: malformed YAML'
check unknown-kind.yaml 'no kind "Deployment" is registered for version "apps/v1"'
check wrong-expectation.yaml 'binds: default/p should be bound to n1, but was not bound'

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
