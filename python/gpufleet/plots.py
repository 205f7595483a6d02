"""Matplotlib figures for simulation results (notebooks, examples, reports).

Each helper takes ``{label: SimResult}`` (or one result) and an optional ``ax``, draws, and
returns the axes; :func:`sweep_errorbars` takes the frame of a sweep (:func:`gpufleet.sweep`).
matplotlib is imported lazily (``pip install ".[plot]"``).

Log-scaled axes get readable ticks: :func:`log_time_axis` labels a seconds axis "10 s", "1 min",
"1 h", "1 d"; :func:`log_number_axis` labels plain numbers "1", "10", "100" (or "2x" with a
unit) at 1-2-5 steps or powers of ten, never "10^0". Minor ticks are drawn but not labelled, so
labels never overlap.

A policy (a label of the results) keeps one colour in every panel and every figure of a process:
:func:`policy_color` hands out colours by label, the first label seen taking the first colour.
Ratios and shares stay fractions in the data; :func:`percent_axis` labels such an axis in percent.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Mapping

import numpy as np

from gpufleet._extras import require
from gpufleet.errors import NotFoundError

# Most labelled ticks on a log axis; the densest candidate set that fits is used.
MAX_LOG_TICKS = 7

# Time units of log_time_axis: (seconds, label, the next unit's size). A value is written in the
# largest unit it reaches ("90 s" is written from the 1-2-5 set, so it never appears: 1 min, 2 min).
_TIME_UNITS = ((1e-6, "µs", 1e-3), (1e-3, "ms", 1.0), (1.0, "s", 60.0), (60.0, "min", 3600.0),
               (3600.0, "h", 86400.0), (86400.0, "d", math.inf))


def _axes(ax):
    if ax is None:
        plt = require("matplotlib.pyplot", "plot", "gpufleet.plots")
        _, ax = plt.subplots(figsize=(6, 4))
    return ax


def _results(results: Any) -> Mapping[str, Any]:
    return results if isinstance(results, Mapping) else {results.policy: results}


# --- colours ---------------------------------------------------------------------------------------
# Matplotlib's "tab20" colours, the dark shade of each pair first (the first ten are its default
# cycle, "tab10"), so up to twenty policies get distinct colours.
_PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
            "#bcbd22", "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94",
            "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5")
_POLICY_COLORS: dict[str, str] = {}


def policy_color(label: Any) -> str:
    """The colour of policy ``label`` (a hex string): the same on every call in this process, so
    a policy has one colour across a figure's panels and across figures. A label seen for the first
    time takes the next colour of a 20-colour palette (then they repeat)."""
    key = str(label)
    if key not in _POLICY_COLORS:
        _POLICY_COLORS[key] = _PALETTE[len(_POLICY_COLORS) % len(_PALETTE)]
    return _POLICY_COLORS[key]


def percent_axis(ax, axis: str = "y", decimals: int | None = None):
    """Labels ``axis`` ("x" or "y") of ``ax`` in percent for data that are fractions (0.95 is
    shown as "95%"). Returns the axes."""
    from matplotlib.ticker import PercentFormatter
    (ax.xaxis if axis == "x" else ax.yaxis).set_major_formatter(PercentFormatter(1.0, decimals=decimals))
    return ax


# --- log-axis ticks --------------------------------------------------------------------------------
def _time_levels() -> list[list[float]]:
    """Candidate tick positions (seconds), densest first: mantissas 1-8, then 1-2-5, then powers
    of ten within each unit, then each unit's 1 (and 10^k days)."""
    mantissas = ((1, 2, 3, 4, 5, 6, 8), (1, 2, 5), (1,))
    levels: list[list[float]] = []
    for subs in mantissas:
        ticks = []
        for size, _, next_size in _TIME_UNITS:
            for exp in range(0, 6):
                for m in subs:
                    v = m * 10 ** exp * size
                    # A tick close to the next unit's 1 would crowd it ("50 s" and "1 min"; "10 h"
                    # and "1 d" among powers of ten).
                    gap = 10 ** 0.25 if len(subs) > 1 else 10 ** 0.5
                    if v < next_size and (subs == mantissas[0] or v * gap < next_size):
                        ticks.append(v)
        levels.append(sorted(set(ticks)))
    levels.append(sorted({size for size, _, _ in _TIME_UNITS} | {86400.0 * 10 ** e for e in range(1, 6)}))
    return levels


def _number_levels() -> list[list[float]]:
    """Candidate tick positions for plain numbers, densest first."""
    exps = range(-9, 16)
    return [sorted(m * 10.0 ** e for e in exps for m in subs) for subs in ((1, 2, 3, 4, 5, 6, 8), (1, 2, 5), (1,))] + \
        [[10.0 ** e for e in exps if e % 2 == 0], [10.0 ** e for e in exps if e % 3 == 0]]


