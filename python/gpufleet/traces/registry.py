"""Trace formats by name: ``load_trace(path, "gavel")``, ``to_jobs(df, "gavel", ...)``.

Dispatch is a dict lookup so that adding a format is one entry, not another branch.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ._fields import PathLike
from .gavel import gavel_as_jobs, load_gavel_trace
from .openb import load_openb_pods, openb_as_jobs
from .philly import load_philly_jobs, philly_as_jobs
from .schema import finish_jobs, load_jobs_csv
from .synthetic import synthetic_jobs
from .tiresias import load_tiresias_jobs, tiresias_as_jobs

__all__ = ["TraceFormat", "load_trace", "to_jobs", "trace_formats"]


@dataclass(frozen=True)
class TraceFormat:
    """How to load one format's main file, and how to turn that frame into jobs."""

    load: Callable[..., pd.DataFrame]
    as_jobs: Callable[..., pd.DataFrame]
    summary: str


def _load_synthetic(path: PathLike | None, **kw: Any) -> pd.DataFrame:
    # A saved synthetic trace is just a CSV in the unified schema; with no path, make one.
    return synthetic_jobs(**kw) if path is None else load_jobs_csv(path, **kw)


def _jobs_identity(df: pd.DataFrame) -> pd.DataFrame:
    return finish_jobs(df, "synthetic jobs", reference_model=df.attrs.get("reference_model"))


_FORMATS: dict[str, TraceFormat] = {
    "openb": TraceFormat(load_openb_pods, openb_as_jobs, "Alibaba GPU-sharing pods (openb_pod_list_*.csv)"),
    "tiresias": TraceFormat(load_tiresias_jobs, tiresias_as_jobs, "Tiresias job list (e.g. 60_job.csv)"),
    "gavel": TraceFormat(load_gavel_trace, gavel_as_jobs, "Gavel .trace (physical_cluster or msr layout)"),
    "philly": TraceFormat(load_philly_jobs, philly_as_jobs, "Philly cluster_job_log (JSON)"),
    "synthetic": TraceFormat(_load_synthetic, _jobs_identity, "unified job schema CSV; path None generates"),
}


def trace_formats() -> list[str]:
    """Names accepted by :func:`load_trace` and :func:`to_jobs`."""
    return list(_FORMATS)


def _format(fmt: str) -> TraceFormat:
    try:
        return _FORMATS[fmt]
    except KeyError:
        raise ValueError(f"unknown trace format {fmt!r}; known formats: {', '.join(_FORMATS)}") from None


def load_trace(path: PathLike | None, fmt: str, **kw: Any) -> pd.DataFrame:
    """Load ``path`` with the loader of format ``fmt`` (keyword arguments passed on).

    Returns the format's own frame (pods for openb, jobs for the others); use
    :func:`to_jobs` for the unified job schema. For ``"synthetic"``, ``path=None``
    generates :func:`synthetic_jobs` from ``kw`` instead of reading a CSV.
    """
    return _format(fmt).load(path, **kw)


def to_jobs(df: pd.DataFrame, fmt: str, **kw: Any) -> pd.DataFrame:
    """Convert a frame from ``load_trace(..., fmt)`` to the unified job schema.

    Keyword arguments go to the format's converter, e.g. ``throughputs=`` (required) and
    ``reference=`` for Gavel.
    """
    return _format(fmt).as_jobs(df, **kw)
