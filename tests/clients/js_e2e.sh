#!/usr/bin/env bash
# clients/js: the official JavaScript client (@kubernetes/client-node 1.x, from the npm registry,
# installed into the build folder by `npm ci` from tests/clients/js/package-lock.json and kept
# there) against `muster up` with the seed's cluster file and the kubeconfig it writes, unchanged:
# an informer on pods sees a gang's pods added, bound and deleted (tests/clients/js/informer.mjs).
#
# Usage: js_e2e.sh MUSTER_BINARY INSTALL_DIR
set -u
MUSTER=${1:?usage: js_e2e.sh MUSTER_BINARY INSTALL_DIR}
install=${2:?usage: js_e2e.sh MUSTER_BINARY INSTALL_DIR}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../e2e/e2e_lib.sh
. "$here/../e2e/e2e_lib.sh"
begin_e2e
root=$(cd "$here/../.." && pwd)

for tool in node npm; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "FAIL $tool is not installed (Node.js 20 with npm runs this suite)"
    exit 1
  fi
done

# Install (again) only when the lock file changed; the copy of the lock file is the stamp.
mkdir -p "$install"
if ! cmp -s "$here/js/package-lock.json" "$install/package-lock.json" ||
   [ ! -d "$install/node_modules/@kubernetes/client-node" ]; then
  cp "$here/js/package.json" "$here/js/package-lock.json" "$install/"
  if ! (cd "$install" && npm ci --no-audit --no-fund --loglevel=error) >"$work/npm.log" 2>&1; then
    echo "FAIL npm ci of @kubernetes/client-node into $install:"
    sed 's/^/    /' "$work/npm.log"
    rm -f "$install/package-lock.json"
    exit 1
  fi
fi
# Beside node_modules: Node resolves a module's imports from where the module lies.
cp "$here/js/informer.mjs" "$install/"

start_muster up "$MUSTER" up --config "$root/examples/gpu-gang/cluster.yaml" \
  --data-dir "$work/data" --listen 127.0.0.1:0 --no-summary || exit_not_started up "muster up"
timeout -k 5 150 node "$install/informer.mjs" "$muster_kubeconfig" "$root/examples/gpu-gang"
