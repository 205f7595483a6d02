"""`gpufleet sweep`: a grid of experiments (traces x policies x seeds x options) run in parallel,
locally or on a Ray cluster, resumable through ``--results DIR``; prints a summary table (mean and
standard deviation over seeds per trace, policy and options; for openb replays each policy's mean
next to the published one, for the PAI-2020 simulator's table run with its seed, 42, and with
``--reference`` Gavel's own simulator's figures beside its traces run under its rules). ``-o wide``
prints every metric, ``-o json|yaml`` the summary document;
``--csv`` writes the tidy per-experiment table, ``--plot`` the figure. See docs/sweep.md."""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
from typing import Any, Mapping

from gpufleet.commands._bounds import (EXPERIMENTS_MAX, SEED_MAX, SEEDS_MAX, WORKERS_MAX, cluster_too_large,
                                       count)
from gpufleet.commands._inputs import device_among
from gpufleet.commands._output import add_output_options, emit, is_document, one_line, table
from gpufleet.commands._traces import (add_trace_options, missing_hint, named_files, print_formats,
                                       side_inputs)

# The metric the default table shows per kind; openb ratios are printed in percent.
HEADLINE = {"openb": "alloc_ratio_at_100", "sim": "avg_jct", "pai2020": "avg_jct"}


def register(sub: argparse._SubParsersAction) -> None:
    """Adds the ``sweep`` subcommand to ``sub``."""
    p = sub.add_parser("sweep", help="run traces x policies x seeds x options in parallel and summarise",
                       description=__doc__.split("\n\n")[0].replace("`", ""))
    p.add_argument("--trace", nargs="+", metavar="TRACE",
                   help="trace files (format from the name or header, or --format), FORMAT:PATH, or "
                        "'synthetic'; openb pod lists are replayed, job traces simulated")
    p.add_argument("--policy", nargs="+", metavar="POLICY",
                   help="job-time policy specs (job traces) or placement strategies (openb), e.g. "
                        "'dlas-gpu(queue_limits=[3250,7200])' or fgd")
    p.add_argument("--as-dra", nargs="+", default=[], metavar="STRATEGY",
                   help="openb: also replay as DRA with these strategies (pack, first), as policies "
                        "dra:STRATEGY on the same seeds (docs/dra.md)")
    seeds = p.add_mutually_exclusive_group()
    seeds.add_argument("--seeds", type=count(1, SEEDS_MAX), default=None, metavar="N",
                       help=f"seeds 0..N-1, N from 1 to {SEEDS_MAX:,} (default 3)")
    seeds.add_argument("--seed", type=count(0, SEED_MAX), nargs="+", metavar="SEED",
                       help="these seeds (0 to 2^63-1)")
    p.add_argument("--option", action="append", default=[], metavar="KEY=V1,V2",
                   help="an option of simulate/replay_openb and its alternatives, comma-separated, each "
                        "read as JSON when it parses (--option restore_delay=0,30); repeatable")
    add_trace_options(p, generated="jobs per generated synthetic trace")
    p.add_argument("--results", metavar="DIR",
                   help="keep one result file per experiment here; a rerun skips what is recorded")
    p.add_argument("--workers", type=count(1, WORKERS_MAX), default=None,
                   help=f"local worker processes, 1 to {WORKERS_MAX:,} (default: the CPU count); with --ray, Ray's CPUs "
                        "when it starts a local instance")
    p.add_argument("--ray", nargs="?", const="local", default=None, metavar="ADDRESS",
                   help="run on Ray: the cluster at ADDRESS ('auto', 'ray://host:10001'), or a local "
                        "instance without ADDRESS (needs the ray extra)")
    p.add_argument("--metric", nargs="+", metavar="METRIC",
                   help=f"metrics of the table (default: {', '.join(HEADLINE.values())})")
    p.add_argument("--published", metavar="CSV",
                   help="the FGD study's per-seed results (fgd_expected_alloc.csv) to compare openb "
                        "means with (default: the paper's default-trace figures)")
    p.add_argument("--reference", metavar="JSON",
                   help="Gavel's recorded runs (tests/python/data/gavel_reference/reference.json) to set "
                        "beside gavel-* policies run with --option gavel_compat=true on its traces and clusters")
    p.add_argument("--csv", metavar="FILE", help="also write the tidy table (one row per experiment and metric)")
    p.add_argument("--plot", metavar="FILE", help="also draw the figure (mean per policy, error bars "
                                                  "over seeds, grouped by trace) for the first metric")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_output_options(p, default="a summary table of the headline metrics (wide: every metric)")
    p.set_defaults(func=run)


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def parse_options(items: list[str]) -> dict[str, list[Any]]:
    """``["restore_delay=0,30", "placement=binpack"]`` -> ``{"restore_delay": [0, 30], ...}``;
    ValueError names an item without ``=`` or an option given twice."""
    from gpufleet.sweep import split_top_level
    out: dict[str, list[Any]] = {}
    for item in items:
        key, sep, values = item.partition("=")
        key = key.strip()
        if not sep or not key or not values.strip():
            raise ValueError(f"--option {item!r}: expected KEY=VALUE[,VALUE...]")
        if key in out:
            raise ValueError(f"--option {key!r} given twice; list its values once: {key}=V1,V2")
        out[key] = [_value(v) for v in split_top_level(values)]
    return out


