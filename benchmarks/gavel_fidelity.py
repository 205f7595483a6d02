"""Gavel's own simulator against gpufleet's Gavel-compatible mode, on every run Gavel's simulator
recorded (tests/python/data/gavel_reference/reference.json: 8 traces x 3 clusters x 13 policies,
the physical-cluster traces on 8:16:24, and seed and solver repeats; Narayanan et al., OSDI 2020).

Prints one row per run: trace, cluster (v100:p100:k80), Gavel's policy and the one reproducing it,
seed, Gavel's average JCT and makespan, ours (average over the jobs both kept), the gaps, and the
command that repeats our side; then, per policy, how many runs are within 2% on both figures and
the median and largest gaps. Runs that Gavel could not finish (crashes, endless loops) and policies
without a counterpart here say so.

    python benchmarks/gavel_fidelity.py                        # every ECOS run, markdown table
    python benchmarks/gavel_fidelity.py --policies max_min_fairness fifo --seeds 0 1 2
    python benchmarks/gavel_fidelity.py --json fidelity.json   # also every figure as JSON
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from gpufleet import gavel_fidelity, published

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "tests" / "python" / "data" / "gavel_reference"
SHARED = ROOT / ".." / "shared" / "data"


def _gap(v: float) -> str:
    return f"{v:+.2%}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reference", type=Path, default=REFERENCE / "reference.json")
    parser.add_argument("--shared", type=Path, default=SHARED, help="the public data folder (../shared/data)")
    parser.add_argument("--traces", nargs="+", help="only these traces")
    parser.add_argument("--clusters", nargs="+", help="only these clusters (v100:p100:k80)")
    parser.add_argument("--policies", nargs="+", help="only these of Gavel's policies")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--solver", default="ECOS", help="Gavel's LP solver of the runs to compare (ECOS)")
    parser.add_argument("--json", type=Path, help="also write every row to this JSON file")
    args = parser.parse_args()

    runs = published.gavel_runs(args.reference)
    keep = (runs.solver == args.solver) & runs.seed.isin(args.seeds)
    for column, wanted in (("trace", args.traces), ("cluster", args.clusters), ("policy", args.policies)):
        if wanted:
            keep &= runs[column].isin(wanted)
    selected = runs[keep]
    start = time.perf_counter()
    table = gavel_fidelity.fidelity(selected, reference_dir=args.reference.parent, shared_dir=args.shared)
    elapsed = time.perf_counter() - start

    print("| trace | cluster | Gavel policy | gpufleet policy | seed | Gavel avg JCT s | gpufleet | gap | "
          "Gavel makespan s | gpufleet | gap |")
    print("|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for _, r in table.iterrows():
        ours = r.gpufleet_policy if isinstance(r.gpufleet_policy, str) else "-"
        head = f"| {r.trace} | {r.cluster} | {r.policy} | {ours} | {r.seed} |"
        if r.outcome == "ok":
            print(f"{head} {r.gavel_avg_jct_s:,.1f} | {r.gpufleet_avg_jct_s:,.1f} | {_gap(r.avg_jct_gap)} | "
                  f"{r.gavel_makespan_s:,.1f} | {r.gpufleet_makespan_s:,.1f} | {_gap(r.makespan_gap)} |")
        else:
            print(f"{head} {r.outcome} | | | | | |")
    print()
    ok = table[table.outcome == "ok"]
    print("| gpufleet policy | runs | within 2% (both) | median / max avg JCT gap | median / max makespan gap |")
    print("|---|---:|---:|---:|---:|")
    for policy, g in ok.groupby("gpufleet_policy", sort=True):
        within = int(((g.avg_jct_gap.abs() < 0.02) & (g.makespan_gap.abs() < 0.02)).sum())
        a, m = g.avg_jct_gap.abs(), g.makespan_gap.abs()
        print(f"| {policy} | {len(g)} | {within} | {a.median():.2%} / {a.max():.2%} | "
              f"{m.median():.2%} / {m.max():.2%} |")
    other = table[table.outcome != "ok"]
    if len(other):
        print()
        for outcome, g in other.groupby("outcome"):
            print(f"{len(g)} run(s): {outcome}")
    mismatched = ok[ok.gavel_dropped != ok.gpufleet_dropped]
    for _, r in mismatched.iterrows():
        print(f"dropped jobs differ: {r.trace} {r.cluster} {r.policy}: Gavel {list(r.gavel_dropped)}, "
              f"gpufleet {list(r.gpufleet_dropped)}")
    print(f"\n{len(table)} runs in {elapsed:.0f} s (gpufleet side)")
    if args.json:
        args.json.write_text(json.dumps(table.to_dict(orient="records"), indent=1, default=str))


if __name__ == "__main__":
    main()
