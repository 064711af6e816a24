#!/usr/bin/env bash
# bench/peers/run.sh: muster beside its peers on one real control plane (issue 12; `make
# bench-peers`). For every workload and scheduler: a fresh etcd + kube-apiserver +
# kube-controller-manager on loopback (scripts/kube-control-plane, no kube-scheduler of its own),
# simulated nodes from `muster nodes` (their pods never finish), the scheduler alone, a creator
# that posts as fast as the API server takes (bench/peers/peers.py create) and a watcher of the
# pods (peers.py watch: create-to-bind from its watch, partly bound gangs sampled every 100 ms).
# The schedulers alternate within a round (muster, the peer tuned, the peer with its defaults),
# rounds repeat (A B C A B C). The scheduler's CPU seconds (during the measured part) and peak RSS
# come from /proc.
#
# Workloads:
#   SchedulingBasic  nodes of 4 CPU, 32Gi, 110 pods; initial pods created placed (spec.nodeName,
#                    round-robin) before the scheduler starts, then the measured ones (100m,
#                    500Mi, no schedulerName): muster (--serve-default-scheduler) and
#                    kube-scheduler (scheduler_perf's client QPS/burst 5000, and its defaults)
#   SchedulingBasic backlog  (only when --only names it) the same, but the measured pods are
#                    all created before the scheduler starts: binds/s from its first bind to its
#                    last, the scheduler's own rate with the creator out of the way
#   GPU gangs        nodes of 8 GPUs, tainted, four instance types; Volcano Jobs of 8 one-GPU
#                    pods with the toleration and a required instance type: muster with its own
#                    job controller and, with --volcano-src, Volcano (vc-scheduler and
#                    vc-controller-manager; with its performance tuning, and its defaults)
#   Contended gangs  twice the fleet's GPUs in Jobs of 8 one-GPU pods arriving over --arrive s:
#                    muster (Volcano Jobs, its controller), kube-scheduler (batch/v1 Jobs of
#                    8 parallel pods, kube-controller-manager's Job controller; no gangs) and,
#                    with --volcano-src, Volcano (Volcano Jobs, vc-controller-manager)
#   KAI is not measured: the Go module proxy refuses github.com/NVIDIA/KAI-scheduler (403).
#
# Volcano: the Go module proxy refuses volcano.sh/apis (403), which volcano.sh/volcano requires,
# but a Volcano source checkout at a release tag carries it (staging/src/volcano.sh/apis, by a
# replace in its go.mod) and builds with every other module from the proxy:
#   git clone --branch v1.15.1 https://github.com/volcano-sh/volcano
#   bench/peers/run.sh --volcano-src volcano ...
# vc-scheduler and vc-controller-manager are built from it once, into
# build/peers-tools/volcano-<tag or commit>/bin (rebuilt only when missing). Without
# --volcano-src, Volcano is not measured.
#
# Usage: bench/peers/run.sh [--small] [--rounds N] [--nodes N] [--initial N] [--pods N]
#          [--gpu-nodes N] [--gangs N] [--contended-nodes N] [--arrive S] [--no-defaults|--defaults]
#          [--only basic,backlog,gpu,contended,apiservers] [--volcano-src DIR] [--out DIR]
#          [MUSTER_BINARY]
# The defaults are the issue's full sizes, one round, every workload but the backlog
# (docs/benchmarks.md says how long it takes). --rounds 3 repeats the alternation three times.
# Results (one JSON line per run) go to DIR/results.jsonl (default build/peers/<time>).
# --small: 100 nodes, 100 initial and 1,000 pods; 100 GPU nodes and 20 gangs; 10 GPU nodes
# (80 GPUs) under 20 gangs arriving over 10 s; one round; kube-scheduler and Volcano with their
# tuning only (--defaults after --small runs their defaults too).
# The last lines are `peers: <workload>: muster <x> <unit>, <peer> <y> <unit>, ratio <r>x`; exit
# status 1 when a run did not bind every pod it should have (or a component failed).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
control_plane=$root/scripts/kube-control-plane
peers_py=$here/peers.py
KUBECTL=${KUBECTL:-kubectl}

