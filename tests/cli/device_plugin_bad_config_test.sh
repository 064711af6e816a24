#!/usr/bin/env bash
# `muster device-plugin` refuses bad configuration at start with a clear error naming the problem
# and exit status 1, never a crash; and its --help and docs/device-plugin.md cover every flag.
# Usage: device_plugin_bad_config_test.sh MUSTER_BINARY FAKE_LIBNVIDIA_ML
set -u
muster=$1
fake=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d /tmp/muster-dp-cli-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/dp"
pass=0
fail=0

# A fake machine whose MIG layout the single strategy cannot serve.
cat >"$tmp/machine.conf" <<'MACHINE'
gpu name="NVIDIA A100-SXM4-80GB" memory_mib=81920 mig=on
mig gpu=0 gi=1 gi_slices=1 memory_mib=9728 sms=14
mig gpu=0 gi=2 gi_slices=3 memory_mib=40192 sms=42
MACHINE
export MUSTER_FAKE_NVML_CONFIG=$tmp/machine.conf

check() {  # description, text that must appear, then the command's arguments (env via env(1))
  local what=$1 want=$2
  shift 2
  local out rc
  out=$(timeout 20 "$@" 2>&1)
  rc=$?
  if [ "$rc" -ne 1 ] || ! grep -qF -- "$want" <<<"$out"; then
    echo "FAIL $what: exit $rc, output:"
    echo "$out" | sed 's/^/    /'
    echo "    wanted exit 1 and: $want"
    fail=$((fail + 1))
  else
    pass=$((pass + 1))
  fi
}

config() {  # name, YAML text -> path
  printf '%s' "$2" >"$tmp/$1"
  echo "$tmp/$1"
}

dp=("$muster" device-plugin --device-plugin-dir "$tmp/dp" --nvml-library "$fake")

check "unknown strategy flag" \
  '--mig-strategy (MIG_STRATEGY): unknown MIG strategy "bogus"; use none, single or mixed' \
  "${dp[@]}" --mig-strategy bogus
check "unknown strategy from the environment" \
  'unknown MIG strategy "sometimes"' \
  env MIG_STRATEGY=sometimes "${dp[@]}"
check "unknown strategy in the file" \
  'strategy.yaml:3: flags.migStrategy: unknown MIG strategy "bogus"' \
  "${dp[@]}" --config-file "$(config strategy.yaml $'version: v1\nflags:\n  migStrategy: bogus\n')"
check "replicas below 2" \
  'replicas.yaml:6: sharing.timeSlicing.resources[0].replicas: must be at least 2, got 1' \
  "${dp[@]}" --config-file "$(config replicas.yaml $'version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 1\n')"
check "malformed file" \
  'malformed.yaml:3: malformed YAML' \
  "${dp[@]}" --config-file "$(config malformed.yaml $'version: v1\nflags: {migStrategy: none\n')"
check "unknown key" \
  'typo.yaml:3: flags.migStrategey: unknown key' \
  "${dp[@]}" --config-file "$(config typo.yaml $'version: v1\nflags:\n  migStrategey: none\n')"
check "wrong version" \
  'unsupported version "v2"; the only version is v1' \
  "${dp[@]}" --config-file "$(config v2.yaml $'version: v2\n')"
check "MPS" \
  'sharing.mps: MPS is not supported' \
  "${dp[@]}" --config-file "$(config mps.yaml $'version: v1\nsharing:\n  mps:\n    resources:\n    - {name: nvidia.com/gpu, replicas: 2}\n')"
check "missing file" \
  "config file $tmp/absent.yaml: cannot be read" \
  "${dp[@]}" --config-file "$tmp/absent.yaml"
check "unknown device list strategy" \
  'unknown device list strategy "tape"' \
  "${dp[@]}" --device-list-strategy envvar,tape
check "bad reprobe interval" \
  '--health-reprobe-interval: "soon" is not a duration' \
  "${dp[@]}" --health-reprobe-interval soon
check "bad XID list" \
  '--ignored-xids: "x13" is not an XID' \
  "${dp[@]}" --ignored-xids 13,x13
check "bad XID list in the environment" \
  'DP_DISABLE_HEALTHCHECKS: "some" is not an XID' \
  env DP_DISABLE_HEALTHCHECKS=some "${dp[@]}"
check "single strategy on mixed profiles" \
  'invalid MIG configuration for migStrategy single: more than one MIG profile (1g.10gb, 3g.40gb); use mixed' \
  "${dp[@]}" --mig-strategy single
check "no driver" \
  'no NVIDIA driver found: /nonexistent/libnvidia-ml.so.1 could not be loaded' \
  "$muster" device-plugin --device-plugin-dir "$tmp/dp" --nvml-library /nonexistent/libnvidia-ml.so.1
check "missing device plugin folder" \
  "cannot watch the device plugin folder $tmp/none" \
  "$muster" device-plugin --device-plugin-dir "$tmp/none" --nvml-library "$fake"
check "kubeconfig without a node" \
  '--kubeconfig needs --node-name (or NODE_NAME)' \
  "${dp[@]}" --kubeconfig "$tmp/kubeconfig"
check "bad listen address" \
  '--listen-address nowhere: address "nowhere": want host:port' \
  "${dp[@]}" --listen-address nowhere

# Every flag of --help is documented in docs/device-plugin.md.
help=$("$muster" device-plugin --help)
for flag in $(grep -oE -- '--[a-z][a-z-]+' <<<"$help" | sort -u); do
  [ "$flag" = "--help" ] && continue
  if ! grep -qF -- "\`$flag" "$root/docs/device-plugin.md"; then
    echo "FAIL $flag is in --help but not in docs/device-plugin.md"
    fail=$((fail + 1))
  else
    pass=$((pass + 1))
  fi
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
