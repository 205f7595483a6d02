"""Nodes that give the same answer, asked once: the node search behind DraCluster.place.

Two nodes whose slices publish the same devices (same attributes, capacities and counters, in the
same order; names may differ) and whose devices are held alike (the same device positions taken,
the same capacity consumed) answer any question about a claim the same way, position for
position. ``NodeGroups`` keeps every node's group (its *profile* and its *state*), each group's
earliest node, and per (claim shape, group) the answer: a question about a claim is then one
solve per group the cluster has (a handful when nodes are alike), or none when the answer is
remembered, and the choice is mapped onto the chosen node's own device names.
"""
from __future__ import annotations

import heapq
import itertools
import json
from typing import Any

from gpufleet.dra.node_devices import NodeDevices
from gpufleet.dra.problem import Ledger


def profile_key(table: NodeDevices) -> str:
    """What a node offers, without its names: device contents in order, counter consumption by
    position, pools' completeness."""
    slots: dict[int, int] = {}
    devices = []
    for i, ref in enumerate(table.devices):
        counters = [(slots.setdefault(s, len(slots)), a) for s, a in table.dev_counters[i]]
        devices.append([ref.key, counters, table.multi[i], table.dev_root[i],
                        ref.pool.incomplete, bool(ref.pool.invalid),
                        ref.device.get("taints"), bool(ref.device.get("bindingConditions"))])
    totals = [table.counter_total[s] for s in sorted(slots, key=slots.get)]
    pools = [(p.incomplete, bool(p.invalid)) for p in table.pools]
    return json.dumps([devices, totals, pools], sort_keys=True, default=str)


def state_key(table: NodeDevices, ledger: Ledger) -> tuple[Any, ...]:
    held = tuple(i for i, did in enumerate(table.ids) if did in ledger.devices)
    shared = tuple((i, tuple(sorted((k, str(v)) for k, v in ledger.shared.get(did, {}).items())))
                   for i, did in enumerate(table.ids) if table.multi[i] and did in ledger.shared) \
        if ledger.shared else ()
    # Devices of this node's pools published for other nodes consume its counters when held.
    others = tuple(did in ledger.devices for did, _ in table.other_counters)
    return (held, shared, others)


class NodeGroups:
    """Groups of alike nodes and remembered answers. Not locked: DraCluster calls it under its
    own lock."""

    MAX_ANSWERS = 200_000

    def __init__(self) -> None:
        self.order: dict[str, int] = {}           # node -> its rank (name order)
        self.profiles: dict[str, int] = {}        # profile key -> id
        self.group_of: dict[str, tuple[Any, ...]] = {}
        self.members: dict[tuple[Any, ...], set[str]] = {}
        self.heads: dict[tuple[Any, ...], list[tuple[int, str]]] = {}
        self.head: dict[tuple[Any, ...], str] = {}  # group -> its earliest node, while it stands
        # Groups as they come, or as an earlier node joins them; and per claim shape, how far
        # that log was read and a heap of entry() of
        # the groups whose remembered answer allocates (entries whose group left or whose
        # earliest node changed are mended when they come to the top).
        self.log: list[tuple[Any, ...]] = []
        self.best: dict[str, tuple[int, list[tuple[Any, ...]]]] = {}
        self._count = itertools.count()
        self.answers: dict[str, dict[tuple[Any, ...], Any]] = {}  # claim shape -> group -> answer
        self._answer_count = 0
        self.held: dict[tuple[Any, ...], Any] = {}  # group -> what it holds, as the core reads it
        # Per (claim shape, profile): the requests' candidates and constraints, which do not
        # depend on what is held (NodeDevices.request_part with static true).
        self.parts: dict[tuple[str, int], Any] = {}

    def place(self, node: str, table: NodeDevices, ledger: Ledger) -> None:
        """(Re)files `node` under its current group."""
        profile = self.profiles.setdefault(table.profile if hasattr(table, "profile") else profile_key(table),
                                           len(self.profiles))
        group = (profile, state_key(table, ledger))
        old = self.group_of.get(node)
        if old == group:
            return
        if old is not None:
            self._leave(node, old)
        self.group_of[node] = group
        self.members.setdefault(group, set()).add(node)
        heapq.heappush(self.heads.setdefault(group, []), (self.order[node], node))
        head = self.head.get(group)
        if head is None or self.order[node] < self.order[head]:
            # A new group, or maybe a new earliest node: each claim shape's best list reads it.
            self.log.append(group)
            if head is not None:
                self.head[group] = node

    def forget(self, node: str) -> None:
        old = self.group_of.pop(node, None)
        if old is not None:
            self._leave(node, old)

    def _leave(self, node: str, group: tuple[Any, ...]) -> None:
        self.members[group].discard(node)
        if self.head.get(group) == node:
            del self.head[group]
        if not self.members[group]:
            del self.members[group]
            self.heads.pop(group, None)
            self.held.pop(group, None)

    def first(self, group: tuple[Any, ...]) -> str:
        """The group's earliest node (kept until a node joins or the earliest leaves)."""
        head = self.head.get(group)
        if head is not None:
            return head
        heap = self.heads[group]
        members = self.members[group]
        while heap[0][1] not in members or self.group_of.get(heap[0][1]) != group:
            heapq.heappop(heap)
        head = self.head[group] = heap[0][1]
        return head

    def answers_for(self, shape: str) -> dict[tuple[Any, ...], Any]:
        """The answers remembered for one claim shape, by group (read-only: see remember)."""
        return self.answers.get(shape) or {}

    def remember(self, shape: str, group: tuple[Any, ...], answer: Any) -> None:
        if self._answer_count >= self.MAX_ANSWERS:
            self.answers.clear()
            self.best.clear()
            self.log.clear()
            self._answer_count = 0
        self.answers.setdefault(shape, {})[group] = answer
        self._answer_count += 1

    def entry(self, rank: tuple[int, ...], head: str, group: tuple[Any, ...], answer: Any) -> tuple[Any, ...]:
        """A heap entry of `best`: by rank, then node order (a count keeps equal ones apart)."""
        return (rank, self.order[head], head, next(self._count), group, answer)

    def best_of(self, shape: str, heap: list[tuple[Any, ...]]) -> tuple[Any, ...] | None:
        """The heap's best entry that stands (its group still there, with the same earliest
        node), mending the entries above it; None when none allocates."""
        while heap:
            group, node = heap[0][4], heap[0][2]
            if group not in self.members:
                heapq.heappop(heap)
                continue
            head = self.head.get(group) or self.first(group)
            if head != node:
                heapq.heapreplace(heap, self.entry(heap[0][0], head, group, heap[0][5]))
                continue
            return heap[0]
        return None

    def keep_part(self, key: tuple[str, int], part: Any) -> None:
        if len(self.parts) >= self.MAX_ANSWERS:
            self.parts.clear()
        self.parts[key] = part
