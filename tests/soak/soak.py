#!/usr/bin/python3
"""A soak of the split `muster up` (issue 18, acceptance item 4): driver and checker.

Standard library only. Loopback only. Every wait has a deadline. It starts, each its own process
against one data directory, `muster apiserver`, `muster scheduler`, `muster controller` (both
--leader-elect=false: one replica each, as inside `muster up`) and `muster nodes` (simulated GPU
nodes, tests/soak/cluster.yaml), and for --minutes:

  creator   creates Volcano Jobs continuously (gangs: minAvailable = replicas, 1-4 replicas of one
            GPU each, muster.dev/run-seconds 2-8, queue `soak`) and deletes some of them, pending
            or running, at random (random.Random(--seed)). Every write the server acknowledged
            (2xx) is recorded with the uid and resourceVersion it returned; a write whose
            connection was refused was not made; any other failure leaves it uncertain until a
            later list settles it.
  chaos     SIGKILLs `muster apiserver` and restarts it on the same port and data directory every
            --apiserver-period seconds (120; 60 when --minutes is 5 or less), and `muster nodes`
            every --nodes-period (180; 90). The scheduler and the controller are never restarted:
            they must reconnect by themselves, and one that exits is a failure. Just before each
            SIGKILL of the API server a canary Job is created: acknowledged milliseconds before
            the kill, it must be there after the restart.
  kubectl   `kubectl get pods -A` over and over. A run that overlaps an API server outage (from its
            SIGKILL to the restarted server serving) may fail and is counted apart; every other
            one must succeed.
  watcher   a raw HTTP watch on all pods, resumed after every end from the last resourceVersion it
            saw, relisting on 410 Expired.
  sampler   lists the soak's active pods every few seconds (--sample-period) for partly bound
            gangs, and once more --settle seconds after each API server restart.

Checks (one PASS/FAIL line each; exit status 1 on any FAIL):
  - no acknowledged write lost: after each API server restart and at the end, every Job whose
    create was acknowledged and that was not deleted exists with its uid and a resourceVersion
    not below the acknowledged one; no acknowledged delete came back (the Job, and then its pods,
    are gone by the end).
  - resourceVersions never go backwards: within the watch, across all its reconnects and relists;
    every acknowledged write's resourceVersion is above every one any client had seen before it
    was sent, and every list's is not below.
  - no pod bound twice: no pod uid is ever seen with two different nodes (watch, lists), nor with
    Scheduled events naming two nodes.
  - no gang partly bound after recovery: a gang with 1..minAvailable-1 of its active pods bound
    while others wait is a failure when it stays so for 3 s or more in a sample taken at least
    --settle seconds after the last API server recovery (over HTTP a gang's binds are one call per
    pod, so a sample can catch one mid-way; the scheduler repairs a gang left so by a crash at the
    start of its next cycle), and at once in the final sample.
  - every Job not deleted reaches a final phase (Completed, Failed, Aborted or Terminated: the
    Volcano controller's, src/controller/job_state.h) within --final-wait seconds of the end.
  - the scheduler and the controller survived every restart; each nodes process ran until killed;
    each API server restart served again at its first try; the pods of deleted Jobs are removed.
Then the figures (JSON; --summary FILE writes them too) and "N passed, M failed".

--fault-stale-store shows the checks failing: from the second restart on, the API server starts
on a copy of its data directory taken at the first (acknowledged writes lost, resourceVersions
going back).

Usage: soak.py --muster BIN --cluster FILE --work DIR [--minutes M] [--seed N] [--kubectl PATH]
       soak.py --minutes M --print-schedule      (the restart schedule only; nothing started)
"""
import argparse
import http.client
import json
import os
import random
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse

FINAL_PHASES = ("Completed", "Failed", "Aborted", "Terminated")
NS = "soak"
QUEUE = "soak"
JOBS = "/apis/batch.volcano.sh/v1alpha1/namespaces/%s/jobs" % NS
PODS = "/api/v1/namespaces/%s/pods" % NS
ACTIVE_PODS = PODS + "?fieldSelector=" + urllib.parse.quote(
    "status.phase!=Succeeded,status.phase!=Failed")
ALL_PODS = "/api/v1/pods"
EVENTS = "/api/v1/namespaces/%s/events" % NS

START = time.monotonic()


def now():
    return time.monotonic() - START


def log(text):
    print("[%7.1fs] %s" % (now(), text), flush=True)


class Stop(Exception):
    """SIGTERM or SIGINT: end now, through the finally clauses."""


# --------------------------------------------------------------------------------------------------
# Checks, figures, the resourceVersion high-water mark


class Results:
    def __init__(self):
        self.lock = threading.Lock()
        self.violations = {}  # check name -> [text]
        self.notes = []

    def violate(self, check, text):
        with self.lock:
            v = self.violations.setdefault(check, [])
            v.append("t=%.1fs %s" % (now(), text))
            first = len(v) <= 5
        if first:
            log("VIOLATION %s: %s" % (check, text))

    def note(self, text):
        with self.lock:
            self.notes.append("t=%.1fs %s" % (now(), text))
        log("note: " + text)


R = Results()

CHECK_LOST = "no acknowledged write lost"
CHECK_DELETE = "no acknowledged delete came back"
CHECK_RV = "no resourceVersion going backwards"
CHECK_TWICE = "no pod bound twice"
CHECK_PARTIAL = "no gang partly bound after recovery"
CHECK_FINAL = "every Job reaches a final phase"
CHECK_KUBECTL = "every kubectl succeeds while the API server is up"
CHECK_COMPONENTS = "scheduler and controller survive every API server restart"
CHECK_NODES = "each nodes process runs until it is killed"
CHECK_RESTART = "the API server serves again after every SIGKILL"
CHECK_DELETED_PODS = "the pods of deleted Jobs are removed"
ALL_CHECKS = [CHECK_LOST, CHECK_DELETE, CHECK_RV, CHECK_TWICE, CHECK_PARTIAL, CHECK_FINAL,
              CHECK_KUBECTL, CHECK_COMPONENTS, CHECK_NODES, CHECK_RESTART, CHECK_DELETED_PODS]


class HighWater:
    """The highest resourceVersion any client of the soak has seen answered so far."""

    def __init__(self):
        self.lock = threading.Lock()
        self.rv = 0
        self.what = "start"

    def get(self):
        with self.lock:
            return self.rv, self.what

    def saw(self, rv, what):
        with self.lock:
            if rv > self.rv:
                self.rv, self.what = rv, what

    def check_write(self, rv, before, what):
        """An acknowledged write made at `rv`, sent when the mark was `before`."""
        if rv <= before[0]:
            R.violate(CHECK_RV, "%s acknowledged at resourceVersion %d, not above %d seen before "
                      "it was sent (%s)" % (what, rv, before[0], before[1]))
        self.saw(rv, what)

    def check_list(self, rv, before, what):
        if rv < before[0]:
            R.violate(CHECK_RV, "%s listed at resourceVersion %d, below %d seen before it was "
                      "sent (%s)" % (what, rv, before[0], before[1]))
        self.saw(rv, what)


