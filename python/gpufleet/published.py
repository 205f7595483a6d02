"""Published reference figures, read in one place with this package's names for policies and
traces: what the studies we reproduce reported, to set our measurements beside.

* FGD (Weng et al., "Beware of Fragmentation", USENIX ATC 2023): GPU allocation ratio (a
  fraction of the cluster's GPUs, 1.0 = all, as the replay reports it) per openb trace and placement policy, from the study's own per-seed results
  (``fgd_expected_alloc.csv``: its simulator's ``analysis_allo_discrete.csv``) or the paper's
  default-trace means (:data:`FGD_DEFAULT_ALLOC_AT_100`). :func:`fgd_alloc` reads both.
* Tiresias (Gu et al., NSDI 2019): its simulator's average JCTs on ``60_job.csv`` with 8 GPUs
  (:data:`TIRESIAS_60_JOB_AVG_JCT`).
* Gavel (Narayanan et al., OSDI 2020): its own simulator's average JCT and makespan per trace,
  cluster, policy, seed and LP solver, from a reference file of runs
  (tests/python/data/gavel_reference/reference.json in the repository); :func:`gavel_runs`
  reads it, :data:`GAVEL_POLICY_NAMES` names the policy that reproduces each of Gavel's in the
  simulator's Gavel-compatible mode (:mod:`gpufleet.gavel_fidelity` runs them side by side).
* Alibaba PAI-2020 (Weng et al., "MLaaS in the Wild", NSDI 2022): its simulator's table
  (github.com/alibaba/clusterdata, ``cluster-trace-gpu-v2020/simulator/README.md``: average JCT,
  waiting time and makespan of five policies on 20,000 jobs of
  ``pai_job_duration_estimate_100K.csv``, 6,500 GPUs, seed 42), :data:`PAI2020_README`, with the
  settings it was run with, :data:`PAI2020_README_SETTINGS` (:mod:`gpufleet.pai2020` reproduces it).

Another study's tables belong here too, as a constant or a reader beside these, each with its
source; the replay, the sweep, the benchmarks and the notebooks read them from here. Ratios and
shares are fractions (0.9523, not 95.23%) in every constant and frame here, as in every result of
this package; percent is only how tables and axes print them.
"""
from __future__ import annotations

import os
from typing import Any

from gpufleet._lazy import lazy

pd = lazy("pandas")

__all__ = ["FGD_DEFAULT_ALLOC_AT_100", "FGD_POLICY_NAMES", "GAVEL_POLICY_NAMES", "GAVEL_UNREPRODUCED",
           "PAI2020_README", "PAI2020_README_SETTINGS", "PAI2020_TRACE", "TIRESIAS_60_JOB_AVG_JCT", "fgd_alloc",
           "gavel_runs"]

#: The trace file of the PAI-2020 simulator's table (its folder ``traces/pai``).
PAI2020_TRACE = "pai_job_duration_estimate_100K.csv"

#: The PAI-2020 simulator's README table (its log ``0228-...-6500g_1n_h0_0p_3sn_0gt-1000ar-20000j-1x-42r``):
#: policy -> average JCT (s), average waiting time (s) and makespan (s); 20,000 jobs done in each.
PAI2020_README: dict[str, dict[str, float]] = {
    "sjf": {"avg_jct": 5988.61, "avg_queueing_delay": 949.91, "makespan": 535706.0},
    "sju": {"avg_jct": 6278.33, "avg_queueing_delay": 1239.62, "makespan": 535706.0},
    "sjg": {"avg_jct": 6071.01, "avg_queueing_delay": 1032.31, "makespan": 535706.0},
    "sjgg": {"avg_jct": 6001.94, "avg_queueing_delay": 963.23, "makespan": 535706.0},
    "fifo": {"avg_jct": 7918.47, "avg_queueing_delay": 2879.77, "makespan": 535706.0},
}

#: How that table was run (``run_simulator.py`` defaults), as :func:`gpufleet.pai2020.simulate_pai`
#: takes them; they are also that function's defaults.
PAI2020_README_SETTINGS: dict[str, Any] = {"seed": 42, "num_jobs": 20000, "arrival_rate": 1000, "interval": 60,
                                           "num_gpus": 6500, "num_nodes": 1, "packing": False, "repeat": 1}

#: The FGD study's policy folders (``sc_policy`` in its result tables) -> registered placement
#: strategies, in the paper's order.
FGD_POLICY_NAMES: dict[str, str] = {
    "01-Random": "random", "02-DotProd": "dotprod", "03-GpuClustering": "gpu-clustering",
    "04-GpuPacking": "gpu-packing", "05-BestFit": "bestfit", "06-FGD": "fgd",
}

#: GPU allocation ratio (a fraction) at 100% arrived workload, mean of 10 seeds, default trace, as the
#: FGD study published it (the means of column ``100`` of its result table for that trace; the paper
#: prints them in percent: 95.23% is 0.9523 here).
FGD_DEFAULT_ALLOC_AT_100: dict[str, float] = {
    "fgd": 0.9523, "bestfit": 0.9286, "gpu-packing": 0.9178, "gpu-clustering": 0.9165, "dotprod": 0.9062,
    "random": 0.8630,
}

#: Average JCT (s) of Tiresias's own simulator on its ``60_job.csv`` with 8 GPUs and ``count``
#: placement (Tiresias repository, ``simulator/``), by this package's policy names.
TIRESIAS_60_JOB_AVG_JCT: dict[str, float] = {"fifo": 1556.5, "dlas-gpu": 715.3, "srtf": 519.9}

