"""Allocating ResourceClaims on one node: Kubernetes' verdict and a scored choice of devices.

``allocate`` answers what ``structured.Allocator.Allocate(node, claims)`` answers (allocated,
unallocatable, or the error it reports) and, when allocated, picks the devices by the strategy:
``"pack"`` (default: fewest distinct PCIe roots per claim, fewest newly opened GPUs or counter
sets, then the fullest ones) or ``"first"`` (Kubernetes' own first allocation). Bad objects are
a ``DraError`` raised before anything is decided.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Iterable

from gpufleet.dra.objects import DraError, check_claim, check_class, check_slice
from gpufleet.k8s import keys
from gpufleet.dra.problem import (Built, DeviceMatcher, Ledger, claim_label, features_from,
                                  results_of)

# The strategies `allocate` knows, each with the line `gpufleet simulate --list-policies` prints.
STRATEGY_DESCRIPTIONS = {
    "pack": "fewest PCIe roots per claim, fewest newly opened GPUs or counter sets, then the fullest",
    "first": "Kubernetes' own allocation: the first devices that satisfy the claim",
}
STRATEGIES = tuple(STRATEGY_DESCRIPTIONS)
DEFAULT_BUDGET = 200_000
_shared_matcher = DeviceMatcher()


@dataclass(frozen=True)
class AllocationOutcome:
    """What one allocation question got. ``results`` holds one AllocationResult per claim (in the
    claims' order) when ``verdict == "allocated"``."""

    verdict: str
    results: list[dict[str, Any]] | None = None
    reason: str = ""
    steps: int = 0
    score: dict[str, int] = field(default_factory=dict)
    gave_up: bool = False
    proved_best: bool = False

    @property
    def ok(self) -> bool:
        return self.verdict == "allocated"


def ledger_from(claims: Iterable[dict[str, Any]], slices: list[dict[str, Any]]) -> Ledger:
    """What allocated claims (their status.allocation) hold, for the allocator's in-use rules."""
    multi = set()
    for s in slices:
        for d in s["spec"].get("devices") or []:
            if d.get("allowMultipleAllocations"):
                multi.add((s["spec"]["driver"], s["spec"]["pool"]["name"], d["name"]))
    ledger = Ledger()
    for c in claims:
        alloc = (c.get("status") or {}).get("allocation")
        for r in ((alloc or {}).get("devices") or {}).get("results") or []:
            ledger.add_result(r, (r["driver"], r["pool"], r["device"]) in multi)
    return ledger


def allocate(node: dict[str, Any] | str, claims: list[dict[str, Any]],
             classes: Iterable[dict[str, Any]], slices: list[dict[str, Any]], *,
             allocated: Iterable[dict[str, Any]] = (), features: dict[str, bool] | None = None,
             strategy: str = "pack", budget: int = DEFAULT_BUDGET, check: bool = True,
             matcher: DeviceMatcher | None = None) -> AllocationOutcome:
    """Allocate `claims` together for one pod on `node` (a Node dict or a node name).

    `allocated` are claims already allocated (their status holds the devices they keep);
    `features` names Kubernetes' DRA feature gates (default: all on). DraError for a bad object.
    """
    if strategy not in STRATEGIES:
        raise DraError(f"strategy: unknown {strategy!r} (known: {', '.join(STRATEGIES)})")
    if isinstance(node, str):
        node = {"metadata": {"name": node, "labels": {keys.LABEL_HOSTNAME: node}}}
    if check:
        for c in claims:
            check_claim(c)
        for s in slices:
            check_slice(s)
        class_list = [check_class(c) for c in classes]
    else:
        class_list = list(classes)
    feats = features_from(features)
    from gpufleet.dra.node_devices import NodeDevices
    try:
        table = NodeDevices(node, slices, feats)
    except DraError as e:
        return AllocationOutcome("error", reason=str(e))
    return solve_on(table, claims, {c["metadata"]["name"]: c for c in class_list},
                    ledger_from(allocated, slices), matcher or _shared_matcher, strategy, budget)


def solve_on(table: Any, claims: list[dict[str, Any]], classes: dict[str, dict[str, Any]],
             ledger: Ledger, matcher: DeviceMatcher, strategy: str, budget: int) -> AllocationOutcome:
    """The claims on the node `table` (a NodeDevices) describes, given what `ledger` holds."""
    raw = solve_raw(table, claims, classes, ledger, matcher, strategy, budget)
    if isinstance(raw, AllocationOutcome):
        return raw
    built, answer = raw
    return outcome_of(built, answer, claims, table)


def solve_raw(table: Any, claims: list[dict[str, Any]], classes: dict[str, dict[str, Any]],
              ledger: Ledger, matcher: DeviceMatcher, strategy: str, budget: int, part: Any = None
              ) -> tuple[Any, dict[str, Any]] | AllocationOutcome:
    """The requests' part (NodeDevices.request_part, or `part` to reuse) and the native answer as
    a dict, or the error outcome when the requests cannot be read. The core builds the problem
    from the node's table, the part and what `ledger` holds there (dra/prepared.h)."""
    from gpufleet import _core
    if strategy not in STRATEGIES:
        raise DraError(f"strategy: unknown {strategy!r} (known: {', '.join(STRATEGIES)})")
    try:
        if part is None:
            part = table.request_part(claims, classes, ledger, matcher)
    except DraError as e:
        return AllocationOutcome("error", reason=str(e))
    question = (table.native(), part.native(table), table.held(ledger))
    return part, _core.dra_solve_prepared([question], strategy, budget)[0].to_dict()


def outcome_of(built: Any, answer: dict[str, Any], claims: list[dict[str, Any]], table: Any) -> AllocationOutcome:
    """The native answer as an outcome, with the devices named as `table` (the node asked, or
    another node alike position for position) names them. `built` is what the question was
    made of (a RequestPart or a Built: its requests and consumed capacity)."""
    verdict = answer["verdict"]
    if verdict == "error":
        rq = built.requests[answer["error_request"]]
        ref = table.devices[answer["error_device"]]
        # Kubernetes names a subrequest by its own name here ("s0", not "r0/s0").
        reason = (f"claim {claim_label(claims[rq.claim_index])}, request {rq.name.split('/')[-1]}: "
                  f"cannot add device {ref.label()} because a claim constraint would not be satisfied")
        return AllocationOutcome("error", reason=reason, steps=answer["steps"])
    if verdict == "unallocatable":
        invalid = [p for p in table.pools if p.invalid]
        if invalid and not answer["gave_up"]:
            return AllocationOutcome("error", reason="invalid resource pools were encountered: "
                                     f"{invalid[0].driver}/{invalid[0].name}: {invalid[0].invalid}",
                                     steps=answer["steps"])
        return AllocationOutcome("unallocatable", reason=answer["reason"], steps=answer["steps"],
                                 gave_up=answer["gave_up"])
    named = Built({}, table.devices, built.requests, claims, built.consumed, table.pools)
    results = results_of(named, answer["choices"], table.node, share_ids=lambda: str(uuid.uuid4()))
    return AllocationOutcome("allocated", results=results, steps=answer["steps"],
                             score=answer["score"], gave_up=answer["gave_up"],
                             proved_best=answer["proved_best"])
