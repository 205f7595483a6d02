"""`gpufleet cycle SCENARIO [--conf CONF] [-o json|yaml|wide]`: run scheduling cycles on a
scenario with queues and jobs and print binds, evictions, pending reasons and queue shares
(in a queue tree also each queue's subtree's GPUs: only leaves hold jobs; ``-o wide``: also each bind's CPU and memory and the queues' CPU, memory and GPU requests;
``-o json|yaml`` or ``--json``: ``{"cycles": [CycleResult.to_dict(), ...]}``)."""
from __future__ import annotations

import argparse
import math
import sys

from gpufleet._core import DeviceGrant, format_bytes
from gpufleet.commands._bounds import CYCLES_MAX, count
from gpufleet.commands._output import add_output_options, emit, is_document, table


def register(sub: argparse._SubParsersAction) -> None:
    """Adds the ``cycle`` subcommand to ``sub``."""
    p = sub.add_parser("cycle", help="run batch-scheduling cycles (queues, gangs) on a scenario")
    p.add_argument("scenario", nargs="?", help="YAML or JSON scenario with nodes, queues and jobs")
    p.add_argument("--conf", help="scheduler configuration (YAML/JSON with actions and tiers); "
                                  "default: enqueue, allocate, backfill with the built-in plugins")
    p.add_argument("--cycles", type=count(1, CYCLES_MAX), default=1,
                   help=f"cycles to run, 1 to {CYCLES_MAX:,} (default 1)")
    p.add_argument("--queues", action="append", default=[], metavar="FILE",
                   help="queue objects to add before the scenario's jobs: KAI Queue, Kueue "
                        "ClusterQueue/Cohort or Volcano Queue manifests (YAML/JSON, several "
                        "documents allowed; may be repeated)")
    add_output_options(p)
    p.add_argument("--list-plugins", action="store_true",
                   help="list the engine plugins with their parameters and exit")
    p.add_argument("--list-actions", action="store_true",
                   help="list the engine actions with their parameters and exit")
    p.set_defaults(func=run)


def _table(rows: list[list[str]], header: list[str]) -> str:
    return table(rows, header)


def _devices(devices: list[DeviceGrant], wide: bool) -> str:
    if not devices:
        return "-"
    if wide:  # with each grant's GPU memory
        return ",".join(f"{d.type}{d.minor}:{d.core}%/{format_bytes(d.memory_bytes)}" for d in devices)
    return ",".join(f"{d.type}{d.minor}:{d.core}%" for d in devices)


def _gpus(x: float) -> str:
    return f"{x:g}"


def _cpu(milli: float) -> str:
    return f"{milli / 1000:g}"


def _memory(b: float) -> str:
    return format_bytes(int(b)) if math.isfinite(b) else f"{b}"


def run(args: argparse.Namespace) -> int:
    """Runs ``gpufleet cycle``; returns 0, 1 (invalid scenario) or 2 (usage, bad configuration)."""
    # Imported when the command runs, so that another command's start does not load them.
    from gpufleet.engine import engine_from_scenario, load_config
    from gpufleet.scenario import ScenarioError, read_scenario_file
    if args.list_plugins or args.list_actions:
        from gpufleet.commands._output import print_listing
        kinds = ({"plugins": ""} if args.list_plugins else {}) | ({"actions": ""} if args.list_actions else {})
        print_listing(kinds, args.output)
        return 0
    if not args.scenario:
        print("gpufleet cycle: a scenario file is required (or --list-plugins / --list-actions)",
              file=sys.stderr)
        return 2
    try:
        config = load_config(args.conf) if args.conf else None
    except (ValueError, KeyError) as e:
        print(f"gpufleet cycle: {e}", file=sys.stderr)  # names the file
        return 2
    try:
        data = read_scenario_file(args.scenario)
        if args.queues and isinstance(data, dict):
            from gpufleet.queues import read_queue_objects
            extra = []
            for path in args.queues:
                try:
                    extra += read_queue_objects(path)
                except (ValueError, KeyError) as e:
                    raise ScenarioError(str(e)) from None
            data = {**data, "queues": list(data.get("queues") or []) + extra}
        engine = engine_from_scenario(data, args.scenario, config)
    except ScenarioError as e:
        print(f"gpufleet cycle: {e}", file=sys.stderr)
        return 1
    results = [engine.run_cycle() for _ in range(args.cycles)]
    engine.cluster.check_invariants()
    if is_document(args.output):
        emit({"cycles": [r.to_dict() for r in results]}, args.output)
        return 0
    wide = args.output == "wide"
    # In a queue tree only leaves hold jobs: each queue also shows what its subtree holds.
    tree = any(engine.queues()["parent"])
    for r in results:
        print(f"== cycle {r.cycle}")
        native = r.native  # the bound decisions: attributes, no per-row dicts
        if native.binds:
            header = ["JOB", "TASK", "NODE", "DEVICES"] + (["CPU", "MEMORY"] if wide else [])
            print(_table([[b.job, b.task, b.node, _devices(b.devices, wide)] +
                          ([_cpu(b.cpu_milli), _memory(b.memory_bytes)] if wide else [])
                          for b in native.binds], header))
        else:
            print("no binds")
        if native.evictions:
            print()
            print(_table([[e.job, e.task, e.node, e.reason] for e in native.evictions],
                         ["JOB", "TASK", "NODE", "EVICTED BECAUSE"]))
        pending = native.pending
        if pending:
            print()
            print(_table([[j, why] for j, why in sorted(pending.items())], ["JOB", "PENDING BECAUSE"]))
        print()
        header = ["QUEUE", "WEIGHT", "GPU ALLOCATED"] + (["GPU IN SUBTREE"] if tree else []) + \
            ["GPU DESERVED", "SHARE"]
        if wide:
            header += ["GPU REQUEST", "CPU ALLOCATED", "CPU DESERVED", "MEMORY ALLOCATED", "MEMORY DESERVED"]
        rows = []
        for q in native.queues:
            row = [q.queue, f"{q.weight:g}", _gpus(q.allocated.gpu)] + \
                ([_gpus(q.subtree_allocated.gpu)] if tree else []) + [_gpus(q.deserved.gpu), f"{q.share:.2f}"]
            if wide:
                row += [_gpus(q.request.gpu), _cpu(q.allocated.cpu), _cpu(q.deserved.cpu),
                        _memory(q.allocated.memory), _memory(q.deserved.memory)]
            rows.append(row)
        print(_table(rows, header))
        print()
    return 0
