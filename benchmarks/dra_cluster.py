"""DRA placement across a cluster (benchmarks/README.md#dynamic-resource-allocation): N nodes of
8 GPUs, each published as a ResourceSlice, and claims for 1, 2 and 8 GPUs with a CEL selector on
the model and memory, placed and committed one after the other (DraCluster.place(commit=True)).

Three ways, in the same run:
- remembered: place() with its answers kept per claim shape and group of alike nodes (cached);
- asked afresh: place(remember=False), one search per group of alike nodes (uncached);
- every node: place(nodes=...), one search per node (the baseline: what a scheduler that asks
  each node, as kube-scheduler's DRA plugin asks the allocator, does).

    .venv/bin/python benchmarks/dra_cluster.py [--nodes 5000] [--claims 6000] [--baseline-claims 20]
                                               [--no-freeze] [--write-scenario PATH]
                                               [--upstream BIN [--upstream-claims 1000]
                                                [--upstream-slices all|node]]

``--write-scenario PATH`` writes the nodes, the DeviceClass, the slices and the remembered way's
claims as JSON (benchmarks/upstream_dra/main.go reads it). ``--upstream BIN`` runs that Go
program (Kubernetes' structured allocator, built by benchmarks/upstream_dra/build.sh) on the
first ``--upstream-claims`` of those claims in the same run, and prints each way's claims/s over
upstream's on the same first claims, by wall-clock and by CPU time (each process's own; the CPU
ratio is the steadier one on a loaded machine). Upstream offers each claim to the nodes in order
until one allocates (first fit).

After the cluster is loaded, its objects are moved out of the garbage collector's reach
(``gc.freeze()``), as a long-running scheduler does once its state is loaded: otherwise every
full collection walks the whole cluster (the 5,000 node tables), which costs more than the
placements themselves. ``--no-freeze`` measures without it.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import random
import subprocess
import tempfile
import time

from gpufleet.dra.cluster import DraCluster

DRIVER = "gpu.example.com"
SELECTOR = f'device.attributes["{DRIVER}"].model == "H100" && device.capacity["{DRIVER}"].memory.compareTo(quantity("80Gi")) >= 0'


def node_names(nodes: int) -> list[str]:
    return [f"node-{n:05d}" for n in range(nodes)]


def device_class() -> dict:
    return {"kind": "DeviceClass", "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}}


def node_slice(name: str) -> dict:
    return {"kind": "ResourceSlice", "metadata": {"name": f"{name}-gpus"}, "spec": {
        "driver": DRIVER, "nodeName": name, "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": f"gpu-{i}", "attributes": {"model": {"string": "H100"}, "numa": {"int": i // 4}},
                     "capacity": {"memory": {"value": "80Gi"}}} for i in range(8)]}}


def claim_objects(count: int, prefix: str, seed: int) -> list[dict]:
    """Claims for 1, 2 or 8 GPUs (3:2:1), the same for a given seed; the allocation mode is
    spelled out, as the API server's defaulting writes it (the Go program reads them raw)."""
    rng = random.Random(seed)
    return [{"kind": "ResourceClaim", "metadata": {"name": f"{prefix}-{i}", "namespace": "bench"}, "spec": {"devices": {
        "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu", "allocationMode": "ExactCount",
                                                 "count": rng.choice([1, 1, 1, 2, 2, 8]),
                                                 "selectors": [{"cel": {"expression": SELECTOR}}]}}]}}}
            for i in range(count)]


def build(nodes: int) -> DraCluster:
    c = DraCluster()
    c.apply(device_class())
    for name in node_names(nodes):
        c.add_node(name)
        c.apply(node_slice(name))
    return c


def claims(c: DraCluster, count: int, prefix: str, seed: int) -> list[str]:
    objects = claim_objects(count, prefix, seed)
    for obj in objects:
        c.apply(obj)
    return [f"bench/{obj['metadata']['name']}" for obj in objects]


def write_scenario(path: str, nodes: int, claim_list: list[dict]) -> None:
    names = node_names(nodes)
    with open(path, "w") as f:
        json.dump({"nodes": names, "classes": [device_class()], "slices": [node_slice(n) for n in names],
                   "claims": claim_list}, f)


