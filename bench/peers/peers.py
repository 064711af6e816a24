#!/usr/bin/python3
"""The creator, the watcher and the report of bench/peers/run.sh (muster beside its peers on one
real control plane). Talks to the API server straight over HTTPS with the kubeconfig's client
certificate or token; nothing but the Python standard library.

  peers.py create KUBECONFIG KIND COUNT [options]   create COUNT objects (pods, gangs or jobs)
  peers.py watch KUBECONFIG OUT [options]           follow the measured pods; write a summary
  peers.py report RESULTS...                        the tables and the `peers:` lines

create: KIND `pods` (plain pods), `gangs` (per gang: a PodGroup, when --scheduler names one, and
its --gang pods), `jobs` (Volcano batch Jobs of --gang replicas, with every field that Volcano's
admission webhook would default: queue, schedulerName, minAvailable, maxRetry and the task's name,
minAvailable and maxRetry) or `batchjobs` (Kubernetes
batch/v1 Jobs of --gang parallel pods). --threads connections post
in parallel as fast as the API server takes them; --over S spreads the gangs' arrival evenly over
S seconds; --bound-to PREFIX:N creates plain pods already bound, round-robin to the nodes
PREFIX-0 .. PREFIX-(N-1) (spec.nodeName, as the initial pods scheduler_perf leaves placed before
it measures). Every pod carries the label peers=<--label, default measured> and, in a gang, peers-group and
peers-min, so the watcher needs no other object.

watch: lists then watches the pods labelled --selector (default peers=measured). Times are the watcher's own clock: a
pod's create is when its ADDED event arrives, its bind when an event first shows spec.nodeName;
so create-to-bind latency includes the same watch delay for every scheduler. pods/s runs from
the first create to the last bind, binds/s from the first bind to the last. Every 100 ms it
counts the gangs that are partly bound (some but fewer than peers-min of their pods have a node)
and adds their bound GPUs x 0.1 s to the GPU-seconds held idle; partial_end counts those still
partly bound at the last sample. It stops when --target pods are
bound, when (without a --target) the file --created exists and no pod was bound for --settle
seconds, or after --timeout seconds, and writes one JSON object to OUT.
"""
import atexit
import base64
import http.client
import json
import os
import shutil
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time

# ---- the API server ---------------------------------------------------------------------------