rounds=1 nodes=5000 initial=1000 pods=10000 gpu_nodes=1000 gangs=1000 contended_nodes=250
arrive=60 defaults=1 only=basic,gpu,contended,apiservers out= small=0 muster= volcano_src=
while [ $# -gt 0 ]; do
  case $1 in
    --small) small=1 rounds=1 nodes=100 initial=100 pods=1000 gpu_nodes=100 gangs=20
             contended_nodes=10 arrive=10 defaults=0 ;;
    --rounds) rounds=$2; shift ;;
    --nodes) nodes=$2; shift ;;
    --initial) initial=$2; shift ;;
    --pods) pods=$2; shift ;;
    --gpu-nodes) gpu_nodes=$2; shift ;;
    --gangs) gangs=$2; shift ;;
    --contended-nodes) contended_nodes=$2; shift ;;
    --arrive) arrive=$2; shift ;;
    --no-defaults) defaults=0 ;;
    --defaults) defaults=1 ;;
    --only) only=$2; shift ;;
    --out) out=$2; shift ;;
    --volcano-src) volcano_src=$2; shift ;;
    -h|--help) sed -n '2,/^set -u/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) muster=$1 ;;
  esac
  shift
done
for v in "$rounds" "$nodes" "$initial" "$pods" "$gpu_nodes" "$gangs" "$contended_nodes" "$arrive"; do
  case $v in ''|*[!0-9]*) echo "run.sh: sizes are whole numbers, not '$v'" >&2; exit 2 ;; esac
done
[ $((gpu_nodes % 4)) = 0 ] || { echo "run.sh: --gpu-nodes must be a multiple of 4 (four instance types)" >&2; exit 2; }
muster=${muster:-$root/build/release/src/cmd/muster}
[ -x "$muster" ] || { echo "run.sh: no muster binary at $muster (make build)" >&2; exit 2; }
"$control_plane" build >&2 || { echo "run.sh: the control plane did not build" >&2; exit 1; }
bin_dir=$(ls -d "$root"/build/kube/v*/bin | head -1)
kube_scheduler=$bin_dir/kube-scheduler

# Volcano from a source checkout (--volcano-src): vc-scheduler and vc-controller-manager, built
# once per release tag (or commit) into build/peers-tools/volcano-<version>/bin.
volcano_bin= volcano_version=
if [ -n "$volcano_src" ]; then
  volcano_src=$(cd "$volcano_src" 2>/dev/null && pwd) &&
    [ "$(awk '$1 == "module" {print $2; exit}' "$volcano_src/go.mod" 2>/dev/null)" = volcano.sh/volcano ] &&
    [ -d "$volcano_src/staging/src/volcano.sh/apis" ] ||
    { echo "run.sh: --volcano-src is not a Volcano source checkout (go.mod of volcano.sh/volcano, staging/src/volcano.sh/apis)" >&2; exit 2; }
  volcano_sha= volcano_git=0
  [ "$(git -C "$volcano_src" rev-parse --show-toplevel 2>/dev/null)" = "$volcano_src" ] && volcano_git=1
  if [ "$volcano_git" = 1 ] && volcano_version=$(git -C "$volcano_src" describe --tags --exact-match 2>/dev/null); then
    volcano_sha=$(git -C "$volcano_src" rev-parse HEAD)
  elif [ "$volcano_git" = 1 ] && volcano_sha=$(git -C "$volcano_src" rev-parse HEAD 2>/dev/null); then
    volcano_version=${volcano_sha:0:12}
  else
    # Not a git checkout (an exported tree): the chart's version and a digest of the sources.
    volcano_version=$(awk '$1 == "appVersion:" {gsub(/"/, "", $2); print "v" $2; exit}' \
      "$volcano_src/installer/helm/chart/volcano/Chart.yaml" 2>/dev/null)
    volcano_version=${volcano_version:-unknown}-src$(cd "$volcano_src" &&
      find go.mod go.sum cmd pkg staging -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum |
      sha256sum | cut -c1-12)
  fi
  volcano_bin=$root/build/peers-tools/volcano-$volcano_version/bin
  if [ ! -x "$volcano_bin/vc-scheduler" ] || [ ! -x "$volcano_bin/vc-controller-manager" ]; then
    echo "run.sh: building Volcano $volcano_version (vc-scheduler, vc-controller-manager) from $volcano_src into $volcano_bin" >&2
    mkdir -p "$volcano_bin"
    # As Volcano's Makefile builds them (CGO off, its version variables), less its image steps.
    ldflags="-X 'volcano.sh/volcano/pkg/version.GitSHA=$volcano_sha' -X 'volcano.sh/volcano/pkg/version.Version=$volcano_version' -X 'volcano.sh/volcano/pkg/version.Built=$(date -u '+%Y-%m-%d %H:%M:%S')'"
    go_bin=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
    t0=$SECONDS
    for b in scheduler:vc-scheduler controller-manager:vc-controller-manager; do
      (cd "$volcano_src" && CGO_ENABLED=0 "$go_bin" build -ldflags "$ldflags" -o "$volcano_bin/${b#*:}.tmp" "./cmd/${b%%:*}") &&
        mv "$volcano_bin/${b#*:}.tmp" "$volcano_bin/${b#*:}" ||
        { rm -f "$volcano_bin/${b#*:}.tmp"; echo "run.sh: Volcano's ${b#*:} did not build" >&2; exit 1; }
    done
    echo "run.sh: built Volcano $volcano_version in $((SECONDS - t0)) s" >&2
  fi
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/peers.XXXXXX")
out=${out:-$root/build/peers/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
pids=()
cp_dir=
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  pids=()
  if [ -n "$cp_dir" ]; then "$control_plane" down "$cp_dir" >/dev/null 2>&1; rm -rf "$cp_dir"; fi
  cp_dir=
}
trap 'cleanup; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
failed=0 runs=0
say() { echo "[$(date +%H:%M:%S)] $*" >&2; }

