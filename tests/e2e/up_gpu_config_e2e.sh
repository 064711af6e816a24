#!/usr/bin/env bash
# End-to-end: `muster up --gpu-config FILE` (NVIDIA's device-plugin config, version v1) on fake-NVML
# machines. The local node offers MIG devices (migStrategy mixed: nvidia.com/mig-<profile>) and
# time-slicing replicas as NVIDIA's plugin would advertise them, with GPU Feature Discovery's
# labels; process pods get concrete devices (a MIG device's UUID, a replica's GPU), never one
# device twice; a bad config fails `muster up` at start with a clear error.
# One PASS/FAIL line per check; exit 0 only when nothing failed, 77 when kubectl is missing.
#
# Usage: up_gpu_config_e2e.sh MUSTER_BINARY FAKE_NVML_DIR
set -u
MUSTER=${1:?usage: up_gpu_config_e2e.sh MUSTER_BINARY FAKE_NVML_DIR}
FAKE=${2:?usage: up_gpu_config_e2e.sh MUSTER_BINARY FAKE_NVML_DIR}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=e2e_lib.sh
. "$here/e2e_lib.sh"
begin_e2e

# start_up NAME MACHINE_FILE GPU_CONFIG: `muster up` in the background on data dir $work/NAME
# (stopped with stop_process).
start_up() {
  start_muster "$1" env MUSTER_FAKE_NVML_CONFIG="$2" "$MUSTER" up --data-dir "$work/$1" \
    --listen 127.0.0.1:0 --nvml-library "$FAKE/libnvidia-ml.so.1" --gpu-config "$3" --no-summary ||
    bad "muster up ($1) starts" "export KUBECONFIG=..." "$(cat "$work/$1.err")"
  export KUBECONFIG=$work/$1/kubeconfig
  node=$(k get nodes -o jsonpath='{.items[0].metadata.name}')
}
allocatable() { k get node "$node" -o "jsonpath={.status.allocatable['${1//./\\.}']}"; }
label() { k get node "$node" -o "jsonpath={.metadata.labels['${1//./\\.}']}"; }
# pod NAME RESOURCE: a process pod that prints its device variables and stays up.
pod() {
  cat <<P | k apply -f - >/dev/null
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  restartPolicy: Never
  containers:
    - name: main
      image: none
      command: ["/bin/sh", "-c", "echo nvidia=\$NVIDIA_VISIBLE_DEVICES cuda=\$CUDA_VISIBLE_DEVICES; sleep 60"]
      resources: {limits: {$2: 1}}
P
}
logs_of() {  # POD: its first line, once written
  for _ in $(seq 50); do
    out=$(k logs "$1" 2>/dev/null)
    [ -n "$out" ] && break
    sleep 0.1
  done
  echo "$out"
}

# --- A bad config fails at start -------------------------------------------------------------
cat >"$work/mixed.machine" <<'M'
driver 550.107.02
cuda 12040
gpu name="NVIDIA A100-SXM4-40GB" memory_mib=40960 cc=8.0 uuid=GPU-11111111-1111-1111-1111-111111111111
gpu name="NVIDIA A100-SXM4-40GB" memory_mib=40960 cc=8.0 mig=on uuid=GPU-22222222-2222-2222-2222-222222222222
mig gpu=1 gi=7 ci=0 gi_slices=1 ci_slices=1 memory_mib=9728 sms=14 uuid=MIG-aaaaaaaa-0000-0000-0000-000000000001
mig gpu=1 gi=8 ci=0 gi_slices=1 ci_slices=1 memory_mib=9728 sms=14 uuid=MIG-aaaaaaaa-0000-0000-0000-000000000002
mig gpu=1 gi=3 ci=0 gi_slices=2 ci_slices=2 memory_mib=19968 sms=28 profile_id=1 uuid=MIG-bbbbbbbb-0000-0000-0000-000000000001
M
bad_start() {  # NAME CONFIG_TEXT WANTED_MESSAGE [ENV...]
  local name=$1 text=$2 want=$3 rc out
  shift 3
  printf '%s\n' "$text" >"$work/$name.yaml"
  out=$(env MUSTER_FAKE_NVML_CONFIG="$work/mixed.machine" "$@" timeout 20 "$MUSTER" up \
    --data-dir "$work/bad-$name" --listen 127.0.0.1:0 --nvml-library "$FAKE/libnvidia-ml.so.1" \
    --gpu-config "$work/$name.yaml" --no-summary 2>&1)
  rc=$?
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && grep -qF -- "$want" <<<"$out" &&
    [ ! -e "$work/bad-$name" ]; then
    ok "bad --gpu-config ($name): exit $rc before anything starts"
  else
    bad "bad --gpu-config ($name): exit non-zero before anything starts" "$want" "rc=$rc $out"
  fi
}
bad_start strategy $'version: v1\nflags:\n  migStrategy: half' 'migStrategy'
bad_start replicas $'version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - {name: nvidia.com/gpu, replicas: 1}' 'replicas'
bad_start malformed $'version: v1\nflags: [unclosed' 'malformed YAML'
bad_start version $'version: v2' 'version'
bad_start single-layout $'version: v1\nflags:\n  migStrategy: single' \
  'invalid MIG configuration for migStrategy single'
