"""How long the extender's DRA re-list holds the extender state's lock
(benchmarks/README.md#dynamic-resource-allocation): N nodes of 8 GPUs in a gpufleet.Cluster and
published as ResourceSlices, K claims allocated through a DraCluster sharing it, all behind
``DraSync`` (``gpufleet extender --kube --dra``) with the API server faked in memory. Measured
with the lock held (binds and filters wait that long):

- start / slice re-list: the whole DraCluster rebuilt from the listed objects (``DraSync.sync``'s
  swap; a ResourceSlice or DeviceClass re-list does the same);
- claims re-list, `--changed` of them changed (their status moved to other free GPUs) and one
  gone: only those claims taken again, in place;
- the same claims re-list done as a whole rebuild (how every re-list was made before).

    .venv/bin/python benchmarks/dra_relist.py [--nodes 2000] [--claims 4000] [--changed 10]
"""
from __future__ import annotations

import argparse
import copy
import gc
import os
import time
from types import SimpleNamespace
from typing import Any

import gpufleet
from dra_cluster import claim_objects
from dra_ledger import build
from gpufleet.k8s.extender.dra import DraSync


class FakeApi:
    """Lists from memory (what the official client returns with _preload_content=False, parsed)."""

    def __init__(self, objects: dict[str, list[dict[str, Any]]]) -> None:
        self.objects = objects

    def _answer(self, kind: str) -> dict[str, Any]:
        return {"metadata": {"resourceVersion": "1"}, "items": self.objects[kind]}

    def list_resource_slice(self, **_: Any) -> dict[str, Any]:
        return self._answer("ResourceSlice")

    def list_device_class(self, **_: Any) -> dict[str, Any]:
        return self._answer("DeviceClass")

    def list_resource_claim_for_all_namespaces(self, **_: Any) -> dict[str, Any]:
        return self._answer("ResourceClaim")

    def list_node(self, **_: Any) -> dict[str, Any]:
        return {"items": [{"metadata": {"name": n}} for n in self.objects["Node"]]}


def timed_lock(sync: DraSync) -> list[float]:
    """Wraps the lock so that each hold's length is recorded."""
    inner, held = sync.lock, []

    class Timed:
        def __enter__(self) -> None:
            inner.acquire()
            self.t = time.perf_counter()

        def __exit__(self, *exc: Any) -> None:
            held.append(time.perf_counter() - self.t)
            inner.release()

    sync.lock = Timed()
    return held


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=2000)
    ap.add_argument("--claims", type=int, default=4000)
    ap.add_argument("--changed", type=int, default=10)
    args = ap.parse_args()
    built = build(args.nodes, True)   # the nodes, slices and pods of dra_ledger.py
    for obj in claim_objects(args.claims, "c", 3):
        built.apply(obj)
        built.place([f"bench/{obj['metadata']['name']}"], commit=True)
    snap = built.snapshot()
    for i, c in enumerate(snap["claims"]):
        c["metadata"]["resourceVersion"] = str(i)
    objects = {"ResourceSlice": snap["slices"], "DeviceClass": snap["classes"],
               "ResourceClaim": snap["claims"], "Node": [n["metadata"]["name"] for n in snap["nodes"]]}
    api = FakeApi(objects)
    state = SimpleNamespace(cluster=gpufleet.Cluster(), lock=__import__("threading").RLock(), ready_checks={})
    for node in objects["Node"]:
        state.cluster.add_node({"name": node, "cpu": "128", "memory": "1Ti",
                                "gpus": {"count": 8, "model": "H100", "memory": "80Gi"}})
    sync = DraSync(api, api, state=state)
    held = timed_lock(sync)
    gc.collect()
    sync.sync()
    start = held[-1]
    # Claims changed while the watch was down: moved onto free GPUs of their node, and one gone.
    free = {n: set(range(8)) for n in objects["Node"]}
    for c in objects["ResourceClaim"]:
        for r in c["status"]["allocation"]["devices"]["results"]:
            free[r["pool"]].discard(int(r["device"].split("-")[1]))
    moved = 0
    for c in objects["ResourceClaim"]:
        results = c["status"]["allocation"]["devices"]["results"]
        spare = free[results[0]["pool"]]
        if len(results) == 1 and spare and moved < args.changed:
            old, new = int(results[0]["device"].split("-")[1]), min(spare)
            spare.discard(new), spare.add(old)
            results[0]["device"] = f"gpu-{new}"
            c["metadata"]["resourceVersion"] += "-moved"
            moved += 1
    objects["ResourceClaim"] = objects["ResourceClaim"][1:]
    sync.relist("ResourceClaim", "benchmark")
    in_place = held[-1]
    before = copy.deepcopy(objects["ResourceClaim"])
    snap_now = sync.cluster.snapshot()
    with sync.lock:   # the old way: every re-list rebuilt the whole DraCluster
        sync._replace({"DeviceClass": snap_now["classes"], "ResourceSlice": snap_now["slices"],
                       "ResourceClaim": before}, only="ResourceClaim")
    rebuild = held[-1]
    pseudo = sum(1 for a in state.cluster.allocations() if a.pod.startswith("dra:"))
    print(f"{args.nodes} nodes x 8 GPUs, {args.claims} claims ({pseudo} held after), {moved} moved and 1 gone; "
          f"load average {os.getloadavg()[0]:.1f}")
    print("| lock held for | seconds |")
    print("|---|---:|")
    print(f"| start (whole DraCluster) | {start:.3f} |")
    print(f"| claims re-list, in place | {in_place:.4f} |")
    print(f"| claims re-list as a whole rebuild | {rebuild:.3f} |")


if __name__ == "__main__":
    main()
