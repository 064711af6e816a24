#!/usr/bin/env bash
# The API servers workload of the peer benchmark (issue 12): muster's API server (`muster
# apiserver`) against kube-apiserver + etcd (scripts/kube-control-plane up, no scheduler, its
# controller-manager stopped once up), driven by the same client, bench/peers/apiload (client-go,
# tests/kube/go.mod's k8s.io versions, built into build/peers/apiload and rebuilt only when its
# sources or Go change). The servers alternate, muster then kube-apiserver, each fresh, for 3
# rounds (1 with --small); the figures are the medians over the rounds, printed last, one line per
# comparison:
#
#   peers: <workload>: muster <x> <unit>, kube-apiserver <y> <unit>, ratio <r>x
#
# The ratio is > 1 where muster does better: muster/kube-apiserver for rates, kube-apiserver/muster
# for times and memory. Progress and every round's figures go to stderr.
#
#   bench/peers/apiservers.sh [--small] [--rounds N] [--muster PATH] [--keep]
#
#   --small       500 listed pods, 50 watchers x 50 writes, 2,000 pods for RSS (well under 2 min)
#   --rounds N    rounds of the alternation (default 3; 1 with --small)
#   --muster PATH the muster binary (default $MUSTER, else build/release/src/cmd/muster)
#   --keep        keep the work directory (each server's log and the client's output) and say where
#
# GO and KUBE_VERSION are read as scripts/kube-control-plane reads them.
set -euo pipefail

prog=apiservers
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
control_plane=${root}/scripts/kube-control-plane
src=${root}/bench/peers/apiload
say() { echo "${prog}: $*" >&2; }
die() { say "$*"; exit 1; }

small=0 rounds= keep=0 muster=${MUSTER:-${root}/build/release/src/cmd/muster}
while [ $# -gt 0 ]; do
  case $1 in
    --small) small=1 ;;
    --rounds) rounds=${2:?--rounds needs a number}; shift ;;
    --muster) muster=${2:?--muster needs a path}; shift ;;
    --keep) keep=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//' >&2; exit 2 ;;
    *) die "unknown argument $1 (--help)" ;;
  esac
  shift
done
[ -x "${muster}" ] || die "no muster binary at ${muster} (build it, or --muster PATH)"

if [ "${small}" = 1 ]; then
  rounds=${rounds:-1}
  load_flags=(-creates1 200 -creates8 300 -list-pods 500 -list-reps 3 -rss-pods 2000
              -rss-settle 1s -watchers 50 -watch-writes 50 -watch-timeout 60s)
else
  rounds=${rounds:-3}
  load_flags=(-creates1 3000 -creates8 6000 -list-pods 10000 -list-reps 10 -rss-pods 50000
              -rss-settle 5s -watchers 1000 -watch-writes 1000 -watch-timeout 300s)
fi
[[ "${rounds}" =~ ^[1-9][0-9]*$ ]] || die "--rounds must be a positive number"

find_go() {
  if [ -n "${GO:-}" ]; then echo "${GO}"; return; fi
  if command -v go >/dev/null 2>&1; then command -v go; return; fi
  if [ -x /usr/local/go/bin/go ]; then echo /usr/local/go/bin/go; return; fi
  die "go is not installed (set GO=/path/to/go); it builds the load client"
}

