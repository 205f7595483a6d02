"""The openb GPU-sharing study of Weng et al. ("Beware of Fragmentation: Scheduling GPU-Sharing
Workloads with Fragmentation Gradient Descent", USENIX ATC 2023), every trace x policy x seed: the
mean GPU allocation ratio at 100% arrived load next to the study's own figures, and the CPU time of
each experiment (time.process_time, Python wrapper included), optionally against an earlier build
timed in the same run.

Usage (from the project root, with ../shared/data present):
    python benchmarks/openb_replay.py [--seeds 10] [--traces default,cpu050] [--policies fgd]
        [--baseline DIR] [--baseline-seeds 1] [--python-arrivals 1000]

``--baseline DIR``: a directory holding another build's ``gpufleet`` package (its Python files and
its ``_core`` extension); it is timed in a subprocess on the same experiments (its first
``--baseline-seeds`` seeds) right after this build, and each row gets the ratio of the two mean
CPU times. ``--python-arrivals N``: also replays the first N arrivals of one BestFit experiment
with a plain-Python loop and checks it picks the same node for each (a cross-check of the native
scores and tie order).

Data: Alibaba cluster-trace-gpu-v2023 (https://github.com/alibaba/clusterdata), the GPU nodes
(1,213 nodes, 6,212 GPUs) and every ``openb_pod_list_*.csv`` in ../shared/data/openb; published
figures: ``fgd_expected_alloc.csv`` (the study's simulator repository,
``experiments/analysis/expected_results/analysis_allo_discrete.csv``). The study's simulator
reports about 10 minutes per experiment on 2 vCPUs.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from gpufleet import replay
from gpufleet.traces import load_openb_nodes, load_openb_pods

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "openb"
NODES = "openb_node_list_gpu_node.csv"
PUBLISHED = "fgd_expected_alloc.csv"

# Runs in the baseline's interpreter: times replay_openb per (trace, policy, seed), prints JSON.
BASELINE_SCRIPT = r"""
import json, sys, time
# An editable install redirects `import gpufleet` to its checkout: drop that redirect so the
# package on PYTHONPATH (the baseline) is the one imported.
sys.meta_path[:] = [f for f in sys.meta_path if "gpufleet" not in type(f).__module__]
from gpufleet import replay
assert replay.__file__.startswith(sys.argv[2]), replay.__file__
from gpufleet.traces import load_openb_nodes, load_openb_pods
data, traces, policies, seeds = json.loads(sys.argv[1])
nodes = load_openb_nodes(data + "/openb_node_list_gpu_node.csv")
out = {}
for trace in traces:
    pods = load_openb_pods(data + "/openb_pod_list_" + trace + ".csv")
    for policy in policies:
        cpu = []
        for seed in seeds:
            c0 = time.process_time()
            replay.replay_openb(nodes, pods, policy=policy, seed=seed)
            cpu.append(time.process_time() - c0)
        out[trace + "/" + policy] = cpu