# cpu_s PID: user+system CPU seconds of PID so far. rss_mib PID: its peak RSS.
cpu_s() { awk '{printf "%.2f", ($14 + $15) / 100}' "/proc/$1/stat" 2>/dev/null || echo 0; }
rss_mib() { awk '/^VmHWM/ {printf "%.0f", $2 / 1024}' "/proc/$1/status" 2>/dev/null || echo 0; }

# nodes_file NAME COUNT KIND: a cluster file of COUNT simulated nodes (KIND cpu or gpu).
nodes_file() {
  local f=$work/$1.yaml i
  echo "nodePools:" >"$f"
  if [ "$3" = cpu ]; then
    cat >>"$f" <<EOF
  - {name: $1, count: $2, allocatable: {cpu: "4", memory: 32Gi, pods: "110"}, runtime: simulated}
EOF
  elif [ "$3" = gpu ]; then
    for i in 0 1 2 3; do cat >>"$f" <<EOF
  - name: $1-t$i
    count: $(($2 / 4))
    labels: {node.kubernetes.io/instance-type: peers-type-$i}
    taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
    allocatable: {cpu: "64", memory: 512Gi, pods: "110"}
    gpu: {count: 8, model: NVIDIA-A100-SXM4-40GB, memory: 40960Mi}
    runtime: simulated
EOF
    done
  else
    cat >>"$f" <<EOF
  - name: $1
    count: $2
    allocatable: {cpu: "64", memory: 512Gi, pods: "110"}
    gpu: {count: 8, model: NVIDIA-A100-SXM4-40GB, memory: 40960Mi}
    runtime: simulated
EOF
  fi
  echo "$f"
}

k() { "$KUBECTL" --request-timeout=30s "$@"; }

# bg NAME CMD...: CMD in the background, output in $run/NAME.log; sets bg_pid.
bg() {
  local name=$1
  shift
  "$@" >"$run/$name.log" 2>&1 &
  bg_pid=$!
  pids+=("$bg_pid")
}

# wait_for SECONDS WHAT CMD...: true once CMD succeeds; false after SECONDS, or at once when CMD
# exits 99 (what it waits for can no longer come).
wait_for() {
  local deadline=$((SECONDS + $1)) what=$2 rc
  shift 2
  while true; do
    "$@" >/dev/null 2>&1
    rc=$?
    [ "$rc" = 0 ] && return 0
    if [ "$rc" = 99 ] || [ "$SECONDS" -ge "$deadline" ]; then
      say "gave up waiting for $what"
      return 1
    fi
    sleep 0.5
  done
}

