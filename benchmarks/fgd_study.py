"""The FGD study in one sweep: every openb workload the paper published (9 pod lists) x its six
placement policies x 10 seeds, replayed on the 1,213 GPU nodes (Weng et al., "Beware of
Fragmentation", USENIX ATC 2023; data: Alibaba cluster-trace-gpu-v2023, ../shared/data/openb).

Prints, per workload, each policy's mean GPU allocation ratio at 100% arrived workload (and its
standard deviation over seeds) next to the published mean (fgd_expected_alloc.csv, the study's
own per-seed results), then the time: wall clock, the experiments' summed run time (what one
process would have needed, the baseline) and their ratio, their summed CPU time, and the
machine's load average.

    python benchmarks/fgd_study.py                      # the whole study, fresh, CPU-count workers
    python benchmarks/fgd_study.py --results DIR        # resumable: a rerun reuses DIR's results
    python benchmarks/fgd_study.py --ray auto --plot fgd_study.png
    python benchmarks/fgd_study.py --workloads default gpushare40   # a part of it
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from gpufleet.published import fgd_alloc
from gpufleet.replay import POLICIES
from gpufleet.sweep import summarize, sweep

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / ".." / "shared" / "data" / "openb"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="the openb folder (default ../shared/data/openb)")
    parser.add_argument("--seeds", type=int, default=10, help="seeds 0..N-1 (default 10)")
    parser.add_argument("--workers", type=int, default=None, help="local processes (default: CPU count)")
    parser.add_argument("--ray", metavar="ADDRESS", help="run on the Ray cluster at ADDRESS ('local' starts one)")
    parser.add_argument("--results", type=Path, help="results directory (default: a fresh temporary one)")
    parser.add_argument("--plot", type=Path, help="also draw the figure to this file")
    parser.add_argument("--workloads", nargs="+", metavar="NAME",
                        help="only these workloads (default: the nine published ones, e.g. default gpushare40)")
    args = parser.parse_args()

    published = fgd_alloc(args.data / "fgd_expected_alloc.csv").rename(columns={"mean": "published"})
    workloads = list(dict.fromkeys(published["trace"]))
    if args.workloads:
        unknown = sorted(set(args.workloads) - set(workloads))
        if unknown:
            raise SystemExit(f"fgd_study: no published results for {', '.join(unknown)}; known: {', '.join(workloads)}")
        workloads = [w for w in workloads if w in args.workloads]
    traces = {w: args.data / f"openb_pod_list_{w}.csv" for w in workloads}
    missing = [str(p) for p in traces.values() if not p.is_file()]
    if missing:
        raise SystemExit(f"fgd_study: missing pod lists: {', '.join(missing)}")
    results = args.results or Path(tempfile.mkdtemp(prefix="fgd-study-"))
    load_before = os.getloadavg()
    started_at = time.time()
    start = time.perf_counter()
    df = sweep(traces, list(POLICIES), range(args.seeds), nodes=args.data / "openb_node_list_gpu_node.csv",
               results_dir=results, workers=args.workers,
               executor="ray" if args.ray else "process",
               ray_address=None if args.ray in (None, "local") else args.ray)
    wall = time.perf_counter() - start
    load_after = os.getloadavg()

    table = summarize(df, ["alloc_ratio_at_100"]).merge(published[["trace", "policy", "published"]],
                                                       on=["trace", "policy"], how="left")
    for c in ("mean", "std", "published"):   # printed in percent; the frames hold fractions
        table[c] *= 100
    table["difference"] = table["mean"] - table["published"]
    for trace, rows in table.groupby("trace", sort=False):
        print(f"\n{trace}  (GPU allocation ratio at 100% arrived, %, mean of {int(rows['runs'].iloc[0])} seeds)")
        print(f"  {'policy':<15}{'measured':>9}{'std':>7}{'published':>11}{'diff':>8}")
        for r in rows.itertuples():
            print(f"  {r.policy:<15}{r.mean:>9.2f}{r.std:>7.2f}{r.published:>11.2f}{r.difference:>+8.2f}")
    overall = table.groupby("policy", sort=False)[["mean", "published", "difference"]].mean()
    print(f"\nall {len(workloads)} workloads, mean of the per-workload means (%):")
    print(f"  {'policy':<15}{'measured':>9}{'published':>11}{'diff':>8}")
    for policy, r in overall.iterrows():
        print(f"  {policy:<15}{r['mean']:>9.2f}{r['published']:>11.2f}{r['difference']:>+8.2f}")
    within = (table["difference"].abs() <= 1.0).mean() * 100
    print(f"  {within:.0f}% of the {len(table)} (workload, policy) means are within 1 point of the published")

    # The baseline: the experiments' own run times, as one process would have spent them; their
    # CPU time does not depend on what else the machine runs.
    # Only the records this call wrote (a resumed study reuses the others).
    ran = [json.loads(p.read_text()) for p in results.glob("*.json") if p.stat().st_mtime >= started_at]
    ran = [r for r in ran if r["labels"]["trace"] in workloads]
    serial = sum(r["elapsed_s"] for r in ran)
    cpu = sum(r.get("cpu_s", 0.0) for r in ran)
    executor = f"Ray at {args.ray}" if args.ray else f"{args.workers or os.cpu_count()} local processes"
    print(f"\n{df.attrs['experiments']} experiments ({df.attrs['ran']} run, {df.attrs['reused']} reused) "
          f"on {executor}, {os.cpu_count()} CPUs: {wall:.1f} s wall")
    if df.attrs["ran"]:
        print(f"summed experiment time {serial:.1f} s wall ({serial / max(1, len(ran)):.2f} s each), "
              f"{serial / wall:.2f}x the sweep's wall clock; {cpu:.1f} CPU s "
              f"({cpu / max(1, len(ran)):.2f} s each)")
    print(f"load average (1 min) {load_before[0]:.1f} before, {load_after[0]:.1f} after; results in {results}")
    if args.plot:
        from gpufleet.plots import sweep_errorbars
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(12, 4.5))
        sweep_errorbars(df, "alloc_ratio_at_100", ax=ax, published=published)
        ax.set_title("GPU allocation ratio at 100% arrived workload: mean and std over seeds; x: published")
        fig.savefig(args.plot, dpi=120, bbox_inches="tight")
        print(f"figure: {args.plot}")


if __name__ == "__main__":
    main()