print(json.dumps(out))
"""


def trace_names(data: Path) -> list[str]:
    return sorted(p.stem.replace("openb_pod_list_", "") for p in data.glob("openb_pod_list_*.csv"))


def python_bestfit(nodes, pods, rank, sequence, limit):
    """BestFit over `sequence` (pod rows) in plain Python, ties to the lowest `rank`; returns node
    names (None = failed)."""
    names = list(nodes["name"])
    order = sorted(range(len(names)), key=lambda i: rank[i])
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


def cross_check(nodes, pods, limit: int) -> bool:
    """Plain-Python BestFit on the first `limit` arrivals of seed 0, name ties, against native."""
    res = replay.replay_openb(nodes, pods, policy="bestfit", seed=0, ties="name")
    ts = res.timeseries
    n = min(limit, len(ts))
    rank = {i: name for i, name in enumerate(nodes["name"])}
    w0 = time.process_time()
    got = python_bestfit(nodes, pods, rank, ts["pod"].to_numpy(), n)
    py_cpu = time.process_time() - w0
    native = [x if isinstance(x, str) else None for x in ts["node"].iloc[:n]]
    same = sum(a == b for a, b in zip(got, native))
    print(f"\ncross-check, first {n} arrivals of BestFit (seed 0, name ties): pure Python "
          f"{py_cpu:.2f} s CPU; same node for {same}/{n} arrivals")
    return same == n


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10, help="seeds 0..N-1 (default 10)")
    parser.add_argument("--traces", default="", help="comma-separated (default: every trace)")
    parser.add_argument("--policies", default="", help="comma-separated (default: the six)")
    parser.add_argument("--baseline", default="", help="directory with another build's gpufleet")
    parser.add_argument("--baseline-seeds", type=int, default=1)
    parser.add_argument("--python-arrivals", type=int, default=0)
    parser.add_argument("--json", default="", help="also write every run's summary here")
    args = parser.parse_args()
    if not DATA.is_dir():
        print(f"shared data not found at {DATA}; nothing to measure", file=sys.stderr)
        return 1
    traces = args.traces.split(",") if args.traces else trace_names(DATA)
    policies = args.policies.split(",") if args.policies else replay.policy_names()
    seeds = list(range(args.seeds))
    published = replay.load_published(DATA / PUBLISHED)
    nodes = load_openb_nodes(DATA / NODES)

    rows, runs = [], []
    for trace in traces:
        pods = load_openb_pods(DATA / f"openb_pod_list_{trace}.csv")
        for policy in policies:
            alloc, cpu = [], []
            for seed in seeds:
                c0 = time.process_time()
                res = replay.replay_openb(nodes, pods, policy=policy, seed=seed)
                cpu.append(time.process_time() - c0)
                alloc.append(100 * res.summary["alloc_ratio_near_100"])
                runs.append({"trace": trace, **res.summary, "cpu_s": cpu[-1]})
            # Printed in percent: the replay and the published frame hold fractions.
            pub = 100 * published["mean"].get((trace, policy), float("nan"))
            rows.append({"trace": trace, "policy": policy, "mean": float(np.mean(alloc)),
                         "std": float(np.std(alloc, ddof=1)) if len(alloc) > 1 else 0.0,
                         "published": float(pub), "cpu_mean": float(np.mean(cpu)),
                         "cpu_max": float(np.max(cpu))})
            r = rows[-1]
            print(f"  {trace:12s} {policy:15s} {r['mean']:6.2f} (published {pub:6.2f}) "
                  f"cpu {r['cpu_mean']:.3f} s", file=sys.stderr, flush=True)

    base = {}
    if args.baseline:
        env = dict(os.environ, PYTHONPATH=str(Path(args.baseline).resolve()))
        spec = json.dumps([str(DATA), traces, policies, seeds[:args.baseline_seeds]])
        done = subprocess.run([sys.executable, "-c", BASELINE_SCRIPT, spec, env["PYTHONPATH"]],
                              env=env, check=True, capture_output=True, text=True)
        base = json.loads(done.stdout.strip().splitlines()[-1])

    head = "| trace | policy | mean @100% | std | published | difference | CPU s / experiment (max) |"
    rule = "|---|---|---|---|---|---|---|"
    if base:
        head += " baseline CPU s | speed-up |"
        rule += "---|---|"
    print(f"\n{len(seeds)} seeds per experiment; GPU allocation ratio (%) at 100% arrived load, "
          f"read as the study does (mean over the arrivals that round to 100%)\n")
    print(head)
    print(rule)
    for r in rows:
        line = (f"| {r['trace']} | {r['policy']} | {r['mean']:.2f} | {r['std']:.2f} | "
                f"{r['published']:.2f} | {r['mean'] - r['published']:+.2f} | "
                f"{r['cpu_mean']:.3f} ({r['cpu_max']:.3f}) |")
        if base:
            b = float(np.mean(base[f"{r['trace']}/{r['policy']}"]))
            line += f" {b:.3f} | {b / r['cpu_mean']:.1f}x |"
        print(line)
    known = [r for r in rows if not np.isnan(r["published"])]
    if known:
        worst = max(known, key=lambda r: abs(r["mean"] - r["published"]))
        print(f"\nlargest difference: {worst['mean'] - worst['published']:+.2f} points "
              f"({worst['trace']}, {worst['policy']}); "
              f"{sum(abs(r['mean'] - r['published']) <= 1.0 for r in known)}/{len(known)} "
              f"within 1.0 point")
    slowest = max(rows, key=lambda r: r["cpu_max"])
    print(f"slowest experiment: {slowest['cpu_max']:.3f} s CPU ({slowest['trace']}, "
          f"{slowest['policy']})")
    if args.json:
        Path(args.json).write_text(json.dumps(runs, indent=1))
    ok = True
    if args.python_arrivals:
        ok = cross_check(nodes, load_openb_pods(DATA / "openb_pod_list_default.csv"),
                         args.python_arrivals)
    return 0 if ok else 2


if __name__ == "__main__":
    sys.exit(main())
