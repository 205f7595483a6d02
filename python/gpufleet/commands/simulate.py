"""`gpufleet simulate`: run a job-time policy over a trace (or an openb GPU-sharing replay) and
print the summary: a METRIC/VALUE table, with ``-o wide`` also one row per job (job formats) or
per 10% of arrived workload (openb); ``-o json|yaml`` (or ``--json``) the summary document, keys
in docs/simulator.md and docs/replay.md."""
from __future__ import annotations

import argparse
import math
import os
import sys
from typing import Any

from gpufleet.commands._bounds import SEED_MAX, cluster_too_large, count, seconds
from gpufleet.commands._inputs import device_among
from gpufleet.commands._output import add_output_options, emit, is_document, one_line, table
from gpufleet.commands._traces import (add_trace_options, missing_hint, named_files, print_formats,
                                       side_inputs)


def register(sub: argparse._SubParsersAction) -> None:
    """Adds the ``simulate`` subcommand to ``sub``."""
    p = sub.add_parser("simulate", help="simulate a scheduling policy on a trace and print the summary")
    p.add_argument("--trace", help="trace file (synthetic: optional unified-schema CSV; generated if absent)")
    p.add_argument("--policy", help="policy name or spec, e.g. 'dlas-gpu(queue_limits=[3250,7200])'")
    p.add_argument("--seed", type=count(0, SEED_MAX), default=0,
                   help="seed (openb arrival order, synthetic traces, ties), 0 to 2^63-1")
    add_output_options(p, default="the summary as a METRIC/VALUE table (wide: also per job, or per "
                                  "10%% of arrived workload for openb)")
    p.add_argument("--list-policies", action="store_true",
                   help="list the job-time policies and the openb replay's strategies (native, and "
                        "DRA for --as-dra), with their parameters, and exit")
    add_trace_options(p, generated="jobs to generate (synthetic, no --trace)")
    p.add_argument("--tiresias-compat", action="store_true", help="Tiresias-simulator-compatible mode")
    p.add_argument("--gavel-compat", action="store_true",
                   help="Gavel-simulator-compatible mode (gavel format, gavel-* policies; docs/simulator.md)")
    p.add_argument("--gavel-fix", action="append", default=[], metavar="BUG",
                   choices=("drop_stuck_jobs", "charge_idle_gaps", "fifo_stale_type"),
                   help="with --gavel-compat: correct this bug of Gavel's simulator instead of reproducing it "
                        "(repeatable: drop_stuck_jobs, charge_idle_gaps, fifo_stale_type)")
    p.add_argument("--restore-delay", type=seconds(), default=0.0, help="checkpoint/restore delay, s")
    p.add_argument("--as-dra", action="store_true",
                   help="openb: every GPU pod asks through a ResourceClaim, placed by the DRA strategy "
                        "--policy (pack or first; docs/dra.md)")
    p.add_argument("--jobs-csv", help="also write the per-job results to this CSV")
    p.add_argument("--placement", default="binpack",
                   help="placement strategy giving each start real devices (job-time formats; "
                        "'none' counts GPUs only)")
    p.set_defaults(func=run)


def _replay():
    try:
        from gpufleet import replay
    except ImportError:
        return None
    return replay


def _dra_strategies() -> list[dict[str, Any]]:
    """The strategies --as-dra takes, from the allocator that checks them."""
    from gpufleet.dra.allocator import STRATEGY_DESCRIPTIONS
    from gpufleet.registries import listed
    return [listed(name, text) for name, text in STRATEGY_DESCRIPTIONS.items()]


def _clean(v: Any) -> Any:
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def _print(summary: dict[str, Any], fmt: str | None, detail: tuple[list[str], list[list[Any]]] | None = None) -> None:
    summary = {k: _clean(v) for k, v in summary.items()}
    if is_document(fmt):
        emit(summary, fmt)
        return
    print(table([[k, v] for k, v in summary.items()], ["METRIC", "VALUE"]))
    if fmt == "wide" and detail is not None:
        header, rows = detail
        print()
        print(table(rows, header, right=header[1:]))


# Per-job columns of `-o wide`: (header, SimResult.jobs column); times in seconds.
_JOB_COLUMNS = (("JOB", "job_id"), ("GPUS", "num_gpu"), ("SUBMIT S", "submit_time"),
                ("DURATION S", "duration"), ("START S", "first_start"), ("END S", "end_time"),
                ("JCT S", "jct"), ("QUEUED S", "queueing_delay"), ("GPU S", "gpu_time"),
                ("PREEMPTIONS", "preemptions"), ("MIGRATIONS", "migrations"), ("NODES", "max_nodes"))


def _job_rows(jobs) -> tuple[list[str], list[list[Any]]]:
    cols = [(h, c) for h, c in _JOB_COLUMNS if c in jobs.columns]
    rows = [[_cell(v) for v in values] for values in jobs[[c for _, c in cols]].itertuples(index=False)]
    return [h for h, _ in cols], rows


