"""The pieces of an allocation question that are not per node: feature gates, quantities in
milli-units, the selector cache (``DeviceMatcher``), what earlier claims hold (``Ledger``), taints
and capacity policies, and the native answer turned back into ``AllocationResult`` objects as
Kubernetes writes them. ``NodeDevices`` (node_devices.py) builds the native problem itself.
"""
from __future__ import annotations

import json
import math
import threading
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from typing import Any

from gpufleet.dra.cel import CelError, compile_selector, device_input
from gpufleet.dra.objects import DraError
from gpufleet.dra.pools import Pool

PCIE_ROOT = "resource.kubernetes.io/pcieRoot"
_PPM = 1_000_000

# Kubernetes' DRA feature gates the allocator honours. gpufleet turns them all on by default; a
# scenario (or the reference cases) may name the ones it wants.
FEATURES = ("AdminAccess", "PrioritizedList", "PartitionableDevices", "DeviceTaints",
            "ConsumableCapacity", "DeviceBindingAndStatus", "ListTypeAttributes")


def features_from(value: dict[str, bool] | None) -> frozenset[str]:
    if value is None:
        return frozenset(FEATURES)
    unknown = [k for k in value if k not in FEATURES]
    if unknown:
        raise DraError(f"features: unknown feature {unknown[0]!r} (known: {', '.join(FEATURES)})")
    return frozenset(k for k, on in value.items() if on)


def milli(value: Decimal, up: bool) -> int:
    return int((value * 1000).to_integral_value(ROUND_CEILING if up else ROUND_FLOOR))


def _q(text: Any) -> Decimal:
    from gpufleet.k8s.extender.quantity import parse
    return parse(text)


def claim_label(claim: dict[str, Any]) -> str:
    meta = claim["metadata"]
    return f"{meta.get('namespace', 'default')}/{meta['name']}"


class DeviceMatcher:
    """Selector verdicts per (expression, driver, device contents): each expression is compiled
    once and evaluated once per distinct device. Safe to share between threads."""

    def __init__(self) -> None:
        self._cache: dict[tuple[str, str], bool | str] = {}
        self._lock = threading.Lock()

    def matches(self, expression: str, driver: str, device: dict[str, Any], key: str) -> bool:
        """True/False, or CelError (compile or runtime) with the CEL message."""
        ck = (expression, key)
        with self._lock:
            hit = self._cache.get(ck)
        if hit is None:
            selector = compile_selector(expression)
            try:
                hit = selector.matches(device_input(driver, device))
            except CelError as e:
                hit = str(e)
            with self._lock:
                if len(self._cache) > 1_000_000:
                    self._cache.clear()
                self._cache[ck] = hit
        if isinstance(hit, str):
            raise CelError(hit)
        return hit


def device_key(driver: str, device: dict[str, Any]) -> str:
    """What a selector can see of a device, as one string (equal for identical devices)."""
    return json.dumps([driver, device.get("attributes"), device.get("capacity"),
                       bool(device.get("allowMultipleAllocations"))], sort_keys=True)


@dataclass(slots=True)  # one per device of every node's table: no __dict__ each
class DeviceRef:
    driver: str
    pool: Pool
    slice: dict[str, Any]
    device: dict[str, Any]
    key: str

    @property
    def id(self) -> tuple[str, str, str]:
        return (self.driver, self.pool.name, self.device["name"])

    def label(self) -> str:
        return "/".join(self.id)


@dataclass
class RequestRef:
    claim_index: int
    name: str               # "r0" or "r0/s1"
    spec: dict[str, Any]    # the exactly / subrequest fields
    cls: dict[str, Any]
    group: int
    admin: bool


