#!/usr/bin/env bash
# The seed's GPU gang story, told by muster's scheduling core through `muster scenario`:
#   1. a blocker pod holds one of two GPUs -> the two-trainer gang waits, nothing is half-started;
#   2. the blocker is deleted              -> both trainers are placed together.
# Each step runs one scenario file from examples/seed-demo/ and fails the demo if its expectations
# do not hold. MUSTER overrides the binary (default: the release build).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
muster=${MUSTER:-$root/build/release/src/cmd/muster}
case "$muster" in /*) ;; *) muster="$PWD/$muster" ;; esac
cd "$root"
demo=examples/seed-demo

if [ ! -x "$muster" ]; then
  echo "demo: $muster is not built; run \`make demo\` (or \`make build\`) first" >&2
  exit 1
fi

# --explain prints why each pod was or was not placed; use it where this build has it.
explain=()
if "$muster" scenario --help 2>&1 | grep -q -- '--explain'; then
  explain=(--explain)
fi

failed=0
step() {
  local title=$1 file=$2
  echo
  echo "== ${title}"
  echo "   \$ muster scenario ${explain[*]:+${explain[*]} }${file}"
  echo
  if ! "$muster" scenario "${explain[@]}" "$file"; then
    failed=1
  fi
}

echo "muster demo: gang scheduling two GPU trainers (see examples/seed-demo/README.md)"
step "1. A blocker pod holds one of the two GPUs: the gang of two trainers waits, neither starts" \
  "$demo/01-gang-waits-while-blocked.yaml"
step "2. The blocker is deleted: both trainers are placed together, one per GPU node" \
  "$demo/02-blocker-deleted-gang-starts.yaml"

echo
if [ "$failed" -ne 0 ]; then
  echo "demo: a step did not behave as its scenario expects" >&2
  exit 1
fi
echo "demo: both steps behaved as expected: all of the gang or none of it"
