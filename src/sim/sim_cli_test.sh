#!/usr/bin/env bash
# `muster sim` end to end: the reduced packing reproduction (default trace, FGD and BestFit, seeds
# 42-43) through the real binary and its JSON, replay on a Philly excerpt (also on racks) and on
# openb, and clear errors with non-zero exits for bad input.
# Usage: sim_cli_test.sh MUSTER_BINARY SOURCE_DIR
set -u
muster=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0

expect() {  # name, wanted exit, text that must appear in stdout+stderr, command...
  local name=$1 want_rc=$2 want=$3
  shift 3
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  if [ "$rc" -ne "$want_rc" ] || ! grep -qF -- "$want" <<<"$out"; then
    echo "FAIL $name: exit $rc, output:"
    echo "$out" | head -20 | sed 's/^/    /'
    echo "    wanted exit $want_rc and: $want"
    fail=$((fail + 1))
  else
    pass=$((pass + 1))
  fi
}

cd "$src" || exit 1
pods=data/openb/openb_pod_list_default.csv
nodes=data/openb/openb_node_list_gpu_node.csv

# The reduced reproduction: FGD's published per-seed figures, BestFit's reference figures.
expect table 0 'fgd             42      95.14      95.29' \
  "$muster" sim pack --trace openb_pod_list_default.csv --policy fgd,bestfit --seeds 42-43 --quiet
expect table-bestfit 0 'bestfit         43      92.97      93.25' \
  "$muster" sim pack --trace $pods --nodes $nodes --policy fgd,bestfit --seeds 42-43 --quiet
expect json 0 '"policy":"fgd","per_seed":[{"seed":42,"alloc_100":95.14,"alloc_130":95.29,' \
  "$muster" sim pack --trace $pods --policy fgd --seeds 42-43 --json --quiet
expect progress 0 '[2/2] fgd seed' \
  "$muster" sim pack --trace $pods --policy fgd --seeds 42-43 --jobs 1
expect reports 0 'runs in' \
  "$muster" sim pack --trace $pods --policy fgd --seeds 42 --csv-out "$tmp/r.csv" \
  --json-out "$tmp/r.json" --html-out "$tmp/r.html"
if grep -q 'default.csv,fgd,42,95.14,95.29,' "$tmp/r.csv" &&
  grep -q '<svg' "$tmp/r.html" && grep -q '"per_seed"' "$tmp/r.json"; then
  pass=$((pass + 1))
else
  echo "FAIL report files: csv/json/html missing or without content"
  fail=$((fail + 1))
fi

# Replay: the first 3000 Philly jobs on 16 nodes (two of them are 16-GPU gangs).
philly=data/philly/philly_first3000.csv
expect replay-kube 0 'kube      spread       3000      0' \
  "$muster" sim replay --trace $philly --cluster-nodes 16 --scheduler kube --quiet
expect replay-engine 0 "through the engine's sessions: kube, fifo, volcano, muster" \
  "$muster" sim replay --trace $philly --cluster-nodes 16 --quiet
expect replay-muster 0 'muster    spread       3000      0    30.3h    41.0h     6.0d' \
  "$muster" sim replay --trace $philly --cluster-nodes 16 --scheduler fifo,muster --quiet
expect replay-bad-reserve 2 '--reserve-gpus must be >= 1' \
  "$muster" sim replay --trace $philly --reserve-gpus 0
expect replay-held 0 '299.0    $747.39' \
  "$muster" sim replay --trace $philly --cluster-nodes 16 --scheduler kube --quiet
expect replay-json 0 '"scheduler":"volcano","placement":"spread","jobs":3000' \
  "$muster" sim replay --trace $philly --cluster-nodes 16 --scheduler volcano,muster --json --quiet
"$muster" sim replay --trace $philly --cluster-nodes 16 --json --quiet --html-out "$tmp/replay.html" |
  sed 's/"seconds":[0-9.]*//g' >"$tmp/a.json"
"$muster" sim replay --trace $philly --cluster-nodes 16 --json --quiet |
  sed 's/"seconds":[0-9.]*//g' >"$tmp/b.json"
if cmp -s "$tmp/a.json" "$tmp/b.json" && grep -q '"gang_wait_max"' "$tmp/a.json" &&
  grep -q '<svg' "$tmp/replay.html"; then
  pass=$((pass + 1))
else
  echo "FAIL replay: not reproducible, or no JSON fields / HTML charts"
  fail=$((fail + 1))