@dataclass
class Ledger:
    """What earlier claims hold: exclusive devices, consumed counters and capacity (by id)."""
    devices: set[tuple[str, str, str]] = field(default_factory=set)
    shared: dict[tuple[str, str, str], dict[str, Decimal]] = field(default_factory=dict)

    def add_result(self, result: dict[str, Any], multi: bool) -> None:
        did = (result["driver"], result["pool"], result["device"])
        if result.get("adminAccess"):
            return
        if multi or result.get("consumedCapacity"):
            use = self.shared.setdefault(did, {})
            for name, v in (result.get("consumedCapacity") or {}).items():
                use[name] = use.get(name, Decimal(0)) + _q(v)
        else:
            self.devices.add(did)

    def remove_result(self, result: dict[str, Any], multi: bool) -> None:
        """Undoes add_result for the same result."""
        did = (result["driver"], result["pool"], result["device"])
        if result.get("adminAccess"):
            return
        if multi or result.get("consumedCapacity"):
            use = self.shared.get(did, {})
            for name, v in (result.get("consumedCapacity") or {}).items():
                use[name] = use.get(name, Decimal(0)) - _q(v)
                if use[name] == 0:
                    del use[name]
            if not use:
                self.shared.pop(did, None)
        else:
            self.devices.discard(did)


def _tolerates(tol: dict[str, Any], taint: dict[str, Any]) -> bool:
    if tol.get("effect") and tol["effect"] != taint["effect"]:
        return False
    if tol.get("key") and tol["key"] != taint["key"]:
        return False
    if tol.get("operator", "Equal") == "Exists":
        return True
    return (tol.get("value") or "") == (taint.get("value") or "")


def _taint_blocks(device: dict[str, Any], spec: dict[str, Any]) -> bool:
    for taint in device.get("taints") or []:
        if taint["effect"] not in ("NoSchedule", "NoExecute"):
            continue
        if not any(_tolerates(t, taint) for t in spec.get("tolerations") or []):
            return True
    return False


def _lookup_attribute(device: dict[str, Any], driver: str, name: str) -> dict[str, Any] | None:
    attrs = device.get("attributes") or {}
    if name in attrs:
        return attrs[name]
    domain, _, ident = name.rpartition("/")
    if domain == driver and ident in attrs:
        return attrs[ident]
    return None


def _capacity_lookup(device: dict[str, Any], driver: str, name: str) -> str | None:
    """The device's capacity a request names: the same name exactly (k8s.io/dynamic-resource-
    allocation v0.36 does not resolve a domain prefix here)."""
    return name if name in (device.get("capacity") or {}) else None


def consumed_capacity(device: dict[str, Any], driver: str, spec: dict[str, Any]) -> dict[str, Decimal] | None:
    """Per capacity of the device, what the request consumes under its requestPolicy; None when the
    request names a capacity the device lacks or the policy refuses the amount."""
    requested: dict[str, Decimal] = {}
    for name, v in ((spec.get("capacity") or {}).get("requests") or {}).items():
        key = _capacity_lookup(device, driver, name)
        if key is None:
            return None
        requested[key] = _q(v)
    out: dict[str, Decimal] = {}
    for name, cap in (device.get("capacity") or {}).items():
        total = _q(cap["value"])
        policy = cap.get("requestPolicy")
        want = requested.get(name)
        if want is None:
            value = _q(policy["default"]) if policy and "default" in policy else total
        elif policy is None:
            value = want
        elif "validRange" in policy:
            rng = policy["validRange"]
            low = _q(rng["min"])
            if want < low:
                value = low
            elif "step" in rng:
                step = _q(rng["step"])
                value = low + step * math.ceil((want - low) / step)
            else:
                value = want
        elif "validValues" in policy:
            value = next((_q(v) for v in policy["validValues"] if want <= _q(v)), want)
        else:
            value = want
        if policy and not (policy.get("default") is not None and value == _q(policy["default"])):
            rng = policy.get("validRange")
            if rng is not None:
                if "max" in rng and value > _q(rng["max"]):
                    return None
                if "step" in rng and (value - _q(rng["min"])) % _q(rng["step"]) != 0:
                    return None
            elif policy.get("validValues") and all(value != _q(v) for v in policy["validValues"]):
                return None
        out[name] = value
    return out


@dataclass
class Built:
    problem: dict[str, Any]
    devices: list[DeviceRef]
    requests: list[RequestRef]
    claims: list[dict[str, Any]]
    consumed: dict[tuple[int, int], dict[str, Decimal]]  # (request, device) -> shared consumption
    pools: list[Pool]


