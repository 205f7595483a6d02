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
        if head is not None and self.order[node] < self.order[head]:
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
            self._answer_count = 0
        self.answers.setdefault(shape, {})[group] = answer
        self._answer_count += 1

    def keep_part(self, key: tuple[str, int], part: Any) -> None:
        if len(self.parts) >= self.MAX_ANSWERS:
            self.parts.clear()
        self.parts[key] = part