HW = HighWater()


def rv_of(obj):
    try:
        return int(obj["metadata"]["resourceVersion"])
    except (KeyError, TypeError, ValueError):
        return None


# --------------------------------------------------------------------------------------------------
# HTTPS to the API server, trusting the CA in its data directory and sending its token, as the
# kubeconfig it writes tells kubectl to


class Refused(Exception):
    """The connection was refused: the request was not made."""


class Uncertain(Exception):
    """The request may or may not have been carried out."""


class Api:
    def __init__(self, host, port, data_dir):
        if host not in ("127.0.0.1", "localhost", "::1"):
            raise SystemExit("the soak runs against loopback only, not %s" % host)
        self.host, self.port = host, port
        self.tls = ssl.create_default_context(cafile=os.path.join(data_dir, "ca.crt"))
        with open(os.path.join(data_dir, "token")) as f:
            self.auth = "Bearer " + f.read().strip()

    def connection(self, timeout):
        return http.client.HTTPSConnection(self.host, self.port, timeout=timeout,
                                           context=self.tls)

    def call(self, method, path, body=None, timeout=15.0):
        """(status, parsed body or None). Raises Refused or Uncertain."""
        conn = self.connection(timeout)
        try:
            try:
                conn.connect()
            except ConnectionRefusedError as e:
                raise Refused(str(e))
            except OSError as e:
                raise Refused("connect: %s" % e)
            data = None
            headers = {"Accept": "application/json", "Authorization": self.auth}
            if body is not None:
                data = json.dumps(body).encode()
                headers["Content-Type"] = "application/json"
            try:
                conn.request(method, path, body=data, headers=headers)
                resp = conn.getresponse()
                raw = resp.read()
            except (OSError, http.client.HTTPException) as e:
                raise Uncertain("%s: %s" % (type(e).__name__, e))
            try:
                parsed = json.loads(raw) if raw else None
            except ValueError:
                parsed = None
            return resp.status, parsed
        finally:
            conn.close()

    def list(self, path, what, timeout=30.0):
        """A list's items and resourceVersion, checked against the high-water mark; None on any
        failure."""
        before = HW.get()
        try:
            status, body = self.call("GET", path, timeout=timeout)
        except (Refused, Uncertain):
            return None
        if status != 200 or not isinstance(body, dict):
            return None
        rv = rv_of(body)
        if rv is None:
            R.violate(CHECK_RV, "%s: a list without a decimal resourceVersion" % what)
            return None
        HW.check_list(rv, before, what)
        return body.get("items") or [], rv


# --------------------------------------------------------------------------------------------------
# Processes


def pdeathsig_prefix():
    """Children die with the soak even when it is SIGKILLed (PR_SET_PDEATHSIG, via setpriv)."""
    setpriv = shutil.which("setpriv")
    if setpriv:
        try:
            r = subprocess.run([setpriv, "--pdeathsig", "KILL", "true"], capture_output=True,
                               timeout=10)
            if r.returncode == 0:
                return [setpriv, "--pdeathsig", "KILL"]
        except (OSError, subprocess.SubprocessError):
            pass
    return []


PREFIX = []


class Component:
    def __init__(self, name, argv, work, ready_pattern):
        self.name, self.argv, self.work = name, argv, work
        self.ready = re.compile(ready_pattern)
        self.proc = None
        self.starts = 0
        self.out_path = self.err_path = None
        self.ready_line = None

    def start(self, argv=None, deadline_s=60.0):
        """Starts it and waits for its ready line on stdout. True when it came."""
        self.starts += 1
        base = os.path.join(self.work, "%s.%d" % (self.name, self.starts))
        self.out_path, self.err_path = base + ".out", base + ".err"
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.proc = subprocess.Popen(PREFIX + (argv or self.argv), stdin=subprocess.DEVNULL,
                                         stdout=out, stderr=err)
        with open(os.path.join(self.work, "pids"), "a") as f:
            f.write("%d %s\n" % (self.proc.pid, self.name))
        deadline = time.monotonic() + deadline_s
        while time.monotonic() < deadline:
            with open(self.out_path, errors="replace") as f:
                for line in f:
                    m = self.ready.search(line)
                    if m:
                        self.ready_line = m
                        return True
            if self.proc.poll() is not None:
                return False
            time.sleep(0.02)
        return False

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def kill(self):
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        try:
            return self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            return None

    def stop(self, seconds=10.0):
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(signal.SIGINT)
        try:
            return self.proc.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            return self.kill()

    def tail(self, n=25):
        lines = []
        for path in (self.err_path, self.out_path):
            if path and os.path.exists(path):
                with open(path, errors="replace") as f:
                    lines += ["    %s: %s" % (os.path.basename(path), l.rstrip())
                              for l in f.readlines()[-n:]]
        return "\n".join(lines)


# --------------------------------------------------------------------------------------------------
# The creator: Jobs created and deleted, every acknowledgement recorded


class JobRecord:
    def __init__(self, name, replicas, run_seconds):
        self.name, self.replicas, self.run_seconds = name, replicas, run_seconds
        # create: acked | refused | uncertain | absent (an uncertain one settled: not made)
        #         | adopted (an uncertain one settled: made)
        self.create = None
        self.uid = None
        self.create_rv = None
        self.create_t = None  # when the create was sent
        self.create_ack_t = None
        self.fail_t = None  # when an uncertain write failed
        # delete: None | acked | uncertain | refused (then None again) | settled (uncertain, gone)
        self.delete = None
        self.delete_rv = None
        self.delete_ack_t = None
        self.final_phase = None

    def live(self):
        return self.create in ("acked", "adopted") and self.delete is None