def run_upstream(binary: str, scenario: str, count: int, slices: str) -> dict:
    """The Go program's report (one JSON line); a failure names the program and its message."""
    done = subprocess.run([binary, "-scenario", scenario, "-claims", str(count), "-slices", slices],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{binary}: exit {done.returncode}: {done.stderr.strip() or done.stdout.strip()}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(c: DraCluster, names: list[str], prefix: int = 0, **place_args) -> tuple[float, int, float, float]:
    """Seconds for all the claims, how many were placed, and the wall and CPU seconds (this
    process) for the first `prefix`."""
    start, start_cpu = time.perf_counter(), time.process_time()
    placed = 0
    at_prefix = cpu_at_prefix = 0.0
    for i, name in enumerate(names):
        if i == prefix:
            at_prefix, cpu_at_prefix = time.perf_counter() - start, time.process_time() - start_cpu
        node, _ = c.place([name], commit=True, **place_args)
        placed += node is not None
    elapsed, cpu = time.perf_counter() - start, time.process_time() - start_cpu
    return elapsed, placed, at_prefix or elapsed, cpu_at_prefix or cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--claims", type=int, default=6000)
    ap.add_argument("--baseline-claims", type=int, default=20)
    ap.add_argument("--no-freeze", action="store_true", help="leave the loaded cluster to the collector")
    ap.add_argument("--write-scenario", metavar="PATH", help="write nodes, class, slices and claims as JSON")
    ap.add_argument("--upstream", metavar="BIN", help="Kubernetes' allocator program (benchmarks/upstream_dra)")
    ap.add_argument("--upstream-claims", type=int, default=1000,
                    help="the first N claims the upstream program places (0: all of them)")
    ap.add_argument("--upstream-slices", choices=("all", "node"), default="all",
                    help="all: one allocator over every slice per claim, as kube-scheduler; node: one per node")
    args = ap.parse_args()
    if args.upstream and not (os.path.isfile(args.upstream) and os.access(args.upstream, os.X_OK)):
        ap.error(f"--upstream: {args.upstream} is not an executable file")
    if args.upstream_claims < 0:
        ap.error(f"--upstream-claims: must be 0 (all) or more, got {args.upstream_claims}")
    t = time.perf_counter()
    c = build(args.nodes)
    setup = time.perf_counter() - t
    t = time.perf_counter()
    c.place(claims(c, 1, "warm", 0))  # files every node (tables, groups)
    first = time.perf_counter() - t
    print(f"{args.nodes} nodes x 8 GPUs: objects applied in {setup:.1f} s, first question (every node's "
          f"table and group) {first:.1f} s; gc.freeze(): {not args.no_freeze}")
    upstream_claims = args.upstream_claims if 0 < args.upstream_claims < args.claims else args.claims
    rows = []
    ways = (("remembered (cached)", {}, args.claims, 1),
            ("asked afresh (uncached)", {"remember": False}, args.claims, 2),
            ("every node (baseline)", {"nodes": node_names(args.nodes)}, args.baseline_claims, 3))
    for label, kwargs, count, seed in ways:
        names = claims(c, count, label.split()[0], seed)
        if not args.no_freeze:
            gc.freeze()
        elapsed, placed, at_prefix, cpu_at_prefix = run(c, names, prefix=upstream_claims, **kwargs)
        first = min(upstream_claims, count)
        rows.append((label, count, placed, elapsed, count / elapsed, first / at_prefix, first / cpu_at_prefix))
        for name in names:  # back to the same state for the next way
            c.release(name)
    scenario = args.write_scenario
    if scenario or args.upstream:
        if not scenario:
            fd, scenario = tempfile.mkstemp(suffix=".json", prefix="dra-scenario-")
            os.close(fd)
        # the remembered way's claims, in its order, on the same empty cluster
        write_scenario(scenario, args.nodes, claim_objects(args.claims, "remembered", 1))
    upstream = None
    if args.upstream:
        try:
            upstream = run_upstream(args.upstream, scenario, args.upstream_claims, args.upstream_slices)
        finally:
            if not args.write_scenario:
                os.remove(scenario)
        rate = upstream["claims_per_s"]
        rows.append((f"upstream allocator, first fit per node (slices: {args.upstream_slices})",
                     upstream["claims"], upstream["placed"], upstream["seconds"], rate, rate,
                     upstream["claims"] / upstream["cpu_seconds"]))
    base = rows[2][4]
    header = "| way | claims | placed | seconds | claims/s | x every node |"
    rule = "|---|---:|---:|---:|---:|---:|"
    if upstream:  # the same first claims on the same empty cluster: the same work
        header += (f" claims/s, first {upstream_claims} | x upstream, first {upstream_claims} |"
                   f" x upstream, CPU time |")
        rule += "---:|---:|---:|"
    print(header)
    print(rule)
    def times(ratio: float) -> str:
        return f"{ratio:,.0f}" if ratio >= 10 else f"{ratio:.2g}"

    for label, count, placed, elapsed, rate, prefix_rate, cpu_rate in rows:
        line = f"| {label} | {count} | {placed} | {elapsed:.2f} | {rate:,.0f} | {times(rate / base)} |"
        if upstream:
            line += (f" {prefix_rate:,.0f} | {times(prefix_rate / upstream['claims_per_s'])} |"
                     f" {times(cpu_rate / rows[-1][6])} |")
        print(line)
    if upstream:
        print(f"upstream: {upstream['allocate_calls']} Allocate calls, {upstream['us_per_allocate']:.1f} us each, "
              f"{upstream['devices_allocated']} devices allocated, {upstream['seconds']:.2f} s wall and "
              f"{upstream['cpu_seconds']:.2f} s CPU ({upstream['allocator']})")


if __name__ == "__main__":
    main()