def _published(path: str | None):
    from gpufleet.sweep import load_published_alloc
    return load_published_alloc(path)


def _pai_published(r: dict[str, Any], option_names: list[str], seeds: list[int]) -> float | None:
    """The PAI-2020 README's figure for a summary row: only for its trace, its seed and its
    settings (an option at another value than the README's is another experiment)."""
    from pathlib import Path
    from gpufleet.published import PAI2020_README, PAI2020_README_SETTINGS, PAI2020_TRACE
    if r["kind"] != "pai2020" or r["trace"] != Path(PAI2020_TRACE).stem or seeds != [42]:
        return None
    if any(r[o] == r[o] and r[o] is not None and r[o] != PAI2020_README_SETTINGS.get(o) for o in option_names):
        return None
    return PAI2020_README.get(str(r["policy"]).lower(), {}).get(r["metric"])


def _gavel_cluster(cluster: Any) -> str | None:
    """A sweep's --cluster as Gavel's ``-c v100:p100:k80`` counts; None for any other cluster."""
    from gpufleet.sim import cluster_spec
    try:
        spec = cluster_spec(cluster)
    except (ValueError, TypeError):
        return None
    counts = {str(m["name"]).lower(): int(m["count"]) for m in spec}
    if not counts or set(counts) - {"v100", "p100", "k80"} or any(len(m) > 2 for m in spec):
        return None
    return ":".join(str(counts.get(m, 0)) for m in ("v100", "p100", "k80"))


def _gavel_reference(r: dict[str, Any], option_names: list[str], seeds: list[int],
                     gavel: tuple[dict, str | None] | None) -> float | None:
    """Gavel's own figure for a summary row (its mean over the row's seeds): only for a run
    under Gavel's rules (gavel_compat and no other option) on a trace, cluster and policy Gavel
    ran with every one of those seeds."""
    if gavel is None or gavel[1] is None or r["kind"] != "sim" or r["metric"] not in ("avg_jct", "makespan"):
        return None
    if r.get("gavel_compat") is not True:
        return None
    if any(r[o] == r[o] and r[o] is not None for o in option_names if o != "gavel_compat"):
        return None
    figures = [gavel[0].get((r["trace"], gavel[1], r["policy"], s)) for s in seeds]
    if not seeds or any(f is None for f in figures):
        return None
    return sum(f[r["metric"]] for f in figures) / len(figures)


