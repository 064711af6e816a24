#!/usr/bin/env bash
# The check for a machine with NVIDIA GPUs (under five minutes). Prints what muster sees through
# the real NVML, runs `muster device-plugin` against the kubelet emulator with the real GPUs, and
# runs `muster up` with this machine as the node and a pod that prints `nvidia-smi -L` (when this
# build has `muster up`).
#
#   scripts/gpu-check.sh [--bundle DIR] [--build-dir DIR] [--mig-strategy none|single|mixed]
#
# --bundle DIR   use DIR/bin/{muster,kubelet-emulator} with DIR/lib on LD_LIBRARY_PATH (made by
#                scripts/gpu-bundle.sh, for machines without muster's build dependencies);
# otherwise the binaries of --build-dir (default build/release), built there first if missing.
# Exit status 0 when every step that ran passed; each step prints PASS, FAIL or SKIP.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
bundle=""
build="$root/build/release"
mig_strategy=mixed
while [ $# -gt 0 ]; do
  case "$1" in
    --bundle) bundle=$(cd "$2" && pwd); shift 2 ;;
    --build-dir) build=$2; shift 2 ;;
    --mig-strategy) mig_strategy=$2; shift 2 ;;
    -h | --help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "gpu-check: unknown argument $1" >&2; exit 2 ;;
  esac
done

if [ -n "$bundle" ]; then
  muster=$bundle/bin/muster
  emulator=$bundle/bin/kubelet-emulator
  export LD_LIBRARY_PATH="$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
else
  muster=$build/src/cmd/muster
  emulator=$build/src/deviceplugin/kubelet-emulator
  if [ ! -x "$muster" ] || [ ! -x "$emulator" ]; then
    echo "== building muster and kubelet-emulator in $build"
    [ -f "$build/build.ninja" ] || cmake --preset release -B "$build" >/dev/null || exit 1
    cmake --build "$build" --target muster kubelet-emulator -j"$(nproc)" >/dev/null || exit 1
  fi
fi

