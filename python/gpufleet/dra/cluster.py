"""A cluster's DRA state in one object: nodes, ResourceSlices, DeviceClasses, ResourceClaims and
the allocations the claims hold (their ``status.allocation``, which is the ledger).

``DraCluster`` answers ``allocate`` (claims on one node) and ``place`` (the best node for them),
and changes state only through ``apply``/``delete`` (objects), ``commit``/``release``
(allocations) and ``restore``. Every mutation is checked before it applies and leaves the state
as it was when it fails. Any number of threads may use one DraCluster: every call holds its lock
(a question sees one state, never half of a commit; the native search inside releases the GIL),
and what each node offers (NodeDevices, with its selector and attribute caches) is kept until
that node's slices change.
"""
from __future__ import annotations

import heapq
import json
import marshal
import threading
from decimal import Decimal
from typing import Any, Iterable

from gpufleet import _core
from gpufleet.dra import legacy
from gpufleet.dra.allocator import AllocationOutcome, outcome_of, solve_on
from gpufleet.dra.node_devices import NodeDevices
from gpufleet.dra.node_groups import NodeGroups, profile_key, state_key
from gpufleet.dra.objects import (DraError, check_allocation, check_claim, check_class,
                                  check_slice, _Where)
from gpufleet.dra.problem import DeviceMatcher, Ledger, features_from, milli, _q
from gpufleet.errors import NotFoundError
from gpufleet.k8s import keys

KINDS = ("ResourceSlice", "DeviceClass", "ResourceClaim")


class _GangRefused(Exception):
    pass


def _copy(value: Any) -> Any:
    """A private copy of plain JSON-shaped data: through marshal (C, about twice as fast as a
    walk in Python), or walked when it holds what marshal cannot write."""
    try:
        return marshal.loads(marshal.dumps(value))
    except ValueError:
        return _walk_copy(value)


def _walk_copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _walk_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk_copy(v) for v in value]
    return value


def _node_dict(node: dict[str, Any] | str) -> dict[str, Any]:
    if isinstance(node, str):
        return {"metadata": {"name": node, "labels": {keys.LABEL_HOSTNAME: node}}}
    if not isinstance(node, dict) or not isinstance((node.get("metadata") or {}).get("name"), str):
        raise DraError("Node: metadata.name: required")
    return node


def claim_key(claim: dict[str, Any]) -> str:
    meta = claim["metadata"]
    return f"{meta.get('namespace', 'default')}/{meta['name']}"