def build(node: dict[str, Any], claims: list[dict[str, Any]], classes: dict[str, dict[str, Any]],
          slices: list[dict[str, Any]], ledger: Ledger, features: frozenset[str],
          matcher: DeviceMatcher, objective: str = "pack", budget: int = 200_000) -> Built:
    """The native problem for `claims` on `node` (NodeDevices.problem without a kept table)."""
    from gpufleet.dra.node_devices import NodeDevices
    return NodeDevices(node, slices, features).problem(claims, classes, ledger, matcher,
                                                        objective=objective, budget=budget)


def node_selector_for(results: list[DeviceRef], node: dict[str, Any]) -> dict[str, Any] | None:
    terms: dict[str, list[Any]] = {"matchFields": [], "matchExpressions": []}
    for ref in results:
        spec = ref.device if ref.slice["spec"].get("perDeviceNodeSelection") else ref.slice["spec"]
        if spec.get("nodeName"):
            return {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [spec["nodeName"]]}]}]}
        sel = spec.get("nodeSelector")
        if sel and sel.get("nodeSelectorTerms"):
            term = sel["nodeSelectorTerms"][0]
            for kind in ("matchFields", "matchExpressions"):
                for r in term.get(kind) or []:
                    if r not in terms[kind]:
                        terms[kind].append(r)
    if terms["matchFields"] or terms["matchExpressions"]:
        return {"nodeSelectorTerms": [{k: v for k, v in terms.items() if v}]}
    return None


def results_of(built: Built, choices: list[tuple[int, int, int]], node: dict[str, Any],
               share_ids: Any = None) -> list[dict[str, Any]]:
    """One AllocationResult per claim from the native choices."""
    per_claim: list[list[tuple[RequestRef, DeviceRef, int, int]]] = [[] for _ in built.claims]
    for r, d, _ in choices:
        rq = built.requests[r]
        per_claim[rq.claim_index].append((rq, built.devices[d], r, d))
    out = []
    for ci, items in enumerate(per_claim):
        results = []
        for rq, ref, r, d in items:
            res: dict[str, Any] = {"request": rq.name, "driver": ref.driver, "pool": ref.pool.name,
                                   "device": ref.device["name"]}
            if rq.admin:
                res["adminAccess"] = True
            if rq.spec.get("tolerations"):
                res["tolerations"] = rq.spec["tolerations"]
            if (r, d) in built.consumed:
                res["consumedCapacity"] = {n: _fmt(v) for n, v in built.consumed[(r, d)].items()}
                if share_ids is not None:
                    res["shareID"] = share_ids()
            results.append(res)
        allocation: dict[str, Any] = {"devices": {"results": results}}
        config = _configs(built, ci, items)
        if config:
            allocation["devices"]["config"] = config
        selector = node_selector_for([ref for _, ref, _, _ in items], node)
        if selector is not None:
            allocation["nodeSelector"] = selector
        out.append(allocation)
    return out


def _configs(built: Built, ci: int, items: list[Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    chosen = {rq.name for rq, _, _, _ in items}
    seen_classes: set[str] = set()
    for rq, _, _, _ in items:
        cname = rq.cls["metadata"]["name"]
        if cname in seen_classes:
            continue
        seen_classes.add(cname)
        for cfg in (rq.cls.get("spec") or {}).get("config") or []:
            names = sorted({q.name for q, _, _, _ in items if q.cls["metadata"]["name"] == cname})
            out.append({"source": "FromClass", "requests": names, **cfg})
    for cfg in built.claims[ci]["spec"]["devices"].get("config") or []:
        names = cfg.get("requests") or []
        if not names or any(n in chosen or any(c.startswith(n + "/") for c in chosen) for n in names):
            out.append({"source": "FromClaim", **cfg})
    return out


def _fmt(v: Decimal) -> str:
    """A quantity as Kubernetes prints it: binary suffixes for whole multiples of 1Ki, else the
    plain number."""
    if v == v.to_integral_value():
        n = int(v)
        for suffix, size in (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if n and n % size == 0:
                return f"{n // size}{suffix}"
        return str(n)
    return format(v.normalize(), "f")