tmp=$(mktemp -d /tmp/muster-gpu-check-XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
results=()
record() { results+=("$1 $2"); echo "== $1: $2"; }

echo "== muster: $("$muster" --version 2>&1)"
if command -v nvidia-smi >/dev/null; then
  echo "== nvidia-smi -L"
  nvidia-smi -L
  echo "== nvidia-smi topo -m"
  nvidia-smi topo -m 2>&1 | head -30
fi

# 1. Discovery through the real NVML: each GPU's name, UUID, memory, MIG mode, topology.
echo
echo "== 1. muster device-plugin --discover --mig-strategy $mig_strategy"
if timeout 60 "$muster" device-plugin --discover --mig-strategy "$mig_strategy"; then
  record discovery PASS
else
  record discovery FAIL
fi

# 2. The device plugin against the kubelet emulator: registration, ListAndWatch, Allocate,
#    GetPreferredAllocation, a kubelet restart; then the labels and a clean shutdown.
echo
echo "== 2. muster device-plugin with the kubelet emulator"
dp=$tmp/device-plugins
mkdir -p "$dp"
timeout 120 "$emulator" --dir "$dp" --expect 1 --timeout 60 --restart >"$tmp/emulator.log" 2>&1 &
emulator_pid=$!
pids+=("$emulator_pid")
for _ in $(seq 100); do [ -S "$dp/kubelet.sock" ] && break; sleep 0.1; done
"$muster" device-plugin --device-plugin-dir "$dp" --mig-strategy "$mig_strategy" \
  --labels-file "$tmp/gfd" >"$tmp/plugin.log" 2>&1 &
plugin_pid=$!
pids+=("$plugin_pid")
wait "$emulator_pid"
emulator_status=$?
cat "$tmp/emulator.log"
echo "-- labels ($tmp/gfd):"
cat "$tmp/gfd" 2>/dev/null
kill -TERM "$plugin_pid" 2>/dev/null
wait "$plugin_pid"
plugin_status=$?
echo "-- device plugin log:"
cat "$tmp/plugin.log"
sockets=$(find "$dp" -name 'nvidia-*.sock' | wc -l)
if [ "$emulator_status" -eq 0 ] && [ "$plugin_status" -eq 0 ] && [ "$sockets" -eq 0 ]; then
  record device-plugin PASS
else
  record device-plugin "FAIL (emulator exit $emulator_status, plugin exit $plugin_status, $sockets sockets left)"
fi

# 3. `muster up` with this machine's GPUs and a pod that prints `nvidia-smi -L`.
echo
echo "== 3. muster up with a pod running nvidia-smi -L"
# An HTTP/1.0 request to the local API server with curl, or bash's /dev/tcp without it.
api() {  # METHOD PATH [JSON]
  local method=$1 path=$2 body=${3:-}
  if command -v curl >/dev/null; then
    curl -s -X "$method" ${token:+-H "Authorization: Bearer $token"} \
      -H 'Content-Type: application/json' ${body:+--data "$body"} "$server$path"
    return
  fi
  local hostport=${server#http://}
  exec 3<>"/dev/tcp/${hostport%:*}/${hostport##*:}" || return 1
  printf '%s %s HTTP/1.0\r\nHost: %s\r\nContent-Type: application/json\r\n%sContent-Length: %d\r\n\r\n%s' \
    "$method" "$path" "$hostport" "${token:+Authorization: Bearer $token$'\r\n'}" "${#body}" "$body" >&3
  sed '1,/^\r$/d' <&3
  exec 3<&-
}
if ! "$muster" up --help >/dev/null 2>&1; then
  record "muster up" "SKIP (this build has no muster up)"
else
  up=$tmp/up
  # Plain HTTP: the /dev/tcp fallback below cannot speak TLS.
  "$muster" up --data-dir "$up" --listen 127.0.0.1:0 --reset --no-summary --insecure-http \
    >"$tmp/up.log" 2>&1 &
  up_pid=$!
  pids+=("$up_pid")
  for _ in $(seq 300); do [ -s "$up/kubeconfig" ] && break; sleep 0.1; done
  server=$(sed -n 's/^ *server: *//p' "$up/kubeconfig" 2>/dev/null | head -1)
  token=$(sed -n 's/^ *token: *//p' "$up/kubeconfig" 2>/dev/null | head -1)
  phase=""
  if [ -z "$server" ]; then
    echo "no kubeconfig in $up"
  else
    echo "-- nodes:"
    api GET /api/v1/nodes | grep -oE '"(name|nvidia.com/gpu)":"[^"]*"' | head -20
    api POST /api/v1/namespaces/default/pods '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"gpu-check"},"spec":{"restartPolicy":"Never","containers":[{"name":"smi","image":"local","command":["/bin/sh","-c","nvidia-smi -L; echo CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES NVIDIA_VISIBLE_DEVICES=$NVIDIA_VISIBLE_DEVICES"],"resources":{"limits":{"nvidia.com/gpu":"1"}}}]}}' >/dev/null
    for _ in $(seq 120); do
      phase=$(api GET /api/v1/namespaces/default/pods/gpu-check | grep -oE '"phase":"[A-Za-z]+"' | head -1 | cut -d'"' -f4)
      [ "$phase" = Succeeded ] || [ "$phase" = Failed ] && break
      sleep 1
    done
    echo "-- pod phase: ${phase:-none}; its output:"
    api GET /api/v1/namespaces/default/pods/gpu-check/log
  fi
  kill -INT "$up_pid" 2>/dev/null
  wait "$up_pid" 2>/dev/null
  if [ "$phase" = Succeeded ]; then
    record "muster up" PASS
  else
    echo "-- muster up log:"
    tail -40 "$tmp/up.log"
    record "muster up" "FAIL (pod phase ${phase:-none})"
  fi
fi

echo
echo "== summary"
failed=0
for r in "${results[@]}"; do
  echo "  $r"
  case "$r" in *FAIL*) failed=1 ;; esac
done
exit "$failed"