def _summary_rows(summary, published, option_names: list[str], seeds: list[int] | None = None,
                  gavel: tuple[dict, str | None] | None = None) -> list[dict[str, Any]]:
    """The summary as plain rows, every metric in the unit of the run's summary (ratios and shares
    are fractions, as ``simulate``, ``replay_openb`` and ``summarize`` give them), with the
    published allocation ratio (openb; a fraction, as :mod:`gpufleet.published` holds it), the
    PAI-2020 README's figure or Gavel's own simulator's (``gavel``: its runs and the sweep's
    cluster as Gavel writes it) and the difference where one is known."""
    pub = {(r.trace, r.policy): float(r.published) for r in published.itertuples()}
    rows = []
    for r in summary.to_dict("records"):
        row = {k: r[k] for k in ("kind", "trace", "policy", *option_names, "metric")}
        row.update(mean=_num(r["mean"]), std=_num(r["std"]), runs=int(r["runs"]))
        if r["kind"] == "openb" and r["metric"] == "alloc_ratio_at_100" and (r["trace"], r["policy"]) in pub:
            row["published"] = pub[(r["trace"], r["policy"])]
            row["difference"] = None if row["mean"] is None else row["mean"] - row["published"]
        elif (pai := _pai_published(r, option_names, list(seeds or []))) is not None:
            row["published"] = pai
            row["difference"] = None if row["mean"] is None else row["mean"] - pai
        elif (ref := _gavel_reference(r, option_names, list(seeds or []), gavel)) is not None:
            row["published"] = ref
            row["difference"] = None if row["mean"] is None else row["mean"] - ref
        rows.append(row)
    return rows


def _in_percent(row: Mapping[str, Any]) -> bool:
    """Whether the table shows this row's figures in percent: openb ratios and shares."""
    return row["kind"] == "openb" and ("ratio" in row["metric"] or "share" in row["metric"])


def _num(v: Any) -> float | None:
    v = float(v)
    return v if v == v else None


