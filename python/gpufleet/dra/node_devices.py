"""What one node offers, worked out once: its pools and devices in visiting order, their counters,
capacities, packing units and PCIe roots, and (filled as questions come) which devices pass each
selector list and each device's value ids for each constrained attribute. A question about some
claims (``problem``) then only adds what earlier claims hold and lists each request's candidates.

A NodeDevices belongs to one state of the node's slices; build a new one when they change. Its
caches are locked, so threads may ask it questions at once.
"""
from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from gpufleet.dra.cel import CelError
from gpufleet.dra.objects import LIST_ATTRIBUTE_KINDS, DraError
from gpufleet.dra.pools import gather_pools, placement_matches
from gpufleet.dra.problem import (_PPM, PCIE_ROOT, Built, DeviceMatcher, DeviceRef, Ledger,
                                  RequestRef, _lookup_attribute, _q, _taint_blocks, claim_label,
                                  consumed_capacity, device_key, milli)


# The features Kubernetes' "stable" allocator serves; with any other feature on, the scheduler
# runs the implementation that also knows distinctAttribute and visits each set of devices once.
# What one question may ask for in all (the native search's bound, dra/solve.h).
MAX_DEVICES_PER_QUESTION = 4096

STABLE_FEATURES = frozenset({"AdminAccess", "PrioritizedList", "PartitionableDevices", "DeviceTaints"})


# (device contents as DeviceRef.key, a request's capacity requests as text) -> what the request
# consumes of such a device and its capacities (NodeDevices._consumed); read-only once made.
_CONSUMED: dict[tuple[str, str], tuple[Any, dict[str, Decimal]]] = {}
_CONSUMED_MAX = 100_000


@dataclass
class RequestPart:
    requests: list[RequestRef]
    native_requests: list[dict[str, Any]]
    consumed: dict[tuple[int, int], dict[str, Decimal]]
    constraints: list[dict[str, Any]]
    static: bool
    twins: list[Any]  # per device: its twin signature (see _twin_signatures)
    combinations: bool = False
    num_claims: int = 0
    _native: Any = None

    def native(self, table: "NodeDevices") -> Any:
        """The requests as the core keeps them (_core.DraClaimRequests), made once; any table of
        the same profile takes them."""
        if self._native is None:
            from gpufleet import _core
            ids: dict[Any, int] = {}
            signature = [-1 if sig is None else ids.setdefault(sig, len(ids)) for sig in self.twins]
            num_groups = (self.requests[-1].group + 1) if self.requests else 0
            self._native = _core.DraClaimRequests(table.native(), {
                "requests": self.native_requests, "num_claims": self.num_claims,
                "num_groups": num_groups, "constraints": self.constraints,
                "twin_signature": signature, "combinations": self.combinations})
        return self._native