# nodes_ready COUNT PID: COUNT nodes are Ready; 99 when `muster nodes` (PID) has exited.
# Until `muster nodes` says it registered them all, the nodes are not listed: a list of 5,000
# Nodes twice a second would take the API server's time from the registration it waits for.
nodes_ready() {
  kill -0 "$2" 2>/dev/null || return 99
  grep -q 'registered at' "$run/nodes.log" 2>/dev/null || return 1
  [ "$(k get nodes --no-headers 2>/dev/null | grep -c ' Ready ')" -ge "$1" ]
}

# queue_open NAME: Volcano's queue NAME is Open (its controller sets the state).
queue_open() {
  [ "$(k get queues.scheduling.volcano.sh "$1" -o jsonpath='{.status.state}' 2>/dev/null)" = Open ]
}

# one WORKLOAD SCHEDULER ROUND: a fresh control plane, the nodes, the scheduler, the workload.
one() {
  local workload=$1 sched=$2 round=$3 node_count nodes_yaml sched_pid ctrl_pid= cpu0 ctrl0=0
  local target=0 settle=5 label
  runs=$((runs + 1))
  run=$out/runs/$(printf %02d "$runs")-$round-${workload// /_}-$sched
  mkdir -p "$run"
  cp_dir=$work/kube
  say "round $round: $workload, $sched"
  if ! "$control_plane" up "$cp_dir" >"$run/control-plane.log" 2>&1; then
    say "the control plane did not come up: $(tail -5 "$run/control-plane.log")"
    failed=1; cleanup; return
  fi
  export KUBECONFIG=$cp_dir/admin.kubeconfig
  case $workload in
    SchedulingBasic*) node_count=$nodes nodes_yaml=$(nodes_file basic "$nodes" cpu) ;;
    "GPU gangs") node_count=$gpu_nodes nodes_yaml=$(nodes_file gpu "$gpu_nodes" gpu) ;;
    *) node_count=$contended_nodes nodes_yaml=$(nodes_file contended "$contended_nodes" plain) ;;
  esac
  if [ "$sched" = muster ]; then
    k apply -f "$root/deploy/crds/volcano-crds.yaml" >"$run/crds.log" 2>&1 &&
      k wait --for=condition=Established --timeout=60s crd/jobs.batch.volcano.sh \
        crd/podgroups.scheduling.volcano.sh crd/queues.scheduling.volcano.sh >>"$run/crds.log" 2>&1 ||
      { say "Volcano's CRDs were not established: $(tail -3 "$run/crds.log")"; failed=1; cleanup; return; }
  elif [ "${sched#volcano}" != "$sched" ]; then
    # Volcano's own CRDs from the checkout, every one that vc-controller-manager's controllers
    # (all but sharding, its default) and vc-scheduler list-watch before they run: jobs,
    # cronjobs, podgroups, queues, commands, numatopologies, hypernodes, nodeshards,
    # colocationconfigurations, jobflows and jobtemplates. Server-side: the Job CRD is too big
    # for the last-applied annotation.
    k apply --server-side -f "$volcano_src/config/crd/volcano/bases" \
      -f "$volcano_src/config/crd/jobflow/bases" >"$run/crds.log" 2>&1 &&
      k wait --for=condition=Established --timeout=60s crd --all >>"$run/crds.log" 2>&1 ||
      { say "Volcano's CRDs were not established: $(tail -3 "$run/crds.log")"; failed=1; cleanup; return; }
  fi
  bg nodes "$muster" nodes --config "$nodes_yaml" --kubeconfig "$KUBECONFIG" --data-dir "$run/nodes" \
    --lease-renew-seconds 39 --status-report-seconds 3600 --no-events
  local nodes_pid=$bg_pid
  wait_for 600 "$node_count nodes Ready" nodes_ready "$node_count" "$nodes_pid" ||
    { say "$(tail -3 "$run/nodes.log")"; failed=1; cleanup; return; }
  start_scheduler() {
  if [ "$sched" = muster ]; then
    local serve=()
    [ "${workload#SchedulingBasic}" != "$workload" ] && serve=(--serve-default-scheduler)
    bg scheduler "$muster" scheduler --kubeconfig "$KUBECONFIG" --leader-elect=false \
      --scheduler-conf "$root/deploy/volcano-scheduler.conf" --listen-address=127.0.0.1:0 "${serve[@]}"
    sched_pid=$bg_pid
    wait_for 120 "muster's scheduler" grep -q 'scheduler running' "$run/scheduler.log" ||
      return 1
    if [ "${workload#SchedulingBasic}" = "$workload" ]; then
      # Its throughput tuning (docs/kubernetes.md): the client budget Volcano's tuned controller
      # gets below, in place of vc-controller-manager's defaults (QPS 50, burst 100), which
      # muster's controller keeps by default and which capped its pod creates near 30/s here.
      bg controller "$muster" controller --kubeconfig "$KUBECONFIG" --leader-elect=false \
        --listen-address=127.0.0.1:0 --kube-api-qps 3000 --kube-api-burst 3000 --workers 16
      ctrl_pid=$bg_pid
      wait_for 120 "muster's controller" grep -q 'controller running' "$run/controller.log" ||
        return 1
    fi
  elif [ "${sched#volcano}" != "$sched" ]; then
    # vc-scheduler and vc-controller-manager as Volcano's installer runs them (its default
    # volcano-scheduler.conf, from installer/helm/chart/volcano/config), with the admin
    # kubeconfig and no leader election, but without the admission webhook
    # (vc-webhook-manager): the creator posts Jobs with every field its jobs/mutate would have
    # defaulted (peers.py create jobs), and nothing here is invalid for jobs/validate.
    # `volcano` has Volcano's documented performance tuning:
    #   https://volcano.sh/en/docs/user-guide/how_to_tune_volcano_performance/ (no webhook,
    #     which this setup has anyway; vc-controller-manager --worker-threads 100 to 200 when
    #     there are more than 500 Jobs)
    #   https://github.com/volcano-sh/volcano/blob/1645da98ff14777a528685b7fe5849cad3b369af/benchmark/README.md
    #     ("Performance Optimization", the values of Volcano's KWOK benchmark: scheduler
    #     kube-api-qps/burst 10000, schedule period 100ms, 200 node worker threads; controller
    #     kube-api-qps/burst 3000, 3 worker threads, 10 for GC, 50 for podgroups)
    # `volcano-defaults` has the binaries' own defaults (scheduler: QPS/burst 2000, schedule
    # period 1s, 20 node workers, as the installer passes them; controller: QPS 50, burst 100,
    # 3 workers, 1 for GC, 5 for podgroups). -v=2 for both: vc-scheduler says when it runs.
    local sched_flags=() ctrl_flags=() jobs_n=$gangs
    [ "$workload" = "Contended gangs" ] && jobs_n=$((contended_nodes * 2))
    if [ "$sched" = volcano ]; then
      sched_flags=(--kube-api-qps=10000 --kube-api-burst=10000 --schedule-period=100ms
                   --node-worker-threads=200)
      local workers=3
      [ "$jobs_n" -gt 500 ] && workers=100
      ctrl_flags=(--kube-api-qps=3000 --kube-api-burst=3000 --worker-threads="$workers"
                  --worker-threads-for-gc=10 --worker-threads-for-podgroup=50)
    fi
    mkdir -p "$work/volcano-sock"
    bg scheduler env DEBUG_SOCKET_DIR="$work/volcano-sock" "$volcano_bin/vc-scheduler" \
      --kubeconfig="$KUBECONFIG" --leader-elect=false \
      --scheduler-conf="$volcano_src/installer/helm/chart/volcano/config/volcano-scheduler.conf" \
      --logtostderr -v=2 "${sched_flags[@]}"
    sched_pid=$bg_pid
    wait_for 120 "vc-scheduler" grep -q 'Scheduler completes Initialization' "$run/scheduler.log" ||
      return 1
    bg controller "$volcano_bin/vc-controller-manager" --kubeconfig="$KUBECONFIG" \
      --leader-elect=false --logtostderr "${ctrl_flags[@]}"
    ctrl_pid=$bg_pid
    wait_for 120 "vc-controller-manager" grep -q 'JobController is running' "$run/controller.log" ||
      return 1
    # vc-scheduler makes the `default` queue at start; the controller's queue controller opens it.
    wait_for 60 "Volcano's default queue Open" queue_open default || return 1
  else
    local port qps=5000 burst=5000
    port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    if [ "$sched" = kube-scheduler-defaults ]; then qps=50 burst=100; fi
    cat >"$run/kube-scheduler.yaml" <<EOF
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {kubeconfig: "$cp_dir/kube-scheduler.kubeconfig", qps: $qps, burst: $burst}
leaderElection: {leaderElect: false}
EOF
    bg scheduler "$kube_scheduler" --config="$run/kube-scheduler.yaml" \
      --authentication-kubeconfig="$cp_dir/kube-scheduler.kubeconfig" \
      --authorization-kubeconfig="$cp_dir/kube-scheduler.kubeconfig" \
      --bind-address=127.0.0.1 --secure-port="$port" --cert-dir="$run/certs" --profiling=false
    sched_pid=$bg_pid
    wait_for 120 "kube-scheduler ready" curl -skf "https://127.0.0.1:$port/readyz" ||
      return 1
    # kube-controller-manager runs the batch/v1 Job controller of the contended workload.
    ctrl_pid=$(cat "$cp_dir/pids/kube-controller-manager.pid" 2>/dev/null)
  fi
  }

  # SchedulingBasic's initial pods are created already placed, round-robin over the nodes
  # (spec.nodeName), before the scheduler starts: the cluster each scheduler meets is the same,
  # and no run spends its scheduler's slowest minute on pods it does not measure (kube-scheduler
  # with its defaults took 80 s to place 1,000 of them here).
  if [ "${workload#SchedulingBasic}" != "$workload" ] && [ "$initial" -gt 0 ]; then
    "$peers_py" create "$KUBECONFIG" pods "$initial" --prefix init --label initial \
      --bound-to "basic:$node_count" >"$run/create-initial.log" 2>&1
    "$peers_py" watch "$KUBECONFIG" "$run/initial.json" --selector peers=initial \
      --target "$initial" --timeout 600 >"$run/watch-initial.log" 2>&1 ||
      { say "the initial pods were not all bound: $(cat "$run/initial.json")"; failed=1; cleanup; return; }
  fi
  start_scheduler || { failed=1; cleanup; return; }

  local create_args=() expect
  case $workload in
    SchedulingBasic*) create_args=(pods "$pods"); expect=$pods target=$pods ;;
    "GPU gangs") create_args=(jobs "$gangs" --gpus 1 --cpu 4 --memory 32Gi --types 4)
                 expect=$((gangs * 8)) target=$expect ;;
    *) local n=$((contended_nodes * 2))
       case $sched in kube-scheduler*) create_args=(batchjobs "$n") ;; *) create_args=(jobs "$n") ;; esac
       create_args+=(--gpus 1 --cpu 1 --memory 4Gi --over "$arrive")
       expect=$((contended_nodes * 8)) target=0 settle=5 ;;
  esac
  local backlog=0
  [ "${workload%backlog}" != "$workload" ] && backlog=1
  if [ "$backlog" = 1 ]; then  # the scheduler stops; it comes back to a backlog
    kill "$sched_pid" && wait "$sched_pid" 2>/dev/null
  fi
  cpu0=$(cpu_s "$sched_pid")
  [ -n "$ctrl_pid" ] && ctrl0=$(cpu_s "$ctrl_pid")
  rm -f "$run/created" "$run/watch-ready"
  bg watch "$peers_py" watch "$KUBECONFIG" "$run/summary.json" --target "$target" \
    --created "$run/created" --settle "$settle" --ready "$run/watch-ready" --timeout 1500
  local watch_pid=$bg_pid
  wait_for 60 "the watcher" test -f "$run/watch-ready" || { failed=1; cleanup; return; }
  "$peers_py" create "$KUBECONFIG" "${create_args[@]}" --prefix m >"$run/create.log" 2>&1 ||
    { say "the creator failed: $(cat "$run/create.log")"; failed=1; }
  touch "$run/created"
  if [ "$backlog" = 1 ]; then
    mv "$run/scheduler.log" "$run/scheduler-initial.log"
    start_scheduler || { failed=1; cleanup; return; }
    cpu0=0
  fi
  wait "$watch_pid"
  local cpu1 ctrl1=0 rss
  cpu1=$(cpu_s "$sched_pid")
  rss=$(rss_mib "$sched_pid")
  [ -n "$ctrl_pid" ] && ctrl1=$(cpu_s "$ctrl_pid")
  if [ ! -s "$run/summary.json" ]; then
    say "no summary: $(tail -5 "$run/watch.log")"; failed=1; cleanup; return
  fi
  /usr/bin/python3 - "$run/summary.json" "$workload" "$sched" "$round" "$cpu0" "$cpu1" "$rss" \
    "$ctrl0" "$ctrl1" "$expect" >>"$out/results.jsonl" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
