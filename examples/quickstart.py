"""Quickstart: build a small mixed cluster, place whole-GPU and shared-GPU pods, print where each
went and the per-GPU usage. Run: python examples/quickstart.py [SCENARIO] [--strategy NAME]."""
from __future__ import annotations

import argparse
from pathlib import Path

import gpufleet
from gpufleet.report import placement_table, usage_table

HERE = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("scenario", nargs="?", default=str(HERE / "scenarios" / "quickstart.yaml"))
    parser.add_argument("--strategy", default="topology", choices=gpufleet.strategies())
    args = parser.parse_args()

    scenario = gpufleet.load_scenario(args.scenario)
    print(f"gpufleet {gpufleet.__version__}: {scenario.cluster.num_nodes} nodes, "
          f"{len(scenario.pending)} pods to place with strategy '{args.strategy}'\n")
    results = []
    for pod in scenario.pending:
        allocation, reason = scenario.cluster.place(pod, args.strategy)
        results.append({"pod": pod.name, "node": allocation.node if allocation else None,
                        "device_allocated": allocation.device_allocated() if allocation else None,
                        "reason": reason})
    scenario.cluster.check_invariants()
    print(placement_table(results))
    print()
    print(usage_table(scenario.cluster, text=True))


if __name__ == "__main__":
    main()