bad_start no-driver $'version: v1' 'no NVIDIA driver found' MUSTER_FAKE_NVML_CONFIG=
printf 'nodePools: [{name: a}]\n' >"$work/cluster.yaml"
printf 'version: v1\n' >"$work/ok.yaml"
expect "--gpu-config with --config is refused" "excludes" \
  "$MUSTER" up --config "$work/cluster.yaml" --gpu-config "$work/ok.yaml" --data-dir "$work/x"
# failOnInitError false: no driver, no GPUs, but up.
printf 'version: v1\nflags: {failOnInitError: false}\n' >"$work/nofail.yaml"
start_up nodriver "" "$work/nofail.yaml"
expect "failOnInitError: false starts without GPUs" "this node offers no GPUs" cat "$work/nodriver.err"
expect_eq "... and its node offers no nvidia.com/gpu" "" allocatable nvidia.com/gpu
stop_process "$muster_pid"

# --- MIG mixed ------------------------------------------------------------------------------
printf 'version: v1\nflags:\n  migStrategy: mixed\n' >"$work/mixed.yaml"
start_up mixed "$work/mixed.machine" "$work/mixed.yaml"
expect "up reports the MIG devices" "GPU 1 MIG device 2: 2g.20gb (MIG-bbbbbbbb" cat "$work/mixed.err"
expect_eq "mixed: 2 nvidia.com/mig-1g.10gb" "2" allocatable nvidia.com/mig-1g.10gb
expect_eq "mixed: 1 nvidia.com/mig-2g.20gb" "1" allocatable nvidia.com/mig-2g.20gb
expect_eq "mixed: 1 nvidia.com/gpu (the GPU without MIG)" "1" allocatable nvidia.com/gpu
expect_eq "mixed: GFD's nvidia.com/mig.strategy" "mixed" label nvidia.com/mig.strategy
expect_eq "mixed: GFD's nvidia.com/mig-1g.10gb.count" "2" label nvidia.com/mig-1g.10gb.count
expect_eq "mixed: GFD's nvidia.com/mig-1g.10gb.memory" "9728" label nvidia.com/mig-1g.10gb.memory
pod mig-a nvidia.com/mig-1g.10gb
pod mig-b nvidia.com/mig-1g.10gb
pod mig-c nvidia.com/mig-1g.10gb
pod big nvidia.com/mig-2g.20gb
pod whole nvidia.com/gpu
for p in mig-a mig-b big whole; do
  wait_phase "$p" Running || bad "$p runs" Running "$(k get pod "$p" -o wide 2>&1)"
done
a=$(logs_of mig-a)
b=$(logs_of mig-b)
if [[ "$a" =~ ^nvidia=(MIG-aaaaaaaa-[-0-9]+)\ cuda=(MIG-[-0-9a-f]+)$ ]] &&
  [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ] && [[ "$b" =~ ^nvidia=MIG-aaaaaaaa- ]] &&
  [ "$a" != "$b" ]; then
  ok "pods asking for nvidia.com/mig-1g.10gb get distinct MIG UUIDs in NVIDIA_VISIBLE_DEVICES and CUDA_VISIBLE_DEVICES"