s.update(workload=sys.argv[2], scheduler=sys.argv[3], round=int(sys.argv[4]),
         cpu_s=round(float(sys.argv[6]) - float(sys.argv[5]), 2), rss_mib=int(sys.argv[7]),
         ctrl_cpu_s=round(float(sys.argv[9]) - float(sys.argv[8]), 2), expect=int(sys.argv[10]))
print(json.dumps(s))
PY
  local got
  got=$(/usr/bin/python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(s["bound"], s["error"] or "-")' "$run/summary.json")
  say "  $(cat "$run/create.log"); bound ${got% *} of $expect expected; $(tr -d '\n' <"$run/summary.json" | cut -c1-300)"
  if [ "${got% *}" != "$expect" ] || [ "${got#* }" != "-" ]; then
    say "  FAILED: $workload with $sched bound ${got% *} pods, expected $expect (${got#* })"
    failed=1
  fi
  cleanup
}

# scheds_for WORKLOAD: the runs of one round, muster alternating with its peers.
scheds_for() {
  local v= vd=
  if [ -n "$volcano_bin" ]; then v=volcano vd=volcano-defaults; fi
  case $1 in
    "GPU gangs") if [ "$defaults" = 1 ] && [ -n "$v" ]; then echo "muster $v $vd"
                 else echo "muster $v"; fi ;;
    "Contended gangs") if [ "$defaults" = 1 ]; then
                         echo "muster kube-scheduler $v kube-scheduler-defaults $vd"
                       else echo "muster kube-scheduler $v"; fi ;;
    "SchedulingBasic backlog") echo "muster kube-scheduler" ;;
    *) if [ "$defaults" = 1 ]; then echo "muster kube-scheduler kube-scheduler-defaults"
       else echo "muster kube-scheduler"; fi ;;
  esac
}

