#!/usr/bin/env bash
# kube/peers: bench/peers/run.sh (muster beside kube-scheduler on one real control plane, issue
# 12) at its reduced size, so that the harness cannot rot: 100 nodes with 100 initial and 1,000
# measured plain pods (muster, then kube-scheduler) and 20 Volcano gangs of 8 one-GPU pods on 100
# GPU nodes (muster with its controller). Checked: every run bound every pod, and the output's
# `peers:` lines parse as `peers: <workload>: muster <x> <unit>, <peer> <y> <unit>, ratio <r>x`.
# No time is asserted. The backlog and contended workloads (two more control planes each) are
# left to `make bench-peers`, to keep this test near 2 minutes on 2 cores.
#
# Usage: peers_e2e.sh MUSTER_BINARY
set -u
MUSTER=${1:?usage: peers_e2e.sh MUSTER_BINARY}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../e2e/e2e_lib.sh
. "$here/../e2e/e2e_lib.sh"
begin_e2e
root=$(cd "$here/../.." && pwd)

"$root/bench/peers/run.sh" --small --only basic,gpu --out "$work/results" "$MUSTER" \
  >"$work/run.out" 2>"$work/run.err"
rc=$?
if [ "$rc" = 0 ]; then
  ok "run.sh --small finished (exit 0: every run bound the pods it should)"
else
  bad "run.sh --small finished" "exit 0" "exit $rc; $(grep -E 'FAIL|gave up|did not' "$work/run.err" | head -5) $(tail -5 "$work/run.err")"
fi

verdict=$(/usr/bin/python3 - "$work/results/results.jsonl" <<'PY'
import json, sys
want = {("SchedulingBasic", "muster"): 1000, ("SchedulingBasic", "kube-scheduler"): 1000,
        ("GPU gangs", "muster"): 160}
got = {}
try:
    for line in open(sys.argv[1]):
        r = json.loads(line)
        got[(r["workload"], r["scheduler"])] = (r["bound"], r["gpus_bound"], r["error"])
except (OSError, ValueError) as e:
    print("no results: %s" % e)
    sys.exit()
wrong = []
for key, n in want.items():
    bound = got.get(key)
    if bound is None or bound[0] != n or bound[2]:
        wrong.append("%s/%s: %s (want %d bound)" % (key[0], key[1], bound, n))
gangs = got.get(("GPU gangs", "muster"))
if gangs and gangs[1] != 160:
    wrong.append("GPU gangs: %d GPUs bound, want 160" % gangs[1])
print("; ".join(wrong) if wrong else "all bound")
PY
)
expect_eq "every run bound every pod (1,000 plain pods each, 160 gang pods)" \
  "all bound" echo "$verdict"

# The lines, exactly as the issue writes them.
line_re='^peers: [^:]+: muster [0-9.]+ [^,]+, (kube-scheduler|volcano|kai|kube-apiserver) [0-9.]+ [^,]+, ratio ([0-9.]+|inf)x$'
lines=$(grep '^peers: ' "$work/run.out")
bad_lines=$(grep '^peers: ' "$work/run.out" | grep -vE "$line_re")
expect_eq "every peers: line parses" "" echo "$bad_lines"
for w in "SchedulingBasic: muster"; do
  expect_eq "a peers: line for '$w'" "1" sh -c "printf '%s\n' \"\$1\" | grep -c \"^peers: \$2 \"" _ "$lines" "$w"
done
expect_eq "the line saying Volcano and KAI were not measured, and why" "1" \
  sh -c "grep -c '^peers (not measured): volcano: .*403.*kai: .*403' '$work/run.out'"
expect_eq "the table of each workload" "2" sh -c "grep -cE '^(SchedulingBasic|GPU gangs) \\(median' '$work/run.out'"
expect_eq "no process of the run is left" "" sh -c \
  "ps -eo args | grep -F -- '$work/results' | grep -v grep"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