class Creator(threading.Thread):
    def __init__(self, api, rng, interval, delete_fraction):
        super().__init__(name="creator", daemon=True)
        self.api, self.rng = api, rng
        self.interval, self.delete_fraction = interval, delete_fraction
        self.stop_flag = threading.Event()
        self.lock = threading.Lock()
        self.records = {}  # name -> JobRecord
        self.n = 0
        self.counts = {"create_sent": 0, "create_acked": 0, "create_refused": 0,
                       "create_uncertain": 0, "create_rejected": 0, "delete_sent": 0,
                       "delete_acked": 0, "delete_refused": 0, "delete_uncertain": 0,
                       "delete_rejected": 0, "delete_of_running_or_pending": 0}
        self.last_ack_rv = 0
        self.write_lock = threading.Lock()  # one write at a time: the creator's or a canary
        self.journal_path = None
        self.canaries = 0

    def journal(self, op, name, uid, rv, status):
        """Every acknowledged write, one JSON line in WORK/acks.jsonl."""
        if self.journal_path:
            with open(self.journal_path, "a") as f:
                f.write(json.dumps({"t": round(now(), 3), "op": op, "name": name, "uid": uid,
                                    "resourceVersion": rv, "status": status}) + "\n")

    def canary(self, k):
        """A Job created by the chaos just before a SIGKILL of the API server: acknowledged
        milliseconds before the kill, it must be there after the restart."""
        with self.write_lock:
            rec = JobRecord("soak-canary-%03d" % k, 1, 2)
            self.create_one(rec)
            self.canaries += 1
            return rec

    def spec(self, rec):
        template = {
            "metadata": {"annotations": {"muster.dev/run-seconds": str(rec.run_seconds)}},
            "spec": {
                "restartPolicy": "Never",
                "containers": [{
                    "name": "worker", "image": "busybox",
                    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"},
                                  "limits": {"nvidia.com/gpu": "1"}},
                }],
            },
        }
        return {
            "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": rec.name, "namespace": NS, "labels": {"soak": "true"}},
            "spec": {"minAvailable": rec.replicas, "schedulerName": "volcano", "queue": QUEUE,
                     "maxRetry": 3,
                     "tasks": [{"name": "worker", "replicas": rec.replicas, "template": template}]},
        }

    def acked_rv(self, rv, before, what):
        if rv is None:
            R.violate(CHECK_RV, "%s acknowledged without a decimal resourceVersion" % what)
            return
        if rv <= self.last_ack_rv:
            R.violate(CHECK_RV, "%s acknowledged at resourceVersion %d after an earlier write at "
                      "%d" % (what, rv, self.last_ack_rv))
        self.last_ack_rv = max(self.last_ack_rv, rv)
        HW.check_write(rv, before, what)

    def create_one(self, rec=None):
        if rec is None:
            self.n += 1
            rec = JobRecord("soak-%05d" % self.n, self.rng.randint(1, 4), self.rng.randint(2, 8))
        with self.lock:
            self.records[rec.name] = rec
        body = self.spec(rec)
        before = HW.get()
        rec.create_t = now()
        self.counts["create_sent"] += 1
        try:
            status, resp = self.api.call("POST", JOBS, body, timeout=15)
        except Refused:
            rec.create = "refused"
            self.counts["create_refused"] += 1
            return
        except Uncertain as e:
            rec.create, rec.fail_t = "uncertain", now()
            self.counts["create_uncertain"] += 1
            R.note("create of %s uncertain: %s" % (rec.name, e))
            return
        if 200 <= status < 300:
            rec.uid = (resp or {}).get("metadata", {}).get("uid")
            rec.create_rv = rv_of(resp or {})
            self.acked_rv(rec.create_rv, before, "create of Job %s" % rec.name)
            with self.lock:
                rec.create, rec.create_ack_t = "acked", now()
            self.journal("create", rec.name, rec.uid, rec.create_rv, status)
            self.counts["create_acked"] += 1
        elif status >= 500 or status == 429:
            # Refused by the server (429), or a 5xx: treated as uncertain, settled by a list.
            rec.create, rec.fail_t = "uncertain", now()
            self.counts["create_uncertain"] += 1
            R.note("create of %s answered %d: %s" % (rec.name, status,
                                                     (resp or {}).get("message", "")))
        else:
            rec.create = "refused"
            self.counts["create_rejected"] += 1
            R.note("create of %s rejected with %d: %s" % (rec.name, status,
                                                          (resp or {}).get("message", "")))

    def delete_one(self, rec):
        before = HW.get()
        self.counts["delete_sent"] += 1
        body = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background",
                "preconditions": {"uid": rec.uid}}
        with self.lock:
            rec.delete = "sending"
        try:
            status, resp = self.api.call("DELETE", JOBS + "/" + rec.name, body, timeout=15)
        except Refused:
            with self.lock:
                rec.delete = None
            self.counts["delete_refused"] += 1
            return
        except Uncertain as e:
            with self.lock:
                rec.delete, rec.fail_t = "uncertain", now()
            self.counts["delete_uncertain"] += 1
            R.note("delete of %s uncertain: %s" % (rec.name, e))
            return
        if 200 <= status < 300:
            rv = rv_of(resp or {}) if (resp or {}).get("kind") == "Job" else None
            if rv is not None:
                self.acked_rv(rv, before, "delete of Job %s" % rec.name)
            with self.lock:
                rec.delete, rec.delete_rv, rec.delete_ack_t = "acked", rv, now()
            self.journal("delete", rec.name, rec.uid, rv, status)
            self.counts["delete_acked"] += 1
        elif status == 404 and rec.create == "acked":
            with self.lock:
                rec.delete = "acked"  # gone, as far as the rest of the soak goes
                rec.delete_ack_t = now()
            R.violate(CHECK_LOST, "Job %s (uid %s, created at resourceVersion %s) not found when "
                      "deleted: %s" % (rec.name, rec.uid, rec.create_rv,
                                       (resp or {}).get("message", "")))
        elif status >= 500 or status == 429:
            with self.lock:
                rec.delete, rec.fail_t = "uncertain", now()
            self.counts["delete_uncertain"] += 1
        else:
            with self.lock:
                rec.delete = None
            self.counts["delete_rejected"] += 1
            R.note("delete of %s answered %d: %s" % (rec.name, status,
                                                     (resp or {}).get("message", "")))

    def run(self):
        while not self.stop_flag.is_set():
            with self.write_lock:
                self.step()
            self.stop_flag.wait(self.interval * self.rng.uniform(0.5, 1.5))

    def step(self):
        roll = self.rng.random()
        pick = self.rng.random()
        if roll < self.delete_fraction:
            # A Job created in the last 15 s: most of them are pending or running.
            with self.lock:
                recent = [r for r in self.records.values()
                          if r.live() and r.create_ack_t is not None
                          and now() - r.create_ack_t < 15 and not r.name.startswith("soak-canary")]
            if recent:
                rec = recent[int(pick * len(recent))]
                self.counts["delete_of_running_or_pending"] += 1
                self.delete_one(rec)
                return
        self.create_one()

    def snapshot(self):
        with self.lock:
            return list(self.records.values())


# --------------------------------------------------------------------------------------------------
# Pods and nodes: bound twice


