#!/usr/bin/python3
"""The official Python client (Debian's python3-kubernetes) against `muster up`, as an ML user's
script drives a cluster: a watch from a list's resourceVersion sees the seed's two trainers ADDED,
then MODIFIED with a node, resourceVersions increasing; CRUD on core kinds and on Volcano's
(CustomObjectsApi); the API's refusals as the client reads them: 409 for a stale resourceVersion,
422 for an invalid name, 404. One PASS/FAIL line per check; exit status 1 when any failed.

Usage: python_client.py KUBECONFIG EXAMPLES_DIR     (EXAMPLES_DIR: examples/gpu-gang)
"""
import sys
import threading
import time

import yaml
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

failed = 0


def check(name, ok, got=""):
    global failed
    if ok:
        print("PASS " + name)
    else:
        failed += 1
        print("FAIL " + name)
        if got:
            print("    got: " + str(got)[:800])


def refused_with(call, code):
    try:
        call()
    except ApiException as e:
        return e.status == code, "%s %s" % (e.status, e.reason)
    return False, "no refusal"


def main():
    kubeconfig, examples = sys.argv[1], sys.argv[2]
    config.load_kube_config(config_file=kubeconfig)
    core = client.CoreV1Api()
    custom = client.CustomObjectsApi()
    coordination = client.CoordinationV1Api()

    # --- a watch from a list's resourceVersion while the seed's gang is placed ------------------
    listed = core.list_namespaced_pod("default")
    events = []
    done = threading.Event()

    def watch_trainers():
        w = watch.Watch()
        for e in w.stream(core.list_namespaced_pod, "default",
                          resource_version=listed.metadata.resource_version,
                          label_selector="volcano.sh/job-name=gang-tf-job", timeout_seconds=90):
            pod = e["object"]
            events.append((e["type"], pod.metadata.name, pod.spec.node_name,
                           int(pod.metadata.resource_version)))
            bound = {n for t, n, node, _ in events if t == "MODIFIED" and node}
            if len(bound) == 2:
                w.stop()
        done.set()

    watcher = threading.Thread(target=watch_trainers, daemon=True)
    watcher.start()
    time.sleep(0.5)  # the watch is open before the objects come

    with open(examples + "/volcano-queue.yaml") as f:
        queue = yaml.safe_load(f)
    with open(examples + "/tensorflow-job.yaml") as f:
        job = yaml.safe_load(f)
    created = custom.create_cluster_custom_object("scheduling.volcano.sh", "v1beta1", "queues", queue)
    check("volcano: create the seed's Queue", created["metadata"]["name"] == "ml-queue", created)
    created = custom.create_namespaced_custom_object("batch.volcano.sh", "v1alpha1", "default",
                                                     "jobs", job)
    check("volcano: create the seed's Job", created["metadata"]["name"] == "gang-tf-job", created)

    done.wait(90)
    names = sorted({n for _, n, _, _ in events})
    check("watch: both trainers seen", names == ["gang-tf-job-trainer-0", "gang-tf-job-trainer-1"],
          events)
    for n in names:
        kinds = [t for t, name, _, _ in events if name == n]
        check("watch: %s ADDED first, then MODIFIED" % n,
              kinds[:1] == ["ADDED"] and "MODIFIED" in kinds, kinds)
        check("watch: %s MODIFIED with a node" % n,
              any(t == "MODIFIED" and name == n and node for t, name, node, _ in events), events)
    versions = [rv for _, _, _, rv in events]
    check("watch: resourceVersions increase", versions == sorted(versions) and
          len(set(versions)) == len(versions), versions)

    got = custom.get_namespaced_custom_object("batch.volcano.sh", "v1alpha1", "default", "jobs",
                                              "gang-tf-job")
    check("volcano: get the Job", got["spec"]["minAvailable"] == 2, got.get("spec"))
    jobs = custom.list_namespaced_custom_object("batch.volcano.sh", "v1alpha1", "default", "jobs")
    check("volcano: list Jobs", [j["metadata"]["name"] for j in jobs["items"]] == ["gang-tf-job"],
          jobs)
    patched = custom.patch_namespaced_custom_object(
        "batch.volcano.sh", "v1alpha1", "default", "jobs", "gang-tf-job",
        {"metadata": {"labels": {"team": "ml"}}})
    check("volcano: merge-patch the Job", patched["metadata"]["labels"] == {"team": "ml"}, patched)
    custom.delete_namespaced_custom_object("batch.volcano.sh", "v1alpha1", "default", "jobs",
                                           "gang-tf-job")
    ok, why = refused_with(lambda: custom.get_namespaced_custom_object(
        "batch.volcano.sh", "v1alpha1", "default", "jobs", "gang-tf-job"), 404)
    for _ in range(100):
        if ok:
            break
        time.sleep(0.1)
        ok, why = refused_with(lambda: custom.get_namespaced_custom_object(
            "batch.volcano.sh", "v1alpha1", "default", "jobs", "gang-tf-job"), 404)
    check("volcano: delete the Job (then 404)", ok, why)

    # --- core kinds -------------------------------------------------------------------------------
    cm = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="settings"), data={"lr": "0.1"})
    made = core.create_namespaced_config_map("default", cm)
    check("core: create a ConfigMap", made.data == {"lr": "0.1"}, made.data)
    made.data["lr"] = "0.01"
    replaced = core.replace_namespaced_config_map("settings", "default", made)
    check("core: replace it", replaced.data == {"lr": "0.01"} and
          int(replaced.metadata.resource_version) > int(made.metadata.resource_version),
          replaced.metadata)
    core.delete_namespaced_config_map("settings", "default")
    ok, why = refused_with(lambda: core.read_namespaced_config_map("settings", "default"), 404)
    check("core: delete it (then 404)", ok, why)

    lease = client.V1Lease(metadata=client.V1ObjectMeta(name="trainer-leader"),
                           spec=client.V1LeaseSpec(holder_identity="a", lease_duration_seconds=15))
    first = coordination.create_namespaced_lease("default", lease)
    first.spec.holder_identity = "b"
    coordination.replace_namespaced_lease("trainer-leader", "default", first)
    first.spec.holder_identity = "c"  # still carries the resourceVersion b's write replaced
    ok, why = refused_with(
        lambda: coordination.replace_namespaced_lease("trainer-leader", "default", first), 409)
    check("core: a Lease replaced with a stale resourceVersion is 409", ok, why)

    bad = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="Not_A_Name"))
    ok, why = refused_with(lambda: core.create_namespaced_config_map("default", bad), 422)
    check("core: an invalid name is 422", ok, why)
    ok, why = refused_with(lambda: core.read_namespaced_pod("no-such-pod", "default"), 404)
    check("core: a missing pod is 404", ok, why)

    print("%d failed" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
