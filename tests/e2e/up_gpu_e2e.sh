#!/usr/bin/env bash
# End-to-end: `muster up` without a cluster file offers this machine's GPUs as NVML reports them
# (here the project's fake NVML, through the same dlopen code), and a process pod gets the GPU
# the scheduler chose in CUDA_VISIBLE_DEVICES and NVIDIA_VISIBLE_DEVICES, a GPU share included.
# One PASS/FAIL line per check; exit 0 only when nothing failed, 77 when kubectl is missing.
#
# Usage: up_gpu_e2e.sh MUSTER_BINARY FAKE_NVML_DIR
set -u
MUSTER=${1:?usage: up_gpu_e2e.sh MUSTER_BINARY FAKE_NVML_DIR}
FAKE=${2:?usage: up_gpu_e2e.sh MUSTER_BINARY FAKE_NVML_DIR}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=e2e_lib.sh
. "$here/e2e_lib.sh"
begin_e2e
data=$work/data

cat >"$work/machine" <<'M'
driver 550.107.02
cuda 12040
gpu name="NVIDIA A100-SXM4-40GB" memory_mib=40960 cc=8.0 uuid=GPU-11111111-1111-1111-1111-111111111111
gpu name="NVIDIA A100-SXM4-40GB" memory_mib=40960 cc=8.0 uuid=GPU-22222222-2222-2222-2222-222222222222
nvlink gpu=0 peer=1 links=12
M
start_muster up env MUSTER_FAKE_NVML_CONFIG="$work/machine" "$MUSTER" up --data-dir "$data" \
  --listen 127.0.0.1:0 --nvml-library "$FAKE/libnvidia-ml.so.1" --no-summary ||
  exit_not_started up "muster up"
export KUBECONFIG=$muster_kubeconfig

expect "up: reports the GPUs NVML found" "GPU 1: NVIDIA A100-SXM4-40GB (GPU-22222222" cat "$work/up.err"
node=$(k get nodes -o jsonpath='{.items[0].metadata.name}')
expect_eq "up: the local node offers 2 nvidia.com/gpu" "2" \
  k get node "$node" -o "jsonpath={.status.allocatable['nvidia\.com/gpu']}"
expect_eq "up: with GPU Feature Discovery's product label" "NVIDIA-A100-SXM4-40GB" \
  k get node "$node" -o "jsonpath={.metadata.labels['nvidia\.com/gpu\.product']}"

for i in 0 1 2; do
  cat <<P | k apply -f - >/dev/null
apiVersion: v1
kind: Pod
metadata: {name: gpu-$i}
spec:
  restartPolicy: Never
  containers:
    - name: main
      image: none
      command: ["/bin/sh", "-c", "echo cuda=\$CUDA_VISIBLE_DEVICES nvidia=\$NVIDIA_VISIBLE_DEVICES; sleep 30"]
      resources: {limits: {nvidia.com/gpu: 1}}
P
done
wait_phase gpu-0 Running
wait_phase gpu-1 Running
sleep 1
logs=$(k logs gpu-0; k logs gpu-1)
if grep -q "cuda=0 nvidia=0" <<<"$logs" && grep -q "cuda=1 nvidia=1" <<<"$logs"; then
  ok "process pods get distinct GPUs in CUDA_VISIBLE_DEVICES and NVIDIA_VISIBLE_DEVICES"
else
  bad "process pods get distinct GPUs in CUDA_VISIBLE_DEVICES and NVIDIA_VISIBLE_DEVICES" "cuda=0 and cuda=1" "$logs"
fi
expect_eq "the third GPU pod waits" "Pending" k get pod gpu-2 -o jsonpath='{.status.phase}'
expect "its FailedScheduling event has kube-scheduler's wording" \
  "0/1 nodes are available: 1 Insufficient nvidia.com/gpu." k get events --field-selector involvedObject.name=gpu-2
k delete pod gpu-0 --wait=true >/dev/null 2>&1
if wait_phase gpu-2 Running; then ok "the freed GPU goes to the waiting pod"; else bad "the freed GPU goes to the waiting pod" "Running" "$(k get pod gpu-2 -o wide 2>&1)"; fi
sleep 1
expect "... which gets GPU 0" "cuda=0 nvidia=0" k logs gpu-2

# GPU shares (muster.dev/gpu-milli, a part of one device): 600m each go to two devices; 700m then
# fits no device though 800m are free in all; 400m shares the first one's device and sees it.
k delete pod gpu-1 gpu-2 --wait=true >/dev/null 2>&1
share_pod() {
  cat <<P | k apply -f - >/dev/null
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  restartPolicy: Never
  containers:
    - name: main
      image: none
      command: ["/bin/sh", "-c", "echo cuda=\$CUDA_VISIBLE_DEVICES; sleep 30"]
      resources: {limits: {muster.dev/gpu-milli: $2}}
P
}
share_pod share-a 600
wait_phase share-a Running
share_pod share-b 600
wait_phase share-b Running
share_pod share-c 700
share_pod share-d 400
wait_phase share-d Running
sleep 1
a=$(k logs share-a) b=$(k logs share-b) d=$(k logs share-d)
if [ "$a" = "$d" ] && [ "$a" != "$b" ] && grep -q "cuda=[01]" <<<"$a$b"; then
  ok "GPU shares: 600m on each device, 400m beside the first and seeing its device"
else
  bad "GPU shares: 600m on each device, 400m beside the first and seeing its device" \
    "a = d != b" "a=$a b=$b d=$d"
fi
expect_eq "a 700m share waits: no single device has room" "Pending" \
  k get pod share-c -o jsonpath='{.status.phase}'
expect "... and says so" "0/1 nodes are available: 1 Insufficient muster.dev/gpu-milli." \
  k get events --field-selector involvedObject.name=share-c

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
