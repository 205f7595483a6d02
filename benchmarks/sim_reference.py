"""Compare gpufleet's simulator with a plain-Python reference event loop written the way
Tiresias' simulator works (lists of dicts, every runnable job visited on every event).

Runs the 60-job Tiresias trace replicated N times (default 160: 9,600 jobs on 1,280 GPUs) under
dlas-gpu and FIFO, checks both give the same average JCT, and prints wall times and the ratio.

    .venv/bin/python benchmarks/sim_reference.py [--copies 160] [--data ../shared/data]

Tiresias' own simulator is not bundled; its published time for this run is 33.8 s.
"""
from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import pandas as pd

import gpufleet.traces as T
from gpufleet.sim import simulate


def reference(jobs: list[dict], gpus: int, policy: str, limits=(3250, 7200, 18000)) -> float:
    """Average JCT of FIFO (strict) or dlas-gpu, Tiresias-style: scan everything per event."""
    nq = len(limits) + 1
    for j in jobs:
        j.update(status="N", ex=0, tex=0, last=j["sub"], q=0)
    arrivals = sorted(jobs, key=lambda j: j["sub"])
    i, runnable, queues, jct, jump = 0, [], [[] for _ in range(nq)], [], math.inf
    free, fifo_wait = gpus, []
    while i < len(arrivals) or runnable:
        t_start = arrivals[i]["sub"] if i < len(arrivals) else math.inf
        t_end = min((r["last"] + r["dur"] - r["tex"] for r in runnable if r["status"] == "R"), default=math.inf)
        t = min(t_start, t_end, jump)
        for r in [r for r in runnable if r["status"] == "R" and r["last"] + r["dur"] - r["tex"] <= t]:
            r["status"] = "E"
            runnable.remove(r)
            jct.append(t - r["sub"])
            free += r["g"]
            if policy == "dlas-gpu":
                queues[r["q"]].remove(r)
        while i < len(arrivals) and arrivals[i]["sub"] <= t:
            j = arrivals[i]
            i += 1
            j.update(status="P", last=t)
            runnable.append(j)
            (queues[0] if policy == "dlas-gpu" else fifo_wait).append(j)
        for r in runnable:
            if r["status"] == "R":
                d = t - r["last"]
                r["tex"] += d
                r["ex"] += d
                r["last"] = t
                if policy == "dlas-gpu" and r["q"] < nq - 1 and r["ex"] * r["g"] >= limits[r["q"]]:
                    queues[r["q"]].remove(r)
                    r["q"] += 1
                    queues[r["q"]].append(r)
            else:
                r["last"] = t
        if policy == "fifo":
            while fifo_wait and fifo_wait[0]["g"] <= free:
                j = fifo_wait.pop(0)
                j["status"] = "R"
                free -= j["g"]
            continue
        left = gpus
        for q in queues:
            for j in q:
                if left >= j["g"]:
                    left -= j["g"]
                    j["status"] = "R"
                else:
                    j["status"] = "P"
            q.sort(key=lambda j: j["status"] != "R")  # stable: running ahead of pending
        jump = min((t + (limits[r["q"]] - r["ex"] * r["g"]) / r["g"] for r in runnable
                    if r["status"] == "R" and r["q"] < nq - 1), default=math.inf)
    return sum(jct) / len(jct)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--copies", type=int, default=160)
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[1].parent / "shared" / "data"))
    args = ap.parse_args()
    base = T.tiresias_as_jobs(T.load_tiresias_jobs(Path(args.data) / "tiresias" / "60_job.csv"))
    jobs = pd.concat([base] * args.copies, ignore_index=True)
    jobs["job_id"] = range(len(jobs))
    jobs = jobs.sort_values(["submit_time", "job_id"], kind="stable").reset_index(drop=True)
    gpus = 8 * args.copies
    print(f"{len(jobs)} jobs on {gpus} GPUs")
    print(f"{'policy':<10} {'gpufleet s':>11} {'reference s':>12} {'ratio':>8} {'avg JCT gpufleet':>17} {'reference':>10}")
    for policy in ("fifo", "dlas-gpu"):
        t0 = time.perf_counter()
        ours = simulate(jobs, gpus, policy, record_timeseries=False).summary["avg_jct"]
        t1 = time.perf_counter()
        rows = [dict(g=int(g), sub=float(s), dur=float(d)) for g, s, d in
                zip(jobs["num_gpu"], jobs["submit_time"], jobs["duration"])]
        t2 = time.perf_counter()
        ref = reference(rows, gpus, policy)
        t3 = time.perf_counter()
        print(f"{policy:<10} {t1 - t0:>11.4f} {t3 - t2:>12.2f} {(t3 - t2) / (t1 - t0):>7.0f}x {ours:>17.1f} {ref:>10.1f}")


if __name__ == "__main__":
    main()
