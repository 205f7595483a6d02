"""`gpufleet place SCENARIO`: place the scenario's unbound pods in file order and print where each
went and the per-GPU usage after (``-o wide``: also each pod's request, each GPU's model, free
memory and pods; ``-o json|yaml`` or ``--json``: ``{strategy, placements, devices}``). A DRA
scenario (node, classes, slices, claims) prints each claim's devices instead (docs/dra.md)."""
from __future__ import annotations

import argparse
import sys

from gpufleet.commands._output import add_output_options, emit, is_document
from gpufleet.registries import check_strategy, strategies


def register(sub: argparse._SubParsersAction) -> None:
    """Adds the ``place`` subcommand to ``sub``."""
    p = sub.add_parser("place", help="place a scenario's pending pods and print where each went")
    p.add_argument("scenario", nargs="?", help="YAML or JSON scenario file")
    p.add_argument("--strategy", default="binpack",
                   help=f"device choice strategy ({', '.join(strategies())}); default binpack")
    add_output_options(p)
    p.add_argument("--list-strategies", action="store_true",
                   help="list the placement strategies with their parameters and exit")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Runs ``gpufleet place``; returns 0, 1 (invalid scenario) or 2 (usage, unknown strategy)."""
    # Imported when the command runs, so that another command's start does not load them.
    from gpufleet.report import placement_table, usage_table
    from gpufleet.scenario import ScenarioError, load_scenario
    if args.list_strategies:
        from gpufleet.commands._output import print_listing
        print_listing({"strategies": ""}, args.output)
        return 0
    if not args.scenario:
        print("gpufleet place: a scenario file is required (or --list-strategies)", file=sys.stderr)
        return 2
    if _is_dra(args.scenario):  # node, classes, slices and claims: docs/dra.md
        from gpufleet.dra.report import place_claims
        return place_claims(args.scenario, args.strategy, args.output)
    try:   # name and parameters, before the scenario is read
        check_strategy(args.strategy)
    except ValueError as e:
        print(f"gpufleet place: {e}", file=sys.stderr)
        return 2
    try:
        scenario = load_scenario(args.scenario)
    except ScenarioError as e:
        print(f"gpufleet place: {e}", file=sys.stderr)
        return 1
    results = []
    for pod in scenario.pending:
        allocation, reason = scenario.cluster.place(pod, args.strategy)
        results.append({
            "pod": pod.name,
            "node": allocation.node if allocation else None,
            "device_allocated": allocation.device_allocated() if allocation else None,
            "reason": reason or None,
        })
    scenario.cluster.check_invariants()
    if is_document(args.output):
        emit({"strategy": args.strategy, "placements": results,
              "devices": usage_table(scenario.cluster)}, args.output)
    else:
        wide = args.output == "wide"
        print(placement_table(results, scenario.pending if wide else None))
        print()
        print(usage_table(scenario.cluster, text=True, wide=wide))
    return 0


def _is_dra(path: str) -> bool:
    from gpufleet.documents import read_document
    from gpufleet.scenario import ScenarioError
    from gpufleet.dra.report import is_dra_scenario
    try:
        return is_dra_scenario(read_document(path))
    except ScenarioError:
        return False  # load_scenario reports it