def _pick(levels: list[list[float]], vmin: float, vmax: float, max_ticks: int,
          fits: Callable[[list[float]], bool] | None = None) -> list[float]:
    """The densest level with at most ``max_ticks`` ticks in [vmin, vmax] (at least two when any
    level has two) whose labels ``fits`` says do not collide, thinned by a stride when even the
    sparsest has too many."""
    lo, hi = sorted((vmin, vmax))
    if not (hi > 0 and math.isfinite(hi)):
        return []
    lo = max(lo, hi * 1e-15)
    inside = [[t for t in level if lo * (1 - 1e-9) <= t <= hi * (1 + 1e-9)] for level in levels]
    for ticks in inside:
        if 2 <= len(ticks) <= max_ticks and (fits is None or fits(ticks)):
            return ticks
    fitting = [t for t in inside if len(t) >= 2]
    if not fitting:  # a range narrower than any two candidates: the nearest candidates either side
        dense = levels[0]
        below = [t for t in dense if t <= lo] or dense[:1]
        above = [t for t in dense if t >= hi] or dense[-1:]
        return sorted({below[-1], *inside[0], above[0]})
    ticks = fitting[-1]
    stride = max(1, math.ceil(len(ticks) / max_ticks))
    while stride < len(ticks) and fits is not None and not fits(ticks[::stride]):
        stride += 1
    return ticks[::stride]


def _minor(levels: list[list[float]], major: list[float], vmin: float, vmax: float) -> list[float]:
    """Unlabelled minor ticks: the 1-2-5 (or denser) candidates between the majors."""
    lo, hi = sorted((vmin, vmax))
    for level in levels:
        ticks = [t for t in level if lo <= t <= hi and t not in major]
        if len(ticks) <= 4 * MAX_LOG_TICKS:
            return ticks
    return []


def format_seconds(seconds: float) -> str:
    """A duration in the largest unit it reaches: ``"500 ms"``, ``"10 s"``, ``"2 min"``,
    ``"1 h"``, ``"3 d"``; plain seconds below one microsecond and for zero or negative values."""
    if not (seconds > 0 and math.isfinite(seconds)):
        return f"{seconds:g} s"
    for size, label, next_size in reversed(_TIME_UNITS):
        if seconds >= size * (1 - 1e-9):
            return f"{_plain(seconds / size)} {label}"
    return f"{seconds:g} s"


def _plain(v: float) -> str:
    """1, 10, 1,000, 0.5, 0.001: no exponent, thousands separated, no trailing zeros."""
    if v >= 1e15 or (0 < v < 1e-9):
        return f"{v:.0e}"
    if abs(v - round(v)) < 1e-9 * max(1.0, abs(v)):
        return f"{round(v):,}"
    return f"{v:,.6f}".rstrip("0").rstrip(".")


def format_number(v: float, unit: str = "") -> str:
    """A tick value as a plain number with thousands separators (``"1"``, ``"10"``,
    ``"1,000"``, ``"0.01"``; millions and up as ``"1M"``, ``"10B"``, ``"1T"``), followed by ``unit``: directly for ``x``, ``×`` and ``%``
    (``"2x"``), after a space otherwise (``"10 GPUs"``)."""
    text = _plain(v)
    for size, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M")):  # 1M, not 1,000,000: short labels
        if abs(v) >= size:
            text = f"{_plain(v / size)}{suffix}"
            break
    if not unit:
        return text
    return f"{text}{unit}" if unit in ("x", "×", "%") else f"{text} {unit}"


def _set_log_ticks(ax, axis: str, levels: list[list[float]], label: Callable[[float], str]) -> None:
    require("matplotlib", "plot", "gpufleet.plots")
    from matplotlib import rcParams
    from matplotlib.font_manager import FontProperties
    from matplotlib.ticker import FuncFormatter, Locator, NullFormatter

    if axis not in ("x", "y"):
        raise ValueError(f"axis must be 'x' or 'y', got {axis!r}")
    target = ax.xaxis if axis == "x" else ax.yaxis

    def fits(ticks: list[float]) -> bool:
        """Whether neighbouring labels keep a gap at the axis' current size on screen."""
        vmin, vmax = sorted(target.get_view_interval())
        box = ax.get_window_extent() if ax.figure is not None else None
        if box is None or not (vmin > 0 and vmax > vmin):
            return True
        length = box.width if axis == "x" else box.height
        # The rc size, not the labels' own: reading the labels would ask this locator again.
        size = FontProperties(size=rcParams[f"{axis}tick.labelsize"]).get_size_in_points()
        px = size * ax.figure.dpi / 72
        per_decade = length / math.log10(vmax / vmin)
        for a, b in zip(ticks, ticks[1:]):
            gap = math.log10(b / a) * per_decade
            # Horizontal labels need half of each width (about 0.6 em per character) plus
            # an em between them; vertical ones a line height.
            need = (0.3 * px * (len(label(a)) + len(label(b))) + px) if axis == "x" else 1.5 * px
            if gap < need:
                return False
        return True

    class _Major(Locator):
        def __call__(self):
            return self.tick_values(*self.axis.get_view_interval())

        def tick_values(self, vmin, vmax):
            return _pick(levels, vmin, vmax, MAX_LOG_TICKS, fits)

    class _MinorTicks(Locator):
        def __call__(self):
            return self.tick_values(*self.axis.get_view_interval())

        def tick_values(self, vmin, vmax):
            return _minor(levels, _pick(levels, vmin, vmax, MAX_LOG_TICKS, fits), vmin, vmax)

    if target.get_scale() != "log":
        (ax.set_xscale if axis == "x" else ax.set_yscale)("log")
    target.set_major_locator(_Major())
    target.set_major_formatter(FuncFormatter(lambda v, _pos: label(v)))
    target.set_minor_locator(_MinorTicks())
    target.set_minor_formatter(NullFormatter())


