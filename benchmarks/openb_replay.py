"""Time a full openb replay (one policy, one seed, arrivals to 130% of cluster GPUs) per policy,
against a pure-Python BestFit loop measured in the same run.

Usage (from the project root, with ../shared/data present):
    python benchmarks/openb_replay.py [--repeat 3] [--python-arrivals 1000]

Data: Alibaba cluster-trace-gpu-v2023 (https://github.com/alibaba/clusterdata), the default pod
list on the GPU nodes, as in Weng et al., "Beware of Fragmentation: Scheduling GPU-Sharing
Workloads with Fragmentation Gradient Descent" (USENIX ATC 2023), whose simulator reports about
10 minutes per experiment on 2 vCPUs.

The baseline replays the same arrival sequence with BestFit written in plain Python (the paper's
BestFit score and best-fit GPU choice) for the first N arrivals and checks that it places every pod
on the same node as the native run; the ratio compares time per arrival.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from gpufleet import replay
from gpufleet.traces import load_openb_nodes, load_openb_pods

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "openb"


def python_bestfit(nodes, pods, sequence, limit):
    """BestFit over `sequence` (pod rows) in plain Python; returns node names (None = failed)."""
    names = list(nodes["name"])
    order = sorted(range(len(names)), key=lambda i: names[i])  # ties go to the smallest name
    cpu = nodes["cpu_milli"].to_numpy().tolist()
    mem = nodes["memory_mib"].to_numpy().tolist()
    gpus = [[100] * int(g) for g in nodes["num_gpu"]]
    out = []
    for row in sequence[:limit]:
        p = pods.iloc[int(row)]
        pc, pm, n, milli = int(p.cpu_milli), int(p.memory_mib), int(p.num_gpu), int(p.gpu_milli)
        core = milli // 10 if n else 0
        best, best_score = -1, -1.0
        for i in order:
            if cpu[i] < pc or mem[i] < pm:
                continue
            if n == 1 and core < 100:
                if not any(g >= core for g in gpus[i]):
                    continue
            elif n > 0 and sum(1 for g in gpus[i] if g == 100) < n:
                continue
            rem = 0.5 * (cpu[i] - pc) / 128000 + 0.5 * (sum(gpus[i]) - core * max(n, 0)) / 800
            score = min(max(float(int(100.0 * (1.0 - rem))), 0.0), 100.0)
            if score > best_score:
                best, best_score = i, score
        if best < 0:
            out.append(None)
            continue
        cpu[best] -= pc
        mem[best] -= pm
        g = gpus[best]
        if n == 1 and core < 100:
            k = min((j for j in range(len(g)) if g[j] >= core), key=lambda j: (g[j], j))
            g[k] -= core
        else:
            for k in [j for j in range(len(g)) if g[j] == 100][:n]:
                g[k] = 0
        out.append(names[best])
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--python-arrivals", type=int, default=0, help="0 = the whole run")
    args = parser.parse_args()
    if not DATA.is_dir():
        print(f"shared data not found at {DATA}; nothing to measure", file=sys.stderr)
        return 1
    nodes = load_openb_nodes(DATA / "openb_node_list_gpu_node.csv")
    pods = load_openb_pods(DATA / "openb_pod_list_default.csv")

    print("| policy | arrivals | wall s (best of %d) | CPU s | alloc @100%% |" % args.repeat)
    print("|---|---|---|---|---|")
    results = {}
    for policy in replay.policy_names():
        walls, cpus = [], []
        for _ in range(args.repeat):
            w0, c0 = time.perf_counter(), time.process_time()
            res = replay.replay_openb(nodes, pods, policy=policy, seed=0)
            walls.append(time.perf_counter() - w0)
            cpus.append(time.process_time() - c0)
        results[policy] = res
        print(f"| {policy} | {len(res.timeseries)} | {min(walls):.3f} | {min(cpus):.3f} | "
              f"{100 * res.summary['alloc_ratio_at_100']:.2f} |")

    ts = results["bestfit"].timeseries
    n = min(args.python_arrivals or len(ts), len(ts))
    w0 = time.perf_counter()
    py_nodes = python_bestfit(nodes, pods, ts["pod"].to_numpy(), n)
    py_wall = time.perf_counter() - w0
    native = [x if isinstance(x, str) else None for x in ts["node"].iloc[:n]]
    same = sum(a == b for a, b in zip(py_nodes, native))
    # The native replay of exactly those arrivals: the shuffle does not depend on stop_at.
    stop = float(ts["arrived"].iloc[n - 1])
    walls = []
    for _ in range(args.repeat):
        w0 = time.perf_counter()
        head = replay.replay_openb(nodes, pods, policy="bestfit", seed=0, stop_at=stop)
        walls.append(time.perf_counter() - w0)
    assert len(head.timeseries) == n and list(head.timeseries["pod"]) == list(ts["pod"].iloc[:n])
    native_wall = min(walls)
    print()
    print(f"first {n} arrivals, BestFit: pure Python {py_wall:.3f} s, native {native_wall:.4f} s "
          f"(including the Python wrapper): native is {py_wall / native_wall:.0f}x faster; "
          f"same node for {same}/{n} arrivals")
    return 0 if same == n else 2


if __name__ == "__main__":
    sys.exit(main())
