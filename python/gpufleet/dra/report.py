"""`gpufleet place` on a DRA scenario (docs/dra.md): the claims allocated together on its node,
printed as a table of claim, request and device (``-o wide``: also the consumed capacity and the
node selector) or, with ``-o json|yaml``, as ``{strategy, verdict, reason, score, claims}`` where
each claim carries the AllocationResult Kubernetes would write in its status."""
from __future__ import annotations

import sys
from typing import Any

from gpufleet.documents import ScenarioError
from gpufleet.dra.allocator import STRATEGIES

DRA_KEYS = ("slices", "claims", "classes")


def is_dra_scenario(data: Any) -> bool:
    """A scenario document is a DRA one when it names slices, claims or classes."""
    return isinstance(data, dict) and any(k in data for k in DRA_KEYS)


def place_claims(path: str, strategy: str, output: str | None) -> int:
    """Allocates the scenario's claims and prints them; 0, 1 (invalid scenario) or 2 (usage)."""
    from gpufleet.commands._output import emit, is_document
    from gpufleet.dra.scenario import load_dra_scenario
    strategy = "pack" if strategy == "binpack" else strategy  # `place`'s default means "pack" here
    if strategy not in STRATEGIES:
        print(f"gpufleet place: unknown strategy {strategy!r} for a DRA scenario; known: "
              f"{', '.join(STRATEGIES)}", file=sys.stderr)
        return 2
    try:
        scenario = load_dra_scenario(path)
    except ScenarioError as e:
        print(f"gpufleet place: {e}", file=sys.stderr)
        return 1
    out = scenario.allocate(strategy)
    claims = [{"claim": f"{c['metadata'].get('namespace', 'default')}/{c['metadata']['name']}",
               "allocation": out.results[i] if out.ok else None} for i, c in enumerate(scenario.claims)]
    if is_document(output):
        emit({"strategy": strategy, "node": scenario.node["metadata"]["name"], "verdict": out.verdict,
              "reason": out.reason or None, "score": out.score or None, "claims": claims}, output)
        return 0
    print(claims_table(claims, scenario.node["metadata"]["name"], wide=output == "wide"))
    print()
    print(f"{out.verdict}" + (f": {out.reason}" if out.reason else "") +
          (f" (score: {out.score['roots']} roots, {out.score['opened']} opened, "
           f"leftover {out.score['leftover']})" if out.ok else ""))
    return 0


def claims_table(claims: list[dict[str, Any]], node: str, wide: bool = False) -> str:
    rows = [("CLAIM", "REQUEST", "DEVICE", "NODE") + (("CONSUMED",) if wide else ())]
    for c in claims:
        results = (c["allocation"] or {}).get("devices", {}).get("results") or []
        if not results:
            rows.append((c["claim"], "-", "-", "-") + (("-",) if wide else ()))
        for r in results:
            consumed = ",".join(f"{k}={v}" for k, v in (r.get("consumedCapacity") or {}).items()) or "-"
            rows.append((c["claim"], r["request"], f"{r['driver']}/{r['pool']}/{r['device']}", node)
                        + ((consumed,) if wide else ()))
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(str(v).ljust(w) for v, w in zip(row, widths)).rstrip() for row in rows)