def log_time_axis(ax, axis: str = "x"):
    """Log-scales ``axis`` ("x" or "y") of ``ax``, whose data are seconds, with ticks at natural
    durations labelled in human units: "1 s", "10 s", "1 min", "10 min", "1 h", "1 d" (1-2-5 steps
    on short ranges). Returns ``ax``; ValueError for another ``axis``."""
    _set_log_ticks(ax, axis, _TIME_LEVELS, format_seconds)
    return ax


def log_number_axis(ax, axis: str = "x", unit: str = ""):
    """Log-scales ``axis`` ("x" or "y") of ``ax`` with plain-number ticks at 1-2-5 steps or
    powers of ten ("1", "10", "100", "1,000"), each followed by ``unit`` (e.g. ``"x"`` for
    speed-ups: "2x"). Returns ``ax``; ValueError for another ``axis``."""
    _set_log_ticks(ax, axis, _NUMBER_LEVELS, lambda v: format_number(v, unit))
    return ax


_TIME_LEVELS = _time_levels()
_NUMBER_LEVELS = _number_levels()


# --- figures ---------------------------------------------------------------------------------------
def jct_cdf(results: Any, ax=None, log: bool = True):
    """Empirical CDF of job completion time (end - submit, seconds) per policy: one step line per
    entry of ``results`` (``{label: SimResult}`` or one SimResult, labelled by its policy). With
    ``log`` (default) the time axis is log-scaled with human-unit ticks (:func:`log_time_axis`).
    Returns the axes."""
    ax = _axes(ax)
    for label, r in _results(results).items():
        jct = np.sort(r.jobs["jct"].to_numpy())
        ax.step(jct, np.arange(1, len(jct) + 1) / len(jct), where="post", label=label,
                color=policy_color(label))
    if log:
        log_time_axis(ax, "x")
        ax.set_xlabel("job completion time (log scale)")
    else:
        ax.set_xlabel("job completion time (s)")
    ax.set_ylabel("fraction of jobs")
    ax.set_ylim(0, 1.02)
    ax.grid(True, alpha=0.3)
    ax.legend()
    return ax


def utilization(results: Any, ax=None):
    """Busy GPU share (0-1) over simulated time in hours, one step line per policy. Returns the
    axes."""
    ax = _axes(ax)
    for label, r in _results(results).items():
        ts = r.timeseries
        ax.step(ts["time"] / 3600, ts["utilization"], where="post", label=label, color=policy_color(label))
    ax.set_xlabel("time (h)")
    ax.set_ylabel("GPUs busy (share)")
    ax.set_ylim(0, 1.05)
    ax.grid(True, alpha=0.3)
    ax.legend()
    return ax


def summary_bars(results: Any, metric: str = "avg_jct", ax=None, log: bool = False):
    """One bar per policy for the summary key ``metric`` (docs/simulator.md), in its own unit
    (seconds for ``*_jct``, ``*_delay`` and ``makespan``). With ``log`` the value axis is
    log-scaled with human-unit ticks for seconds, plain-number ticks otherwise. KeyError names
    the results that lack ``metric``. Returns the axes."""
    ax = _axes(ax)
    res = _results(results)
    labels = list(res)
    missing = [k for k in labels if metric not in res[k].summary]
    if missing:
        raise NotFoundError(f"summary_bars: no summary key {metric!r} in {', '.join(map(str, missing))}")
    ax.bar(labels, [float(res[k].summary[metric]) for k in labels], color=[policy_color(k) for k in labels])
    seconds = metric.endswith(("_jct", "_delay")) or metric == "makespan"
    if log:
        (log_time_axis if seconds else log_number_axis)(ax, "y")
    ax.set_ylabel(f"{metric} (s)" if seconds and not log else metric)
    ax.tick_params(axis="x", rotation=30)
    return ax


