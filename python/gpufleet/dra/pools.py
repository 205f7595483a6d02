"""Which devices a node may use: ResourceSlices grouped into pools, as Kubernetes gathers them.

A slice counts for a node through ``nodeName``, ``nodeSelector``, ``allNodes`` or, with
``perDeviceNodeSelection``, through one of its devices; a slice of ``sharedCounters`` counts for
every node (it publishes the pool's counter sets, no devices). Only a pool's newest generation
counts. A pool is *incomplete* while fewer slices of that generation exist than
``resourceSliceCount`` says (none of its devices is offered), and *invalid* when a device name
repeats, a counter set is published twice, or a device consumes a counter set or counter the pool
does not publish (its devices are not offered either). Without the partitionable-devices feature,
slices with counter sets or per-device node selection are ignored.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Pool:
    driver: str
    name: str
    generation: int
    slices: list[dict[str, Any]] = field(default_factory=list)         # device slices for the node
    other_slices: list[dict[str, Any]] = field(default_factory=list)   # the pool's other device slices
    incomplete: bool = False
    invalid: str = ""  # why, when invalid
    counter_sets: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> counters


def _labels(node: dict[str, Any]) -> dict[str, str]:
    return (node.get("metadata") or {}).get("labels") or {}


def _requirement_holds(req: dict[str, Any], value: str | None) -> bool:
    op = req["operator"]
    values = req.get("values") or []
    if op == "In":
        return value is not None and value in values
    if op == "NotIn":
        return value is None or value not in values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    try:  # Gt / Lt compare integers
        return value is not None and (int(value) > int(values[0]) if op == "Gt" else int(value) < int(values[0]))
    except (ValueError, IndexError):
        return False


def selector_matches(selector: dict[str, Any], node: dict[str, Any]) -> bool:
    """A v1 NodeSelector against a Node: any term whose requirements all hold."""
    labels = _labels(node)
    name = (node.get("metadata") or {}).get("name")
    for term in selector.get("nodeSelectorTerms") or []:
        exprs = term.get("matchExpressions") or []
        fields = term.get("matchFields") or []
        if not exprs and not fields:
            continue
        if all(_requirement_holds(r, labels.get(r["key"])) for r in exprs) and all(
                _requirement_holds(r, name if r["key"] == "metadata.name" else None) for r in fields):
            return True
    return False


def placement_matches(spec: dict[str, Any], node: dict[str, Any]) -> bool:
    if spec.get("nodeName"):
        return spec["nodeName"] == (node.get("metadata") or {}).get("name")
    if spec.get("allNodes"):
        return True
    if spec.get("nodeSelector") is not None:
        return selector_matches(spec["nodeSelector"], node)
    return False


def _serves(spec: dict[str, Any], node: dict[str, Any]) -> bool:
    if spec.get("sharedCounters"):
        return True
    if spec.get("nodeName") or spec.get("allNodes") or spec.get("nodeSelector") is not None:
        return placement_matches(spec, node)
    if spec.get("perDeviceNodeSelection"):
        return any(placement_matches(d, node) for d in spec.get("devices") or [])
    return False


def gather_pools(slices: list[dict[str, Any]], node: dict[str, Any],
                 partitionable: bool = True) -> list[Pool]:
    """The pools with slices for `node`, ordered by driver then pool name."""
    newest: dict[tuple[str, str], int] = {}
    for s in slices:
        spec = s["spec"]
        key = (spec["driver"], spec["pool"]["name"])
        newest[key] = max(newest.get(key, 0), spec["pool"].get("generation", 0))
    chosen: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for s in slices:
        spec = s["spec"]
        if not partitionable and (spec.get("perDeviceNodeSelection") is not None or spec.get("sharedCounters")):
            continue
        key = (spec["driver"], spec["pool"]["name"])
        if spec["pool"].get("generation", 0) == newest[key] and _serves(spec, node):
            chosen.setdefault(key, []).append(s)
    result = []
    for key in sorted(chosen):
        pool = Pool(key[0], key[1], newest[key])
        mine = chosen[key]
        every = [s for s in slices if (s["spec"]["driver"], s["spec"]["pool"]["name"]) == key
                 and s["spec"]["pool"].get("generation", 0) == newest[key]]
        if len(every) != mine[0]["spec"]["pool"]["resourceSliceCount"]:
            pool.incomplete = True
            result.append(pool)
            continue
        counter_slices = [s for s in mine if partitionable and s["spec"].get("sharedCounters")]
        pool.slices = [s for s in mine if s not in counter_slices]
        names: set[str] = set()
        for s in pool.slices:
            for d in s["spec"].get("devices") or []:
                if d["name"] in names and not pool.invalid:
                    pool.invalid = f"duplicate device name {d['name']}"
                names.add(d["name"])
        if partitionable and not pool.invalid:
            for s in counter_slices:
                for cs in s["spec"]["sharedCounters"]:
                    if cs["name"] in pool.counter_sets and not pool.invalid:
                        pool.invalid = f"duplicate counter set name {cs['name']}"
                    pool.counter_sets.setdefault(cs["name"], cs["counters"])
            pool.other_slices = [s for s in every if s not in mine and not s["spec"].get("sharedCounters")]
            for s in pool.slices + pool.other_slices:
                for d in s["spec"].get("devices") or []:
                    for use in d.get("consumesCounters") or []:
                        cset = pool.counter_sets.get(use["counterSet"])
                        if cset is None:
                            pool.invalid = pool.invalid or f"counter set {use['counterSet']} not found"
                            continue
                        for cname in use["counters"]:
                            if cname not in cset:
                                pool.invalid = pool.invalid or (
                                    f"counter {cname} not found in counter set {use['counterSet']}")
        result.append(pool)
    return result
