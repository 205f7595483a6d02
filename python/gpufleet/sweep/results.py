"""A sweep's results: one JSON file per experiment, written atomically and read back; the tidy
frame; its summary over seeds; the published figures to set beside it."""
from __future__ import annotations

import json
import os
import socket
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpufleet._lazy import lazy

from .errors import SweepError
from .experiment import Experiment

if TYPE_CHECKING:  # checkers see the frames' type
    import pandas as pd
else:
    pd = lazy("pandas")

__all__ = ["frame", "load_gavel_reference", "load_published_alloc", "read_result", "read_results", "result_path", "summarize",
           "write_result"]

_RESULT_FORMAT = 1


def result_path(results_dir: Path, key: str) -> Path:
    return results_dir / f"{key}.json"


def read_result(path: Path, description: Mapping[str, Any]) -> dict[str, float | None] | None:
    """The metrics recorded in ``path`` for ``description``; ``None`` when absent, unreadable or
    recorded for another description (a hash collision, or a file from another format)."""
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("description") != description:
        return None
    metrics = record.get("metrics")
    return dict(metrics) if isinstance(metrics, dict) else None


def write_result(results_dir: Path, exp: Experiment, metrics: Mapping[str, Any],
                 timing: tuple[float, float]) -> None:
    """Writes one result atomically: a temporary file in the same directory, flushed to disk, then
    renamed over the final name, so readers see the whole record or nothing."""
    from gpufleet import __version__
    record = {"format": _RESULT_FORMAT, "key": exp.key, "description": exp.description,
              "labels": exp.labels(), "metrics": dict(metrics), "elapsed_s": round(timing[0], 4),
              "cpu_s": round(timing[1], 4),
              "gpufleet": __version__, "host": socket.gethostname(),
              "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    final = result_path(results_dir, exp.key)
    tmp = results_dir / f".{exp.key}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
    try:
        with open(tmp, "w") as f:
            json.dump(record, f, indent=1)  # metrics keep the summary's order
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, final)
    finally:
        if tmp.exists():
            tmp.unlink()


def read_results(results_dir: str | os.PathLike) -> pd.DataFrame:
    """Every result recorded in ``results_dir`` as the tidy frame :func:`gpufleet.sweep.sweep`
    returns (columns from each file's labels); temporary and unreadable files are skipped."""
    rows = []
    for path in sorted(Path(results_dir).glob("*.json")):
        try:
            record = json.loads(path.read_text())
            labels, metrics = dict(record["labels"]), dict(record["metrics"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        rows += [{**labels, "metric": m, "value": v} for m, v in metrics.items()]
    return frame(rows, [])


def frame(rows: list[dict[str, Any]], option_names: Sequence[str]) -> pd.DataFrame:
    """The tidy frame of ``rows``: the label columns, one per option, ``metric`` and ``value``."""
    columns = ["kind", "trace", "policy", "seed", *option_names, "metric", "value"]
    df = pd.DataFrame(rows)
    for c in columns:
        if c not in df.columns:
            df[c] = None
    extra = [c for c in df.columns if c not in columns]
    df = df[columns[:-2] + extra + columns[-2:]]
    df["seed"] = df["seed"].astype("int64")
    df["value"] = df["value"].astype("float64")
    return df


def summarize(df: pd.DataFrame, metrics: Sequence[str] | None = None) -> pd.DataFrame:
    """Mean, standard deviation (over seeds) and number of runs per kind, trace, policy, option
    values and metric of a sweep's frame, in the frame's order; ``metrics`` picks some."""
    if metrics is not None:
        unknown = sorted(set(metrics) - set(df["metric"]))
        if unknown:
            raise SweepError(f"no metric {', '.join(map(repr, unknown))} in this sweep; it has "
                             f"{', '.join(sorted(set(df['metric'])))}")
        df = df[df["metric"].isin(list(metrics))]
    keys = [c for c in df.columns if c not in ("seed", "value")]
    g = df.groupby(keys, sort=False, dropna=False)["value"]
    return g.agg(mean="mean", std="std", runs="count").reset_index()


def load_published_alloc(path: str | os.PathLike | None = None, at: str = "100") -> pd.DataFrame:
    """The FGD study's published GPU allocation ratio (%) at ``at`` percent arrived workload, as
    :func:`gpufleet.published.fgd_alloc` reads it (``path``: the study's per-seed table,
    ``fgd_expected_alloc.csv``; None: the paper's default-trace figures), in the columns a sweep
    is compared with (:func:`gpufleet.plots.sweep_errorbars`, ``gpufleet sweep --published``):
    ``trace``, ``policy``, ``published`` (the mean over seeds) and ``published_runs``."""
    from gpufleet.published import fgd_alloc
    try:
        table = fgd_alloc(path, int(at))
    except ValueError as e:
        raise SweepError(str(e)) from None
    return table.rename(columns={"mean": "published", "seeds": "published_runs"})[
        ["trace", "policy", "published", "published_runs"]]


def load_gavel_reference(path: str | os.PathLike) -> dict[tuple[str, str, str, int], dict[str, float]]:
    """Gavel's own simulator's figures (a reference file such as
    tests/python/data/gavel_reference/reference.json, :func:`gpufleet.published.gavel_runs`) by
    what a sweep row is: ``(trace label, cluster as Gavel's "v100:p100:k80" counts, gpufleet
    policy, seed)`` -> ``{"avg_jct": s, "makespan": s}``; only Gavel's runs that finished with its
    default solver (ECOS) and have a counterpart here. The trace label is the stem of the trace's
    file, as the sweep labels it."""
    from pathlib import PurePosixPath
    from gpufleet.published import gavel_runs
    try:
        runs = gavel_runs(path)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise SweepError(f"{path}: not a reference file of Gavel's runs: {e}") from None
    if runs.empty:
        raise SweepError(f"{path}: not a reference file of Gavel's runs: it lists no runs")
    label = {name: PurePosixPath(str(entry.get("file", name))).stem
             for name, entry in runs.attrs.get("traces", {}).items()}
    out: dict[tuple[str, str, str, int], dict[str, float]] = {}
    for r in runs.itertuples():
        if r.status != "ok" or r.solver != "ECOS" or not isinstance(r.gpufleet_policy, str):
            continue
        key = (label.get(r.trace, r.trace), str(r.cluster), r.gpufleet_policy, int(r.seed))
        out[key] = {"avg_jct": float(r.avg_jct_s), "makespan": float(r.makespan_s)}
    return out