say "muster: $muster ($(git -C "$root" rev-parse --short HEAD 2>/dev/null)); control plane: $(basename "$(dirname "$bin_dir")")${volcano_bin:+; Volcano $volcano_version}; results in $out"
for round in $(seq 1 "$rounds"); do
  for w in basic backlog gpu contended; do
    case ",$only," in *",$w,"*) ;; *) continue ;; esac
    case $w in basic) workload=SchedulingBasic ;; backlog) workload="SchedulingBasic backlog" ;; gpu) workload="GPU gangs" ;; *) workload="Contended gangs" ;; esac
    for s in $(scheds_for "$workload"); do one "$workload" "$s" "$round"; done
  done
done

if [ -s "$out/results.jsonl" ]; then
  split=$work/split
  mkdir -p "$split"
  i=0
  while IFS= read -r line; do i=$((i + 1)); echo "$line" >"$split/$(printf %04d "$i").json"; done <"$out/results.jsonl"
  "$peers_py" report "$split"/*.json
fi
case ",$only," in *",gpu,"*|*",contended,"*)
  kai="kai: the Go module proxy refuses (403) github.com/NVIDIA/KAI-scheduler"
  if [ -n "$volcano_bin" ]; then
    echo "peers (not measured): $kai"
  else
    echo "peers (not measured): volcano: no --volcano-src was given (the Go module proxy refuses (403) volcano.sh/apis, which volcano.sh/volcano requires; a Volcano release checkout carries it); $kai"
  fi ;;
esac
if [ -x "$here/apiservers.sh" ] && case ",$only," in *",apiservers,"*) true ;; *) false ;; esac; then
  if [ "$small" = 1 ]; then "$here/apiservers.sh" --small || failed=1
  else "$here/apiservers.sh" --rounds "$rounds" || failed=1; fi
fi
exit "$failed"
