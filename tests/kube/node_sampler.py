#!/usr/bin/python3
"""Samples a cluster for tests/kube/flood_e2e.sh until the file STOP exists: each sample sums, per
node, the requests (cpu, memory, nvidia.com/gpu) and the count of the pods bound there that have
not finished, and writes a JSON line with every node over its allocatable ({"over": [...]}) and
how many pods are bound and unbound.

Usage: node_sampler.py KUBECTL OUT STOP
"""
import json
import os
import subprocess
import sys
import time

UNITS = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "k": 10**3, "M": 10**6, "G": 10**9,
         "m": 0.001}


def quantity(text):
    text = str(text)
    for suffix in sorted(UNITS, key=len, reverse=True):
        if text.endswith(suffix):
            return float(text[:-len(suffix)]) * UNITS[suffix]
    return float(text)


def get(kubectl, what):
    raw = subprocess.run([kubectl, "get", what, "-A", "-o", "json", "--request-timeout=20s"],
                         capture_output=True, timeout=40, check=True).stdout
    return json.loads(raw).get("items", [])


def requests(pod):
    total = {}
    for c in pod["spec"].get("containers", []):
        res = c.get("resources", {})
        asked = dict(res.get("limits", {}))
        asked.update(res.get("requests", {}))
        for name, value in asked.items():
            total[name] = total.get(name, 0.0) + quantity(value)
    return total


def main():
    kubectl, out_path, stop = sys.argv[1], sys.argv[2], sys.argv[3]
    allocatable = {}
    for node in get(kubectl, "nodes"):
        a = node["status"].get("allocatable", {})
        allocatable[node["metadata"]["name"]] = {k: quantity(v) for k, v in a.items()}
    with open(out_path, "w") as out:
        while not os.path.exists(stop):
            try:
                pods = get(kubectl, "pods")
            except (subprocess.SubprocessError, ValueError) as e:
                out.write(json.dumps({"error": str(e)[:200]}) + "\n")
                out.flush()
                continue
            used, bound, unbound = {}, 0, 0
            for pod in pods:
                node = pod["spec"].get("nodeName")
                if pod.get("status", {}).get("phase") in ("Succeeded", "Failed"):
                    continue
                if not node:
                    unbound += 1
                    continue
                bound += 1
                u = used.setdefault(node, {"pods": 0.0})
                u["pods"] += 1
                for name, value in requests(pod).items():
                    u[name] = u.get(name, 0.0) + value
            over = []
            for node, u in used.items():
                a = allocatable.get(node, {})
                for name, value in u.items():
                    if name in a and value > a[name] + 1e-9:
                        over.append("%s %s %g > %g" % (node, name, value, a[name]))
            out.write(json.dumps({"wall": round(time.time(), 2), "bound": bound,
                                  "unbound": unbound, "over": over}) + "\n")
            out.flush()


if __name__ == "__main__":
    main()