class Bindings:
    def __init__(self):
        self.lock = threading.Lock()
        self.node_of = {}  # pod uid -> (node, "ns/name")
        self.bind_times = []  # when the watch first saw each pod with a node

    def saw(self, pod, source, watched=False):
        m = pod.get("metadata", {})
        uid = m.get("uid")
        node = (pod.get("spec") or {}).get("nodeName") or ""
        if not uid or not node:
            return
        key = "%s/%s" % (m.get("namespace"), m.get("name"))
        with self.lock:
            old = self.node_of.get(uid)
            if old is None:
                self.node_of[uid] = (node, key)
                if watched:
                    self.bind_times.append(now())
                return
        if old[0] != node:
            R.violate(CHECK_TWICE, "pod %s (uid %s) on node %s, then on %s (%s)"
                      % (key, uid, old[0], node, source))

    def bound(self):
        with self.lock:
            return len(self.node_of)


B = Bindings()


# --------------------------------------------------------------------------------------------------
# The watcher


class Watcher(threading.Thread):
    def __init__(self, api):
        super().__init__(name="watcher", daemon=True)
        self.api = api
        self.stop_flag = threading.Event()
        self.conn = None
        self.conn_lock = threading.Lock()
        self.last_rv = None
        self.events = self.bookmarks = self.reconnects = self.relists = self.errors = 0
        self.streams = self.expired = 0
        self.last_rv_pending_relist = True

    def stop(self):
        self.stop_flag.set()
        with self.conn_lock:
            if self.conn is not None and self.conn.sock is not None:
                try:
                    self.conn.sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def relist(self):
        got = self.api.list(ALL_PODS, "the watcher's relist")
        if got is None:
            return False
        items, rv = got
        if self.last_rv is not None and rv < self.last_rv:
            R.violate(CHECK_RV, "the watcher relisted at resourceVersion %d after seeing %d"
                      % (rv, self.last_rv))
        for pod in items:
            B.saw(pod, "relist at %d" % rv)
        self.last_rv = rv if self.last_rv is None else max(rv, self.last_rv)
        self.relists += 1
        return True

    def stream(self):
        q = urllib.parse.urlencode({"watch": "true", "resourceVersion": str(self.last_rv),
                                    "allowWatchBookmarks": "true", "timeoutSeconds": "120"})
        conn = self.api.connection(60)
        with self.conn_lock:
            self.conn = conn
        try:
            conn.request("GET", ALL_PODS + "?" + q,
                         headers={"Accept": "application/json", "Authorization": self.api.auth})
            resp = conn.getresponse()
            if resp.status == 410:
                self.last_rv_expired()
                return
            if resp.status != 200:
                self.errors += 1
                resp.read()
                time.sleep(0.5)
                return
            self.streams += 1
            while not self.stop_flag.is_set():
                line = resp.readline()
                if not line:
                    return
                line = line.strip()
                if not line:
                    continue
                try:
                    ev = json.loads(line)
                except ValueError:
                    self.errors += 1
                    R.note("the watch sent a line that is not JSON: %r" % line[:200])
                    return
                typ, obj = ev.get("type"), ev.get("object") or {}
                if typ == "ERROR":
                    if obj.get("code") == 410:
                        self.last_rv_expired()
                    else:
                        self.errors += 1
                        R.note("watch ERROR event: %s" % json.dumps(obj)[:300])
                    return
                rv = rv_of(obj)
                if rv is None:
                    R.violate(CHECK_RV, "a %s watch event without a decimal resourceVersion"
                              % typ)
                    continue
                if typ == "BOOKMARK":
                    self.bookmarks += 1
                    if rv < self.last_rv:
                        R.violate(CHECK_RV, "a BOOKMARK at resourceVersion %d after an event at "
                                  "%d" % (rv, self.last_rv))
                else:
                    self.events += 1
                    if rv <= self.last_rv:
                        m = obj.get("metadata", {})
                        R.violate(CHECK_RV, "watch event %s %s/%s at resourceVersion %d after "
                                  "one at %d" % (typ, m.get("namespace"), m.get("name"), rv,
                                                 self.last_rv))
                    if typ in ("ADDED", "MODIFIED"):
                        B.saw(obj, "watch %s at %d" % (typ, rv), watched=True)
                HW.saw(rv, "watch event")
                self.last_rv = max(self.last_rv, rv)
        finally:
            with self.conn_lock:
                self.conn = None
            conn.close()

    def last_rv_expired(self):
        self.expired += 1
        self.last_rv_pending_relist = True

    def run(self):
        while not self.stop_flag.is_set():
            try:
                if self.last_rv_pending_relist:
                    if not self.relist():
                        self.stop_flag.wait(0.2)
                        continue
                    self.last_rv_pending_relist = False
                self.stream()
            except (OSError, http.client.HTTPException):
                pass
            if not self.stop_flag.is_set():
                self.reconnects += 1
                self.stop_flag.wait(0.1)


# --------------------------------------------------------------------------------------------------
# kubectl


class Kubectl(threading.Thread):
    def __init__(self, kubectl, kubeconfig, work, pause):
        super().__init__(name="kubectl", daemon=True)
        self.argv = PREFIX + [kubectl, "--kubeconfig", kubeconfig, "--cache-dir",
                              os.path.join(work, "kubectl-cache"), "--request-timeout=20s",
                              "get", "pods", "-A"]
        self.pause = pause
        self.stop_flag = threading.Event()
        self.runs = []  # (start, end, ok, error)
        self.lock = threading.Lock()

    def run(self):
        while not self.stop_flag.is_set():
            t0 = now()
            try:
                r = subprocess.run(self.argv, capture_output=True, timeout=40)
                ok, err = r.returncode == 0, r.stderr.decode(errors="replace").strip()[-300:]
            except subprocess.TimeoutExpired:
                ok, err = False, "no answer in 40 s"
            with self.lock:
                self.runs.append((t0, now(), ok, "" if ok else err))
            self.stop_flag.wait(self.pause)

    def snapshot(self):
        with self.lock:
            return list(self.runs)


# --------------------------------------------------------------------------------------------------
# Gangs