class Api:
    """The server, TLS context and headers of a kubeconfig (its current context)."""

    def __init__(self, kubeconfig):
        raw = subprocess.run(["kubectl", "--kubeconfig", kubeconfig, "config", "view", "--raw",
                              "--minify", "-o", "json"], capture_output=True, check=True).stdout
        cfg = json.loads(raw)
        cluster = cfg["clusters"][0]["cluster"]
        user = cfg["users"][0]["user"]
        server = cluster["server"]
        assert server.startswith("https://"), "server %s is not https" % server
        host, _, port = server[len("https://"):].rstrip("/").partition(":")
        self.host, self.port = host, int(port or 443)
        self.ctx = ssl.create_default_context()
        self.headers = {"Content-Type": "application/json", "Accept": "application/json"}
        self._tmp = tempfile.mkdtemp(prefix="peers-tls.")
        atexit.register(shutil.rmtree, self._tmp, True)
        if "certificate-authority-data" in cluster:
            self.ctx.load_verify_locations(
                cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
        elif "certificate-authority" in cluster:
            self.ctx.load_verify_locations(cafile=cluster["certificate-authority"])
        if "client-certificate-data" in user:
            cert, key = os.path.join(self._tmp, "c.crt"), os.path.join(self._tmp, "c.key")
            with open(cert, "wb") as f:
                f.write(base64.b64decode(user["client-certificate-data"]))
            with open(key, "wb") as f:
                f.write(base64.b64decode(user["client-key-data"]))
            self.ctx.load_cert_chain(cert, key)
        elif "client-certificate" in user:
            self.ctx.load_cert_chain(user["client-certificate"], user["client-key"])
        if "token" in user:
            self.headers["Authorization"] = "Bearer " + user["token"]

    def connect(self, timeout=30):
        return http.client.HTTPSConnection(self.host, self.port, context=self.ctx,
                                           timeout=timeout)


# ---- create -----------------------------------------------------------------------------------


def pod_object(name, args, group=None, minimum=0, job_index=0):
    labels = {"peers": args["label"]}
    annotations = {}
    if group:
        labels.update({"peers-group": group, "peers-min": str(minimum)})
        if args["scheduler"]:
            annotations["scheduling.k8s.io/group-name"] = group
    requests = {"cpu": args["cpu"], "memory": args["memory"]}
    limits = {}
    if int(args["gpus"]):
        limits["nvidia.com/gpu"] = args["gpus"]
    spec = {"containers": [{"name": "c", "image": "busybox",
                            "resources": {"requests": requests, "limits": limits}}],
            "terminationGracePeriodSeconds": 0}
    if args["scheduler"]:
        spec["schedulerName"] = args["scheduler"]
    if int(args["types"]):
        spec["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists",
                                "effect": "NoSchedule"}]
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{
                "key": "node.kubernetes.io/instance-type", "operator": "In",
                "values": ["peers-type-%d" % (job_index % int(args["types"]))]}]}]}}}
    meta = {"name": name, "labels": labels}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def units(kind, count, args):
    """The creation units in order: each a list of (path, object) posted together."""
    ns = "/api/v1/namespaces/default/pods"
    prefix = args["prefix"]
    gang = int(args["gang"])
    out = []
    if kind == "pods":
        node_prefix, _, node_count = args["bound-to"].rpartition(":")
        for i in range(count):
            pod = pod_object("%s-%05d" % (prefix, i), args)
            if node_prefix:
                pod["spec"]["nodeName"] = "%s-%d" % (node_prefix, i % int(node_count))
            out.append([(ns, pod)])
    elif kind == "gangs":
        for g in range(count):
            group = "%s-%04d" % (prefix, g)
            unit = []
            if args["scheduler"]:
                unit.append(("/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups", {
                    "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                    "metadata": {"name": group}, "spec": {"minMember": gang, "queue": "default"}}))
            for i in range(gang):
                unit.append((ns, pod_object("%s-%d" % (group, i), args, group, gang, g)))
            out.append(unit)
    elif kind == "jobs":
        for g in range(count):
            name = "%s-%04d" % (prefix, g)
            template = pod_object("x", args, name, gang, g)
            template["metadata"] = {"labels": template["metadata"]["labels"]}
            template["spec"]["schedulerName"] = args["scheduler"] or "volcano"
            template["spec"]["restartPolicy"] = "Never"
            # Every field Volcano's admission webhook (jobs/mutate) would default, set here:
            # the Job runs without it (vc-controller-manager, muster's controller).
            out.append([("/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs", {
                "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                "metadata": {"name": name},
                "spec": {"minAvailable": gang, "schedulerName": args["scheduler"] or "volcano",
                         "queue": "default", "maxRetry": 3,
                         "tasks": [{"replicas": gang, "minAvailable": gang, "maxRetry": 3,
                                    "name": "w", "template": template}]}})])
    elif kind == "batchjobs":
        # Kubernetes' own batch/v1 Jobs of --gang parallel pods: kube-controller-manager's Job
        # controller creates the pods, kube-scheduler places them one by one (no gang).
        for g in range(count):
            name = "%s-%04d" % (prefix, g)
            template = pod_object("x", args, name, gang, g)
            template["metadata"] = {"labels": template["metadata"]["labels"]}
            template["spec"]["restartPolicy"] = "Never"
            out.append([("/apis/batch/v1/namespaces/default/jobs", {
                "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
                "spec": {"parallelism": gang, "completions": gang, "backoffLimit": 0,
                         "template": template}})])
    else:
        raise SystemExit("peers.py create: KIND must be pods, gangs, jobs or batchjobs, not %r"
                         % kind)
    return out


def create(argv):
    kubeconfig, kind, count = argv[0], argv[1], int(argv[2])
    args = {"threads": "4", "over": "0", "cpu": "100m", "memory": "500Mi", "gpus": "0",
            "scheduler": "", "gang": "8", "prefix": "p", "types": "0",
            "label": "measured", "bound-to": ""}
    rest = argv[3:]
    while rest:
        key = rest.pop(0)
        if not key.startswith("--") or key[2:] not in args or not rest:
            raise SystemExit("peers.py create: unknown or incomplete option %s" % key)
        args[key[2:]] = rest.pop(0)
    api = Api(kubeconfig)
    work = units(kind, count, args)
    over = float(args["over"])
    start = time.monotonic()
    lock = threading.Lock()
    state = {"next": 0, "failed": 0, "first_error": ""}

    def worker():
        conn = api.connect()
        while True:
            with lock:
                i = state["next"]
                state["next"] += 1
            if i >= len(work):
                break
            if over > 0:
                delay = start + over * i / len(work) - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
            for path, obj in work[i]:
                body = json.dumps(obj)
                for attempt in range(5):
                    try:
                        conn.request("POST", path, body, api.headers)
                        resp = conn.getresponse()
                        data = resp.read()
                    except (OSError, http.client.HTTPException):
                        conn.close()
                        conn = api.connect()
                        continue
                    if resp.status == 429 or resp.status >= 500:
                        time.sleep(0.2 * (attempt + 1))
                        continue
                    break
                if resp.status not in (200, 201):
                    with lock:
                        state["failed"] += 1
                        if not state["first_error"]:
                            state["first_error"] = "%s %d %s" % (path, resp.status, data[:300])
        conn.close()

    threads = [threading.Thread(target=worker) for _ in range(int(args["threads"]))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    took = time.monotonic() - start
    objects = sum(len(u) for u in work)
    print("created %d objects (%d units) in %.1fs, %d refused%s" % (
        objects - state["failed"], len(work), took, state["failed"],
        (": " + state["first_error"]) if state["first_error"] else ""))
    return 1 if state["failed"] else 0


# ---- watch ------------------------------------------------------------------------------------


def percentile(values, q):
    if not values:
        return 0.0
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def watch(argv):
    kubeconfig, out_path = argv[0], argv[1]
    opts = {"target": "0", "created": "", "settle": "5", "timeout": "1800", "ready": "",
            "selector": "peers=measured"}
    rest = argv[2:]
    while rest:
        key = rest.pop(0)
        if not key.startswith("--") or key[2:] not in opts or not rest:
            raise SystemExit("peers.py watch: unknown or incomplete option %s" % key)
        opts[key[2:]] = rest.pop(0)
    target, settle = int(opts["target"]), float(opts["settle"])
    api = Api(kubeconfig)
    lock = threading.Lock()
    pods = {}  # uid -> dict(added, bound, group, min, gpus)
    state = {"last_bind": None, "done": False, "error": ""}

    def see(obj, now):
        meta, spec = obj["metadata"], obj.get("spec", {})
        uid = meta["uid"]
        p = pods.get(uid)
        if p is None:
            labels = meta.get("labels", {})
            gpus = 0
            for c in spec.get("containers", []):
                gpus += int(c.get("resources", {}).get("limits", {}).get("nvidia.com/gpu", 0))
            p = pods[uid] = {"added": now, "bound": None, "group": labels.get("peers-group"),
                             "min": int(labels.get("peers-min", "0")), "gpus": gpus}
        if p["bound"] is None and spec.get("nodeName"):
            p["bound"] = now
            state["last_bind"] = now

    def follow():
        path = "/api/v1/namespaces/default/pods?labelSelector=" + opts["selector"].replace(
            "=", "%3D")
        conn = api.connect()
        conn.request("GET", path, headers=api.headers)
        resp = conn.getresponse()
        listed = json.loads(resp.read())
        now = time.monotonic()
        with lock:
            for obj in listed.get("items", []):
                see(obj, now)
        rv = listed["metadata"]["resourceVersion"]
        if opts["ready"]:
            open(opts["ready"], "w").close()
        while not state["done"]:
            conn = api.connect(timeout=None)
            conn.request("GET", path + "&watch=1&allowWatchBookmarks=true&timeoutSeconds=3000"
                         "&resourceVersion=" + rv, headers=api.headers)
            resp = conn.getresponse()
            if resp.status != 200:
                state["error"] = "watch: %d %s" % (resp.status, resp.read()[:200])
                return
            while not state["done"]:
                line = resp.readline()
                if not line:
                    break
                ev = json.loads(line)
                now = time.monotonic()
                obj = ev.get("object", {})
                if ev.get("type") == "ERROR":
                    state["error"] = "watch: %s" % obj.get("message", "")
                    return
                rv = obj.get("metadata", {}).get("resourceVersion", rv)
                if ev.get("type") in ("ADDED", "MODIFIED"):
                    with lock:
                        see(obj, now)

    def follow_or_fail():
        try:
            follow()
        except Exception as e:  # noqa: BLE001 -- reported in the summary, not lost with the thread
            state["error"] = "watch: %s: %s" % (type(e).__name__, e)

    t = threading.Thread(target=follow_or_fail, daemon=True)
    t.start()
    begin = time.monotonic()
    samples = partial_samples = partial_max = 0
    partial_groups = set()
    partial_end = 0
    idle_gpu_seconds = 0.0
    tick = 0.1
    next_tick = begin + tick
    while True:
        time.sleep(max(0.0, next_tick - time.monotonic()))
        next_tick += tick
        now = time.monotonic()
        with lock:
            groups = {}
            bound = 0
            for p in pods.values():
                if p["bound"] is not None:
                    bound += 1
                if p["group"]:
                    g = groups.setdefault(p["group"], [0, p["min"], 0])
                    if p["bound"] is not None:
                        g[0] += 1
                        g[2] += p["gpus"]
            partial = [k for k, g in groups.items() if 0 < g[0] < g[1]]
            samples += 1
            partial_end = len(partial)
            if partial:
                partial_samples += 1
                partial_max = max(partial_max, len(partial))
                partial_groups.update(partial)
                idle_gpu_seconds += tick * sum(groups[k][2] for k in partial)
            last_bind = state["last_bind"]
        if state["error"] or not t.is_alive():
            break
        if target and bound >= target:
            break
        created = opts["created"] and os.path.exists(opts["created"])
        if created and not target and now - (last_bind or begin) > settle:
            break
        if now - begin > float(opts["timeout"]):
            state["error"] = state["error"] or "timeout after %ss" % opts["timeout"]
            break
    state["done"] = True
    with lock:
        added = [p["added"] for p in pods.values()]
        lat = [p["bound"] - p["added"] for p in pods.values() if p["bound"] is not None]
        binds = [p["bound"] for p in pods.values() if p["bound"] is not None]
        gpus_bound = sum(p["gpus"] for p in pods.values() if p["bound"] is not None)
        first = min(added) if added else 0.0
        span = (max(binds) - first) if binds else 0.0
        bind_span = (max(binds) - min(binds)) if binds else 0.0
        summary = {
            "pods": len(pods), "bound": len(binds), "gpus_bound": gpus_bound,
            "span_s": round(span, 3),
            "pods_per_s": round(len(binds) / span, 1) if span > 0 else 0.0,
            "bind_span_s": round(bind_span, 3),
            "adds_span_s": round((max(added) - first) if added else 0.0, 3),
            "binds_per_s": round(len(binds) / bind_span, 1) if bind_span > 0 else 0.0,
            "p50_ms": round(1000 * percentile(lat, 0.50), 1),
            "p99_ms": round(1000 * percentile(lat, 0.99), 1),
            "samples": samples, "partial_samples": partial_samples,
            "partial_max": partial_max, "partial_gangs": len(partial_groups),
            "partial_end": partial_end,
            "idle_gpu_s": round(idle_gpu_seconds, 1), "error": state["error"]}
    with open(out_path, "w") as f:
        json.dump(summary, f)
        f.write("\n")
    return 0 if not state["error"] else 1


# ---- report -----------------------------------------------------------------------------------

METRICS = [("pods/s", "pods_per_s"), ("binds/s", "binds_per_s"), ("p50 ms", "p50_ms"), ("p99 ms", "p99_ms"),
           ("span s", "span_s"), ("bound", "bound"), ("sched CPU s", "cpu_s"),
           ("sched peak RSS MiB", "rss_mib"), ("partly bound gangs", "partial_gangs"),
           ("still partly bound at the end", "partial_end"),
           ("idle GPU-s", "idle_gpu_s")]


def median(values):
    return round(statistics.median(values), 3) if values else 0


def report(argv):
    """RESULTS: JSON files, each a watch summary with workload, scheduler and round added."""
    rows = [json.load(open(p)) for p in argv]
    by = {}
    for r in rows:
        by.setdefault(r["workload"], {}).setdefault(r["scheduler"], []).append(r)
    lines = []
    for workload, scheds in by.items():
        print("\n%s (median of %d run(s) each; every run in results.jsonl)" % (
            workload, max(len(v) for v in scheds.values())))
        print("| scheduler | " + " | ".join(m for m, _ in METRICS) + " |")
        print("|---" * (len(METRICS) + 1) + "|")
        for sched, rs in scheds.items():
            print("| %s | " % sched + " | ".join(
                str(median([r.get(k, 0) for r in rs])) for _, k in METRICS) + " |")
        muster = scheds.get("muster")
        if not muster:
            continue
        for sched, rs in scheds.items():
            if sched == "muster":
                continue
            # kube-scheduler and kube-scheduler-defaults: the peer's name in the line is the
            # same, the variant goes with the workload.
            peer, _, variant = sched.partition("-defaults")
            label = workload + (" (%s defaults)" % peer if sched.endswith("-defaults") else "")
            if workload == "Contended gangs":
                # Time until the fleet is full: lower is better; the ratio is peer / muster.
                m, p = median([r["span_s"] for r in muster]), median([r["span_s"] for r in rs])
                lines.append("peers: %s, time to a full fleet: muster %.1f s, %s %.1f s, "
                             "ratio %.2fx" % (label, m, peer, p, p / m if m else 0.0))
                m, p = (median([r["idle_gpu_s"] for r in muster]),
                        median([r["idle_gpu_s"] for r in rs]))
                lines.append("peers: %s, held idle by partly bound gangs: muster %.1f GPU-s, "
                             "%s %.1f GPU-s, ratio %sx" % (label, m, peer, p,
                                                           ("%.2f" % (p / m)) if m else "inf"))
            else:
                # A backlog has no create to start from: the rate is first to last bind.
                key = "binds_per_s" if workload.endswith("backlog") else "pods_per_s"
                unit = "binds/s" if workload.endswith("backlog") else "pods/s"
                m, p = median([r[key] for r in muster]), median([r[key] for r in rs])
                lines.append("peers: %s: muster %.1f %s, %s %.1f %s, ratio %.2fx" % (
                    label, m, unit, peer, p, unit, m / p if p else 0.0))
    print()
    for line in lines:
        print(line)
    return 0


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in ("create", "watch", "report"):
        print(__doc__, file=sys.stderr)
        return 2
    return {"create": create, "watch": watch, "report": report}[sys.argv[1]](sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
