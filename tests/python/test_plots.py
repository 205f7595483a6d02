"""gpufleet.plots: every figure renders with Agg, and log-scaled axes carry readable tick labels
("10 s", "1 min", "1 h"; "1", "10", "100") that do not overlap."""
from __future__ import annotations

import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import gpufleet.traces as T  # noqa: E402
from gpufleet import plots  # noqa: E402
from gpufleet.sim import simulate  # noqa: E402

TIME_LABEL = re.compile(r"^\d[\d,]*(\.\d+)? (µs|ms|s|min|h|d)$")
NUMBER_LABEL = re.compile(r"^\d[\d,]*(\.\d+)?[MBT]?(x| \w+)?$")


@pytest.fixture(scope="module")
def results():
    jobs = T.synthetic_jobs(150, seed=3, arrival_rate=1 / 60)
    return {p: simulate(jobs, {"v100": 8, "k80": 8}, p) for p in ("fifo", "las", "hetero-las")}


def _render(fig, path):
    fig.canvas.draw()
    fig.savefig(path, dpi=80)
    assert path.stat().st_size > 1000


def _log_labels(ax, axis: str) -> list[str]:
    """Visible major tick labels of a log axis; asserts minor ticks are unlabelled and majors do
    not overlap."""
    target = ax.xaxis if axis == "x" else ax.yaxis
    assert target.get_scale() == "log"
    labels = [t for t in (ax.get_xticklabels() if axis == "x" else ax.get_yticklabels()) if t.get_text()]
    assert all(not t.get_text() for t in target.get_minorticklabels())
    boxes = sorted((t.get_window_extent() for t in labels), key=lambda b: b.x0 if axis == "x" else b.y0)
    for a, b in zip(boxes, boxes[1:]):
        assert not a.overlaps(b), (a, b, [t.get_text() for t in labels])
    texts = [t.get_text() for t in labels]
    assert len(texts) >= 2, texts
    assert not any("$" in s or "^" in s or "e+" in s or "e-" in s for s in texts), texts
    return texts


@pytest.mark.parametrize("size", [(6, 4), (3.2, 2.4), (12, 3)])
def test_jct_cdf_time_ticks(results, tmp_path, size):
    fig, ax = plt.subplots(figsize=size)
    plots.jct_cdf(results, ax=ax)
    _render(fig, tmp_path / "cdf.png")
    texts = _log_labels(ax, "x")
    assert all(TIME_LABEL.match(s) for s in texts), texts
    plt.close(fig)


def test_linear_figures_render(results, tmp_path):
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.5))
    plots.utilization(results, ax=axes[0])
    plots.queue_length(results, ax=axes[1])
    plots.summary_bars(results, "avg_jct", ax=axes[2])
    _render(fig, tmp_path / "linear.png")
    assert axes[2].get_ylabel() == "avg_jct (s)"
    assert all(ax.get_xscale() == "linear" for ax in axes)
    plt.close(fig)


def test_summary_bars_log_axes(results, tmp_path):
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.5))
    plots.summary_bars(results, "p99_jct", ax=a, log=True)
    plots.summary_bars(results, "preemptions", ax=b, log=True)
    _render(fig, tmp_path / "bars.png")
    assert all(TIME_LABEL.match(s) for s in _log_labels(a, "y"))
    assert all(NUMBER_LABEL.match(s) for s in _log_labels(b, "y"))
    with pytest.raises(KeyError, match="no summary key 'nope'"):
        plots.summary_bars(results, "nope")
    plt.close(fig)


def test_number_axis_speedups(tmp_path):
    """A speed-up scatter on log-log axes, the way notebook 04 compares models."""
    rng = np.random.default_rng(0)
    x = 10 ** rng.uniform(-1, 3, 200)
    fig, ax = plt.subplots(figsize=(5, 4))
    ax.scatter(x, x * 10 ** rng.uniform(0, 1, 200), s=4)
    plots.log_number_axis(ax, "x")
    plots.log_number_axis(ax, "y", unit="x")
    _render(fig, tmp_path / "speedups.png")
    xs, ys = _log_labels(ax, "x"), _log_labels(ax, "y")
    assert all(NUMBER_LABEL.match(s) for s in xs + ys), (xs, ys)
    assert "1" in xs and "10" in xs and "100" in xs
    assert all(s.endswith("x") for s in ys)
    with pytest.raises(ValueError, match="axis must be 'x' or 'y'"):
        plots.log_number_axis(ax, "z")
    plt.close(fig)