fi
expect replay-openb-modelled 0 'modelled by the simulator: volcano (the engine was turned off)' \
  "$muster" sim replay --trace $pods --placement fgd --scheduler volcano --modelled --quiet
expect replay-openb 0 'volcano   fgd          8152      0' \
  "$muster" sim replay --trace $pods --placement fgd --scheduler volcano --quiet
expect replay-openb-engine 0 "through the engine's sessions: volcano" \
  "$muster" sim replay --trace $pods --placement fgd --scheduler volcano --quiet
# openb through the engine, GPU shares included: the same seed gives the same result.
"$muster" sim replay --trace $pods --placement fgd --scheduler volcano,muster --seed 7 --json \
  --quiet | sed 's/"seconds":[0-9.]*//g' >"$tmp/oa.json"
"$muster" sim replay --trace $pods --placement fgd --scheduler volcano,muster --seed 7 --json \
  --quiet | sed 's/"seconds":[0-9.]*//g' >"$tmp/ob.json"
if cmp -s "$tmp/oa.json" "$tmp/ob.json" && grep -q '"engine":true' "$tmp/oa.json"; then
  pass=$((pass + 1))
else
  echo "FAIL replay-openb-repeat: openb through the engine not reproducible, or not the engine"
  fail=$((fail + 1))
fi
# Racks of four nodes: where each scheduler's gangs landed, and the rack options' bad input.
expect replay-racks 0 'racks of 4 nodes (4 racks), no spines; a gang across racks runs 1.3 x its duration' \
  "$muster" sim replay --trace $philly --cluster-nodes 16 --scheduler volcano,muster \
  --rack-nodes 4 --cross-rack-slowdown 1.3 --quiet
expect replay-racks-json 0 '"racks":{"topology":"soft","gangs":' \
  "$muster" sim replay --trace $philly --cluster-nodes 16 --scheduler muster --rack-nodes 4 \
  --json --quiet
expect replay-bad-slowdown 2 'cross-rack slowdown 0.5 is not a factor of at least 1' \
  "$muster" sim replay --trace $philly --rack-nodes 4 --cross-rack-slowdown 0.5
expect replay-bad-topology 2 'topology "strict" is not soft, hard or none' \
  "$muster" sim replay --trace $philly --rack-nodes 4 --topology strict
expect replay-racks-modelled 2 'racks are replayed through the engine only, not --modelled' \
  "$muster" sim replay --trace $philly --rack-nodes 4 --modelled
expect replay-bad-scheduler 2 'unknown scheduler "slurm"; known: kube, fifo, volcano, muster' \
  "$muster" sim replay --trace $philly --scheduler slurm
expect replay-bad-speedup 2 '--speedup > 0' \
  "$muster" sim replay --trace $philly --speedup 0
printf 'timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,x,1,1,c\n' >"$tmp/p.csv"
expect replay-bad-row 1 'p.csv:2: column duration: "x" is not a number' \
  "$muster" sim replay --trace "$tmp/p.csv"

# Bad input.
expect unknown-policy 2 'unknown GPU placement policy "tetris"; known: random, dotproduct' \
  "$muster" sim pack --trace $pods --policy tetris --seeds 42
expect bad-seeds 2 'seeds: "51-42" is reversed' \
  "$muster" sim pack --trace $pods --seeds 51-42
expect missing-trace 1 'nothere.csv: cannot open the file' \
  "$muster" sim pack --trace nothere.csv --nodes $nodes --seeds 42
printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli,colour\n' >"$tmp/unknown.csv"
expect unknown-column 1 "unknown.csv:1: unknown column \"colour\"" \
  "$muster" sim pack --trace "$tmp/unknown.csv" --nodes $nodes --seeds 42
printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli\np1,1000,10,1,500\np2,1000,10,one,500\n' \
  >"$tmp/bad.csv"
expect bad-value 1 'bad.csv:3: column num_gpu: "one" is not an integer' \
  "$muster" sim pack --trace "$tmp/bad.csv" --nodes $nodes --seeds 42
printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli\n' >"$tmp/empty.csv"
expect empty-trace 1 'empty.csv: no pods in the trace' \
  "$muster" sim pack --trace "$tmp/empty.csv" --nodes $nodes --seeds 42
expect no-node-list 2 'no node list next to the trace' \
  "$muster" sim pack --trace "$tmp/empty.csv" --seeds 42
expect bad-muster-knob 2 '--muster-depth must be 0..3' \
  "$muster" sim pack --trace $pods --policy muster --seeds 42 --muster-depth 9