def run(args: argparse.Namespace) -> int:
    """Runs ``gpufleet sweep``; returns 0, 1 (bad trace, policy, option or a failed experiment)
    or 2 (usage)."""
    if args.list_formats:
        print_formats(args.output)
        return 0
    if not args.trace or not (args.policy or args.as_dra):
        print("gpufleet sweep: --trace and --policy are required (or --list-formats)", file=sys.stderr)
        return 2
    from gpufleet._extras import require
    if args.plot:   # before any experiment runs
        require("matplotlib", "plot", "--plot")
    if args.ray:
        require("ray", "ray", "--ray")
    from gpufleet.sweep import summarize, sweep
    seeds = args.seed if args.seed is not None else range(3 if args.seeds is None else args.seeds)
    named = [*named_files(args), args.published, args.reference]
    named += [part for t in args.trace for part in (t, t.partition(":")[2])]   # PATH or FORMAT:PATH
    device = device_among(named)
    if device:
        print(f"gpufleet sweep: {device}: a device, not a file", file=sys.stderr)
        return 2
    too_large = cluster_too_large(args.cluster) if args.cluster and not os.path.exists(args.cluster) else None
    if too_large:
        print(f"gpufleet sweep: {too_large}", file=sys.stderr)
        return 2
    try:
        published = _published(args.published)
    except (KeyError, ValueError, OSError, TypeError, AttributeError) as e:
        # pandas reads any CSV; a file of another layout fails in the arithmetic, not the parse.
        print(f"gpufleet sweep: --published {args.published}: not the FGD study's results: "
              f"{one_line(e)}", file=sys.stderr)
        return 1
    gavel = None
    if args.reference:
        from gpufleet.sweep import load_gavel_reference
        try:
            gavel = (load_gavel_reference(args.reference), _gavel_cluster(args.cluster))
        except ValueError as e:
            print(f"gpufleet sweep: --reference {one_line(e)}", file=sys.stderr)
            return 1
    try:
        options = parse_options(args.option)
        grid = len(args.trace) * (len(args.policy or []) + len(args.as_dra)) * len(seeds) * math.prod(len(v) for v in options.values())
        if grid > EXPERIMENTS_MAX:
            print(f"gpufleet sweep: {grid:,} experiments (traces x policies x seeds x option values) "
                  f"is more than the {EXPERIMENTS_MAX:,} one sweep may run", file=sys.stderr)
            return 2
        inputs = side_inputs(args)
        df = sweep(args.trace, args.policy or [], seeds, options, as_dra=args.as_dra, format=args.format, cluster=args.cluster,
                   inputs=inputs, missing=args.missing, num_jobs=args.num_jobs,
                   results_dir=args.results, workers=args.workers,
                   executor="ray" if args.ray else "process",
                   ray_address=None if args.ray in (None, "local") else args.ray,
                   progress=not args.no_progress)
        metrics = args.metric or [m for m in HEADLINE.values() if m in set(df["metric"])]
        summary = summarize(df, None if args.output in ("wide", "json", "yaml") else metrics)
    except (KeyError, ValueError, OSError) as e:
        from gpufleet.traces import MissingInput
        if isinstance(e.__cause__, MissingInput):  # a usage error, as in `gpufleet simulate`
            print(f"gpufleet sweep: {one_line(f'{e}{missing_hint(e.__cause__)}')}", file=sys.stderr)
            return 2
        print(f"gpufleet sweep: {one_line(e)}", file=sys.stderr)
        return 1
    option_names = [c for c in df.columns if c not in ("kind", "trace", "policy", "seed", "metric", "value")]
    try:
        _write_files(args, df, metrics, published)
    except OSError as e:
        print(f"gpufleet sweep: cannot write: {e}", file=sys.stderr)
        return 1
    rows = _summary_rows(summary, published, option_names, [int(s) for s in seeds], gavel)
    attrs = df.attrs
    print(f"gpufleet sweep: {attrs['experiments']} experiments: {attrs['ran']} run, {attrs['reused']} "
          f"reused{' from ' + attrs['results_dir'] if attrs['results_dir'] else ''}", file=sys.stderr)
    if is_document(args.output):
        emit({"experiments": attrs["experiments"], "ran": attrs["ran"], "reused": attrs["reused"],
              "results_dir": attrs["results_dir"], "summary": rows}, args.output)
        return 0
    has_pub = any("published" in r for r in rows)
    header = ["KIND", "TRACE", "POLICY", *[o.upper() for o in option_names], "METRIC", "MEAN", "STD", "RUNS"]
    header += ["PUBLISHED", "DIFF"] if has_pub else []
    out = []
    for r in rows:
        scale = 100.0 if _in_percent(r) else 1.0
        cells = [r["kind"], r["trace"], r["policy"], *[_opt(r[o]) for o in option_names],
                 r["metric"] + (" (%)" if scale == 100.0 else ""), _scaled(r["mean"], scale),
                 _scaled(r["std"], scale), r["runs"]]
        if has_pub:
            cells += [_scaled(r.get("published"), scale), _scaled(r.get("difference"), scale)]
        out.append(cells)
    print(table(out, header, right=["MEAN", "STD", "RUNS", "PUBLISHED", "DIFF"], signed=["DIFF"]))
    return 0


def _write_files(args: argparse.Namespace, df, metrics: list[str], published) -> None:
    """``--csv`` and ``--plot``; OSError (a missing folder, a folder for a file) names the path."""
    if args.csv:
        df.to_csv(args.csv, index=False)
    if args.plot:
        from gpufleet.plots import sweep_errorbars
        import matplotlib.pyplot as plt
        ax = sweep_errorbars(df, metrics[0], published=published if metrics[0] == "alloc_ratio_at_100" else None)
        try:
            ax.figure.savefig(args.plot, dpi=120, bbox_inches="tight")
        finally:
            plt.close(ax.figure)


def _opt(v: Any) -> str:
    return "-" if v is None or v != v else str(v)


def _scaled(v: float | None, scale: float) -> float | None:
    """A figure in the table's unit (percent for openb ratios); the table formats each column."""
    return None if v is None else v * scale