@pytest.mark.parametrize("lo, hi", [(1, 100), (0.05, 3), (100, 500), (60, 86400 * 30), (1, 1e7)])
def test_time_axis_any_range(tmp_path, lo, hi):
    fig, ax = plt.subplots(figsize=(5, 3))
    ax.plot([lo, hi], [0, 1])
    plots.log_time_axis(ax, "x")
    ax.set_xlim(lo, hi)
    _render(fig, tmp_path / "range.png")
    texts = _log_labels(ax, "x")
    assert all(TIME_LABEL.match(s) for s in texts), texts
    plt.close(fig)


def test_replay_allocation_figure(tmp_path):
    from gpufleet import replay
    nodes, pods = T.synthetic_openb(20, 80, seed=0)
    runs = {p: replay.replay_openb(nodes, pods, policy=p) for p in ("bestfit", "fgd")}
    fig, ax = plt.subplots()
    replay.plot_alloc(runs, ax=ax)
    _render(fig, tmp_path / "alloc.png")
    assert "%" in ax.get_xlabel() and "%" in ax.get_ylabel()
    plt.close(fig)


@pytest.mark.parametrize("seconds, text", [
    (0.5, "500 ms"), (1, "1 s"), (20, "20 s"), (60, "1 min"), (600, "10 min"), (3600, "1 h"),
    (7200, "2 h"), (86400, "1 d"), (864000, "10 d"), (2e-6, "2 µs"), (0, "0 s"),
])
def test_format_seconds(seconds, text):
    assert plots.format_seconds(seconds) == text


@pytest.mark.parametrize("value, unit, text", [
    (1, "", "1"), (10, "", "10"), (1000, "", "1,000"), (0.01, "", "0.01"), (2, "x", "2x"),
    (5e6, "", "5M"), (20, "GPUs", "20 GPUs"), (50, "%", "50%"),
])
def test_format_number(value, unit, text):
    assert plots.format_number(value, unit) == text


def _colors_by_label(ax) -> dict[str, str]:
    """Label -> hex colour of the lines and bars of ``ax`` (bars labelled by their tick)."""
    from matplotlib.colors import to_hex
    out = {line.get_label(): to_hex(line.get_color()) for line in ax.get_lines()
           if not line.get_label().startswith("_")}
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    for tick, bar in zip(ticks, ax.patches):
        out[tick] = to_hex(bar.get_facecolor())
    return out


def test_a_policy_has_one_colour_in_every_panel(results, tmp_path):
    # The bars list the policies in another order than the lines: colours follow the name.
    reordered = {p: results[p] for p in reversed(list(results))}
    fig, (cdf, bars, util) = plt.subplots(1, 3, figsize=(15, 4))
    plots.jct_cdf(results, ax=cdf)
    plots.summary_bars(reordered, "avg_jct", ax=bars)
    plots.utilization({p: results[p] for p in ("las", "fifo")}, ax=util)
    _render(fig, tmp_path / "panels.png")
    lines, bar_colors, util_lines = _colors_by_label(cdf), _colors_by_label(bars), _colors_by_label(util)
    assert set(lines) == set(bar_colors) == set(results)
    assert lines == bar_colors
    assert util_lines == {p: lines[p] for p in ("las", "fifo")}
    assert len(set(lines.values())) == len(lines)   # distinct policies, distinct colours
    # and in a later figure too
    fig2, ax = plt.subplots()
    plots.queue_length({"hetero-las": results["hetero-las"]}, ax=ax)
    assert _colors_by_label(ax) == {"hetero-las": lines["hetero-las"]}
    plt.close(fig)
    plt.close(fig2)


def test_policy_colours_are_stable_and_distinct():
    names = [f"policy-{i}" for i in range(20)]
    first = [plots.policy_color(n) for n in names]
    assert [plots.policy_color(n) for n in reversed(names)] == list(reversed(first))
    assert len(set(first)) == 20


def test_percent_axis_labels_fractions():
    fig, ax = plt.subplots()
    ax.plot([0, 1.3], [0, 0.95])
    plots.percent_axis(ax, "y")
    assert ax.yaxis.get_major_formatter()(0.95, 0) == "95%"
    plt.close(fig)
