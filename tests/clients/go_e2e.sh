#!/usr/bin/env bash
# clients/go: the official Go client, k8s.io/client-go v0.37.2 from the Go module proxy, against
# `muster up` with the seed's cluster file and the kubeconfig it writes, unchanged: shared
# informers with resync, the dynamic client on Volcano's kinds, typed clients speaking protobuf,
# tools/leaderelection on a Lease and server-side apply by two field managers (tests/clients/go).
# The program is built into BUILD_DIR/bin with `go build -mod=readonly` (go.mod and go.sum as
# committed), again only when its sources or the Go toolchain changed; the build cache stays where
# Go keeps it.
#
# Usage: go_e2e.sh MUSTER_BINARY BUILD_DIR
set -u
MUSTER=${1:?usage: go_e2e.sh MUSTER_BINARY BUILD_DIR}
build=${2:?usage: go_e2e.sh MUSTER_BINARY BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../e2e/e2e_lib.sh
. "$here/../e2e/e2e_lib.sh"
begin_e2e
root=$(cd "$here/../.." && pwd)

if ! command -v go >/dev/null 2>&1; then
  echo "FAIL go is not installed (Go 1.26 builds this suite)"
  echo "$pass passed, $((fail + 1)) failed"
  exit 1
fi

# The stamp beside the binary is the checksum of what it was built from.
src=$here/go
client=$build/bin/go-client
stamp=$( (go version && cd "$src" && cat go.mod go.sum ./*.go) | sha256sum | cut -d' ' -f1)
if [ ! -x "$client" ] || [ "$(cat "$client.stamp" 2>/dev/null)" != "$stamp" ]; then
  mkdir -p "$build/bin"
  rm -f "$client.stamp"
  started=$SECONDS
  if ! (cd "$src" && go build -mod=readonly -buildvcs=false -o "$client" .) \
    >"$work/go-build.log" 2>&1; then
    echo "FAIL go build of tests/clients/go into $build/bin:"
    sed 's/^/    /' "$work/go-build.log"
    echo "$pass passed, $((fail + 1)) failed"
    exit 1
  fi
  echo "$stamp" >"$client.stamp"
  echo "built $client in $((SECONDS - started)) s"
fi

start_muster up "$MUSTER" up --config "$root/examples/gpu-gang/cluster.yaml" \
  --data-dir "$work/data" --listen 127.0.0.1:0 --no-summary || exit_not_started up "muster up"
timeout -k 5 360 "$client" "$muster_kubeconfig" "$root/examples/gpu-gang"
