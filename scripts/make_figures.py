"""Draws the README's figures from the public traces in ../shared/data.

    .venv/bin/python scripts/make_figures.py            # writes docs/figures/*.png
    .venv/bin/python scripts/make_figures.py --out DIR --data ../shared/data

Figures (about 15 s on two cores):

* ``policy_jct.png``: the main job's job-time policies (examples/compare_policies.py) on Gavel's
  msr trace ``0e4a51`` (all 1,181 jobs with measured throughputs; Narayanan et al., OSDI 2020,
  github.com/stanford-futuredata/gavel) on 48 K80 + 48 P100 + 48 V100 with a 30-s restore delay,
  as in docs/simulator.md and notebook 04: average JCT per policy, mean over SEEDS simulation
  seeds with min-max bars (the agnostic policies draw GPU models at random), and the JCT
  distributions of seed 0.
* ``openb_alloc.png``: the openb GPU-sharing replay (Weng et al., USENIX ATC 2023; Alibaba
  cluster-trace-gpu-v2023, github.com/alibaba/clusterdata), default trace on its 6,212 GPUs, one
  seed: GPU allocation ratio against arrived GPU workload per placement policy, with the paper's
  10-seed means at 100% (docs/replay.md has the 10-seed table).

A missing trace file is an error naming it (exit 2).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ("policy_jct.png", "openb_alloc.png")
DPI = 100  # small files: the README shows them at about this size

# The main job's policies (examples/compare_policies.py), in its order.
POLICIES = ("fifo", "srtf", "las", "dlas-gpu", "hetero-las(aware=false)", "hetero-las", "gavel-maxmin")
GAVEL_TRACE = Path("gavel") / "msr" / "0e4a51.trace"
GAVEL_THROUGHPUTS = Path("gavel") / "simulation_throughputs.json"
GAVEL_CLUSTER = {"k80": 48, "p100": 48, "v100": 48}
SEEDS = range(5)
OPENB_NODES = Path("openb") / "openb_node_list_gpu_node.csv"
OPENB_PODS = Path("openb") / "openb_pod_list_default.csv"


def _need(data: Path, rel: Path) -> Path:
    path = data / rel
    if not path.is_file():
        raise FileNotFoundError(f"trace file {path} not found (public traces: see ../shared/data/README.md "
                                f"or pass --data DIR)")
    return path


def _source(fig, text: str) -> None:
    fig.text(0.01, 0.01, text, fontsize=7.5, color="0.35", ha="left", va="bottom")


def _save(fig, path: Path) -> Path:
    """Lay out (leaving room for the source line), write at DPI and close."""
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def policy_jct(data: Path, out: Path) -> Path:
    """Average JCT per job-time policy (bars, hours) and the JCT CDFs (log time axis)."""
    import gpufleet.traces as T
    from gpufleet.plots import jct_cdf, policy_color
    from gpufleet.sim import compare

    jobs = T.gavel_as_jobs(T.load_gavel_trace(_need(data, GAVEL_TRACE)), _need(data, GAVEL_THROUGHPUTS))
    results: dict = {}  # each policy's run with the first seed, for the CDFs
    table = compare(jobs, GAVEL_CLUSTER, POLICIES, seeds=SEEDS, workers=2, results=results, restore_delay=30,
                    placement=None)

    fig, (bars, cdf) = plt.subplots(1, 2, figsize=(11, 4.4), gridspec_kw={"width_ratios": [1, 1.25]})
    hours = list(table["avg_jct_mean"] / 3600)
    spread = [list(table["avg_jct_mean"] - table["avg_jct_min"]), list(table["avg_jct_max"] - table["avg_jct_mean"])]
    y = range(len(results))
    bars.barh(y, hours, color=[policy_color(p) for p in results], xerr=[[v / 3600 for v in side] for side in spread],
              error_kw={"ecolor": "0.2", "capsize": 3, "linewidth": 1})
    bars.set_yticks(list(y), list(results))
    bars.invert_yaxis()
    top = list(table["avg_jct_max"] / 3600)
    for i, (h, hi) in enumerate(zip(hours, top)):
        bars.text(hi, i, f" {h:.0f} h", va="center", fontsize=9)
    bars.set_xlim(0, max(top) * 1.2)
    bars.set_xlabel(f"average job completion time (h), mean of {len(SEEDS)} seeds, min-max bars")
    bars.set_title("Average JCT per policy (lower is better)")
    bars.grid(True, axis="x", alpha=0.3)

    jct_cdf(results, ax=cdf)
    cdf.set_title(f"JCT distribution (seed {SEEDS[0]})")
    cdf.legend(fontsize=8, loc="upper left")
    fig.suptitle(f"Job-time policies: Gavel msr trace 0e4a51 ({len(jobs)} jobs) on 48 K80 + 48 P100 + "
                 "48 V100, 30 s restore delay", fontsize=11)
    _source(fig, "Data: Gavel (Narayanan et al., OSDI 2020), github.com/stanford-futuredata/gavel: "
                 "msr trace and measured throughputs. Simulated with gpufleet.sim.simulate.")
    return _save(fig, out / "policy_jct.png")


def openb_alloc(data: Path, out: Path, seed: int = 0) -> Path:
    """GPU allocation ratio against arrived GPU workload per placement policy (openb replay)."""
    from gpufleet import replay
    from gpufleet.plots import percent_axis, policy_color
    from gpufleet.traces import load_openb_nodes, load_openb_pods

    nodes = load_openb_nodes(_need(data, OPENB_NODES))
    pods = load_openb_pods(_need(data, OPENB_PODS))
    runs = {p: replay.replay_openb(nodes, pods, policy=p, seed=seed) for p in replay.policy_names()}

    fig, ax = plt.subplots(figsize=(8, 4.8))
    for name, res in runs.items():   # fractions plotted, axes labelled in percent
        ts = res.timeseries
        ax.plot(ts["arrived"], ts["allocated"], color=policy_color(name),
                label=f"{name}: {res.summary['alloc_ratio_near_100']:.1%} at 100% arrived")
        published = replay.PUBLISHED_ALLOC_AT_100.get(name)
        if published is not None:
            ax.plot([1.0], [published], marker="x", color=policy_color(name), markersize=8, linestyle="none")
    ax.plot([], [], marker="x", color="0.3", linestyle="none", label="published at 100%, mean of 10 seeds")
    ax.plot([0, 1.3], [0, 1.3], color="grey", linestyle=":", linewidth=1, label="arrived = allocated")
    ax.set_xlim(0.6, 1.3)
    ax.set_ylim(0.6, 1.0)
    percent_axis(ax, "x", decimals=0)
    percent_axis(ax, "y", decimals=0)
    ax.set_xlabel("arrived GPU workload (% of cluster GPUs)")
    ax.set_ylabel("GPU allocation ratio (% of cluster GPUs)")
    ax.set_title(f"GPU-sharing placement policies, openb replay: default trace ({len(pods):,} pods) on "
                 f"{int(nodes['num_gpu'].sum()):,} GPUs, seed {seed}", fontsize=10.5)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    _source(fig, "Data: Alibaba cluster-trace-gpu-v2023, github.com/alibaba/clusterdata (Weng et al., "
                 "USENIX ATC 2023). Replayed with gpufleet.replay.replay_openb.")
    return _save(fig, out / "openb_alloc.png")


def main(argv: list[str] | None = None) -> int:
    """Writes every figure of :data:`FIGURES` into ``--out``; 0, or 2 when a trace is missing."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "figures", help="folder for the PNGs")
    ap.add_argument("--data", type=Path, default=ROOT / ".." / "shared" / "data",
                    help="public traces (default ../shared/data)")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for draw in (policy_jct, openb_alloc):
        t0 = time.perf_counter()
        try:
            path = draw(args.data.resolve(), args.out)
        except FileNotFoundError as e:
            print(f"make_figures: {e}", file=sys.stderr)
            return 2
        print(f"wrote {path} ({path.stat().st_size / 1024:.0f} KiB, {time.perf_counter() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
