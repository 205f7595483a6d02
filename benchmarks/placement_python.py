"""Python-side cost of placement: one `Cluster.place` call from Python against the same work done
in one native batch (`Cluster.place_many`), on 5,000 nodes x 8 GPUs with half the GPUs partly
used and a mix of whole and shared requests (the setting of benchmarks/cpp/placement_bench.cc).

    .venv/bin/python benchmarks/placement_python.py [--nodes 5000] [--pods 1000]
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import time

import gpufleet
from gpufleet import Cluster, Pod

MIX = [
    {"nvidia.com/gpu": "1"},
    {"koordinator.sh/gpu-core": "30", "koordinator.sh/gpu-memory-ratio": "30"},
    {"nvidia.com/gpu": "4"},
    {"aliyun.com/gpu-mem": "8192"},
    {"nvidia.com/gpu": "2"},
    {"koordinator.sh/gpu": "50"},
]


def build(nodes: int, seed: int = 42) -> Cluster:
    rng = random.Random(seed)
    c = Cluster()
    for i in range(nodes):
        c.add_node({"name": f"node-{i}", "cpu": "128", "memory": "1Ti",
                    "gpus": {"count": 8, "model": "A100", "memory": "80Gi"}})
    k = 0
    for i in range(nodes):
        for m in range(0, 8, 2):
            share = rng.randint(25, 75)
            pod = Pod(f"fill-{k}", {"koordinator.sh/gpu-core": str(share),
                                     "koordinator.sh/gpu-memory-ratio": str(share)})
            ann = {"scheduling.koordinator.sh/device-allocated": json.dumps(
                {"gpu": [{"minor": m + i % 2, "resources": {
                    "koordinator.sh/gpu-core": str(share),
                    "koordinator.sh/gpu-memory-ratio": str(share)}}]})}
            c.restore_allocation(pod, f"node-{i}", ann)
            k += 1
    return c


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    base = build(args.nodes)
    pods = [Pod(f"p{i}", MIX[i % len(MIX)]) for i in range(args.pods)]

    batch, loop, single = [], [], []
    for _ in range(args.repeats):
        c = base.copy()
        t = time.perf_counter()
        placed = c.place_many(pods, "binpack")
        batch.append(time.perf_counter() - t)
        assert (placed >= 0).all()

        c = base.copy()
        t = time.perf_counter()
        for p in pods:
            c.place(p, "binpack")
        loop.append(time.perf_counter() - t)

        c = base.copy()
        for p in pods[:50]:
            t = time.perf_counter()
            c.place(p, "binpack")
            single.append(time.perf_counter() - t)
        c.check_invariants()

    b, l = min(batch), min(loop)
    print(f"gpufleet {gpufleet.__version__}: {args.nodes} nodes x 8 GPUs, {args.pods} placements, "
          f"best of {args.repeats}")
    print(f"  native batch (place_many):   {args.pods / b:10.0f} placements/s  ({b * 1e6 / args.pods:7.1f} us each)")
    print(f"  Python loop  (place):        {args.pods / l:10.0f} placements/s  ({l * 1e6 / args.pods:7.1f} us each)")
    print(f"  one call from Python, median {statistics.median(single) * 1e6:7.1f} us")
    print(f"  Python-loop / native-batch time ratio: {l / b:.2f}")


if __name__ == "__main__":
    main()