class Sampler(threading.Thread):
    """Samples the soak's active pods (one list, one resourceVersion) for partly bound gangs."""

    def __init__(self, api, creator, period, settle, recovered_at):
        super().__init__(name="sampler", daemon=True)
        self.api, self.creator, self.period, self.settle = api, creator, period, settle
        self.recovered_at = recovered_at  # callable: the last API server recovery (soak time)
        self.stop_flag = threading.Event()
        self.wake = threading.Event()
        self.lock = threading.Lock()
        self.partial_since = {}  # (job uid, bound pod uids) -> first time seen
        self.samples = self.partial_seen = 0
        self.after_recovery = 0
        self.longest_partial = 0.0

    def sample(self, final=False, after_recovery=False):
        # The gangs: the soak's own Jobs (minAvailable = replicas), those not being deleted.
        with self.creator.lock:
            job_of = {r.uid: (r.name, r.replicas) for r in self.creator.records.values()
                      if r.uid and r.live()}
        pods = self.api.list(ACTIVE_PODS, "a gang sample's pods")
        if pods is None:
            return None
        t = now()
        bound, waiting = {}, {}
        for p in pods[0]:
            B.saw(p, "gang sample")
            m = p.get("metadata", {})
            if m.get("deletionTimestamp"):
                continue
            if (p.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            owner = [o.get("uid") for o in m.get("ownerReferences") or [] if o.get("controller")]
            if not owner or owner[0] not in job_of:
                continue
            if (p.get("spec") or {}).get("nodeName"):
                bound.setdefault(owner[0], []).append(m.get("uid"))
            else:
                waiting[owner[0]] = waiting.get(owner[0], 0) + 1
        partial = {}
        for uid, pod_uids in bound.items():
            name, minimum = job_of[uid]
            if 0 < len(pod_uids) < minimum and waiting.get(uid, 0) > 0:
                partial[(uid, tuple(sorted(pod_uids)))] = (name, len(pod_uids), minimum,
                                                           waiting[uid])
        settled = t - self.recovered_at() >= self.settle
        with self.lock:
            self.samples += 1
            if after_recovery:
                self.after_recovery += 1
            if partial:
                self.partial_seen += len(partial)
            kept = {}
            for key, (name, b, minimum, w) in partial.items():
                since = self.partial_since.get(key, t)
                kept[key] = since
                self.longest_partial = max(self.longest_partial, t - since)
                what = "Job %s: %d of minAvailable %d pods bound, %d waiting" % (name, b, minimum,
                                                                                w)
                if final:
                    R.violate(CHECK_PARTIAL, "at the end, " + what)
                elif settled and t - since >= 3.0:
                    R.violate(CHECK_PARTIAL, "%s for %.1f s (sample %.1f s after the last API "
                              "server recovery)" % (what, t - since, t - self.recovered_at()))
                else:
                    log("gang sample: %s (transient so far)" % what)
            self.partial_since = kept
        return partial

    def run(self):
        while not self.stop_flag.is_set():
            after = self.wake.is_set()
            self.wake.clear()
            try:
                self.sample(after_recovery=after)
            except (OSError, http.client.HTTPException, ValueError):
                pass
            self.wake.wait(self.period)


# --------------------------------------------------------------------------------------------------
# Writes: lost, come back, settled


def check_writes(api, creator, final=False, settle_after=60.0):
    """One list of the soak's Jobs against every acknowledged write made before it was sent.
    Returns {name: job} or None when the list failed."""
    sent = now()
    got = api.list(JOBS, "the write check's Jobs")
    if got is None:
        return None
    items, list_rv = got
    jobs = {j["metadata"]["name"]: j for j in items}
    lost = came_back = 0
    with creator.lock:
        for rec in creator.records.values():
            obj = jobs.get(rec.name)
            uid = obj["metadata"].get("uid") if obj else None
            if rec.create in ("uncertain", "absent"):
                if obj is not None:
                    if rec.create == "absent":
                        R.note("Job %s, whose create was uncertain, appeared late" % rec.name)
                    rec.create, rec.uid = "adopted", uid
                elif rec.create == "uncertain" and (final or sent - rec.fail_t >= settle_after):
                    rec.create = "absent"
                continue
            if rec.create not in ("acked", "adopted"):
                continue
            if rec.create == "acked" and rec.create_ack_t is not None and rec.create_ack_t >= sent:
                continue  # acknowledged after the list was sent
            if rec.delete is None or rec.delete == "sending":
                if rec.delete == "sending":
                    continue
                if obj is None or uid != rec.uid:
                    lost += 1
                    R.violate(CHECK_LOST, "Job %s (uid %s, create acknowledged at "
                              "resourceVersion %s, t=%.1fs) %s in a list at resourceVersion %d"
                              % (rec.name, rec.uid, rec.create_rv, rec.create_ack_t or -1,
                                 "missing" if obj is None else "has uid %s" % uid, list_rv))
                    rec.delete = "lost"  # reported once
                elif rec.create_rv is not None and rv_of(obj) is not None \
                        and rv_of(obj) < rec.create_rv:
                    R.violate(CHECK_RV, "Job %s listed at resourceVersion %d, below its "
                              "acknowledged create at %d" % (rec.name, rv_of(obj), rec.create_rv))
                if obj is not None and uid == rec.uid:
                    phase = ((obj.get("status") or {}).get("state") or {}).get("phase")
                    rec.final_phase = phase if phase in FINAL_PHASES else None
            elif rec.delete == "acked":
                if rec.delete_ack_t is not None and rec.delete_ack_t >= sent:
                    continue
                if obj is not None and uid == rec.uid and \
                        not obj["metadata"].get("deletionTimestamp"):
                    came_back += 1
                    R.violate(CHECK_DELETE, "Job %s (uid %s, delete acknowledged at "
                              "resourceVersion %s, t=%.1fs) back in a list at resourceVersion %d"
                              % (rec.name, rec.uid, rec.delete_rv, rec.delete_ack_t, list_rv))
                    rec.delete = "came back"  # reported once
            elif rec.delete == "uncertain":
                if final or sent - rec.fail_t >= settle_after:
                    if obj is not None and uid == rec.uid and \
                            not obj["metadata"].get("deletionTimestamp"):
                        rec.delete = None  # not carried out: live again
                    else:
                        rec.delete = "settled"
        known = set(creator.records)
    for name in jobs:
        if name not in known:
            R.note("a Job the soak did not create: %s" % name)
    return jobs


# --------------------------------------------------------------------------------------------------
# The soak


def schedule(minutes, api_period, nodes_period):
    duration = minutes * 60.0
    events = []
    k = 1
    while k * api_period < duration - 1e-9:
        events.append((k * api_period, "apiserver"))
        k += 1
    k = 1
    while k * nodes_period < duration - 1e-9:
        events.append((k * nodes_period, "nodes"))
        k += 1
    events.sort(key=lambda e: (e[0], e[1] != "apiserver"))
    return duration, events


def free_port():
    """A free loopback port below the ephemeral range (ip_local_port_range)."""
    low = 32768
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        pass
    top = max(low - 1, 2048)
    pick = random.Random()
    for _ in range(200):
        port = pick.randint(max(1025, top - 12000), top)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue
    return 0


def percentile(values, p):
    if not values:
        return 0.0
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100.0 * (len(v) - 1))))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--muster")
    ap.add_argument("--cluster")
    ap.add_argument("--work")
    ap.add_argument("--kubectl", default="/usr/bin/kubectl")
    ap.add_argument("--minutes", type=float, default=3.0)
    ap.add_argument("--seed", type=int, default=18)
    ap.add_argument("--apiserver-period", type=float, default=None,
                    help="seconds between API server kills (default 120; 60 for --minutes <= 5)")
    ap.add_argument("--nodes-period", type=float, default=None,
                    help="seconds between nodes kills (default 180; 90 for --minutes <= 5)")
    ap.add_argument("--down-seconds", type=float, default=2.0,
                    help="how long the API server stays down after each SIGKILL, on average "
                    "(each time 0.1 to 1.5 times it, drawn from --seed)")
    ap.add_argument("--create-interval", type=float, default=1.2,
                    help="mean seconds between two of the creator's writes")
    ap.add_argument("--delete-fraction", type=float, default=0.2)
    ap.add_argument("--settle", type=float, default=5.0,
                    help="seconds the scheduler gets after an API server recovery")
    ap.add_argument("--sample-period", type=float, default=3.0)
    ap.add_argument("--kubectl-pause", type=float, default=0.5)
    ap.add_argument("--final-wait", type=float, default=120.0)
    ap.add_argument("--fault-stale-store", action="store_true",
                    help="to see the checks fail: from the second API server restart on, restart "
                    "it on a copy of the data directory taken at the first (writes lost, "
                    "resourceVersions going back)")
    ap.add_argument("--summary", help="also write the figures as JSON to this file")
    ap.add_argument("--print-schedule", action="store_true",
                    help="print the restart schedule and exit")
    args = ap.parse_args()
    short = args.minutes <= 5
    api_period = args.apiserver_period or (60.0 if short else 120.0)
    nodes_period = args.nodes_period or (90.0 if short else 180.0)
    duration, events = schedule(args.minutes, api_period, nodes_period)
    if args.print_schedule:
        print("soak of %.1f min: API server every %.0f s, nodes every %.0f s" %
              (args.minutes, api_period, nodes_period))
        for t, what in events:
            print("  %6.0f s  SIGKILL %s" % (t, what))
        print("%d API server restarts, %d nodes restarts" %
              (sum(1 for e in events if e[1] == "apiserver"),
               sum(1 for e in events if e[1] == "nodes")))
        return 0
    for need in ("muster", "cluster", "work"):
        if not getattr(args, need):
            ap.error("--%s is required" % need)

    def on_signal(signum, _frame):
        raise Stop("signal %d" % signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    global PREFIX
    PREFIX = pdeathsig_prefix()

    work = os.path.abspath(args.work)
    data = os.path.join(work, "data")
    os.makedirs(work, exist_ok=True)
    muster = os.path.abspath(args.muster)
    kubeconfig = os.path.join(work, "kubeconfig")
    apiserver = Component("apiserver", None, work, r"^listening on (127\.0\.0\.1):(\d+)")
    comps = [apiserver]
    threads = []
    outages = []  # [kill_t, serving_t or None]
    launches = []  # when each restart was started
    restart_figures = {"apiserver": [], "nodes": []}
    died = {}
    ok_exit = False
    try:
        log("soak of %.1f min, seed %d: API server SIGKILLed every %.0f s, nodes every %.0f s; "
            "work in %s" % (args.minutes, args.seed, api_period, nodes_period, work))
        # A port below the ephemeral range, so that no client's outgoing connection can hold it
        # while the server is down (a restart binds it again).
        for _ in range(5):
            apiserver.argv = [muster, "apiserver", "--data-dir", data, "--listen",
                              "127.0.0.1:%d" % free_port()]
            if apiserver.start():
                break
            apiserver.kill()
        else:
            R.violate(CHECK_RESTART, "muster apiserver did not start:\n" + apiserver.tail())
            return finish(args, None, None, None, None, None, outages, restart_figures, comps)
        host, port = apiserver.ready_line.group(1), int(apiserver.ready_line.group(2))
        served = os.path.join(data, "kubeconfig")
        for _ in range(100):
            if os.path.exists(served):
                break
            time.sleep(0.05)
        api = Api(host, port, data)
        shutil.copyfile(served, kubeconfig)  # the clients' own copy: no torn reads mid-restart
        with open(kubeconfig) as f:
            first_kubeconfig = f.read()
        apiserver.argv = [muster, "apiserver", "--data-dir", data, "--listen",
                          "%s:%d" % (host, port)]

        for path, body in ((
                "/api/v1/namespaces",
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}), (
                "/apis/scheduling.volcano.sh/v1beta1/queues",
                {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                 "metadata": {"name": QUEUE}, "spec": {"weight": 1, "reclaimable": False}})):
            try:
                status, resp = api.call("POST", path, body)
            except (Refused, Uncertain) as e:
                status, resp = 0, str(e)
            if status not in (200, 201, 409):
                R.violate(CHECK_RESTART, "creating %s: %d %s" % (path, status, resp))
                return finish(args, None, None, None, None, None, outages, restart_figures,
                              comps)

        common = ["--kubeconfig", kubeconfig]
        scheduler = Component("scheduler", [muster, "scheduler", *common, "--leader-elect=false",
                                            "--listen-address", "127.0.0.1:0"], work,
                              r"^scheduler running against")
        controller = Component("controller", [muster, "controller", *common,
                                              "--leader-elect=false", "--listen-address",
                                              "127.0.0.1:0"], work,
                               r"^job controller running against")
        nodes = Component("nodes", [muster, "nodes", "--config", os.path.abspath(args.cluster),
                                    *common, "--data-dir", os.path.join(work, "nodes")], work,
                          r"registered at")
        for c in (scheduler, controller, nodes):
            comps.append(c)
            if not c.start():
                R.violate(CHECK_COMPONENTS, "muster %s did not start:\n%s" % (c.name, c.tail()))
                return finish(args, None, None, None, None, None, outages, restart_figures,
                              comps)
        log("apiserver on %s:%d, scheduler, controller and nodes running" % (host, port))

        def recovered_at():
            done = [o[1] for o in outages if o[1] is not None]
            return done[-1] if done else -1e9

        rng = random.Random(args.seed)
        down_rng = random.Random(args.seed + 1)
        creator = Creator(api, rng, args.create_interval, args.delete_fraction)
        creator.journal_path = os.path.join(work, "acks.jsonl")
        watcher = Watcher(api)
        kubectl = Kubectl(args.kubectl, kubeconfig, work, args.kubectl_pause)
        sampler = Sampler(api, creator, args.sample_period, args.settle, recovered_at)
        threads = [watcher, kubectl, sampler, creator]
        for t in threads:
            t.start()
        soak_start = now()
        pending_checks = []  # soak times at which to check writes (after a recovery)

        def watch_components():
            for c in (scheduler, controller):
                if c.name not in died and not c.alive():
                    died[c.name] = (now(), c.proc.returncode)
                    R.violate(CHECK_COMPONENTS, "muster %s exited with status %s at t=%.1fs "
                              "(%d API server restarts so far):\n%s"
                              % (c.name, c.proc.returncode, now(),
                                 len(restart_figures["apiserver"]), c.tail()))
            if nodes.proc is not None and not nodes.alive() and "nodes" not in died:
                died["nodes"] = (now(), nodes.proc.returncode)
                R.violate(CHECK_NODES, "muster nodes (start %d) exited by itself with status "
                          "%s:\n%s" % (nodes.starts, nodes.proc.returncode, nodes.tail()))

        def tick(until):
            while now() < until:
                watch_components()
                while pending_checks and pending_checks[0] <= now():
                    pending_checks.pop(0)
                    sampler.wake.set()
                    check_writes(api, creator)
                time.sleep(0.1)

        for at, what in events:
            tick(soak_start + at)
            if what == "apiserver":
                canary = creator.canary(len(outages) + 1)
                kill_t = now()
                rc = apiserver.kill()
                if canary.create == "acked":
                    log("Job %s acknowledged %.0f ms before the SIGKILL" %
                        (canary.name, (kill_t - canary.create_ack_t) * 1000))
                outage = [kill_t, None]
                outages.append(outage)
                down = args.down_seconds * down_rng.uniform(0.1, 1.5)
                log("SIGKILLed muster apiserver (status %s); restarting it in %.1f s"
                    % (rc, down))
                tick(kill_t + down)
                if args.fault_stale_store:
                    stale = os.path.join(work, "stale-data")
                    if os.path.isdir(stale):
                        log("fault: the API server restarts on the data directory as it was at "
                            "the previous restart")
                        shutil.rmtree(data)
                        shutil.copytree(stale, data)
                    else:
                        shutil.copytree(data, stale)
                launches.append(now())
                up = False
                for attempt in range(5):
                    if apiserver.start(deadline_s=30):
                        up = True
                        break
                    # Another try keeps the soak going; the failed one is a failure all the same.
                    R.violate(CHECK_RESTART, "restart %d of muster apiserver (try %d) did not "
                              "serve (status %s):\n%s"
                              % (len(restart_figures["apiserver"]) + 1, attempt + 1,
                                 apiserver.proc.poll(), apiserver.tail(10)))
                    apiserver.kill()
                    time.sleep(1)
                outage[1] = now()
                if not up:
                    R.violate(CHECK_RESTART, "muster apiserver did not serve again:\n%s"
                              % apiserver.tail())
                    break
                restart_figures["apiserver"].append(
                    {"kill_t": round(kill_t, 2), "launch_t": round(launches[-1], 2),
                     "serving_after_s": round(outage[1] - kill_t, 3),
                     "down_s": round(down, 3),
                     "restart_s": round(outage[1] - launches[-1], 3)})
                log("muster apiserver serving again %.2f s after the SIGKILL" %
                    (outage[1] - kill_t))
                served_now = open(served).read() if os.path.exists(served) else ""
                if served_now != first_kubeconfig:
                    R.note("the restarted API server wrote another kubeconfig")
                pending_checks.append(now() + args.settle)
            else:
                watch_components()
                was_alive = nodes.alive()
                kill_t = now()
                rc = nodes.kill()
                if was_alive:
                    log("SIGKILLed muster nodes (status %s); restarting it" % rc)
                if not nodes.start(deadline_s=60):
                    R.violate(CHECK_NODES, "muster nodes did not start again:\n" + nodes.tail())
                    break
                died.pop("nodes", None)
                restart_figures["nodes"].append({"kill_t": round(kill_t, 2),
                                                 "registered_after_s": round(now() - kill_t, 3)})
                log("muster nodes running again %.2f s after the SIGKILL" % (now() - kill_t))
        tick(soak_start + duration)
        pending_checks.clear()

        # --- the end: no more writes; every Job must reach a final phase ----------------------
        creator.stop_flag.set()
        creator.join(timeout=30)
        log("stopped creating; waiting up to %.0f s for every Job to reach a final phase"
            % args.final_wait)
        deadline = now() + args.final_wait
        waited_from = now()
        while True:
            watch_components()
            jobs = check_writes(api, creator, final=True)
            if jobs is not None:
                recs = creator.snapshot()
                left = [r for r in recs if r.live() and r.final_phase is None]
                deleted_uids = {r.uid for r in recs if r.delete in ("acked", "settled")}
                deleted_left = [j for j in jobs.values()
                                if j["metadata"].get("uid") in deleted_uids]
                pods = api.list(PODS, "the final wait's pods")
                orphans = []
                if pods is not None:
                    orphans = [p for p in pods[0]
                               if any(o.get("uid") in deleted_uids
                                      for o in p["metadata"].get("ownerReferences") or [])]
                if not left and not deleted_left and pods is not None and not orphans:
                    break
                if now() >= deadline:
                    for r in left[:20]:
                        j = jobs.get(r.name) or {}
                        R.violate(CHECK_FINAL, "Job %s (%d replicas, created t=%.1fs) still %s"
                                  % (r.name, r.replicas, r.create_t,
                                     json.dumps((j.get("status") or {}).get("state")
                                                or "without a state")))
                    if len(left) > 20:
                        R.violate(CHECK_FINAL, "... and %d more Jobs" % (len(left) - 20))
                    for j in deleted_left[:10]:
                        R.violate(CHECK_DELETE, "Job %s (uid %s) deleted but still there %.0f s "
                                  "after the end: %s" % (j["metadata"]["name"],
                                                         j["metadata"]["uid"], args.final_wait,
                                                         json.dumps(j["metadata"])[:300]))
                    for p in orphans[:10]:
                        R.violate(CHECK_DELETED_PODS, "pod %s of a deleted Job still there"
                                  % p["metadata"]["name"])
                    break
            elif now() >= deadline:
                R.violate(CHECK_FINAL, "no list of Jobs answered in the final %.0f s"
                          % args.final_wait)
                break
            time.sleep(2)
        final_wait_s = now() - waited_from
        sampler.stop_flag.set()
        sampler.wake.set()
        sampler.join(timeout=30)
        sampler.sample(final=True)

        # Scheduled events naming two nodes for one pod.
        ev = api.list(EVENTS, "the events")
        scheduled, scheduled_count = {}, {}
        if ev is not None:
            for e in ev[0]:
                if e.get("reason") != "Scheduled":
                    continue
                m = re.search(r" to (\S+)$", e.get("message", ""))
                uid = (e.get("involvedObject") or {}).get("uid")
                if m and uid:
                    scheduled.setdefault(uid, set()).add(m.group(1))
                    scheduled_count[uid] = (scheduled_count.get(uid, 0)
                                            + max(1, e.get("count") or 1))
            for uid, where in scheduled.items():
                if len(where) > 1:
                    R.violate(CHECK_TWICE, "pod uid %s has Scheduled events to %s"
                              % (uid, ", ".join(sorted(where))))
                node = B.node_of.get(uid)
                if node and node[0] not in where:
                    R.violate(CHECK_TWICE, "pod %s (uid %s) on %s, its Scheduled event says %s"
                              % (node[1], uid, node[0], ", ".join(sorted(where))))

        watch_components()
        for t in (kubectl, watcher):
            t.stop_flag.set()
        watcher.stop()
        for t in (kubectl, watcher):
            t.join(timeout=45)
        ok_exit = True
        return finish(args, creator, watcher, kubectl, sampler, final_wait_s, outages,
                      restart_figures, comps, scheduled_events=len(scheduled),
                      scheduled_twice=sum(1 for n in scheduled_count.values() if n > 1))
    except Stop as e:
        log("stopped by %s" % e)
        return 130
    finally:
        for t in threads:
            if hasattr(t, "stop_flag"):
                t.stop_flag.set()
            if isinstance(t, Watcher):
                t.stop()
        # Clients first, the API server last; SIGINT, then SIGKILL after 10 s.
        for c in reversed(comps):
            if c.alive():
                rc = c.stop(10)
                if ok_exit and c.name in ("scheduler", "controller") and rc not in (0, 130, -2):
                    log("muster %s exited with status %s when stopped" % (c.name, rc))