else
  bad "pods get distinct 1g.10gb MIG UUIDs" "two different MIG-aaaaaaaa-... UUIDs" "$a / $b"
fi
expect_eq "the 2g.20gb pod gets that MIG device" \
  "nvidia=MIG-bbbbbbbb-0000-0000-0000-000000000001 cuda=MIG-bbbbbbbb-0000-0000-0000-000000000001" \
  logs_of big
expect_eq "the nvidia.com/gpu pod gets GPU 0 (MIG-enabled GPU 1 is not offered whole)" \
  "nvidia=GPU-11111111-1111-1111-1111-111111111111 cuda=0" logs_of whole
expect_eq "a third 1g.10gb pod waits" "Pending" k get pod mig-c -o jsonpath='{.status.phase}'
expect "... as kube-scheduler words it" "Insufficient nvidia.com/mig-1g.10gb" \
  k get events --field-selector involvedObject.name=mig-c
used=$(logs_of mig-a)
k delete pod mig-a --wait=true >/dev/null 2>&1
if wait_phase mig-c Running; then ok "the freed MIG device goes to the waiting pod"; else bad "the freed MIG device goes to the waiting pod" Running "$(k get pod mig-c -o wide 2>&1)"; fi
expect_eq "... which gets the MIG device mig-a had" "$used" logs_of mig-c
stop_process "$muster_pid"

# --- Time-slicing: 4 replicas of 2 GPUs ------------------------------------------------------
cat >"$work/two.machine" <<'M'
driver 550.107.02
cuda 12040
gpu name="NVIDIA A100-SXM4-40GB" memory_mib=40960 cc=8.0 uuid=GPU-11111111-1111-1111-1111-111111111111
gpu name="NVIDIA A100-SXM4-40GB" memory_mib=40960 cc=8.0 uuid=GPU-22222222-2222-2222-2222-222222222222
M
cat >"$work/shared.yaml" <<'C'
version: v1
sharing:
  timeSlicing:
    resources:
    - name: nvidia.com/gpu
      replicas: 4
C
start_up shared "$work/two.machine" "$work/shared.yaml"
expect_eq "time-slicing: 2 GPUs x 4 replicas = 8 nvidia.com/gpu" "8" allocatable nvidia.com/gpu
expect_eq "time-slicing: GFD's nvidia.com/gpu.replicas" "4" label nvidia.com/gpu.replicas
expect_eq "time-slicing: GFD's product with -SHARED" "NVIDIA-A100-SXM4-40GB-SHARED" \
  label nvidia.com/gpu.product
for i in 1 2 3 4 5 6 7 8 9; do pod "share-$i" nvidia.com/gpu; done
running=0
for i in 1 2 3 4 5 6 7 8; do wait_phase "share-$i" Running && running=$((running + 1)); done
expect_eq "8 pods run" "8" echo "$running"
sleep 1
expect_eq "the 9th waits" "Pending" k get pod share-9 -o jsonpath='{.status.phase}'
expect "... Insufficient nvidia.com/gpu" "Insufficient nvidia.com/gpu" \
  k get events --field-selector involvedObject.name=share-9
all=$(for i in 1 2 3 4 5 6 7 8; do logs_of "share-$i"; done | sort | uniq -c | sed 's/^ *//')
expect_eq "each GPU serves 4 of them (replicas spread over the GPUs)" \
  "4 nvidia=GPU-11111111-1111-1111-1111-111111111111 cuda=0
4 nvidia=GPU-22222222-2222-2222-2222-222222222222 cuda=1" echo "$all"
indices=$(k get pods -o jsonpath='{range .items[*]}{.metadata.annotations.muster\.dev/gpu-indices}{"\n"}{end}' |
  grep . | sort -n | tr '\n' ' ')
expect_eq "no replica is handed out twice" "0 1 2 3 4 5 6 7 " echo "$indices"
stop_process "$muster_pid"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
