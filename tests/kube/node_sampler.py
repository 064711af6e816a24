#!/usr/bin/python3
"""Samples a cluster for tests/kube/flood_e2e.sh until the file STOP exists: each sample sums, per
node, the requests (cpu, memory, nvidia.com/gpu) and the count of the pods there, and writes a JSON
line with every node over its allocatable, in two views:

  "over":       the pods the node runs (phase Running): what a node must never exceed;
  "over_bound": every pod bound there that has not finished, those the node is yet to admit or
                refuse included: over when two schedulers bound onto it at once, which the node's
                admission (the kubelet's OutOfcpu, ...) then refuses;

and how many pods are bound, unbound, and refused by their node (status.reason OutOf...).

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
            running, used, bound, unbound, refused = {}, {}, 0, 0, 0
            for pod in pods:
                node = pod["spec"].get("nodeName")
                status = pod.get("status", {})
                if status.get("reason", "").startswith("OutOf"):
                    refused += 1
                if status.get("phase") in ("Succeeded", "Failed"):
                    continue
                if not node:
                    unbound += 1
                    continue
                bound += 1
                views = [used] + ([running] if status.get("phase") == "Running" else [])
                for view in views:
                    u = view.setdefault(node, {"pods": 0.0})
                    u["pods"] += 1
                    for name, value in requests(pod).items():
                        u[name] = u.get(name, 0.0) + value

            def over(view):
                found = []
                for node, u in view.items():
                    a = allocatable.get(node, {})
                    for name, value in u.items():
                        if name in a and value > a[name] + 1e-9:
                            found.append("%s %s %g > %g" % (node, name, value, a[name]))
                return found
            out.write(json.dumps({"wall": round(time.time(), 2), "bound": bound,
                                  "unbound": unbound, "refused": refused,
                                  "over": over(running), "over_bound": over(used)}) + "\n")
            out.flush()


if __name__ == "__main__":
    main()
