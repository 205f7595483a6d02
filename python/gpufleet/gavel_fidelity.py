"""Gavel's own simulator beside this package's Gavel-compatible mode, run by run.

:func:`reproduce` replays one of Gavel's recorded runs (a row of
:func:`gpufleet.published.gavel_runs`) with :func:`gpufleet.sim.simulate` and ``gavel_compat=True``
on the same trace, cluster, policy and seed; :func:`fidelity` does so for a selection of runs and
returns the table that docs/simulator.md shows ("Gavel fidelity"; ``benchmarks/gavel_fidelity.py``
prints it). Gavel drops some multi-GPU jobs (docs/simulator.md) and leaves them out of its average,
so the average JCTs are compared over the jobs that both simulators finished.

>>> from gpufleet import published, gavel_fidelity
>>> runs = published.gavel_runs("tests/python/data/gavel_reference/reference.json")  # doctest: +SKIP
>>> gavel_fidelity.fidelity(runs[runs.trace == "probe-idle-gap"], reference_dir="tests/python/data/gavel_reference",
...                         shared_dir="../shared/data")  # doctest: +SKIP
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Mapping

from gpufleet._lazy import lazy

pd = lazy("pandas")

__all__ = ["cluster_of", "fidelity", "reproduce", "trace_path"]

_MODELS = ("v100", "p100", "k80")  # the order of Gavel's -c v100:p100:k80


def cluster_of(arg: str) -> dict[str, int]:
    """Gavel's ``-c v100:p100:k80`` as a cluster (models with no GPU left out)."""
    parts = str(arg).split(":")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        raise ValueError(f"cluster {arg!r} is not Gavel's 'V100:P100:K80' GPU counts")
    return {m: int(n) for m, n in zip(_MODELS, parts) if int(n) > 0}


def trace_path(entry: Mapping[str, Any], reference_dir: str | os.PathLike, shared_dir: str | os.PathLike) -> Path:
    """Where a reference file's trace is: ``traces/...`` beside the file, ``shared:...`` under the
    public data folder (``../shared/data``)."""
    file = str(entry["file"])
    if file.startswith("shared:"):
        return Path(shared_dir) / file[len("shared:"):]
    return Path(reference_dir) / file


def _command(trace: Path, cluster: str, policy: str, seed: int, throughputs: Path) -> str:
    counts = ",".join(f"{m}:{n}" for m, n in cluster_of(cluster).items())
    return (f"gpufleet simulate --format gavel --trace {trace} --throughputs {throughputs} --cluster {counts} "
            f"--policy '{policy}' --seed {seed} --gavel-compat")


def reproduce(run: Mapping[str, Any], traces: Mapping[str, Mapping[str, Any]], *,
              reference_dir: str | os.PathLike, shared_dir: str | os.PathLike,
              gavel_compat: bool | Mapping[str, bool] = True) -> dict[str, Any]:
    """Runs ``run`` (a :func:`~gpufleet.published.gavel_runs` row; ``traces`` is that frame's
    ``attrs["traces"]``) in the Gavel-compatible mode and sets both results side by side:
    ``gavel_*`` and ``gpufleet_*`` average JCT (s, over the jobs both finished) and makespan (s),
    the gaps ``avg_jct_gap`` and ``makespan_gap`` as fractions (gpufleet / Gavel - 1; 0.01 is 1%), the jobs each dropped, ``outcome`` (``ok``,
    ``never ends`` when both loop forever, ``not reproduced``, or the error), the seconds the
    run took and the command that repeats it."""
    from gpufleet import traces as T
    from gpufleet.published import GAVEL_UNREPRODUCED
    from gpufleet.sim import simulate
    out: dict[str, Any] = {k: run[k] for k in ("trace", "cluster", "policy", "seed", "solver")}
    policy = run.get("gpufleet_policy")
    out["gpufleet_policy"] = policy if isinstance(policy, str) and policy else None
    if out["gpufleet_policy"] is None:
        why = GAVEL_UNREPRODUCED.get(str(run["policy"]), "no such policy here")
        gavel = "" if run["status"] == "ok" else f"Gavel: {run['status']}; "
        out["outcome"] = f"{gavel}not reproduced: {why}"
        return out
    shared = Path(shared_dir)
    throughputs = shared / "gavel" / "simulation_throughputs.json"
    path = trace_path(traces[run["trace"]], reference_dir, shared_dir)
    out["command"] = _command(path, run["cluster"], out["gpufleet_policy"], int(run["seed"]), throughputs)
    jobs = T.gavel_as_jobs(T.load_gavel_trace(path), throughputs)
    start = time.perf_counter()
    try:
        result = simulate(jobs, cluster_of(run["cluster"]), out["gpufleet_policy"], seed=int(run["seed"]),
                          gavel_compat=gavel_compat)
    except ValueError as e:
        out["seconds"] = time.perf_counter() - start
        never = "waiting forever" in str(e)
        out["outcome"] = "never ends" if never and run["status"] == "timeout" else f"error: {e}"
        return out
    out["seconds"] = time.perf_counter() - start
    if run["status"] != "ok":
        out["outcome"] = f"Gavel: {run['status']}"
        return out
    dropped = set(int(j) for j in run["dropped_jobs"])
    ours = result.jobs
    out["gavel_dropped"] = tuple(sorted(dropped))
    out["gpufleet_dropped"] = tuple(sorted(int(j) for j in ours.loc[ours["dropped"], "job_id"]))
    kept = ours[~ours["job_id"].isin(dropped) & ~ours["dropped"]]
    out["gavel_avg_jct_s"] = float(run["avg_jct_s"])
    out["gpufleet_avg_jct_s"] = float(kept["jct"].mean())
    out["avg_jct_gap"] = out["gpufleet_avg_jct_s"] / out["gavel_avg_jct_s"] - 1
    out["gavel_makespan_s"] = float(run["makespan_s"])
    out["gpufleet_makespan_s"] = float(result.summary["makespan"])
    out["makespan_gap"] = out["gpufleet_makespan_s"] / out["gavel_makespan_s"] - 1
    out["outcome"] = "ok"
    return out


def fidelity(runs: Any, *, reference_dir: str | os.PathLike, shared_dir: str | os.PathLike,
             gavel_compat: bool | Mapping[str, bool] = True, progress: bool = False) -> Any:
    """:func:`reproduce` for every row of ``runs`` (a :func:`~gpufleet.published.gavel_runs`
    frame or a selection of it), one row each, in order."""
    rows = []
    for _, run in runs.iterrows():
        row = reproduce(run, runs.attrs["traces"], reference_dir=reference_dir, shared_dir=shared_dir,
                        gavel_compat=gavel_compat)
        if progress:
            gaps = (f"{row['avg_jct_gap']:+.2%} / {row['makespan_gap']:+.2%}"
                    if row.get("outcome") == "ok" else row.get("outcome"))
            print(f"{row['trace']} {row['cluster']} {row['policy']} seed {row['seed']}: {gaps}", flush=True)
        rows.append(row)
    return pd.DataFrame(rows)
