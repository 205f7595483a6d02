"""Which devices a node may use: ResourceSlices grouped into pools, as Kubernetes gathers them.

A slice counts for a node through ``nodeName``, ``nodeSelector``, ``allNodes`` or, with
``perDeviceNodeSelection``, through one of its devices. Slices of a pool with an older
generation than the newest are ignored; a pool is incomplete while fewer slices of its
generation exist than ``resourceSliceCount`` says, and invalid when a device name repeats.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Pool:
    driver: str
    name: str
    generation: int
    slices: list[dict[str, Any]] = field(default_factory=list)  # those that serve the node
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


def gather_pools(slices: list[dict[str, Any]], node: dict[str, Any],
                 partitionable: bool = True) -> list[Pool]:
    """The pools with devices for `node`, ordered by driver then pool name."""
    pools: dict[tuple[str, str], Pool] = {}
    newest: dict[tuple[str, str], int] = {}
    for s in slices:
        spec = s["spec"]
        key = (spec["driver"], spec["pool"]["name"])
        newest[key] = max(newest.get(key, 0), spec["pool"].get("generation", 0))
    for s in slices:
        spec = s["spec"]
        if not partitionable and spec.get("perDeviceNodeSelection") is not None:
            continue
        key = (spec["driver"], spec["pool"]["name"])
        if spec["pool"].get("generation", 0) != newest[key]:
            continue  # outdated
        if spec.get("perDeviceNodeSelection"):
            serves = any(placement_matches(d, node) for d in spec.get("devices") or [])
        else:
            serves = placement_matches(spec, node)
        if not serves:
            continue
        pool = pools.setdefault(key, Pool(spec["driver"], key[1], newest[key]))
        pool.slices.append(s)
    result = []
    for key in sorted(pools):
        pool = pools[key]
        same_generation = [s for s in slices
                           if (s["spec"]["driver"], s["spec"]["pool"]["name"]) == key
                           and s["spec"]["pool"].get("generation", 0) == pool.generation]
        pool.incomplete = len(same_generation) != pool.slices[0]["spec"]["pool"]["resourceSliceCount"]
        names: set[str] = set()
        for s in pool.slices:
            for d in s["spec"].get("devices") or []:
                if d["name"] in names:
                    pool.invalid = f"duplicate device name {d['name']}"
                names.add(d["name"])
        # Counter sets may be published by any slice of the pool's generation.
        for s in same_generation:
            for cs in s["spec"].get("sharedCounters") or []:
                pool.counter_sets.setdefault(cs["name"], cs["counters"])
        result.append(pool)
    return result
