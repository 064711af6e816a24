#!/usr/bin/python3
"""Samples a cluster's Volcano Jobs every second (kubectl get pods,vcjob -o json) for the kube/*
failover suite and writes what it saw as JSON lines:

  {"t": 12.0, "wall": 1764612345.5, "partial": {"ns/job": [bound, min]}, "pods": N}      one per sample
  {"twice": ["ns/pod uid: node-a then node-b"]}                    a pod bound to a second node

A gang is *partly bound* when between 1 and minAvailable-1 of its active pods (not Succeeded,
Failed or being deleted) have a node while others of it wait. Runs until the file STOP exists.

Usage: gang_sampler.py KUBECTL OUT STOP
"""
import json
import os
import subprocess
import sys
import time


def main():
    kubectl, out_path, stop = sys.argv[1], sys.argv[2], sys.argv[3]
    nodes_of = {}  # pod uid -> node
    start = time.monotonic()
    with open(out_path, "w") as out:
        while not os.path.exists(stop):
            t = time.monotonic() - start
            try:
                raw = subprocess.run([kubectl, "get", "pods,vcjob", "-A", "-o", "json",
                                      "--request-timeout=10s"],
                                     capture_output=True, timeout=20, check=True).stdout
                items = json.loads(raw).get("items", [])
            except (subprocess.SubprocessError, ValueError) as e:
                out.write(json.dumps({"t": t, "error": str(e)[:200]}) + "\n")
                out.flush()
                time.sleep(1)
                continue
            minimum = {}
            for o in items:
                if o.get("kind") == "Job":
                    m = o["metadata"]
                    minimum[m["namespace"] + "/" + m["name"]] = o["spec"].get("minAvailable", 0)
            bound, waiting, pods, twice = {}, {}, 0, []
            for o in items:
                if o.get("kind") != "Pod":
                    continue
                m = o["metadata"]
                job = m.get("labels", {}).get("volcano.sh/job-name")
                if not job:
                    continue
                pods += 1
                key = m["namespace"] + "/" + job
                node = o["spec"].get("nodeName", "")
                uid = m["uid"]
                if node:
                    seen = nodes_of.setdefault(uid, node)
                    if seen != node:
                        twice.append("%s/%s %s: %s then %s" % (m["namespace"], m["name"], uid,
                                                               seen, node))
                phase = o.get("status", {}).get("phase", "")
                if phase in ("Succeeded", "Failed") or m.get("deletionTimestamp"):
                    continue
                if node:
                    bound[key] = bound.get(key, 0) + 1
                else:
                    waiting[key] = waiting.get(key, 0) + 1
            partial = {k: [b, minimum[k]] for k, b in bound.items()
                       if k in minimum and 0 < b < minimum[k] and waiting.get(k, 0) > 0}
            out.write(json.dumps({"t": round(t, 2), "wall": round(time.time(), 2),
                                  "partial": partial, "pods": pods}) + "\n")
            if twice:
                out.write(json.dumps({"twice": twice}) + "\n")
            out.flush()
            time.sleep(max(0.0, 1.0 - (time.monotonic() - start - t)))


if __name__ == "__main__":
    main()