class NodeDevices:
    def __init__(self, node: dict[str, Any], slices: list[dict[str, Any]], features: frozenset[str]) -> None:
        self.node = node
        self.features = features
        self.pools = gather_pools(slices, node, "PartitionableDevices" in features)
        self.devices: list[DeviceRef] = []
        for pool in self.pools:
            for s in pool.slices:
                per_device = bool(s["spec"].get("perDeviceNodeSelection"))
                for d in s["spec"].get("devices") or []:
                    if per_device and not placement_matches(d, node):
                        continue
                    self.devices.append(DeviceRef(pool.driver, pool, s, d, device_key(pool.driver, d)))
        self.ids = [ref.id for ref in self.devices]
        self.index = {did: i for i, did in enumerate(self.ids)}
        multi_on = "ConsumableCapacity" in features
        self.multi = [multi_on and bool(ref.device.get("allowMultipleAllocations")) for ref in self.devices]
        # Counter slots (pool, set, counter) with their totals, and what each device consumes.
        self.counter_slot: dict[tuple[str, str, str, str], int] = {}
        self.counter_total: list[int] = []
        self.dev_counters = [self._counters_of(ref.driver, ref.pool, ref.device) for ref in self.devices]
        # Devices of these pools published for other nodes: when held, they consume counters too.
        self.other_counters = [((pool.driver, pool.name, d["name"]), self._counters_of(pool.driver, pool, d))
                               for pool in self.pools for s in pool.other_slices
                               for d in s["spec"].get("devices") or [] if d.get("consumesCounters")]
        # Capacity slots of shared devices.
        self.capacity_slot: dict[tuple[int, str], int] = {}
        self.capacity_total: list[int] = []
        for i, ref in enumerate(self.devices):
            if self.multi[i]:
                for name, cap in (ref.device.get("capacity") or {}).items():
                    self.capacity_slot[(i, name)] = len(self.capacity_total)
                    self.capacity_total.append(milli(_q(cap["value"]), up=False))
        # Packing units: the counter set a partition draws on, else the device itself.
        self.unit_keys: list[tuple[Any, ...]] = []
        unit_of: dict[tuple[Any, ...], int] = {}
        self.dev_unit = []
        for i, ref in enumerate(self.devices):
            if self.dev_counters[i]:
                key: tuple[Any, ...] = ("set", ref.driver, ref.pool.name,
                                        ref.device["consumesCounters"][0]["counterSet"])
            else:
                key = ("dev", i)
            if key not in unit_of:
                unit_of[key] = len(self.unit_keys)
                self.unit_keys.append(key)
            self.dev_unit.append(unit_of[key])
        self.unit_slots = [tuple(v for k, v in self.counter_slot.items() if k[:3] == key[1:])
                           if key[0] == "set" else () for key in self.unit_keys]
        roots: dict[str, int] = {}
        self.dev_root = []
        for ref in self.devices:
            attr = _lookup_attribute(ref.device, ref.driver, PCIE_ROOT)
            self.dev_root.append(roots.setdefault(json.dumps(attr, sort_keys=True), len(roots))
                                 if attr is not None else -1)
        self._lock = threading.Lock()
        self._masks: dict[tuple[str, ...], Any] = {}
        self._values: dict[str, list[list[Any]]] = {}
        self._native: Any = None

    # --- the core's view ----------------------------------------------------------------------
    def native(self) -> Any:
        """This table as the core keeps it (_core.DraNodeTable), made once."""
        if self._native is None:
            from gpufleet import _core
            capacity_device = [0] * len(self.capacity_total)
            for (i, _), slot in self.capacity_slot.items():
                capacity_device[slot] = i
            native = _core.DraNodeTable({
                "devices": [{"multi": self.multi[i], "counters": self.dev_counters[i], "unit": self.dev_unit[i],
                             "root": self.dev_root[i]} for i in range(len(self.devices))],
                "counter_total": self.counter_total, "capacity_total": self.capacity_total,
                "capacity_device": capacity_device,
                "unit_counters": [self.unit_slots[u] if key[0] == "set" else [] for u, key in enumerate(self.unit_keys)],
                "unit_device": [-1 if key[0] == "set" else key[1] for key in self.unit_keys]})
            with self._lock:
                if self._native is None:
                    self._native = native
        return self._native

    def held(self, ledger: Ledger) -> Any:
        """What `ledger` holds on this node, as the core reads it (_core.DraHeld): devices held
        whole, shared devices with their consumed capacity, counters that devices published for
        other nodes consume."""
        from gpufleet import _core
        held = ledger.devices
        in_use = [i for i, did in enumerate(self.ids) if did in held]
        sharers, capacity = [], []
        if ledger.shared:
            for i, did in enumerate(self.ids):
                use = ledger.shared.get(did) if self.multi[i] else None
                if use is None:
                    continue
                sharers.append(i)
                for name, v in use.items():
                    slot = self.capacity_slot.get((i, name))
                    if slot is not None:
                        capacity.append((slot, milli(v, up=True)))
        counters = [pair for did, use in self.other_counters if did in held for pair in use]
        return _core.DraHeld(self.native(), in_use, sharers, capacity, counters)

    def _counters_of(self, driver: str, pool: Any, device: dict[str, Any]) -> tuple[tuple[int, int], ...]:
        """(counter slot, amount) for what the device consumes (an invalid pool's unknown sets
        are skipped: its devices are not offered)."""
        out = []
        for use in device.get("consumesCounters") or []:
            cset = pool.counter_sets.get(use["counterSet"])
            if cset is None:
                continue
            for cname, c in use["counters"].items():
                if cname not in cset:
                    continue
                key = (driver, pool.name, use["counterSet"], cname)
                if key not in self.counter_slot:
                    self.counter_slot[key] = len(self.counter_total)
                    self.counter_total.append(milli(_q(cset[cname]["value"]), up=False))
                out.append((self.counter_slot[key], milli(_q(c["value"]), up=True)))
        return tuple(out)  # immutable, so the collector stops tracking it

    # --- cached per node ----------------------------------------------------------------------
    def selectable(self, matcher: DeviceMatcher, expressions: tuple[str, ...]
                   ) -> tuple[list[int], dict[int, tuple[int, str]]]:
        """Devices passing every expression (in visiting order, each list evaluated in order and
        stopping at the first false), and the devices where an expression fails: device ->
        (expression index, CEL message)."""
        with self._lock:
            hit = self._masks.get(expressions)
        if hit is not None:
            return hit
        passing: list[int] = []
        errors: dict[int, tuple[int, str]] = {}
        for di, ref in enumerate(self.devices):
            for ei, expr in enumerate(expressions):
                try:
                    ok = matcher.matches(expr, ref.driver, ref.device, ref.key)
                except CelError as err:
                    errors[di] = (ei, str(err))
                    break
                if not ok:
                    break
            else:
                passing.append(di)
        with self._lock:
            self._masks[expressions] = (passing, errors)
        return passing, errors

    def values(self, attribute: str) -> list[list[Any]]:
        """Per device the attribute's values as (kind, JSON) pairs ([] when absent)."""
        with self._lock:
            hit = self._values.get(attribute)
        if hit is not None:
            return hit
        out: list[list[Any]] = []
        for ref in self.devices:
            attr = _lookup_attribute(ref.device, ref.driver, attribute)
            if attr is None:
                out.append([])
                continue
            (kind, v), = attr.items()
            base = LIST_ATTRIBUTE_KINDS.get(kind, kind)
            items = v if kind in LIST_ATTRIBUTE_KINDS else [v]
            out.append([(base, json.dumps(x), kind in LIST_ATTRIBUTE_KINDS) for x in items])
        with self._lock:
            self._values[attribute] = out
        return out

    # --- one question -------------------------------------------------------------------------
    def problem(self, claims: list[dict[str, Any]], classes: dict[str, dict[str, Any]], ledger: Ledger,
                matcher: DeviceMatcher, objective: str = "pack", budget: int = 200_000,
                part: "RequestPart | None" = None) -> Built:
        """The native problem for `claims` (allocated together) given what `ledger` holds;
        DraError for what Kubernetes reports as an error. `part` is what request_part gave for
        claims of the same specs on a node of the same profile (reused when it is static)."""
        features = self.features
        devices = self.devices
        counter_free = list(self.counter_total)
        in_use = [False] * len(devices)
        held = ledger.devices
        for i, ref in enumerate(devices):  # this node's devices, not every device held anywhere
            if ref.id in held:
                if not self.multi[i]:
                    in_use[i] = True
                for slot, amount in self.dev_counters[i]:
                    counter_free[slot] -= amount
        for did, use in self.other_counters:
            if did in ledger.devices:
                for slot, amount in use:
                    counter_free[slot] -= amount
        capacity_free = list(self.capacity_total)
        for i, ref in enumerate(devices):
            use = ledger.shared.get(ref.id) if self.multi[i] else None
            if not use:
                continue
            for name, v in use.items():
                slot = self.capacity_slot.get((i, name))
                if slot is not None:
                    capacity_free[slot] -= milli(v, up=True)
        unit_free, unit_opened = [], []
        for u, key in enumerate(self.unit_keys):
            if key[0] == "set":
                slots = self.unit_slots[u]
                unit_free.append(sum(counter_free[s] * _PPM // max(self.counter_total[s], 1) for s in slots))
                unit_opened.append(int(any(counter_free[s] < self.counter_total[s] for s in slots)))
            elif self.multi[key[1]]:
                i = key[1]
                slots = [v for (d, _), v in self.capacity_slot.items() if d == i]
                unit_free.append(sum(capacity_free[s] * _PPM // max(self.capacity_total[s], 1) for s in slots))
                unit_opened.append(int(devices[i].id in ledger.shared))
            else:
                unit_free.append(_PPM)
                unit_opened.append(0)
        native_devices = [{"in_use": in_use[i], "multi": self.multi[i], "counters": self.dev_counters[i],
                           "unit": self.dev_unit[i], "root": self.dev_root[i]} for i in range(len(devices))]

        if part is None:
            part = self.request_part(claims, classes, ledger, matcher)
        requests, native_requests, consumed, constraints = (part.requests, part.native_requests,
                                                            part.consumed, part.constraints)
        _mark_twins(native_devices, part.twins)
        problem = {"devices": native_devices, "counter_free": counter_free,
                   "capacity_free": capacity_free, "unit_free": unit_free, "unit_opened": unit_opened,
                   "requests": native_requests, "num_claims": len(claims),
                   "num_groups": (requests[-1].group + 1) if requests else 0,
                   "constraints": constraints, "objective": objective,
                   "locality": objective == "pack", "budget": budget,
                   "combinations": not features <= STABLE_FEATURES}
        return Built(problem, devices, requests, claims, consumed, self.pools)

    def request_part(self, claims: list[dict[str, Any]], classes: dict[str, dict[str, Any]],
                     ledger: Ledger, matcher: DeviceMatcher) -> "RequestPart":
        """The requests' candidates and the constraints' values: everything of a question but
        what earlier claims hold (unless shared devices are candidates: then `static` is false
        and the part holds for this ledger only). DraError for what Kubernetes reports."""
        features = self.features
        devices = self.devices
        requests = _requests(claims, classes, features)
        if features <= STABLE_FEATURES:  # that implementation knows matchAttribute only
            for claim in claims:
                for i, con in enumerate(claim["spec"]["devices"].get("constraints") or []):
                    if "distinctAttribute" in con:
                        raise DraError(f"claim {claim_label(claim)}, constraint #{i}: empty constraint "
                                       "(unsupported constraint type?)")
        consumed: dict[tuple[int, int], dict[str, Decimal]] = {}
        native_requests = []
        static = True  # no candidate reads the ledger (shared devices do)
        for ri, rq in enumerate(requests):
            claim = claims[rq.claim_index]
            all_mode = rq.spec.get("allocationMode", "ExactCount") == "All"
            if all_mode:
                for pool in self.pools:
                    if pool.incomplete:
                        raise DraError(f"claim {claim_label(claim)}, request {rq.name.split('/')[-1]}: asks for all "
                                       f"devices, but resource pool {pool.driver}/{pool.name} is currently being updated")
                    if pool.invalid:
                        raise DraError(f"claim {claim_label(claim)}, request {rq.name.split('/')[-1]}: asks for all "
                                       f"devices, but resource pool {pool.driver}/{pool.name} is currently invalid")
            candidates = []
            asks = json.dumps((rq.spec.get("capacity") or {}).get("requests") or {}, sort_keys=True, default=str)
            for di in self._candidates(matcher, claim, rq):
                ref = devices[di]
                if (ref.pool.incomplete or ref.pool.invalid) and not all_mode:
                    continue
                blocked = ("DeviceTaints" in features and _taint_blocks(ref.device, rq.spec)) or (
                    bool(ref.device.get("consumesCounters")) and "PartitionableDevices" not in features)
                cand: dict[str, Any] = {"device": di}
                multi = self.multi[di]
                static = static and not multi
                if "ConsumableCapacity" in features and (multi or rq.spec.get("capacity")):
                    # A device that cannot hold the request, even alone beside what earlier
                    # claims consume, is no candidate (for All too: Kubernetes leaves it out).
                    use, totals = self._consumed(di, rq.spec, asks)
                    held_use = ledger.shared.get(ref.id, {}) if multi else {}
                    if use is None or any(v + held_use.get(n, 0) > totals[n] for n, v in use.items()):
                        continue
                    if multi:
                        consumed[(ri, di)] = use
                        cand["capacity"] = [(self.capacity_slot[(di, n)], milli(v, up=True)) for n, v in use.items()]
                        cand["unit_take"] = sum(int(v * _PPM / max(totals[n], Decimal(1))) for n, v in use.items())
                if not multi and self.dev_counters[di]:
                    cand["unit_take"] = sum(a * _PPM // max(self.counter_total[s], 1) for s, a in self.dev_counters[di])
                if blocked:
                    cand["blocked"] = True
                # A plain candidate crosses as its device index (the whole unit, not blocked).
                candidates.append(cand if len(cand) > 1 else di)
            count = len(candidates) if all_mode else int(rq.spec.get("count", 1))
            native_requests.append({"claim": rq.claim_index, "group": rq.group, "all": all_mode,
                                    "count": count, "admin": rq.admin, "candidates": candidates})
        _check_claim_sizes(claims, requests, native_requests)
        constraints = self._constraints(claims, requests)
        return RequestPart(requests, native_requests, consumed, constraints, static,
                           _twin_signatures(self, native_requests, constraints),
                           combinations=not features <= STABLE_FEATURES, num_claims=len(claims))

    def _consumed(self, di: int, spec: dict[str, Any], asks: str) -> tuple[Any, dict[str, Decimal]]:
        """What a request whose capacity requests read `asks` (as text) consumes of device `di`
        (consumed_capacity: None where it cannot), and that device's capacities; kept for all
        tables, as they depend on what the device publishes and those requests alone."""
        ref = self.devices[di]
        hit = _CONSUMED.get((ref.key, asks))
        if hit is None:
            use = consumed_capacity(ref.device, ref.driver, spec)
            caps = ref.device.get("capacity") or {}
            if len(_CONSUMED) >= _CONSUMED_MAX:
                _CONSUMED.clear()
            hit = _CONSUMED[(ref.key, asks)] = (use, {n: _q(caps[n]["value"]) for n in use or ()})
        return hit

    def _candidates(self, matcher: DeviceMatcher, claim: dict[str, Any], rq: RequestRef) -> list[int]:
        """The class's selectors, then the request's on the devices the class admits (as
        Kubernetes evaluates them); a CEL error on any of those devices is an error."""
        class_exprs = tuple(s["cel"]["expression"] for s in (rq.cls.get("spec") or {}).get("selectors") or [])
        claim_exprs = tuple(s["cel"]["expression"] for s in rq.spec.get("selectors") or [])
        admitted, errors = self.selectable(matcher, class_exprs)
        self._raise_first(errors, class_exprs, None, f"class {rq.cls['metadata']['name']}")
        passing, errors = self.selectable(matcher, claim_exprs)
        self._raise_first(errors, claim_exprs, set(admitted), f"claim {claim_label(claim)}, request {rq.name}")
        keep = set(passing)
        return [d for d in admitted if d in keep and self._bindable(d)]

    def _raise_first(self, errors: dict[int, tuple[int, str]], exprs: tuple[str, ...],
                     among: set[int] | None, who: str) -> None:
        for di in sorted(errors):
            if among is None or di in among:
                ei, message = errors[di]
                raise DraError(f"{who}: selector #{ei} ({exprs[ei]}) on device "
                               f"{self.devices[di].label()}: {message}")

    def _bindable(self, di: int) -> bool:
        return not (self.devices[di].device.get("bindingConditions") and "DeviceBindingAndStatus" not in self.features)

    def _constraints(self, claims: list[dict[str, Any]], requests: list[RequestRef]) -> list[dict[str, Any]]:
        value_ids: dict[tuple[str, str], int] = {}
        lists_on = "ListTypeAttributes" in self.features
        out = []
        for ci, claim in enumerate(claims):
            members = [ri for ri, rq in enumerate(requests) if rq.claim_index == ci]
            for con in claim["spec"]["devices"].get("constraints") or []:
                names = con.get("requests") or []
                covered = [ri for ri in members if not names or requests[ri].name in names
                           or requests[ri].name.split("/")[0] in names]
                attribute = con.get("matchAttribute") or con.get("distinctAttribute")
                values = []
                for per_device in self.values(attribute):
                    if any(is_list for _, _, is_list in per_device) and not lists_on:
                        values.append([])
                        continue
                    values.append(sorted({value_ids.setdefault((k, v), len(value_ids)) for k, v, _ in per_device}))
                out.append({"claim": ci, "distinct": "distinctAttribute" in con, "requests": covered,
                            "values": values})
        return out


def _requests(claims: list[dict[str, Any]], classes: dict[str, dict[str, Any]],
              features: frozenset[str]) -> list[RequestRef]:
    requests: list[RequestRef] = []
    group = 0
    for ci, claim in enumerate(claims):
        label = claim_label(claim)
        for req in claim["spec"]["devices"].get("requests") or []:
            if "firstAvailable" in req:
                if "PrioritizedList" not in features:
                    raise DraError(f"claim {label}, request {req['name']}: has subrequests, but the "
                                   "DRAPrioritizedList feature is disabled")
                members = [(f"{req['name']}/{s['name']}", s, False) for s in req["firstAvailable"]]
            else:
                ex = req["exactly"]
                if ex.get("adminAccess") is not None and "AdminAccess" not in features:
                    raise DraError(f"claim {label}, request {req['name']}: admin access is requested, "
                                   "but the feature is disabled")
                members = [(req["name"], ex, bool(ex.get("adminAccess")))]
            for name, spec, admin in members:
                if spec.get("capacity") and "ConsumableCapacity" not in features:
                    raise DraError(f"claim {label}, request {name}: has capacity requests, but the "
                                   "DRAConsumableCapacity feature is disabled")
                cls = classes.get(spec["deviceClassName"])
                if cls is None:
                    raise DraError(f"claim {label}, request {name}: could not retrieve device class "
                                   f"{spec['deviceClassName']}: not found")
                requests.append(RequestRef(ci, name, spec, cls, group, admin))
            group += 1
    return requests


def _check_claim_sizes(claims: list[dict[str, Any]], requests: list[RequestRef],
                       native_requests: list[dict[str, Any]]) -> None:
    """A claim may hold at most 32 devices (the smallest member of each list counts)."""
    by_group: dict[int, tuple[int, int]] = {}
    for rq, nr in zip(requests, native_requests):
        prev = by_group.get(rq.group)
        by_group[rq.group] = (rq.claim_index, nr["count"] if prev is None else min(prev[1], nr["count"]))
    asked = sum(nr["count"] for nr in native_requests)
    if asked > MAX_DEVICES_PER_QUESTION:
        raise DraError(f"{len(claims)} claims ask for {asked} devices together (list members "
                       f"counted), more than {MAX_DEVICES_PER_QUESTION} in one question")
    totals = [0] * len(claims)
    for ci, n in by_group.values():
        totals[ci] += n
    for ci, n in enumerate(totals):
        if n > 32:
            raise DraError(f"claim {claim_label(claims[ci])}: number of requested devices {n} exceeds "
                           "the claim limit of 32")


def _twin_signatures(devices: NodeDevices, requests: list[dict[str, Any]],
                     constraints: list[dict[str, Any]]) -> list[Any]:
    """Per device, what makes it interchangeable with another apart from being held: how every
    request and constraint sees it, and the counters it draws on (partitions of one GPU with one
    profile) or none. None for shared devices, which are never interchangeable."""
    seen_by: list[list[Any]] = [[] for _ in devices.devices]
    for r, nr in enumerate(requests):
        for c in nr["candidates"]:
            if isinstance(c, int):
                seen_by[c].append((r, False, None))
            else:
                seen_by[c["device"]].append((r, c.get("blocked", False), c.get("unit_take")))
    out: list[Any] = []
    for di in range(len(devices.devices)):
        if devices.multi[di]:
            out.append(None)
            continue
        counters = devices.dev_counters[di]
        out.append(repr((devices.dev_root[di], devices.dev_unit[di] if counters else -1, tuple(counters),
                         tuple(seen_by[di]), tuple(tuple(c["values"][di]) for c in constraints))))
    return out


def _mark_twins(native_devices: list[dict[str, Any]], signatures: list[Any]) -> None:
    """Interchangeable devices get one twin id: the same signature, and both held or both free."""
    twins: dict[tuple[bool, Any], int] = {}
    for entry, sig in zip(native_devices, signatures):
        entry["twin"] = -1 if sig is None else twins.setdefault((entry["in_use"], sig), len(twins))
