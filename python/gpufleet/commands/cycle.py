"""`gpufleet cycle SCENARIO [--conf CONF] [--json]`: run scheduling cycles on a scenario with
queues and jobs and print binds, evictions and pending reasons."""
from __future__ import annotations

import argparse
import json
import sys

from gpufleet.engine import engine_from_scenario, load_config
from gpufleet.scenario import ScenarioError, _read


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("cycle", help="run batch-scheduling cycles (queues, gangs) on a scenario")
    p.add_argument("scenario", nargs="?", help="YAML or JSON scenario with nodes, queues and jobs")
    p.add_argument("--conf", help="scheduler configuration (YAML/JSON with actions and tiers); "
                                  "default: enqueue, allocate, backfill with the built-in plugins")
    p.add_argument("--cycles", type=int, default=1, help="cycles to run (default 1)")
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    p.add_argument("--list-plugins", action="store_true",
                   help="list the engine plugins with their parameters and exit")
    p.add_argument("--list-actions", action="store_true",
                   help="list the engine actions with their parameters and exit")
    p.set_defaults(func=run)


def _table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    lines = ["  ".join(str(h).ljust(w) for h, w in zip(header, widths))]
    lines += ["  ".join(str(x).ljust(w) for x, w in zip(row, widths)) for row in rows]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    if args.list_plugins or args.list_actions:
        from gpufleet.registries import format_listing
        kinds = (["plugins"] if args.list_plugins else []) + (["actions"] if args.list_actions else [])
        print("\n".join(format_listing(k) for k in kinds))
        return 0
    if not args.scenario:
        print("gpufleet cycle: a scenario file is required (or --list-plugins / --list-actions)",
              file=sys.stderr)
        return 2
    if args.cycles < 1:
        print("gpufleet cycle: --cycles must be >= 1", file=sys.stderr)
        return 2
    try:
        config = load_config(args.conf) if args.conf else None
    except (ValueError, KeyError) as e:
        print(f"gpufleet cycle: {e.args[0] if e.args else e}", file=sys.stderr)  # names the file
        return 2
    try:
        engine = engine_from_scenario(_read(Path(args.scenario)), args.scenario, config)
    except ScenarioError as e:
        print(f"gpufleet cycle: {e}", file=sys.stderr)
        return 1
    results = [engine.run_cycle() for _ in range(args.cycles)]
    engine.cluster.check_invariants()
    if args.json:
        json.dump({"cycles": [r.to_dict() for r in results]}, sys.stdout, indent=2)
        print()
        return 0
    for r in results:
        print(f"== cycle {r.cycle}")
        raw = r.raw
        if raw["binds"]:
            print(_table([[b["job"], b["task"], b["node"],
                           ",".join(f"{d['type']}{d['minor']}:{d['core']}%" for d in b["devices"]) or "-"]
                          for b in raw["binds"]], ["JOB", "TASK", "NODE", "DEVICES"]))
        else:
            print("no binds")
        if raw["evictions"]:
            print()
            print(_table([[e["job"], e["task"], e["node"], e["reason"]] for e in raw["evictions"]],
                         ["JOB", "TASK", "NODE", "EVICTED BECAUSE"]))
        if raw["pending"]:
            print()
            print(_table([[j, why] for j, why in sorted(raw["pending"].items())], ["JOB", "PENDING BECAUSE"]))
        print()
        print(_table([[q["queue"], f"{q['weight']:g}", f"{q['allocated']['gpu']:g}",
                       f"{q['deserved']['gpu']:g}", f"{q['share']:.2f}"] for q in raw["queues"]],
                     ["QUEUE", "WEIGHT", "GPU ALLOCATED", "GPU DESERVED", "SHARE"]))
        print()
    return 0
