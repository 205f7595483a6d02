"""DRA placement across a cluster (benchmarks/README.md#dynamic-resource-allocation): N nodes of
8 GPUs, each published as a ResourceSlice, and claims for 1, 2 and 8 GPUs with a CEL selector on
the model and memory, placed and committed one after the other (DraCluster.place(commit=True)).

Three ways, in the same run:
- remembered: place() with its answers kept per claim shape and group of alike nodes (cached);
- asked afresh: place(remember=False), one search per group of alike nodes (uncached);
- every node: place(nodes=...), one search per node (the baseline: what a scheduler that asks
  each node, as kube-scheduler's DRA plugin asks the allocator, does).

    .venv/bin/python benchmarks/dra_cluster.py [--nodes 5000] [--claims 6000] [--baseline-claims 20]
                                               [--no-freeze]

After the cluster is loaded, its objects are moved out of the garbage collector's reach
(``gc.freeze()``), as a long-running scheduler does once its state is loaded: otherwise every
full collection walks the whole cluster (the 5,000 node tables), which costs more than the
placements themselves. ``--no-freeze`` measures without it.
"""
from __future__ import annotations

import argparse
import gc
import random
import time

from gpufleet.dra.cluster import DraCluster

DRIVER = "gpu.example.com"
SELECTOR = f'device.attributes["{DRIVER}"].model == "H100" && device.capacity["{DRIVER}"].memory.compareTo(quantity("80Gi")) >= 0'


def build(nodes: int) -> DraCluster:
    c = DraCluster()
    c.apply({"kind": "DeviceClass", "metadata": {"name": "gpu"},
             "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})
    for n in range(nodes):
        name = f"node-{n:05d}"
        c.add_node(name)
        c.apply({"kind": "ResourceSlice", "metadata": {"name": f"{name}-gpus"}, "spec": {
            "driver": DRIVER, "nodeName": name, "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": f"gpu-{i}", "attributes": {"model": {"string": "H100"}, "numa": {"int": i // 4}},
                         "capacity": {"memory": {"value": "80Gi"}}} for i in range(8)]}})
    return c


def claims(c: DraCluster, count: int, prefix: str, seed: int) -> list[str]:
    rng = random.Random(seed)
    names = []
    for i in range(count):
        n = rng.choice([1, 1, 1, 2, 2, 8])
        name = f"{prefix}-{i}"
        c.apply({"kind": "ResourceClaim", "metadata": {"name": name, "namespace": "bench"}, "spec": {"devices": {
            "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu", "count": n,
                                                     "selectors": [{"cel": {"expression": SELECTOR}}]}}]}}})
        names.append(f"bench/{name}")
    return names


def run(c: DraCluster, names: list[str], **place_args) -> tuple[float, int]:
    start = time.perf_counter()
    placed = 0
    for name in names:
        node, _ = c.place([name], commit=True, **place_args)
        placed += node is not None
    return time.perf_counter() - start, placed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--claims", type=int, default=6000)
    ap.add_argument("--baseline-claims", type=int, default=20)
    ap.add_argument("--no-freeze", action="store_true", help="leave the loaded cluster to the collector")
    args = ap.parse_args()
    t = time.perf_counter()
    c = build(args.nodes)
    setup = time.perf_counter() - t
    t = time.perf_counter()
    c.place(claims(c, 1, "warm", 0))  # files every node (tables, groups)
    first = time.perf_counter() - t
    print(f"{args.nodes} nodes x 8 GPUs: objects applied in {setup:.1f} s, first question (every node's "
          f"table and group) {first:.1f} s; gc.freeze(): {not args.no_freeze}")
    rows = []
    for label, kwargs, count, seed in (("remembered (cached)", {}, args.claims, 1),
                                       ("asked afresh (uncached)", {"remember": False}, args.claims, 2),
                                       ("every node (baseline)", {"nodes": sorted(f"node-{n:05d}" for n in range(args.nodes))},
                                        args.baseline_claims, 3)):
        names = claims(c, count, label.split()[0], seed)
        if not args.no_freeze:
            gc.freeze()
        elapsed, placed = run(c, names, **kwargs)
        rows.append((label, count, placed, elapsed, count / elapsed))
        for name in names:  # back to the same state for the next way
            c.release(name)
    base = rows[-1][4]
    print("| way | claims | placed | seconds | claims/s | x every node |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, count, placed, elapsed, rate in rows:
        print(f"| {label} | {count} | {placed} | {elapsed:.2f} | {rate:,.0f} | {rate / base:,.0f} |")


if __name__ == "__main__":
    main()