def _replay_rows(ts) -> tuple[list[str], list[list[Any]]]:
    """The replay's state each time arrivals reach another 10% of the cluster's GPUs, and at the
    last arrival (just under ``stop_at``: the next pod would have passed it)."""
    from gpufleet.replay import _row_at
    picked = []
    if len(ts):
        last = float(ts["arrived"].iloc[-1])
        picked = [_row_at(ts, tenth / 10) for tenth in range(1, 1 + int(last * 10 + 1e-9))]
        if not picked or float(picked[-1]["arrived"]) < last:
            picked.append(ts.iloc[-1])
    # Fractions in the result, percent in the table (rounded so each column reads at a glance).
    rows = [[round(100 * float(r['arrived']), 1), round(100 * float(r['allocated']), 2),
             round(100 * float(r['fragmented']), 2), round(100 * float(r['idle']), 2),
             round(100 * float(r['frag_ratio']), 2), int(r['failed']), round(100 * float(r['failed_gpu']), 2)]
            for r in picked]
    return ["ARRIVED %", "ALLOCATED %", "FRAGMENTED %", "IDLE %", "FRAG RATIO %", "FAILED PODS",
            "FAILED GPU %"], rows


def _cell(v: Any) -> Any:
    """A job's figure for the table (times rounded to a tenth of a second; the table formats each
    column alike)."""
    v = _clean(v)
    return round(v, 1) if isinstance(v, float) else v


def run(args: argparse.Namespace) -> int:
    """Runs ``gpufleet simulate``; returns 0, 1 (bad trace, policy or parameters) or 2 (usage)."""
    if args.list_policies:
        from gpufleet.commands._output import print_listing
        kinds = {"policies": "job-time policies (job formats):"}
        more = {}
        if _replay() is not None:
            kinds["strategies"] = "placement strategies (openb format):"
            more["dra_strategies"] = ("DRA strategies (openb format, with --as-dra):", _dra_strategies())
        print_listing(kinds, args.output, more)
        return 0
    if args.list_formats:
        print_formats(args.output)
        return 0
    if not args.policy:
        print("gpufleet simulate: --policy is required (or --list-policies, --list-formats)", file=sys.stderr)
        return 2
    device = device_among([args.trace, *named_files(args)])
    if device:
        print(f"gpufleet simulate: {device}: a device, not a file", file=sys.stderr)
        return 2
    too_large = cluster_too_large(args.cluster) if args.cluster and not os.path.exists(args.cluster) else None
    if too_large:
        print(f"gpufleet simulate: {too_large}", file=sys.stderr)
        return 2
    try:
        from gpufleet import traces as T
        # Only the summary to print: the trace is read into plain columns where its format can,
        # and no frame is built, so a small run waits for neither pandas nor NumPy to import.
        summary_only = args.output != "wide" and not args.jobs_csv
        try:
            loaded = T.load(format=args.format, trace=args.trace, missing=args.missing, cluster=args.cluster,
                            num_jobs=args.num_jobs, seed=args.seed, columns=summary_only, **side_inputs(args))
        except T.MissingInput as e:
            print(f"gpufleet simulate: {one_line(f'{e}{missing_hint(e)}')}", file=sys.stderr)
            return 2
        if loaded.replayed:
            replay = _replay()
            if replay is None:
                print("gpufleet simulate: the openb replay (gpufleet.replay) is not available", file=sys.stderr)
                return 2
            result = replay.replay_openb(loaded.nodes, loaded.pods, policy=args.policy, seed=args.seed,
                                         as_dra=args.as_dra)
            _print(dict(result.summary), args.output,
                   _replay_rows(result.timeseries) if args.output == "wide" else None)
            return 0
        if args.as_dra:
            print(f"gpufleet simulate: --as-dra replays openb traces only, not {loaded.format} (the "
                  "job-time simulator counts whole GPUs, which a claim would ask the same: docs/dra.md)",
                  file=sys.stderr)
            return 2
        from gpufleet.sim import simulate, simulate_summary
        if loaded.cluster is None:
            print(f"gpufleet simulate: {loaded.format} traces need --cluster (e.g. 8 or 'v100:4,k80:4')",
                  file=sys.stderr)
            return 2
        placement = None if args.placement.lower() == "none" else args.placement
        if args.gavel_fix and not args.gavel_compat:
            print("gpufleet simulate: --gavel-fix needs --gavel-compat", file=sys.stderr)
            return 2
        gavel = {bug: False for bug in args.gavel_fix} if args.gavel_compat else False
        options = dict(seed=args.seed, tiresias_compat=args.tiresias_compat, gavel_compat=gavel,
                       restore_delay=args.restore_delay, placement=placement)
        if summary_only:
            _print(simulate_summary(loaded.jobs, loaded.cluster, args.policy, **options), args.output)
            return 0
        result = simulate(loaded.jobs, loaded.cluster, args.policy, **options)
    except (KeyError, ValueError, OSError) as e:
        print(f"gpufleet simulate: {one_line(e)}", file=sys.stderr)
        return 1
    if args.jobs_csv:
        try:
            result.jobs.to_csv(args.jobs_csv, index=False)
        except OSError as e:
            print(f"gpufleet simulate: --jobs-csv {args.jobs_csv}: cannot write: {e}", file=sys.stderr)
            return 1
    _print(result.summary, args.output, _job_rows(result.jobs) if args.output == "wide" else None)
    return 0