class DraCluster:
    def __init__(self, features: dict[str, bool] | None = None, strategy: str = "pack",
                 budget: int = 200_000, cluster: Any = None) -> None:
        """`cluster` (a gpufleet.Cluster) makes one ledger of both: devices its pods use are in use
        here, and devices claims hold are held there (gpufleet/dra/legacy.py)."""
        self._cluster = cluster
        self._features = features_from(features)
        self._strategy = strategy
        self._budget = budget
        self._lock = threading.RLock()
        self._nodes: dict[str, dict[str, Any]] = {}
        self._slices: dict[str, dict[str, Any]] = {}
        self._classes: dict[str, dict[str, Any]] = {}
        self._claims: dict[str, dict[str, Any]] = {}
        self._tables: dict[str, NodeDevices] = {}
        self._matcher = DeviceMatcher()
        # Derived from the objects, dropped whenever they change (under the lock).
        self._multi: set[tuple[str, str, str]] | None = None
        self._held = Ledger()  # what the claims' status holds, kept current by every change
        self._share_pods: dict[str, list[str]] = {}  # claim -> its pseudo-pods of shared GPUs
        # Claims applied with keep_unheld whose devices pods outside DRA hold in the Cluster: why.
        self._unheld: dict[str, str] = {}
        self._maps: dict[str, tuple[NodeDevices, legacy.DeviceMap]] = {}
        # Slices by the node they name (the others serve any node), and device -> its node.
        self._node_slices: dict[str, set[str]] = {}
        self._unbound_slices: set[str] = set()
        self._pool_slices: dict[tuple[str, str], set[str]] = {}
        self._device_node: dict[tuple[str, str, str], str] = {}
        # The node search of place(): groups of alike nodes, refiled when their state changes.
        self._groups = NodeGroups()
        self._filed = False
        self._dirty: set[str] = set()
        self._classes_version = 0
        self._shapes: dict[str, str] = {}  # claim -> its spec as text (what its answers depend on)
        # With a Cluster: its usage, read again where it changed, and each node's class (place()).
        self._use_reader = legacy.UseReader()
        self._busy_keys: dict[str, tuple[Any, ...]] = {}  # node -> what its class stands on, and it
        self._busy_classes: dict[Any, set[str]] = {}      # class -> its nodes with usage
        self._busy_heads: dict[Any, str] = {}             # class -> its earliest node with usage
        self._busy_recheck: set[str] | None = None        # nodes refiled since (None: all anew)

    def _changed(self, *slices: dict[str, Any] | None) -> None:
        """Drops what changed slices make stale: the tables of the nodes they serve (a slice named
        to one node touches that node, and nodes sharing its pool), the shared-device set and the
        ledger's reading of it."""
        multi = self._multi_devices()
        for sl in slices:
            if sl is None:
                continue
            for d in sl["spec"].get("devices") or []:
                multi.discard((sl["spec"]["driver"], sl["spec"]["pool"]["name"], d["name"]))
        for sl in slices:
            if sl is None:
                continue
            name = sl["metadata"]["name"]
            spec = sl["spec"]
            spec_node = spec.get("nodeName")
            if spec_node in self._node_slices:
                self._node_slices[spec_node].discard(name)
            for d in spec.get("devices") or []:  # re-added below while the slice stays
                key = (spec["driver"], spec["pool"]["name"], d["name"])
                if self._device_node.get(key) == spec_node:
                    del self._device_node[key]
            self._unbound_slices.discard(name)
            self._pool_slices.get((spec["driver"], spec["pool"]["name"]), set()).discard(name)
            if spec.get("nodeName") and not spec.get("perDeviceNodeSelection"):
                pool = (spec["driver"], spec["pool"]["name"])
                stale = {spec["nodeName"]} | {n for n, t in self._tables.items()
                                             if any((p.driver, p.name) == pool for p in t.pools)}
                for node in stale:
                    self._tables.pop(node, None)
                    self._dirty.add(node)
            else:
                self._tables.clear()
                self._filed = False
        for sl in slices:
            if sl is None or sl["metadata"]["name"] not in self._slices:
                continue
            spec = sl["spec"]
            self._pool_slices.setdefault((spec["driver"], spec["pool"]["name"]), set()).add(sl["metadata"]["name"])
            if spec.get("nodeName") and not spec.get("perDeviceNodeSelection"):
                self._node_slices.setdefault(spec["nodeName"], set()).add(sl["metadata"]["name"])
                for d in spec.get("devices") or []:
                    self._device_node[(spec["driver"], spec["pool"]["name"], d["name"])] = spec["nodeName"]
            else:
                self._unbound_slices.add(sl["metadata"]["name"])
            multi.update((spec["driver"], spec["pool"]["name"], d["name"])
                         for d in spec.get("devices") or [] if d.get("allowMultipleAllocations"))
        if self._held.devices or self._held.shared:  # a device may have become shared, or not
            self._held = self._ledger(self._claims.values())

    def _claim_changed(self, before: dict[str, Any] | None, after: dict[str, Any] | None) -> None:
        """Keeps the ledger and the node groups current when a claim's allocation changes."""
        multi = self._multi_devices()
        for claim, sign in ((before, -1), (after, +1)):
            alloc = ((claim or {}).get("status") or {}).get("allocation")
            for r in ((alloc or {}).get("devices") or {}).get("results") or []:
                did = (r["driver"], r["pool"], r["device"])
                if sign > 0:
                    self._held.add_result(r, did in multi)
                else:
                    self._held.remove_result(r, did in multi)
                node = self._device_node.get(did)
                if node is not None:
                    self._dirty.add(node)
                else:
                    self._filed = False

    def add_node(self, node: dict[str, Any] | str) -> None:
        node = _copy(_node_dict(node))
        with self._lock:
            self._nodes[node["metadata"]["name"]] = node
            self._tables.pop(node["metadata"]["name"], None)
            self._maps.pop(node["metadata"]["name"], None)
            self._filed = False  # the nodes' order changed

    def remove_node(self, name: str) -> None:
        """Forgets the Node `name` (NotFoundError if unknown): its devices are offered no more.
        Slices and claims are kept (their own deletions remove them); the claims' holds in an
        attached Cluster go with that Cluster's node."""
        with self._lock:
            if name not in self._nodes:
                raise NotFoundError(f"Node {name}: not found")
            del self._nodes[name]
            self._tables.pop(name, None)
            self._maps.pop(name, None)
            self._filed = False

    def apply(self, obj: dict[str, Any], keep_unheld: bool = False) -> None:
        """Adds or replaces a ResourceSlice, DeviceClass or ResourceClaim (by ``kind``). A claim's
        status is taken as it is (its allocation must fit what is left). With `keep_unheld`, a
        claim whose devices pods in the attached Cluster hold is recorded all the same (what its
        status says is a fact elsewhere): it holds what is free there, and `unheld()` names it."""
        kind = obj.get("kind") if isinstance(obj, dict) else None
        if kind not in KINDS:
            raise DraError(f"apply: kind must be one of {', '.join(KINDS)}, got {kind!r}")
        obj = _copy(obj)
        if kind == "ResourceSlice":
            check_slice(obj)
            with self._lock:
                old = self._slices.get(obj["metadata"]["name"])
                self._slices[obj["metadata"]["name"]] = obj
                self._changed(old, obj)
        elif kind == "DeviceClass":
            check_class(obj)
            with self._lock:
                self._classes[obj["metadata"]["name"]] = obj
                self._classes_version += 1
        else:
            check_claim(obj)
            key = claim_key(obj)
            with self._lock:
                alloc = (obj.get("status") or {}).get("allocation")
                if alloc is not None:
                    self._verify(key, alloc)
                    before = ((self._claims.get(key) or {}).get("status") or {}).get("allocation")
                    moved = before is not None and before != alloc and self._cluster is not None
                    if moved:  # the old devices are given back before the new ones are held
                        legacy.drop(self._cluster, key, self._share_pods.pop(key, []))
                        self._unheld.pop(key, None)
                    try:
                        if keep_unheld:
                            self._hold_cautiously(key, alloc)
                        else:
                            self._hold(key, alloc)
                    except DraError:
                        if moved:  # refused: the claim keeps what it held
                            self._hold_cautiously(key, before)
                        raise
                elif key in self._claims and self._cluster is not None:
                    legacy.drop(self._cluster, key, self._share_pods.pop(key, []))
                    self._unheld.pop(key, None)
                self._claim_changed(self._claims.get(key), obj)
                self._claims[key] = obj
                self._shapes[key] = json.dumps(obj["spec"], sort_keys=True)

    def delete(self, kind: str, name: str) -> None:
        with self._lock:
            table = {"ResourceSlice": self._slices, "DeviceClass": self._classes,
                     "ResourceClaim": self._claims}.get(kind)
            if table is None:
                raise DraError(f"delete: kind must be one of {', '.join(KINDS)}, got {kind!r}")
            if name not in table:
                raise NotFoundError(f"{kind} {name}: not found")
            old = table.pop(name)
            if kind == "ResourceClaim":
                self._shapes.pop(name, None)
                self._unheld.pop(name, None)
                if self._cluster is not None:
                    legacy.drop(self._cluster, name, self._share_pods.pop(name, []))
                self._claim_changed(old, None)
            elif kind == "ResourceSlice":
                self._changed(old)
            else:
                self._classes_version += 1

    def claim(self, name: str) -> dict[str, Any]:
        """A copy of the claim ``namespace/name`` with its status."""
        with self._lock:
            if name not in self._claims:
                raise NotFoundError(f"ResourceClaim {name}: not found")
            return _copy(self._claims[name])

    def node(self, name: str) -> dict[str, Any]:
        """A copy of the Node object ``name`` (its metadata: name and labels)."""
        with self._lock:
            if name not in self._nodes:
                raise KeyError(f"Node {name}: not found")
            return _copy(self._nodes[name])

    def claim_names(self) -> list[str]:
        with self._lock:
            return sorted(self._claims)

    # --- questions ----------------------------------------------------------------------------
    def allocate(self, claims: list[str], node: str, strategy: str | None = None) -> AllocationOutcome:
        """The claims (by ``namespace/name``, not yet allocated) on `node`; changes nothing."""
        return self._allocate(claims, node, strategy)

    def _allocate(self, claims: list[str], node: str, strategy: str | None,
                  use: Any = None) -> AllocationOutcome:
        """allocate(); `use`: the node's Cluster device_use, when read already."""
        with self._lock:  # the ledger is kept current in place: read it under the lock
            table, targets, classes, ledger = self._question(claims, node, use)
            return solve_on(table, targets, classes, ledger, self._matcher,
                            strategy or self._strategy, self._budget)

    def allocatable(self, claims: list[str], nodes: Iterable[str],
                    strategy: str | None = None) -> dict[str, str]:
        """Per node of `nodes`: "" where allocate(claims, node) would allocate, else its verdict
        and reason ("unallocatable: ..."); nothing recorded. Nodes alike in what they publish and
        hold (node_groups.py) are asked once, except where the answer is an error (its message
        names the node's own devices, so that node is asked itself). With an attached Cluster,
        a node whose devices hold any usage there (pods', or claims') is asked itself."""
        def why(out: AllocationOutcome) -> str:
            return "" if out.ok else f"{out.verdict}: {out.reason}"

        nodes = list(nodes)
        with self._lock:
            self._file_nodes()
            # Read once for all nodes: only where a device has usage do pods change the answer.
            busy = legacy.device_use(self._cluster) if self._cluster is not None else {}
            by_group: dict[Any, AllocationOutcome] = {}
            out = {}
            for n in nodes:
                if n in busy:
                    out[n] = why(self._allocate(claims, n, strategy, busy[n]))
                    continue
                group = self._groups.group_of.get(n)
                hit = by_group.get(group) if group is not None else None
                if hit is None or hit.verdict == "error":
                    hit = self._allocate(claims, n, strategy, {})
                    if group is not None:
                        by_group[group] = hit
                out[n] = why(hit)
            return out

    def place(self, claims: list[str], nodes: Iterable[str] | None = None,
              strategy: str | None = None, remember: bool = True,
              commit: bool = False) -> tuple[str | None, AllocationOutcome]:
        """The node where the claims score best (ties to the earlier node in name order, or in
        `nodes` order), and its outcome; (None, the last refusal) when no node takes them. An
        error on one node (a CEL error, an invalid pool) is returned as it is.

        Nodes alike in what they publish and what is held on them are asked once
        (node_groups.py; with an attached Cluster, nodes its pods or claims use are classed by
        what that usage leaves on them: _alike_nodes), and with `remember` an answer is kept per
        claim shape and group of nodes, so a question asked before costs no search;
        `remember=False` asks each group afresh (the same answer). `nodes` asks each node
        named, in that order. With `commit`, each claim's allocation is also recorded, under
        the same lock (nothing can take the devices in between)."""
        strategy = strategy or self._strategy
        if nodes is not None:
            with self._lock:
                node, out = self._place_each(claims, list(nodes), strategy)
                if commit and out.ok:
                    for name, allocation in zip(claims, out.results):
                        self.commit(name, allocation)
                return node, out
        with self._lock:
            self._file_nodes()
            _, targets, classes, held = self._question(claims, None)
            shape = "\x00".join([*(self._shapes[n] for n in claims), str(self._classes_version), strategy])
            if remember and self._cluster is None:
                return self._place_remembered(claims, targets, classes, held, shape, strategy, commit)
            alike, key_of = self._alike_nodes()
            order = self._groups.order
            # Each class's answer: remembered (with its rank), or asked of the core together with
            # the others; the best rank wins, ties to the earlier node.
            remembered = self._groups.answers_for(shape) if remember else {}
            best: tuple[Any, ...] | None = None  # (rank and node order, node, part, DraAnswer)
            errors: list[tuple[int, str, Any, Any]] = []  # (order, node, part, DraAnswer or outcome)
            asked: dict[Any, Any] = {}
            questions = []
            for key, (head, use) in alike.items():
                hit = remembered.get(key)
                if hit is not None:
                    if hit[2] is not None:
                        rank = (*hit[2], order[head])
                        if best is None or rank < best[0]:
                            best = (rank, head, hit[0], hit[1])
                    continue
                table = self._table(head)
                ledger = held if use is None else self._with_pods(head, table, held, use)
                part = self._groups.parts.get((shape, key[0]))
                if part is None:
                    try:
                        part = table.request_part(targets, classes, ledger, self._matcher)
                    except DraError as e:
                        errors.append((order[head], head, None, AllocationOutcome("error", reason=str(e))))
                        continue
                    if part.static:
                        self._groups.keep_part((shape, key[0]), part)
                native_held = self._group_held(key, table) if use is None else table.held(ledger)
                questions.append((key, head, part, (table.native(), part.native(table), native_held)))
            if questions:
                solved = _core.dra_solve_prepared([q[3] for q in questions], strategy, self._budget)
                for (key, head, part, _), answer in zip(questions, solved):
                    asked[key] = answer
                    verdict = answer.verdict
                    if verdict == "error":
                        errors.append((order[head], head, part, answer))
                        continue
                    rank = answer.rank if verdict == "allocated" else None
                    if remember:
                        self._groups.remember(shape, key, (part, answer, rank))
                    if rank is not None:
                        rank = (*rank, order[head])
                        if best is None or rank < best[0]:
                            best = (rank, head, part, answer)
            if errors:  # as Kubernetes reports it, for the earliest node that errs (its own devices)
                _, head, part, answer = min(errors, key=lambda e: e[0])
                if isinstance(answer, AllocationOutcome):
                    return head, answer
                return head, outcome_of(part, answer.to_dict(), targets, self._table(head))
            if best is None:
                last = AllocationOutcome("unallocatable", reason="no nodes")
                if order:  # the refusal of the last node in name order, as asking each node ends
                    key = key_of(max(order, key=order.__getitem__))
                    answer = asked[key] if key in asked else remembered[key][1]
                    last = AllocationOutcome("unallocatable", reason=answer.reason, gave_up=answer.gave_up)
                return None, AllocationOutcome("unallocatable", reason=f"0/{len(self._nodes)} nodes can "
                                               f"allocate the claims: {last.reason}")
            _, node, part, answer = best
            return node, self._outcome(node, part, answer, claims, targets, commit)

    def _outcome(self, node: str, part: Any, answer: Any, claims: list[str], targets: list[dict[str, Any]],
                 commit: bool) -> AllocationOutcome:
        """The chosen answer on `node`, its devices named as the node names them; with `commit`,
        recorded (and held in the attached Cluster)."""
        with self._lock:
            out = outcome_of(part, answer.to_dict(), targets, self._table(node))
            if commit and self._cluster is not None:
                for name, allocation in zip(claims, out.results):
                    self.commit(name, allocation)  # held in the Cluster too
            elif commit:
                for name, claim, allocation in zip(claims, targets, out.results):
                    # Computed from this very state under this lock: valid as it stands.
                    updated = {**claim, "status": {**(claim.get("status") or {}), "allocation": allocation}}
                    self._claim_changed(claim, updated)
                    self._claims[name] = updated
                out = AllocationOutcome(out.verdict, _copy(out.results), out.reason, out.steps,
                                        out.score, out.gave_up, out.proved_best)
            return out

    def _place_remembered(self, claims: list[str], targets: list[dict[str, Any]], classes: dict[str, Any],
                          held: Ledger, shape: str, strategy: str, commit: bool) -> tuple[str | None, AllocationOutcome]:
        """place() with answers remembered and no Cluster: per claim shape, the groups whose
        answer allocates wait in a heap by rank and earliest node (NodeGroups.best), so a
        question asks only the groups that came (or gained an earlier node) since the shape was
        last asked, not every group."""
        groups, order = self._groups, self._groups.order
        remembered = groups.answers.setdefault(shape, {})
        kept = groups.best.get(shape)
        pos, heap = kept if kept is not None else (0, [])
        todo = groups.log[pos:] if kept is not None else list(groups.members)
        end = len(groups.log)
        errors: list[tuple[int, str, Any, Any]] = []
        questions = []
        for group in todo:
            if group not in groups.members:
                continue
            head = groups.head.get(group) or groups.first(group)
            hit = remembered.get(group)
            if hit is not None:
                if hit[2] is not None:
                    heapq.heappush(heap, groups.entry(hit[2], head, group, hit))
                continue
            table = self._table(head)
            part = groups.parts.get((shape, group[0]))
            if part is None:
                try:
                    part = table.request_part(targets, classes, held, self._matcher)
                except DraError as e:
                    errors.append((order[head], head, None, AllocationOutcome("error", reason=str(e))))
                    continue
                if part.static:
                    groups.keep_part((shape, group[0]), part)
            questions.append((group, head, part, (table.native(), part.native(table), self._group_held(group, table))))
        if questions:
            solved = _core.dra_solve_prepared([q[3] for q in questions], strategy, self._budget)
            for (group, head, part, _), answer in zip(questions, solved):
                verdict = answer.verdict
                if verdict == "error":
                    errors.append((order[head], head, part, answer))
                    continue
                hit = (part, answer, answer.rank if verdict == "allocated" else None)
                groups.remember(shape, group, hit)
                remembered[group] = hit  # kept here even when remember() just made room
                if hit[2] is not None:
                    heapq.heappush(heap, groups.entry(hit[2], head, group, hit))
        if errors:  # asked again next time, as without a memory; the earliest node that errs
            _, head, part, answer = min(errors, key=lambda e: e[0])
            if isinstance(answer, AllocationOutcome):
                return head, answer
            return head, outcome_of(part, answer.to_dict(), targets, self._table(head))
        if groups.answers.get(shape) is remembered:  # else the memory was emptied meanwhile
            groups.best[shape] = (end, heap)
        top = groups.best_of(shape, heap)
        if top is None:
            last = AllocationOutcome("unallocatable", reason="no nodes")
            if order:  # the refusal of the last node in name order, as asking each node ends
                answer = remembered[groups.group_of[max(order, key=order.__getitem__)]][1]
                last = AllocationOutcome("unallocatable", reason=answer.reason, gave_up=answer.gave_up)
            return None, AllocationOutcome("unallocatable", reason=f"0/{len(self._nodes)} nodes can "
                                           f"allocate the claims: {last.reason}")
        node, (part, answer, _) = top[2], top[5]
        return node, self._outcome(node, part, answer, claims, targets, commit)

    def _alike_nodes(self) -> tuple[dict[Any, tuple[str, Any]], Any]:
        """The classes of nodes that answer any question alike, each with its earliest node and
        that node's Cluster usage (None where it has none), and a function giving a node's class.
        A class is a group of alike nodes (node_groups.py) less its nodes with Cluster usage; a
        node with usage is in the class of its profile and of what is held on it with that usage
        counted (its state as the pods and claims make it), so nodes that pods fill alike share
        one answer too, and a node is asked alone only when its usage is its own."""
        order = self._groups.order
        busy = self._use_reader.read(self._cluster) if self._cluster is not None else {}
        alike: dict[Any, tuple[str, Any]] = {}
        heads, first = self._groups.head, self._groups.first
        for group, members in self._groups.members.items():
            head = heads.get(group) or first(group)
            if head in busy:
                free = members - busy.keys()
                if not free:
                    continue
                head = min(free, key=order.__getitem__)
            alike[group] = (head, None)
        # The classes of the nodes with usage, kept between calls: only the nodes whose usage
        # changed, or that were refiled, are classed again.
        recheck, self._busy_recheck = self._busy_recheck, set()
        kept_keys, classes, class_heads = self._busy_keys, self._busy_classes, self._busy_heads
        if recheck is None:  # the groups were made afresh (their profiles numbered anew)
            kept_keys.clear(), classes.clear(), class_heads.clear()
            recheck = set(busy)
        elif self._use_reader.changed is None:
            recheck = set(busy) | set(kept_keys)
        else:
            recheck |= self._use_reader.changed
        group_of, tables, maps = self._groups.group_of, self._tables, self._maps
        touched = set()
        for node in recheck:
            kept = kept_keys.get(node)
            use, group = busy.get(node), group_of.get(node)
            # The class stands while the usage, the group, the table and the mapping do.
            if (kept is not None and use is not None and kept[0] is use and kept[1] == group
                    and kept[2] is tables.get(node) and kept[3] is maps.get(node)):
                continue
            if kept is not None:
                del kept_keys[node]
                classes[kept[4]].discard(node)
                touched.add(kept[4])
            if use is None or group is None:
                continue  # no usage now, or a Cluster node DRA does not know
            table = self._table(node)
            ledger = self._with_pods(node, table, self._held, use)  # maps the node
            key = (group[0], state_key(table, ledger))
            kept_keys[node] = (use, group, table, maps.get(node), key)
            classes.setdefault(key, set()).add(node)
            touched.add(key)
        for key in touched:
            if classes.get(key):
                class_heads[key] = min(classes[key], key=order.__getitem__)
            else:
                classes.pop(key, None)
                class_heads.pop(key, None)
        for key, node in class_heads.items():
            if key not in alike or order[node] < order[alike[key][0]]:
                alike[key] = (node, busy[node])
        return alike, lambda node: kept_keys[node][4] if node in kept_keys else group_of[node]

    def place_gang(self, pods: list[list[str]], nodes: Iterable[str] | None = None,
                   strategy: str | None = None) -> tuple[list[str] | None, str]:
        """All or nothing for a gang: each pod's claims (one list per pod) placed and committed
        in order; when one pod fits nowhere, every allocation the gang made is released and the
        state is as before. Returns (each pod's node, "") or (None, why). No other call on this
        cluster interleaves with the gang."""
        with self._lock:
            placed: list[str] = []
            done: list[str] = []
            try:
                for i, claims in enumerate(pods):
                    node, out = self.place(claims, nodes=nodes, strategy=strategy, commit=True)
                    if node is None or not out.ok:
                        raise _GangRefused(f"pod {i} of the gang ({', '.join(claims)}): {out.reason}")
                    placed.append(node)
                    done.extend(claims)
            except _GangRefused as e:
                for name in done:
                    self.release(name)
                return None, str(e)
            return placed, ""

    def _place_each(self, claims: list[str], nodes: list[str] | None,
                    strategy: str) -> tuple[str | None, AllocationOutcome]:
        with self._lock:
            order = nodes if nodes is not None else sorted(self._nodes)
        best: tuple[Any, str, AllocationOutcome] | None = None
        last = AllocationOutcome("unallocatable", reason="no nodes")
        for name in order:
            out = self.allocate(claims, name, strategy)
            if out.verdict == "error":
                return name, out
            if not out.ok:
                last = out
                continue
            key = (out.score.get("roots", 0), out.score.get("opened", 0), out.score.get("leftover", 0))
            if best is None or key < best[0]:
                best = (key, name, out)
        if best is None:
            return None, AllocationOutcome("unallocatable", reason=f"0/{len(order)} nodes can allocate "
                                           f"the claims: {last.reason}")
        return best[1], best[2]

    def _group_held(self, group: tuple[Any, ...], table: NodeDevices) -> Any:
        """What the group's nodes hold (alike position for position), as the core reads it; kept
        while the group has members."""
        held = self._groups.held.get(group)
        if held is None:
            held = self._groups.held[group] = table.held(self._held)
        return held

    def _file_nodes(self) -> None:
        """Every node in its group (all of them after a change of nodes or unbound slices, else
        the nodes whose state changed)."""
        if not self._filed:
            self._groups = NodeGroups()
            self._groups.order = {n: i for i, n in enumerate(sorted(self._nodes))}
            self._dirty = set(self._nodes)
            self._filed = True
            self._busy_recheck = None
        elif self._busy_recheck is not None:
            self._busy_recheck |= self._dirty
        for node in self._dirty:
            if node in self._nodes:
                self._groups.place(node, self._table(node), self._held)
        self._dirty.clear()

    # --- allocations --------------------------------------------------------------------------
    def commit(self, claim: str, allocation: dict[str, Any],
               reserved_for: list[dict[str, Any]] | None = None) -> None:
        """Records `allocation` (an AllocationResult) in the claim's status, with its
        reservedFor; refused, changing nothing, when the claim is allocated already or the devices
        are no longer free."""
        with self._lock:
            current = self._claims.get(claim)
            if current is None:
                raise NotFoundError(f"ResourceClaim {claim}: not found")
            if (current.get("status") or {}).get("allocation") is not None:
                raise DraError(f"ResourceClaim {claim}: status.allocation: already allocated")
            self._verify(claim, allocation)
            self._hold(claim, allocation)
            status = dict(current.get("status") or {})  # the claim's other fields are never changed
            status["allocation"] = _copy(allocation)
            if reserved_for is not None:
                status["reservedFor"] = _copy(reserved_for)
            updated = {**current, "status": status}
            self._claim_changed(current, updated)
            self._claims[claim] = updated

    def release(self, claim: str) -> None:
        """Drops the claim's allocation and reservations (idempotent)."""
        with self._lock:
            current = self._claims.get(claim)
            if current is None:
                raise NotFoundError(f"ResourceClaim {claim}: not found")
            if self._cluster is not None:
                legacy.drop(self._cluster, claim, self._share_pods.pop(claim, []))
            self._unheld.pop(claim, None)
            if current.get("status"):
                status = {k: v for k, v in current["status"].items() if k not in ("allocation", "reservedFor")}
                updated = {k: v for k, v in current.items() if k != "status"}
                if status:
                    updated["status"] = status
                self._claim_changed(current, updated)
                self._claims[claim] = updated

    def unheld(self) -> dict[str, str]:
        """Claims (recorded with keep_unheld) whose devices pods in the attached Cluster hold:
        claim -> why. Both stay held: the pods there, the claims here and on what is free."""
        with self._lock:
            return dict(self._unheld)

    def rehold(self, node: str | None = None, first: Any = None) -> dict[str, str]:
        """Holds the allocated claims' devices (those on `node`, or all) in the attached Cluster
        again, as keep_unheld does: after the Cluster dropped them (a node changed or came back)
        or a pod there gave back a device an unheld claim names. Their pseudo-pods are released
        first, then `first()` runs (if given: a pod to restore before the claims), then the
        claims are held again, whatever `first` did. Returns unheld()."""
        with self._lock:
            if self._cluster is None:
                return {}
            keys = [k for k, c in self._claims.items() if (c.get("status") or {}).get("allocation")
                    and (node is None or node in self._claim_nodes(c["status"]["allocation"]))]
            for key in keys:
                legacy.drop(self._cluster, key, self._share_pods.pop(key, []))
                self._unheld.pop(key, None)
            try:
                if first is not None:
                    first()
            finally:
                self._maps.clear()  # the Cluster's node specs may have changed
                self._busy_recheck = None
                for key in keys:
                    self._hold_cautiously(key, self._claims[key]["status"]["allocation"])
            return dict(self._unheld)

    def _claim_nodes(self, allocation: dict[str, Any]) -> set[str]:
        return {n for r in (allocation.get("devices") or {}).get("results") or []
                if (n := self._device_node.get((r["driver"], r["pool"], r["device"]))) is not None}

    def snapshot(self) -> dict[str, Any]:
        """Every object as Kubernetes writes it (claims with their status): ``restore`` rebuilds
        exactly this state, as the extender rebuilds from the API server."""
        with self._lock:
            return _copy({"nodes": list(self._nodes.values()), "slices": list(self._slices.values()),
                                  "classes": list(self._classes.values()),
                                  "claims": list(self._claims.values())})

    @classmethod
    def restore(cls, snapshot: dict[str, Any], features: dict[str, bool] | None = None,
                strategy: str = "pack", cluster: Any = None) -> "DraCluster":
        """A DraCluster from snapshot(); with `cluster`, the claims' devices are held there again
        (pseudo-pods it lacks are recreated from the claims' status)."""
        out = cls(features, strategy, cluster=cluster)
        for node in snapshot.get("nodes") or []:
            out.add_node(node)
        for kind, key in (("ResourceSlice", "slices"), ("DeviceClass", "classes"), ("ResourceClaim", "claims")):
            for obj in snapshot.get(key) or []:
                out.apply({**obj, "kind": kind})
        return out

    # --- internals ----------------------------------------------------------------------------
    def _question(self, claims: list[str], node: str | None, use: Any = None):  # type: ignore[no-untyped-def]
        with self._lock:
            if node is not None and node not in self._nodes:
                raise NotFoundError(f"Node {node}: not found")
            targets = []
            for name in claims:
                claim = self._claims.get(name)
                if claim is None:
                    raise NotFoundError(f"ResourceClaim {name}: not found")
                if (claim.get("status") or {}).get("allocation") is not None:
                    raise DraError(f"ResourceClaim {name}: status.allocation: already allocated")
                targets.append(claim)
            table = self._table(node) if node is not None else None
            held = self._held
            if self._cluster is not None and node is not None:
                held = self._with_pods(node, table, held, use)
            return table, targets, dict(self._classes), held

    def _with_pods(self, node: str, table: NodeDevices, held: Ledger, use: Any = None) -> Ledger:
        """`held` and what the node's Cluster devices have in use: a DRA device that takes a
        Cluster device with any usage is in use (exact counterparts first, so that a device whose
        exclusion their counters already decide, such as the whole parent of a MIG instance in
        use, is left to the counters and nothing is counted twice); a GPU shared by capacity has
        at least the Cluster's core percent and memory consumed (which include the claims' own
        shares, so nothing counts twice). `use`: the node's device_use, when read already."""
        if use is None:
            use = legacy.device_use(self._cluster, node).get(node)
        if not use:
            return held
        devices, shared = set(held.devices), dict(held.shared)
        mapping = self._mapping(node, table)
        exact = set(mapping.exact.values())
        for i, grants in sorted(mapping.grants.items(), key=lambda item: item[0] not in exact):
            used = [g for g in grants if g in use]
            if not used:
                continue
            did = table.devices[i].id
            if not table.multi[i]:
                counterparts = [mapping.exact.get(g) for g in used]
                if not all(e is not None and e != i and table.devices[e].id in devices
                           and legacy.refused_by_counters(table, i, e) for e in counterparts):
                    devices.add(did)
                continue
            mine = shared.get(did, {})
            core, memory = use[used[0]]
            shared[did] = {**mine, legacy.CORES: max(mine.get(legacy.CORES, Decimal(0)), Decimal(core)),
                           legacy.MEMORY: max(mine.get(legacy.MEMORY, Decimal(0)), Decimal(memory))}
        return Ledger(devices=devices, shared=shared)

    def _table(self, node: str) -> NodeDevices:
        """What `node` offers (kept until its slices change); only the slices that can serve it
        are read."""
        table = self._tables.get(node)
        if table is None:
            names = self._node_slices.get(node, set()) | self._unbound_slices
            slices = [self._slices[n] for n in sorted(names)]
            pools = {(sl["spec"]["driver"], sl["spec"]["pool"]["name"]) for sl in slices}
            others = sorted({n for pool in pools for n in self._pool_slices.get(pool, ())} - names)
            slices += [self._slices[n] for n in others]
            table = NodeDevices(self._nodes[node], slices, self._features)
            table.profile = profile_key(table)  # type: ignore[attr-defined]
            self._tables[node] = table
        return table

    def _mapping(self, node: str, table: NodeDevices) -> legacy.DeviceMap:
        hit = self._maps.get(node)
        if hit is None or hit[0] is not table:
            try:
                spec = self._cluster.node(node)
            except KeyError:
                spec = {"name": node, "devices": []}
            hit = (table, legacy.device_map(spec, table.devices))
            self._maps[node] = hit
        return hit[1]

    def _hold_cautiously(self, claim: str, allocation: dict[str, Any]) -> None:
        """_hold, or where pods outside DRA have some of the devices, the claim is noted unheld
        and holds the rest (the devices and shares still free in the Cluster)."""
        if claim in self._unheld:  # what it held may be part of it: hold it afresh
            legacy.drop(self._cluster, claim, self._share_pods.pop(claim, []))
            del self._unheld[claim]
        try:
            self._hold(claim, allocation)
        except DraError as e:
            self._unheld[claim] = str(e.args[0] if e.args else e)
            self._hold(claim, allocation, free_only=True)

    def _hold(self, claim: str, allocation: dict[str, Any], free_only: bool = False) -> None:
        """Holds the allocation's whole mapped devices in the attached Cluster (DraError, nothing
        held, when a pod outside DRA has one). `free_only`: only those no pod uses, and each share
        that fits, never raising."""
        if self._cluster is None:
            return
        per_node: dict[str, list[tuple[str, int]]] = {}
        shares: dict[str, list[tuple[int, int, int]]] = {}
        for r in (allocation.get("devices") or {}).get("results") or []:
            if r.get("adminAccess"):
                continue
            node = self._device_node.get((r["driver"], r["pool"], r["device"]))
            if node is None or node not in self._nodes:
                continue  # a device not local to one known node: DRA's alone
            table = self._table(node)
            i = table.index.get((r["driver"], r["pool"], r["device"]))
            grants = self._mapping(node, table).grants.get(i) if i is not None else None
            if not grants:
                continue
            if not table.multi[i]:
                per_node.setdefault(node, []).extend(grants)
                continue
            grant = grants[0]
            # A GPU shared by capacity: the claim's cores and memory, as a share of it.
            used = r.get("consumedCapacity") or {}
            memory = _core.parse_quantity(str(used.get(legacy.MEMORY, "0")))  # rounded up
            if grant[0] == "gpu" and memory > 0:
                shares.setdefault(node, []).append((grant[1], _core.parse_quantity(str(used.get(legacy.CORES, "0"))), memory))
        if free_only:
            self._hold_free(claim, per_node, shares)
            return
        whole_before = self._cluster.allocation(legacy.pseudo_pod(claim)) is not None
        before = set(self._share_pods.get(claim, ()))
        for node, grants in per_node.items():
            legacy.hold(self._cluster, claim, node, grants)
        held: list[str] = []
        try:
            for node, node_shares in shares.items():
                held += legacy.hold_shares(self._cluster, claim, node, node_shares)
        except DraError:  # take back only what this call made
            for name in ([] if whole_before else [legacy.pseudo_pod(claim)]) + [n for n in held if n not in before]:
                if self._cluster.allocation(name) is not None:
                    self._cluster.release(name)
            raise
        if held:
            self._share_pods[claim] = held

    def _hold_free(self, claim: str, per_node: dict[str, list[tuple[str, int]]],
                   shares: dict[str, list[tuple[int, int, int]]]) -> None:
        for node, grants in per_node.items():
            used = legacy.device_use(self._cluster, node).get(node, {})
            try:
                legacy.hold(self._cluster, claim, node, [g for g in grants if g not in used])
            except DraError:
                pass  # a MIG layout that refuses the rest: what the pods hold stays theirs
        held = []
        for node, node_shares in shares.items():
            for share in node_shares:
                try:
                    held += legacy.hold_shares(self._cluster, claim, node, [share])
                except DraError:
                    pass  # no room beside the pods: they hold it
        if held:
            self._share_pods[claim] = held

    def _ledger(self, claims: Iterable[dict[str, Any]]) -> Ledger:
        multi = self._multi_devices()
        ledger = Ledger()
        for c in claims:
            alloc = (c.get("status") or {}).get("allocation")
            for r in ((alloc or {}).get("devices") or {}).get("results") or []:
                ledger.add_result(r, (r["driver"], r["pool"], r["device"]) in multi)
        return ledger

    def _multi_devices(self) -> set[tuple[str, str, str]]:
        if self._multi is None:
            self._multi = {(s["spec"]["driver"], s["spec"]["pool"]["name"], d["name"])
                           for s in self._slices.values() for d in s["spec"].get("devices") or []
                           if d.get("allowMultipleAllocations")}
        return self._multi

    def _verify(self, key: str, allocation: dict[str, Any]) -> None:
        """The allocation names known devices that the other claims leave free (exclusive
        devices, counters, shared capacity). Reads the kept ledger, less the claim's own
        current allocation, and only the slices of the pools the allocation names."""
        w = _Where("ResourceClaim", key)
        check_allocation(w, allocation, "status.allocation")
        multi = self._multi_devices()
        held = Ledger(devices=set(), shared={})
        own = ((self._claims.get(key) or {}).get("status") or {}).get("allocation")
        own_ids = {(r["driver"], r["pool"], r["device"]) for r in
                   ((own or {}).get("devices") or {}).get("results") or [] if not r.get("adminAccess")}
        results = (allocation.get("devices") or {}).get("results") or []
        pools = {(r["driver"], r["pool"]) for r in results}
        slices = [self._slices[n] for pool in sorted(pools) for n in sorted(self._pool_slices.get(pool, ()))]
        devices = {(sl["spec"]["driver"], sl["spec"]["pool"]["name"], d["name"]): d
                   for sl in slices for d in sl["spec"].get("devices") or []}
        sets = {(sl["spec"]["driver"], sl["spec"]["pool"]["name"], cs["name"]): cs["counters"]
                for sl in slices for cs in sl["spec"].get("sharedCounters") or []}
        counters: dict[tuple[str, str, str, str], int] = {}
        for did, d in devices.items():  # counters the other claims' devices consume
            if did in self._held.devices and did not in own_ids:
                for use in d.get("consumesCounters") or []:
                    for cname, c in use["counters"].items():
                        k = (did[0], did[1], use["counterSet"], cname)
                        counters[k] = counters.get(k, 0) + milli(_q(c["value"]), up=True)
        for i, r in enumerate(results):
            did = (r["driver"], r["pool"], r["device"])
            where = f"status.allocation.devices.results[{i}]"
            if did not in devices:
                raise w.fail(where, f"unknown device {'/'.join(did)}")
            d = devices[did]
            if r.get("adminAccess"):
                continue
            if did in multi:
                use = dict(self._held.shared.get(did, {}))
                for res in ((own or {}).get("devices") or {}).get("results") or []:
                    if (res["driver"], res["pool"], res["device"]) == did:
                        for name, v in (res.get("consumedCapacity") or {}).items():
                            use[name] = use.get(name, 0) - _q(v)
                for name, v in held.shared.get(did, {}).items():
                    use[name] = use.get(name, 0) + v
                for name, v in (r.get("consumedCapacity") or {}).items():
                    use[name] = use.get(name, 0) + _q(v)
                    held.shared.setdefault(did, {})[name] = held.shared.get(did, {}).get(name, 0) + _q(v)
                    cap = (d.get("capacity") or {}).get(name)
                    if cap is None or use[name] > _q(cap["value"]):
                        raise w.fail(where, f"device {'/'.join(did)}: capacity {name} exceeded")
                continue
            if (did in self._held.devices and did not in own_ids) or did in held.devices:
                raise w.fail(where, f"device {'/'.join(did)} is held by another claim")
            held.devices.add(did)
            for use in d.get("consumesCounters") or []:
                for cname, c in use["counters"].items():
                    k = (did[0], did[1], use["counterSet"], cname)
                    counters[k] = counters.get(k, 0) + milli(_q(c["value"]), up=True)
                    total = sets.get((did[0], did[1], use["counterSet"]), {}).get(cname)
                    if total is None or counters[k] > milli(_q(total["value"]), up=False):
                        raise w.fail(where, f"device {'/'.join(did)}: counter {use['counterSet']}/{cname} exceeded")