def queue_length(results: Any, ax=None):
    """Pending jobs over simulated time in hours, one step line per policy. Returns the axes."""
    ax = _axes(ax)
    for label, r in _results(results).items():
        ts = r.timeseries
        ax.step(ts["time"] / 3600, ts["pending_jobs"], where="post", label=label, color=policy_color(label))
    ax.set_xlabel("time (h)")
    ax.set_ylabel("pending jobs")
    ax.grid(True, alpha=0.3)
    ax.legend()
    return ax


def sweep_errorbars(df: Any, metric: str, ax=None, *, error: str = "std", scale: float | None = None,
                    published: Any = None, log: bool = False):
    """The paper-style figure of a sweep (:func:`gpufleet.sweep`): for ``metric``, one bar per
    policy with its mean over seeds and an error bar (``error``: ``"std"``, the standard deviation
    over seeds, or ``"sem"``, the standard error), grouped by trace; each policy in its
    :func:`policy_color`. ``scale`` multiplies the values and the published figures (default 1:
    the values' own unit; openb ratios and shares, fractions, get an axis labelled in percent).
    ``published`` (a frame with ``trace``, ``policy``, ``published`` in the values' unit, as
    :func:`gpufleet.sweep.load_published_alloc` returns from :mod:`gpufleet.published`) adds the
    published figures as black crosses. ValueError when ``metric`` is missing or when other options vary (filter the frame to
    one value of each option first). Returns the axes."""
    if error not in ("std", "sem"):
        raise ValueError(f"error must be 'std' or 'sem', got {error!r}")
    rows = df[df["metric"] == metric]
    if rows.empty:
        raise ValueError(f"sweep_errorbars: no metric {metric!r} in the frame; it has "
                         f"{', '.join(sorted(set(df['metric'])))}")
    options = [c for c in rows.columns if c not in ("kind", "trace", "policy", "seed", "metric", "value")]
    varying = [c for c in options if rows[c].nunique(dropna=False) > 1]
    if varying:
        raise ValueError(f"sweep_errorbars: options {', '.join(varying)} take several values; pick one "
                         f"of each (df[df[{varying[0]!r}] == ...]) so each bar is one setting")
    percent = scale is None and bool((rows["kind"] == "openb").all()) and ("ratio" in metric or "share" in metric)
    scale = 1.0 if scale is None else float(scale)
    traces = list(dict.fromkeys(rows["trace"]))
    policies = list(dict.fromkeys(rows["policy"]))
    stats = rows.groupby(["trace", "policy"], sort=False)["value"].agg(["mean", "std", "count"])
    ax = _axes(ax)
    width = 0.8 / len(policies)
    x = np.arange(len(traces))
    for i, policy in enumerate(policies):
        mean = np.array([stats["mean"].get((t, policy), np.nan) for t in traces]) * scale
        spread = np.array([stats["std"].get((t, policy), np.nan) for t in traces]) * scale
        if error == "sem":
            spread = spread / np.sqrt([max(1, stats["count"].get((t, policy), 1)) for t in traces])
        offset = x - 0.4 + width * (i + 0.5)
        ax.bar(offset, mean, width, yerr=np.nan_to_num(spread), capsize=2, label=policy,
               color=policy_color(policy))
        if published is not None:
            pub = {(r.trace, r.policy): r.published for r in published.itertuples()}
            ys = np.array([pub.get((t, policy), np.nan) for t in traces], dtype=float) * scale
            ax.plot(offset, ys, "x", color="black", markersize=5,
                    label="published" if i == 0 else None)
    ax.set_xticks(x, traces, rotation=30 if len(traces) > 3 else 0,
                  ha="right" if len(traces) > 3 else "center")
    ax.set_ylabel(f"{metric} (%)" if percent else metric)
    if log:
        (log_time_axis if metric.endswith(("_jct", "_delay")) or metric == "makespan" else log_number_axis)(ax, "y")
    else:
        finite = (stats["mean"] * scale).replace([np.inf, -np.inf], np.nan).dropna()
        if len(finite) and percent:
            lo = float(finite.min())
            ax.set_ylim(max(0.0, lo - 0.1 * (1 - lo) - 0.02), 1)  # the differences, not the common base
            percent_axis(ax, "y", decimals=0)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(ncol=min(len(policies) + (published is not None), 4), fontsize="small")
    return ax


__all__ = ["MAX_LOG_TICKS", "format_number", "format_seconds", "jct_cdf", "log_number_axis",
           "log_time_axis", "percent_axis", "policy_color", "queue_length", "summary_bars", "sweep_errorbars",
           "utilization"]
