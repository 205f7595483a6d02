"""Topology-aware device choice for GetPreferredAllocation.

Preference order for the chosen set: all in one NVLink group, then all behind one PCIe switch,
then all on one NUMA node; among equals, the set with the most NVLink/PCIe/NUMA-sharing pairs,
then the lowest minors (deterministic). Small requests are solved exactly by enumeration, large
ones greedily.
"""
from __future__ import annotations

import itertools
import math
from typing import Any, Iterable, Mapping, Sequence

_EXACT_LIMIT = 20000  # combinations; 8 GPUs choose 4 is 70, 16 choose 8 is 12870


class Topology:
    """Affinity labels per minor: NVLink group index, PCIe switch id, NUMA node id."""

    def __init__(self, devices: Iterable[Mapping[str, Any]],
                 nvlink_groups: Sequence[Sequence[int]] | None = None) -> None:
        self.nvlink: dict[int, int] = {}
        self.pcie: dict[int, str] = {}
        self.numa: dict[int, int] = {}
        for gi, group in enumerate(nvlink_groups or []):
            for m in group:
                self.nvlink[int(m)] = gi
        for d in devices:
            topo = d.get("topology") or {}
            m = int(d["minor"])
            if topo.get("pcieID") not in (None, ""):
                self.pcie[m] = str(topo["pcieID"])
            if topo.get("nodeID") is not None and int(topo["nodeID"]) >= 0:
                self.numa[m] = int(topo["nodeID"])

    @staticmethod
    def _same(labels: Mapping[int, Any], chosen: Sequence[int]) -> bool:
        vals = {labels.get(m) for m in chosen}
        return len(vals) == 1 and None not in vals

    @staticmethod
    def _pairs(labels: Mapping[int, Any], chosen: Sequence[int]) -> int:
        return sum(1 for a, b in itertools.combinations(chosen, 2)
                   if labels.get(a) is not None and labels.get(a) == labels.get(b))

    def score(self, chosen: Sequence[int]) -> tuple:
        return (self._same(self.nvlink, chosen), self._same(self.pcie, chosen),
                self._same(self.numa, chosen), self._pairs(self.nvlink, chosen),
                self._pairs(self.pcie, chosen), self._pairs(self.numa, chosen))

    def fragmentation(self, chosen: Sequence[int], available: Sequence[int]) -> int:
        """NVLink groups the choice breaks up (touched, with members left free); fewer is better,
        so a single-GPU request takes the odd one out rather than half of an intact pair."""
        taken = set(chosen)
        touched = {self.nvlink[m] for m in chosen if m in self.nvlink}
        return sum(1 for g in touched
                   if any(self.nvlink.get(m) == g and m not in taken for m in available))

    def affinity(self, a: int, b: int) -> int:
        """Pairwise weight for the greedy path: NVLink > PCIe > NUMA."""
        w = 0
        for labels, weight in ((self.nvlink, 4), (self.pcie, 2), (self.numa, 1)):
            if labels.get(a) is not None and labels.get(a) == labels.get(b):
                w += weight
        return w


def choose(topology: Topology, available: Sequence[int], must_include: Sequence[int],
           size: int) -> list[int]:
    """Picks `size` minors from `available`, always including `must_include`.

    Raises ValueError when the request cannot be met (too few devices, must_include not
    available or larger than size)."""
    avail = sorted(set(available))
    must = sorted(set(must_include))
    if size <= 0:
        raise ValueError(f"allocation size must be positive, got {size}")
    if not set(must) <= set(avail):
        raise ValueError(f"must_include devices {sorted(set(must) - set(avail))} are not available")
    if len(must) > size:
        raise ValueError(f"{len(must)} must_include devices exceed allocation size {size}")
    if len(avail) < size:
        raise ValueError(f"only {len(avail)} devices available for allocation size {size}")
    rest = [m for m in avail if m not in must]
    k = size - len(must)
    if k == 0:
        return must
    if math.comb(len(rest), k) <= _EXACT_LIMIT:
        best: tuple | None = None
        best_set: list[int] = []
        for combo in itertools.combinations(rest, k):  # lexicographic, so ties keep low minors
            chosen = sorted(must + list(combo))
            s = topology.score(chosen) + (-topology.fragmentation(chosen, avail),)
            if best is None or s > best:
                best, best_set = s, chosen
        return best_set
    chosen = list(must)
    while len(chosen) < size:
        pool = [m for m in rest if m not in chosen]
        # Seed with the device that has the most close neighbours when nothing is chosen yet.
        ref = chosen or pool
        nxt = max(pool, key=lambda m: (sum(topology.affinity(m, c) for c in ref if c != m), -m))
        chosen.append(nxt)
    return sorted(chosen)