def finish(args, creator, watcher, kubectl, sampler, final_wait_s, outages, restarts, comps,
           scheduled_events=0, scheduled_twice=0):
    fig = {"minutes": args.minutes, "seed": args.seed, "wall_s": round(now(), 1)}
    fig["apiserver_restarts"] = len(restarts["apiserver"])
    fig["nodes_restarts"] = len(restarts["nodes"])
    if creator is not None:
        c = dict(creator.counts)
        recs = creator.snapshot()
        phases = {}
        for r in recs:
            if r.live():
                phases[r.final_phase or "not final"] = phases.get(r.final_phase or "not final",
                                                                  0) + 1
        c["jobs_live_at_end"] = sum(1 for r in recs if r.live())
        c["canaries"] = creator.canaries
        c["jobs_adopted"] = sum(1 for r in recs if r.create == "adopted")
        c["final_phases"] = phases
        fig["jobs"] = c
        fig["pods_bound"] = B.bound()
        fig["pods_with_scheduled_events"] = scheduled_events
        fig["pods_with_two_scheduled_events_same_node"] = scheduled_twice
    if kubectl is not None:
        runs = kubectl.snapshot()

        def in_outage(s, e):
            for k, srv in outages:
                if s <= (srv if srv is not None else 1e18) and e >= k:
                    return True
            return False

        up = [r for r in runs if not in_outage(r[0], r[1])]
        down = [r for r in runs if in_outage(r[0], r[1])]
        lat = [r[1] - r[0] for r in up if r[2]]
        fails_up = [r for r in up if not r[2]]
        for s, e, _, err in fails_up[:10]:
            R.violate(CHECK_KUBECTL, "kubectl at t=%.1f-%.1fs failed: %s" % (s, e, err))
        if len(fails_up) > 10:
            R.violate(CHECK_KUBECTL, "... and %d more" % (len(fails_up) - 10))
        recover, recover_restart = [], []
        for i, (k, srv) in enumerate(outages):
            after = [r for r in runs if r[0] >= k and r[2]]
            if after:
                recover.append(round(after[0][1] - k, 2))
                if i < len(restarts["apiserver"]):
                    recover_restart.append(
                        round(after[0][1] - restarts["apiserver"][i]["launch_t"], 2))
        fig["kubectl"] = {
            "runs": len(runs), "while_up": len(up), "failed_while_up": len(fails_up),
            "while_down_or_overlapping": len(down),
            "failed_while_down": sum(1 for r in down if not r[2]),
            "latency_up_p50_s": round(percentile(lat, 50), 3),
            "latency_up_p99_s": round(percentile(lat, 99), 3),
            "latency_up_max_s": round(max(lat) if lat else 0.0, 3),
            "first_success_after_kill_s": recover,
            "first_success_after_restart_s": recover_restart,
        }
        fig["recovery_max_s"] = max(recover_restart) if recover_restart else None
    if watcher is not None:
        fig["watch"] = {"events": watcher.events, "bookmarks": watcher.bookmarks,
                        "streams": watcher.streams, "reconnect_attempts": watcher.reconnects,
                        "lists": watcher.relists, "expired_410": watcher.expired,
                        "errors": watcher.errors}
        firsts = []
        with B.lock:
            times = list(B.bind_times)
        for k, srv in outages:
            if srv is None:
                continue
            later = [t for t in times if t >= srv]
            if later:
                firsts.append(round(later[0] - k, 2))
        fig["first_bind_after_kill_s"] = firsts
    if sampler is not None:
        fig["gang_samples"] = sampler.samples
        fig["gang_samples_after_recovery"] = sampler.after_recovery
        fig["partial_gang_observations"] = sampler.partial_seen
        fig["longest_partial_s"] = round(sampler.longest_partial, 2)
    fig["restarts"] = restarts
    fig["final_wait_s"] = round(final_wait_s, 1) if final_wait_s is not None else None

    print("\n--- figures ---", flush=True)
    print(json.dumps(fig, indent=2, sort_keys=True), flush=True)
    if args.summary:
        with open(args.summary, "w") as f:
            json.dump(fig, f, indent=2, sort_keys=True)
    print("\n--- checks ---", flush=True)
    failed = 0
    complete = creator is not None
    for name in ALL_CHECKS:
        v = R.violations.get(name)
        if v:
            failed += 1
            print("FAIL " + name)
            for line in v[:25]:
                for part in line.splitlines():
                    print("    " + part)
            if len(v) > 25:
                print("    ... %d more" % (len(v) - 25))
        elif complete:
            print("PASS " + name)
    if not complete:
        failed += 1
        print("FAIL the soak did not run to its end")
    if R.notes:
        print("\n--- notes ---")
        for n in R.notes[:40]:
            print("  " + n.replace("\n", "\n    "))
        if len(R.notes) > 40:
            print("  ... %d more" % (len(R.notes) - 40))
    if failed:
        print("\n--- component logs (tails) ---")
        for c in comps:
            print("  muster %s (%d starts):" % (c.name, c.starts))
            print(c.tail(15))
    passed = len(ALL_CHECKS) - sum(1 for n in ALL_CHECKS if R.violations.get(n))
    print("%d passed, %d failed" % (passed if complete else 0, failed), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