# The client, built when its sources or the Go toolchain changed since the last build.
build_client() {
  local out=${root}/build/peers/apiload go stamp
  go=$(find_go)
  stamp=$(cat "${src}/go.mod" "${src}/go.sum" "${src}"/*.go <("${go}" version) | sha256sum | cut -d' ' -f1)
  client=${out}/apiload
  mkdir -p "${out}"
  exec 8>"${out}/.lock"
  flock 8
  if [ -x "${client}" ] && [ "$(cat "${out}/stamp" 2>/dev/null)" = "${stamp}" ]; then
    exec 8>&-
    return 0
  fi
  say "building the load client into ${out#"${root}"/}"
  rm -f "${out}/stamp"
  (cd "${src}" && "${go}" build -mod=readonly -trimpath -o "${out}/apiload.tmp" .) ||
    die "go build of ${src#"${root}"/} failed"
  mv "${out}/apiload.tmp" "${client}"
  echo "${stamp}" > "${out}/stamp"
  exec 8>&-
}

build_client
"${control_plane}" build 2>&1 | sed 's/^/  /' >&2

work=$(mktemp -d "${TMPDIR:-/tmp}/muster-apiservers.XXXXXX")
muster_pid= kube_dir= client_pid=
cleanup() {
  local rc=$?
  if [ -n "${client_pid}" ]; then
    kill -TERM "${client_pid}" 2>/dev/null || true
    wait "${client_pid}" 2>/dev/null || true
  fi
  if [ -n "${muster_pid}" ] && kill -0 "${muster_pid}" 2>/dev/null; then
    kill -TERM "${muster_pid}" 2>/dev/null || true
    wait "${muster_pid}" 2>/dev/null || true
  fi
  if [ -n "${kube_dir}" ]; then "${control_plane}" down "${kube_dir}" >/dev/null 2>&1 || true; fi
  if [ "${keep}" = 1 ]; then say "kept ${work}"; else rm -rf "${work}"; fi
  exit "${rc}"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# load SERVER ROUND KUBECONFIG PIDS: one client run; its results appended to ${work}/results as
# "SERVER ROUND NAME VALUE UNIT".
load() {
  local server=$1 round=$2 out=${work}/$1-$2.out rc=0 load_before
  load_before=$(cut -d' ' -f1-3 /proc/loadavg)
  # In the background, so that a signal runs the EXIT trap at once (it stops the client too).
  "${client}" -kubeconfig "$3" -pids "$4" "${load_flags[@]}" >"${out}" 2>"${work}/$1-$2.err" &
  client_pid=$!
  wait "${client_pid}" || rc=$?
  client_pid=
  if [ "${rc}" != 0 ]; then
    say "the load client failed against ${server} in round ${round}:"
    sed 's/^/    /' "${out}" "${work}/$1-$2.err" | tail -20 >&2
    exit 1
  fi
  awk -v s="${server}" -v r="${round}" '$1 == "result" { print s, r, $2, $3, $4 }' "${out}" \
    >> "${work}/results"
  say "round ${round}: ${server}: $(awk '$1 == "result" { printf "%s %.6g %s; ", $2, $3, $4 }' "${out}")"
  say "    load average before ${load_before}, after $(cut -d' ' -f1-3 /proc/loadavg)"
  grep '^info ' "${out}" | sed 's/^info /    /' >&2
}

run_muster() {
  local round=$1 data=${work}/muster-$1 deadline
  "${muster}" apiserver --data-dir "${data}" --listen 127.0.0.1:0 >"${work}/muster-$1.log" 2>&1 &
  muster_pid=$!
  deadline=$((SECONDS + 30))
  until [ -s "${data}/kubeconfig" ] && grep -q '^export KUBECONFIG=' "${work}/muster-$1.log"; do
    kill -0 "${muster_pid}" 2>/dev/null || die "muster apiserver exited: $(tail -5 "${work}/muster-$1.log")"
    [ "${SECONDS}" -lt "${deadline}" ] || die "muster apiserver was not listening after 30 s"
    sleep 0.1
  done
  load muster "${round}" "${data}/kubeconfig" "${muster_pid}"
  kill -TERM "${muster_pid}"
  wait "${muster_pid}" || true
  muster_pid=
  rm -rf "${data}"
}

# stop_controller_manager: kube-controller-manager, which `up` starts with every controller (its
# --controllers adds to the script's '*', so it cannot be narrowed), is stopped once `up` has seen
# it make the default ServiceAccount: nothing but the client should read or write while
# kube-apiserver is measured, as nothing else talks to muster's server. The client makes each
# namespace's default ServiceAccount itself.
stop_controller_manager() {
  local pid deadline
  pid=$(cat "${kube_dir}/pids/kube-controller-manager.pid")
  tr '\0' '\n' < "/proc/${pid}/cmdline" 2>/dev/null | grep -qF -- "${kube_dir}/" ||
    die "pid ${pid} is not this control plane's kube-controller-manager"
  kill -TERM "${pid}"
  deadline=$((SECONDS + 15))
  while [ -e "/proc/${pid}" ] && [ "${SECONDS}" -lt "${deadline}" ]; do sleep 0.2; done
  [ ! -e "/proc/${pid}" ] || die "kube-controller-manager (pid ${pid}) did not stop"
}

run_kube() {
  local round=$1
  kube_dir=${work}/kube-$1
  if ! "${control_plane}" up "${kube_dir}" >"${work}/kube-$1.log" 2>&1; then
    sed 's/^/    /' "${work}/kube-$1.log" | tail -30 >&2
    die "the control plane did not come up"
  fi
  stop_controller_manager
  load kube-apiserver "${round}" "${kube_dir}/admin.kubeconfig" \
    "$(cat "${kube_dir}/pids/etcd.pid"),$(cat "${kube_dir}/pids/kube-apiserver.pid")"
  "${control_plane}" down "${kube_dir}" >/dev/null 2>&1 || die "the control plane did not stop"
  rm -rf "${kube_dir}"
  kube_dir=
}

say "$("${muster}" --version 2>/dev/null | head -1) (${muster})"
say "sizes: ${load_flags[*]}; ${rounds} round(s), muster then kube-apiserver"
: > "${work}/results"
for round in $(seq "${rounds}"); do
  run_muster "${round}"
  run_kube "${round}"
done

# Medians over the rounds, one line per comparison. better: hi (rates) or lo (times, memory).
awk -v rounds="${rounds}" '
  function median(key,   n, i, j, t, a) {
    n = split(vals[key], a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  { vals[$1 SUBSEP $3] = vals[$1 SUBSEP $3] " " $4; unit[$3] = $5; count[$1 SUBSEP $3]++ }
  END {
    split("create-1conn create-8conn list-json list-table watch rss", names, " ")
    split("hi hi lo lo hi lo", better, " ")
    split("%.0f %.0f %.1f %.1f %.0f %.0f", fmts, " ")
    for (i = 1; i <= 6; i++) {
      n = names[i]
      if (count["muster" SUBSEP n] != rounds || count["kube-apiserver" SUBSEP n] != rounds) {
        printf "apiservers: %s: not measured in every round\n", n > "/dev/stderr"; bad = 1; continue
      }
      m = median("muster" SUBSEP n); k = median("kube-apiserver" SUBSEP n)
      r = better[i] == "hi" ? m / k : k / m
      printf "peers: api-%s: muster " fmts[i] " %s, kube-apiserver " fmts[i] " %s, ratio %.2fx\n", \
        n, m, unit[n], k, unit[n], r
    }
    exit bad
  }' "${work}/results"

# The watch check, for whoever reads this output (each client run failed on a missed event).
for server in muster kube-apiserver; do
  say "watch: ${server}: $(cat "${work}/${server}"-*.out | grep -c '^info watch-complete \([0-9]*\)/\1 ') of ${rounds} round(s) with every watcher having every event, in order"
done
