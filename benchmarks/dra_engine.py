"""Pods with claims in the batch engine's gangs (docs/dra.md "Gangs"): N nodes of 8 GPUs, each
published as a ResourceSlice, and gang jobs of 4 pods whose claims ask for 1 or 2 GPUs with a CEL
selector; one engine cycle places them (gpufleet.dra.engine.set_claims, then Engine.run_cycle).
The same jobs asking through nvidia.com/gpu, without claims, in the same run, as the baseline.

    .venv/bin/python benchmarks/dra_engine.py [--nodes 200] [--jobs 100]
"""
from __future__ import annotations

import argparse
import random
import time

from gpufleet.dra.cluster import DraCluster
from gpufleet.dra.engine import set_claims
from gpufleet.engine import Engine

DRIVER = "gpu.example.com"
SELECTOR = f'device.attributes["{DRIVER}"].model == "H100"'


def engine(nodes: int) -> Engine:
    eng = Engine()
    eng.add_queue("q", weight=1)
    for n in range(nodes):
        eng.add_node({"name": f"node-{n:05d}", "cpu": "256", "memory": "2Ti",
                      "gpus": {"count": 8, "model": "H100", "memory": "80Gi"}})
    return eng


def cluster(nodes: int) -> DraCluster:
    c = DraCluster()
    c.apply({"kind": "DeviceClass", "metadata": {"name": "gpu"},
             "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})
    for n in range(nodes):
        name = f"node-{n:05d}"
        c.add_node(name)
        c.apply({"kind": "ResourceSlice", "metadata": {"name": f"{name}-gpus"}, "spec": {
            "driver": DRIVER, "nodeName": name, "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": f"gpu-{i}", "attributes": {"model": {"string": "H100"}, "type": {"string": "gpu"},
                                                            "minor": {"int": i}}} for i in range(8)]}})
    return c


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=200)
    ap.add_argument("--jobs", type=int, default=100)
    args = ap.parse_args()
    rng = random.Random(0)
    sizes = [rng.choice([1, 2]) for _ in range(args.jobs)]

    plain = engine(args.nodes)
    plain.run_cycle(now=0)  # the first cycle's one-time costs, before anything is submitted
    for j, gpus in enumerate(sizes):
        plain.submit({"name": f"job-{j}", "queue": "q", "replicas": 4,
                      "requests": {"cpu": "1", "nvidia.com/gpu": gpus}})
    t = time.perf_counter()
    result = plain.run_cycle(now=1)
    plain_s = time.perf_counter() - t
    placed_plain = len(result.native.binds)

    eng, dra = engine(args.nodes), cluster(args.nodes)
    eng.run_cycle(now=0)
    tasks = {}
    for j, gpus in enumerate(sizes):
        eng.submit({"name": f"job-{j}", "queue": "q", "replicas": 4, "requests": {"cpu": "1"}})
        for k in range(4):
            dra.apply({"kind": "ResourceClaim", "metadata": {"name": f"job-{j}-{k}", "namespace": "bench"},
                       "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                           "deviceClassName": "gpu", "count": gpus, "selectors": [{"cel": {"expression": SELECTOR}}]}}]}}})
            tasks[f"job-{j}-{k}"] = [f"bench/job-{j}-{k}"]
    t = time.perf_counter()
    set_claims(eng, dra, tasks)
    setup_s = time.perf_counter() - t
    t = time.perf_counter()
    result = eng.run_cycle(now=1)
    claims_s = time.perf_counter() - t
    placed_claims = len(result.native.binds)
    print(f"{args.nodes} nodes x 8 GPUs, {args.jobs} gangs of 4 pods")
    print("| way | pods placed | cycle (ms) | pods/s |")
    print("|---|---:|---:|---:|")
    print(f"| nvidia.com/gpu | {placed_plain} | {plain_s * 1e3:.1f} | {placed_plain / plain_s:,.0f} |")
    print(f"| claims (set_claims {setup_s:.2f} s before) | {placed_claims} | {claims_s * 1e3:.1f} | "
          f"{placed_claims / claims_s:,.0f} |")


if __name__ == "__main__":
    main()
