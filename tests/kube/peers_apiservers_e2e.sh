#!/usr/bin/env bash
# kube/peers-apiservers: the API servers workload of the peer benchmark, reduced
# (bench/peers/apiservers.sh --small: `muster apiserver`, then kube-apiserver + etcd, one round),
# so that the harness cannot rot. It must end well, print exactly one well-formed `peers:` line
# per comparison, each ratio the one its figures give (> 1 where muster does better), and every
# watcher of both servers must have had every event, in order. No figure is held to a bound.
#
# Usage: peers_apiservers_e2e.sh MUSTER_BINARY
set -u
MUSTER=${1:?usage: peers_apiservers_e2e.sh MUSTER_BINARY}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=../e2e/check_lib.sh
. "$here/../e2e/check_lib.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

start=$SECONDS
"$root/bench/peers/apiservers.sh" --small --muster "$MUSTER" >"$work/out" 2>"$work/err"
rc=$?
if [ "$rc" -eq 0 ]; then
  ok "apiservers.sh --small ends well ($((SECONDS - start)) s)"
else
  bad "apiservers.sh --small ends well" "exit 0" "exit $rc; $(tail -30 "$work/err")"
fi

# check_line WORKLOAD UNIT HIGHER_IS_BETTER: exactly one line for WORKLOAD, its figures positive
# and its ratio muster/peer (or peer/muster) of them, to the rounding of the printed figures.
check_line() {
  local name=$1 unit=$2 hi=$3 lines verdict
  local re="^peers: api-$name: muster ([0-9]+(\\.[0-9]+)?) $unit, kube-apiserver ([0-9]+(\\.[0-9]+)?) $unit, ratio ([0-9]+\\.[0-9]{2})x$"
  lines=$(grep -E "^peers: api-$name:" "$work/out")
  verdict=$(grep -E "$re" <<<"$lines" | awk -v hi="$hi" -v n="$(grep -c . <<<"$lines")" '
    { m = $4; k = $7; sub(/x$/, "", $NF); r = $NF }
    END {
      if (n != 1 || NR != 1) { print "not exactly one well-formed line"; exit }
      if (m <= 0 || k <= 0) { print "a figure is not positive"; exit }
      want = hi ? m / k : k / m
      if (r < want * 0.95 - 0.01 || r > want * 1.05 + 0.01) { printf "ratio %s, its figures give %.2f", r, want; exit }
      print "ok"
    }')
  if [ "$verdict" = ok ]; then
    ok "peers: api-$name: one line, in $unit, its ratio from its figures"
  else
    bad "peers: api-$name: one line, in $unit, its ratio from its figures" "$re" "$verdict: $lines"
  fi
}
check_line create-1conn creates/s 1
check_line create-8conn creates/s 1
check_line list-json ms 0
check_line list-table ms 0
check_line watch events/s 1
check_line rss MiB 0
expect_eq "no other peers: lines" 6 grep -c '^peers: ' "$work/out"

for server in muster kube-apiserver; do
  expect "watch: every $server watcher had every event, in order" \
    "watch: $server: 1 of 1 round(s) with every watcher having every event, in order" cat "$work/err"
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