#: Gavel's policies (its trace driver's ``-p`` names) -> the registered policy that reproduces each
#: in the simulator's Gavel-compatible mode (``gavel_compat=True``; docs/simulator.md).
GAVEL_POLICY_NAMES: dict[str, str] = {
    "max_min_fairness_perf": "gavel-lp", "max_min_fairness": "gavel-lp(aware=false)",
    "finish_time_fairness_perf": "gavel-ftf", "finish_time_fairness": "gavel-ftf(aware=false)",
    "min_total_duration_perf": "gavel-makespan", "min_total_duration": "gavel-makespan(aware=false)",
    "max_sum_throughput_perf": "gavel-throughput",
    "fifo_perf": "gavel-fifo", "fifo": "gavel-fifo(aware=false)",
    # Space sharing (two jobs on one set of GPUs), in the Gavel-compatible mode only. Gavel's own
    # packed LP policies crash on every trace with mixed scale factors (a reshape in its policy.py
    # assumes every job has as many pairs); these run there, pairing equal scale factors only.
    "fifo_packed": "gavel-fifo(packing=true)", "max_min_fairness_packed": "gavel-lp(packing=true)",
    "finish_time_fairness_packed": "gavel-ftf(packing=true)",
    "min_total_duration_packed": "gavel-makespan(packing=true)",
}

#: Gavel's policies with no counterpart here, and why (none left: every policy of the reference
#: file has one).
GAVEL_UNREPRODUCED: dict[str, str] = {}

_GAVEL_RUN_COLUMNS = ("trace", "cluster", "policy", "seed", "solver", "status", "avg_jct_s", "makespan_s",
                      "dropped_jobs", "command")

_TRACE_PREFIX = "openb_pod_list_"


def fgd_alloc(path: str | os.PathLike | None = None, arrived: int = 100) -> Any:
    """The FGD study's GPU allocation ratio (a fraction; its table holds percent) at ``arrived``
    percent arrived workload (the study's column name): one row per (trace, policy), columns
    ``trace`` (as in ``openb_pod_list_<trace>.csv``), ``policy`` (registered strategy name),
    ``mean``, ``std`` (over seeds, fractions too) and ``seeds``, sorted by trace and policy.

    ``path`` is the study's per-seed table (``workload, sc_policy, ..., 0..130``); without one,
    the paper's default-trace means at 100% (``std`` NaN, 10 seeds). ValueError names a missing
    column or an unknown ``sc_policy``."""
    if path is None:
        if arrived != 100:
            raise ValueError(f"the paper's default-trace figures are at 100% arrived, not {arrived}%; "
                             "give the study's table for other loads")
        rows = [{"trace": "default", "policy": p, "mean": v, "std": float("nan"), "seeds": 10}
                for p, v in FGD_DEFAULT_ALLOC_AT_100.items()]
        return pd.DataFrame(rows).sort_values(["trace", "policy"], ignore_index=True)
    table = pd.read_csv(path)
    column = str(arrived)
    missing = [c for c in ("workload", "sc_policy", column) if c not in table.columns]
    if missing:
        raise ValueError(f"{path}: lacks column(s) {', '.join(missing)} (expected the FGD study's "
                         "analysis_allo_discrete.csv layout)")
    unknown = sorted(set(map(str, table["sc_policy"])) - set(FGD_POLICY_NAMES))
    if unknown:
        raise ValueError(f"{path}: unknown sc_policy value(s) {', '.join(unknown)} (known: "
                         f"{', '.join(FGD_POLICY_NAMES)})")
    table = pd.DataFrame({
        "trace": table["workload"].astype(str).str.replace(_TRACE_PREFIX, "", regex=False),
        "policy": table["sc_policy"].map(FGD_POLICY_NAMES),
        "value": pd.to_numeric(table[column], errors="raise") / 100.0})   # its percent -> a fraction
    out = table.groupby(["trace", "policy"], sort=True)["value"].agg(mean="mean", std="std", seeds="count")
    return out.reset_index()


def gavel_runs(path: str | os.PathLike) -> Any:
    """Gavel's own simulator's figures: one row per run of a reference file (``{"gavel": {...},
    "traces": {...}, "runs": [...]}``, such as tests/python/data/gavel_reference/reference.json),
    columns ``trace``, ``cluster`` (its ``-c v100:p100:k80``), ``policy`` (Gavel's name),
    ``seed``, ``solver``, ``status`` (``ok``, ``crash`` or ``timeout``), ``avg_jct_s`` (Gavel's
    average over the jobs it did not drop), ``makespan_s``, ``dropped_jobs`` (a tuple of job
    rows), ``command``, and ``gpufleet_policy`` (:data:`GAVEL_POLICY_NAMES`, None where
    :data:`GAVEL_UNREPRODUCED`). ``attrs`` holds the file's ``gavel`` (commit, versions) and
    ``traces`` entries. ValueError names a run that lacks a column."""
    import json
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    rows = []
    for k, run in enumerate(doc.get("runs", [])):
        missing = [c for c in ("trace", "cluster", "policy", "seed", "solver", "status", "command") if c not in run]
        if missing:
            raise ValueError(f"{path}: run {k} lacks {', '.join(missing)}")
        row = {c: run.get(c) for c in _GAVEL_RUN_COLUMNS}
        row["dropped_jobs"] = tuple(run.get("dropped_jobs") or ())
        row["gpufleet_policy"] = GAVEL_POLICY_NAMES.get(run["policy"])
        rows.append(row)
    out = pd.DataFrame(rows, columns=[*_GAVEL_RUN_COLUMNS, "gpufleet_policy"])
    out.attrs["gavel"] = doc.get("gavel", {})
    out.attrs["traces"] = doc.get("traces", {})
    return out