# Trace variants: the default trace with GPU shares carrying 60 % of the GPU demand, the same
# file for the same seed, and bad input.
expect variant 0 '8152 pods, 7064 of them GPU pods; 5259 GPU-sharing pods carry' \
  "$muster" sim variant --trace openb_pod_list_default.csv --gpushare 60 --seed 1 \
  --out "$tmp/v1.csv"
"$muster" sim variant --trace $pods --gpushare 60 --seed 1 2>/dev/null >"$tmp/v2.csv"
if cmp -s "$tmp/v1.csv" "$tmp/v2.csv" && [ "$(wc -l <"$tmp/v1.csv")" -eq 8153 ]; then
  pass=$((pass + 1))
else
  echo "FAIL variant-repeat: the same seed gave another file, or not 8,152 pods"
  fail=$((fail + 1))
fi
expect variant-packs 0 'fgd             42' \
  "$muster" sim pack --trace "$tmp/v1.csv" --nodes $nodes --policy fgd --seeds 42 --quiet
expect variant-bad-share 2 '--gpushare 120 is outside 0..100' \
  "$muster" sim variant --trace $pods --gpushare 120
printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli\np1,1000,10,1,1000\n' >"$tmp/whole.csv"
expect variant-no-shares 2 'no GPU-sharing pods to draw from' \
  "$muster" sim variant --trace "$tmp/whole.csv" --gpushare 50
expect variant-missing-trace 1 'nothere.csv: cannot open the file' \
  "$muster" sim variant --trace nothere.csv --gpushare 50

# Multi-GPU variants: the default trace kept, multi-GPU pods added until they carry 40 %; the
# same file for the same seed; one mode at a time; bad input.
expect variant-multigpu 0 '8691 pods, 7603 of them GPU pods; 614 multi-GPU pods carry 40.04 %' \
  "$muster" sim variant --trace $pods --multigpu 40 --seed 1 --out "$tmp/m1.csv"
"$muster" sim variant --trace $pods --multigpu 40 --seed 1 2>/dev/null >"$tmp/m2.csv"
if cmp -s "$tmp/m1.csv" "$tmp/m2.csv" && [ "$(wc -l <"$tmp/m1.csv")" -eq 8692 ]; then
  pass=$((pass + 1))
else
  echo "FAIL variant-multigpu-repeat: the same seed gave another file, or not 8,691 pods"
  fail=$((fail + 1))
fi
expect variant-both-modes 108 'excludes' \
  "$muster" sim variant --trace $pods --gpushare 40 --multigpu 40
expect variant-no-mode 2 'give one of --gpushare, --multigpu and --cpu' \
  "$muster" sim variant --trace $pods
expect variant-bad-multigpu 2 '--multigpu 100 is outside 0..100' \
  "$muster" sim variant --trace $pods --multigpu 100
expect variant-multigpu-below 2 'already carry 7.29 %' \
  "$muster" sim variant --trace $pods --multigpu 5
expect variant-no-multi 2 'no multi-GPU pods to draw from' \
  "$muster" sim variant --trace "$tmp/whole.csv" --multigpu 50

# CPU-heavy variants: every GPU pod kept, CPU-only pods drawn until they are 25.0 % of the pods
# (as in the published cpu250); the same file for the same seed; one mode at a time; bad input.
expect variant-cpu 0 '9419 pods, 7064 of them GPU pods; 2355 CPU-only pods are 25.00 %' \
  "$muster" sim variant --trace $pods --cpu 250 --seed 1 --out "$tmp/c1.csv"
"$muster" sim variant --trace $pods --cpu 250 --seed 1 2>/dev/null >"$tmp/c2.csv"
if cmp -s "$tmp/c1.csv" "$tmp/c2.csv" && [ "$(wc -l <"$tmp/c1.csv")" -eq 9420 ]; then
  pass=$((pass + 1))
else
  echo "FAIL variant-cpu-repeat: the same seed gave another file, or not 9,419 pods"
  fail=$((fail + 1))
fi
expect variant-cpu-packs 0 'fgd             42' \
  "$muster" sim pack --trace "$tmp/c1.csv" --nodes $nodes --policy fgd --seeds 42 --quiet
expect variant-cpu-and-share 108 'excludes' \
  "$muster" sim variant --trace $pods --gpushare 40 --cpu 250
expect variant-bad-cpu 2 '--cpu 1000 is outside 0..1000' \
  "$muster" sim variant --trace $pods --cpu 1000
expect variant-no-cpu-pods 2 'no CPU-only pods to draw from' \
  "$muster" sim variant --trace "$tmp/whole.csv" --cpu 600

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
