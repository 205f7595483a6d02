"""Matplotlib figures for simulation results (notebooks, examples, reports).

Each helper takes ``{label: SimResult}`` (or one result) and an optional ``ax``, draws, and
returns the axes. matplotlib is imported lazily (``pip install gpufleet[plot]``).
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np


def _axes(ax):
    if ax is None:
        import matplotlib.pyplot as plt
        _, ax = plt.subplots(figsize=(6, 4))
    return ax


def _results(results: Any) -> Mapping[str, Any]:
    return results if isinstance(results, Mapping) else {results.policy: results}


def jct_cdf(results: Any, ax=None, log: bool = True):
    """Empirical CDF of job completion time per policy."""
    ax = _axes(ax)
    for label, r in _results(results).items():
        jct = np.sort(r.jobs["jct"].to_numpy())
        ax.step(jct, np.arange(1, len(jct) + 1) / len(jct), where="post", label=label)
    if log:
        ax.set_xscale("log")
    ax.set_xlabel("job completion time (s)")
    ax.set_ylabel("fraction of jobs")
    ax.grid(True, alpha=0.3)
    ax.legend()
    return ax


def utilization(results: Any, ax=None):
    """Busy GPU share over time per policy."""
    ax = _axes(ax)
    for label, r in _results(results).items():
        ts = r.timeseries
        ax.step(ts["time"] / 3600, ts["utilization"], where="post", label=label)
    ax.set_xlabel("time (h)")
    ax.set_ylabel("GPUs busy (share)")
    ax.set_ylim(0, 1.05)
    ax.grid(True, alpha=0.3)
    ax.legend()
    return ax


def summary_bars(results: Any, metric: str = "avg_jct", ax=None):
    """One bar per policy for a summary metric."""
    ax = _axes(ax)
    res = _results(results)
    labels = list(res)
    ax.bar(labels, [res[k].summary[metric] for k in labels])
    ax.set_ylabel(metric)
    ax.tick_params(axis="x", rotation=30)
    return ax


def queue_length(results: Any, ax=None):
    """Pending jobs over time per policy."""
    ax = _axes(ax)
    for label, r in _results(results).items():
        ts = r.timeseries
        ax.step(ts["time"] / 3600, ts["pending_jobs"], where="post", label=label)
    ax.set_xlabel("time (h)")
    ax.set_ylabel("pending jobs")
    ax.grid(True, alpha=0.3)
    ax.legend()
    return ax


__all__ = ["jct_cdf", "queue_length", "summary_bars", "utilization"]
