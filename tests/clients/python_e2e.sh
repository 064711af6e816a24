#!/usr/bin/env bash
# clients/python: the official Python client (Debian's python3-kubernetes, which
# scripts/install-deps installs) against `muster up` with the seed's cluster file: a watch, CRUD on
# core and Volcano kinds and the API's refusals (tests/clients/python_client.py).
#
# Usage: python_e2e.sh MUSTER_BINARY
set -u
MUSTER=${1:?usage: python_e2e.sh MUSTER_BINARY}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../e2e/e2e_lib.sh
. "$here/../e2e/e2e_lib.sh"
begin_e2e
root=$(cd "$here/../.." && pwd)
start_muster up "$MUSTER" up --config "$root/examples/gpu-gang/cluster.yaml" \
  --data-dir "$work/data" --listen 127.0.0.1:0 --no-summary || exit_not_started up "muster up"
# Debian's python3 with its modules, not whatever python3 comes first on PATH.
/usr/bin/python3 "$here/python_client.py" "$muster_kubeconfig" "$root/examples/gpu-gang"
