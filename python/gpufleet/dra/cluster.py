"""A cluster's DRA state in one object: nodes, ResourceSlices, DeviceClasses, ResourceClaims and
the allocations the claims hold (their ``status.allocation``, which is the ledger).

``DraCluster`` answers ``allocate`` (claims on one node) and ``place`` (the best node for them),
and changes state only through ``apply``/``delete`` (objects), ``commit``/``release``
(allocations) and ``restore``. Every mutation is checked before it applies and leaves the state
as it was when it fails. Any number of threads may use one DraCluster: mutations hold its lock;
questions read a consistent copy of what they need under the lock and then work without it, and
what each node offers (NodeDevices, with its selector and attribute caches) is kept until that
node's slices change.
"""
from __future__ import annotations

import copy
import threading
from typing import Any, Iterable

from gpufleet.dra import legacy
from gpufleet.dra.allocator import AllocationOutcome, solve_on
from gpufleet.dra.node_devices import NodeDevices
from gpufleet.dra.objects import (DraError, check_allocation, check_claim, check_class,
                                  check_slice, _Where)
from gpufleet.dra.problem import DeviceMatcher, Ledger, features_from, milli, _q

KINDS = ("ResourceSlice", "DeviceClass", "ResourceClaim")


def _node_dict(node: dict[str, Any] | str) -> dict[str, Any]:
    if isinstance(node, str):
        return {"metadata": {"name": node, "labels": {"kubernetes.io/hostname": node}}}
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
        self._held: Ledger | None = None
        self._maps: dict[str, tuple[NodeDevices, dict[int, tuple[str, int]]]] = {}

    def _changed(self, *slices: dict[str, Any] | None) -> None:
        """Drops what the change makes stale: the ledger, and for changed slices the tables of
        the nodes they serve (a slice named to one node touches that node only)."""
        self._held = None
        if not slices:
            return
        self._multi = None
        for sl in slices:
            if sl is None:
                continue
            spec = sl["spec"]
            if spec.get("nodeName") and not spec.get("perDeviceNodeSelection"):
                pool = (spec["driver"], spec["pool"]["name"])
                self._tables.pop(spec["nodeName"], None)
                for name in [n for n, t in self._tables.items()
                             if any((p.driver, p.name) == pool for p in t.pools)]:
                    del self._tables[name]  # the pool's completeness may have changed there too
            else:
                self._tables.clear()
                return

    # --- objects ------------------------------------------------------------------------------
    def add_node(self, node: dict[str, Any] | str) -> None:
        node = copy.deepcopy(_node_dict(node))
        with self._lock:
            self._nodes[node["metadata"]["name"]] = node
            self._tables.pop(node["metadata"]["name"], None)

    def apply(self, obj: dict[str, Any]) -> None:
        """Adds or replaces a ResourceSlice, DeviceClass or ResourceClaim (by ``kind``). A claim's
        status is taken as it is (its allocation must fit what is left)."""
        kind = obj.get("kind") if isinstance(obj, dict) else None
        if kind not in KINDS:
            raise DraError(f"apply: kind must be one of {', '.join(KINDS)}, got {kind!r}")
        obj = copy.deepcopy(obj)
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
        else:
            check_claim(obj)
            key = claim_key(obj)
            with self._lock:
                alloc = (obj.get("status") or {}).get("allocation")
                if alloc is not None:
                    others = [c for k, c in self._claims.items() if k != key]
                    self._verify(key, alloc, others)
                    self._hold(key, alloc)
                elif key in self._claims and self._cluster is not None:
                    legacy.drop(self._cluster, key)
                self._claims[key] = obj
                self._changed()

    def delete(self, kind: str, name: str) -> None:
        with self._lock:
            table = {"ResourceSlice": self._slices, "DeviceClass": self._classes,
                     "ResourceClaim": self._claims}.get(kind)
            if table is None:
                raise DraError(f"delete: kind must be one of {', '.join(KINDS)}, got {kind!r}")
            if name not in table:
                raise KeyError(f"{kind} {name}: not found")
            old = table.pop(name)
            if kind == "ResourceClaim" and self._cluster is not None:
                legacy.drop(self._cluster, name)
            if kind == "ResourceSlice":
                self._changed(old)
            else:
                self._changed()

    def claim(self, name: str) -> dict[str, Any]:
        """A copy of the claim ``namespace/name`` with its status."""
        with self._lock:
            if name not in self._claims:
                raise KeyError(f"ResourceClaim {name}: not found")
            return copy.deepcopy(self._claims[name])

    def claim_names(self) -> list[str]:
        with self._lock:
            return sorted(self._claims)

    # --- questions ----------------------------------------------------------------------------
    def allocate(self, claims: list[str], node: str, strategy: str | None = None) -> AllocationOutcome:
        """The claims (by ``namespace/name``, not yet allocated) on `node`; changes nothing."""
        table, targets, classes, ledger = self._question(claims, node)
        return solve_on(table, targets, classes, ledger, self._matcher, strategy or self._strategy,
                        self._budget)

    def place(self, claims: list[str], nodes: Iterable[str] | None = None,
              strategy: str | None = None) -> tuple[str | None, AllocationOutcome]:
        """The node where the claims score best (ties to the earlier node in name order, or in
        `nodes` order), and its outcome; (None, the last refusal) when no node takes them. An
        error on one node (a CEL error, an invalid pool) is returned as it is."""
        with self._lock:
            order = list(nodes) if nodes is not None else sorted(self._nodes)
        best: tuple[Any, str, AllocationOutcome] | None = None
        last = AllocationOutcome("unallocatable", reason="no nodes")
        refusals = 0
        for name in order:
            out = self.allocate(claims, name, strategy)
            if out.verdict == "error":
                return name, out
            if not out.ok:
                refusals += 1
                last = out
                continue
            key = (out.score.get("roots", 0), out.score.get("opened", 0), out.score.get("leftover", 0))
            if best is None or key < best[0]:
                best = (key, name, out)
        if best is None:
            return None, AllocationOutcome("unallocatable", reason=f"0/{len(order)} nodes can allocate "
                                           f"the claims: {last.reason}")
        return best[1], best[2]

    # --- allocations --------------------------------------------------------------------------
    def commit(self, claim: str, allocation: dict[str, Any],
               reserved_for: list[dict[str, Any]] | None = None) -> None:
        """Records `allocation` (an AllocationResult) in the claim's status, with its
        reservedFor; refused, changing nothing, when the claim is allocated already or the devices
        are no longer free."""
        with self._lock:
            current = self._claims.get(claim)
            if current is None:
                raise KeyError(f"ResourceClaim {claim}: not found")
            if (current.get("status") or {}).get("allocation") is not None:
                raise DraError(f"ResourceClaim {claim}: status.allocation: already allocated")
            others = [c for k, c in self._claims.items() if k != claim]
            self._verify(claim, allocation, others)
            self._hold(claim, allocation)
            updated = copy.deepcopy(current)
            updated.setdefault("status", {})["allocation"] = copy.deepcopy(allocation)
            if reserved_for is not None:
                updated["status"]["reservedFor"] = copy.deepcopy(reserved_for)
            self._claims[claim] = updated
            self._changed()

    def release(self, claim: str) -> None:
        """Drops the claim's allocation and reservations (idempotent)."""
        with self._lock:
            current = self._claims.get(claim)
            if current is None:
                raise KeyError(f"ResourceClaim {claim}: not found")
            if self._cluster is not None:
                legacy.drop(self._cluster, claim)
            if current.get("status"):
                updated = copy.deepcopy(current)
                updated["status"].pop("allocation", None)
                updated["status"].pop("reservedFor", None)
                self._claims[claim] = updated
                self._changed()

    def snapshot(self) -> dict[str, Any]:
        """Every object as Kubernetes writes it (claims with their status): ``restore`` rebuilds
        exactly this state, as the extender rebuilds from the API server."""
        with self._lock:
            return copy.deepcopy({"nodes": list(self._nodes.values()), "slices": list(self._slices.values()),
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
    def _question(self, claims: list[str], node: str):  # type: ignore[no-untyped-def]
        with self._lock:
            if node not in self._nodes:
                raise KeyError(f"Node {node}: not found")
            targets = []
            for name in claims:
                claim = self._claims.get(name)
                if claim is None:
                    raise KeyError(f"ResourceClaim {name}: not found")
                if (claim.get("status") or {}).get("allocation") is not None:
                    raise DraError(f"ResourceClaim {name}: status.allocation: already allocated")
                targets.append(claim)
            table = self._tables.get(node)
            if table is None:
                table = NodeDevices(self._nodes[node], list(self._slices.values()), self._features)
                self._tables[node] = table
            if self._held is None:
                self._held = self._ledger(self._claims.values())
            held = self._held
            if self._cluster is not None:
                mapping = self._mapping(node, table)
                used = legacy.used_devices(self._cluster)
                outside = {table.devices[i].id for i, (t, m) in mapping.items() if (node, t, m) in used}
                if outside - held.devices:
                    held = Ledger(devices=held.devices | outside, shared=held.shared)
            return table, targets, dict(self._classes), held

    def _mapping(self, node: str, table: NodeDevices) -> dict[int, tuple[str, int]]:
        hit = self._maps.get(node)
        if hit is None or hit[0] is not table:
            try:
                spec = self._cluster.node(node)
            except KeyError:
                spec = {"name": node, "devices": []}
            hit = (table, legacy.device_map(spec, table.devices))
            self._maps[node] = hit
        return hit[1]

    def _hold(self, claim: str, allocation: dict[str, Any]) -> None:
        """Holds the allocation's whole mapped devices in the attached Cluster (DraError, nothing
        held, when a pod outside DRA has one)."""
        if self._cluster is None:
            return
        per_node: dict[str, list[tuple[str, int]]] = {}
        for r in (allocation.get("devices") or {}).get("results") or []:
            if r.get("adminAccess"):
                continue
            node = next((sl["spec"].get("nodeName") for sl in self._slices.values()
                         if (sl["spec"]["driver"], sl["spec"]["pool"]["name"]) == (r["driver"], r["pool"])
                         and any(d["name"] == r["device"] for d in sl["spec"].get("devices") or [])), None)
            if node is None or node not in self._nodes:
                continue  # a device not local to one known node: DRA's alone
            table = self._tables.get(node)
            if table is None:
                table = NodeDevices(self._nodes[node], list(self._slices.values()), self._features)
                self._tables[node] = table
            i = table.index.get((r["driver"], r["pool"], r["device"]))
            if i is None or table.multi[i]:
                continue
            grant = self._mapping(node, table).get(i)
            if grant is not None:
                per_node.setdefault(node, []).append(grant)
        for node, grants in per_node.items():
            legacy.hold(self._cluster, claim, node, grants)

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

    def _verify(self, key: str, allocation: dict[str, Any], others: list[dict[str, Any]]) -> None:
        """The allocation names known devices that `others` leave free (exclusive devices,
        counters, shared capacity)."""
        w = _Where("ResourceClaim", key)
        check_allocation(w, allocation, "status.allocation")
        devices = {(s["spec"]["driver"], s["spec"]["pool"]["name"], d["name"]): (s, d)
                   for s in self._slices.values() for d in s["spec"].get("devices") or []}
        held = self._ledger(others)
        counters: dict[tuple[str, str, str, str], int] = {}
        for did in held.devices:
            if did in devices:
                for use in devices[did][1].get("consumesCounters") or []:
                    for cname, c in use["counters"].items():
                        k = (did[0], did[1], use["counterSet"], cname)
                        counters[k] = counters.get(k, 0) + milli(_q(c["value"]), up=True)
        shared = {k: dict(v) for k, v in held.shared.items()}
        for i, r in enumerate((allocation.get("devices") or {}).get("results") or []):
            did = (r["driver"], r["pool"], r["device"])
            where = f"status.allocation.devices.results[{i}]"
            if did not in devices:
                raise w.fail(where, f"unknown device {'/'.join(did)}")
            s, d = devices[did]
            if r.get("adminAccess"):
                continue
            if d.get("allowMultipleAllocations"):
                use = shared.setdefault(did, {})
                for name, v in (r.get("consumedCapacity") or {}).items():
                    use[name] = use.get(name, 0) + _q(v)
                    cap = (d.get("capacity") or {}).get(name)
                    if cap is None or use[name] > _q(cap["value"]):
                        raise w.fail(where, f"device {'/'.join(did)}: capacity {name} exceeded")
                continue
            if did in held.devices:
                raise w.fail(where, f"device {'/'.join(did)} is held by another claim")
            held.devices.add(did)
            for use in d.get("consumesCounters") or []:
                sets = {cs["name"]: cs["counters"] for sl in self._slices.values()
                        if (sl["spec"]["driver"], sl["spec"]["pool"]["name"]) == did[:2]
                        for cs in sl["spec"].get("sharedCounters") or []}
                for cname, c in use["counters"].items():
                    k = (did[0], did[1], use["counterSet"], cname)
                    counters[k] = counters.get(k, 0) + milli(_q(c["value"]), up=True)
                    total = sets.get(use["counterSet"], {}).get(cname)
                    if total is None or counters[k] > milli(_q(total["value"]), up=False):
                        raise w.fail(where, f"device {'/'.join(did)}: counter {use['counterSet']}/{cname} exceeded")
