"""An allocation checked against the claims on its own terms, without the allocator's code paths:
every request (or one member of a firstAvailable list) has its devices, each device passes the
class's and the request's selectors, no device is taken twice (unless admin access or shared by
capacity), and every matchAttribute / distinctAttribute constraint holds."""
from __future__ import annotations

from typing import Any

from gpufleet.dra.cel import compile_selector, device_input


def _devices(slices: list[dict[str, Any]]) -> dict[tuple[str, str, str], tuple[str, dict[str, Any]]]:
    out = {}
    for s in slices:
        for d in s["spec"].get("devices") or []:
            out[(s["spec"]["driver"], s["spec"]["pool"]["name"], d["name"])] = (s["spec"]["driver"], d)
    return out


def _attr(driver: str, device: dict[str, Any], name: str) -> Any:
    attrs = device.get("attributes") or {}
    domain, _, ident = name.rpartition("/")
    value = attrs.get(name, attrs.get(ident) if domain == driver else None)
    if value is None:
        return None
    (kind, v), = value.items()
    return frozenset((kind.rstrip("s"), x) for x in v) if isinstance(v, list) else frozenset({(kind, v)})


def _passes(driver: str, device: dict[str, Any], selectors: list[dict[str, Any]],
            cache: dict[Any, bool]) -> bool:
    for s in selectors:
        expr = s["cel"]["expression"]
        key = (expr, driver, device["name"])
        if key not in cache:
            cache[key] = compile_selector(expr).matches(device_input(driver, device))
        if not cache[key]:
            return False
    return True


def check_allocation(claims: list[dict[str, Any]], classes: list[dict[str, Any]],
                     slices: list[dict[str, Any]], results: list[dict[str, Any]],
                     cache: dict[Any, bool] | None = None) -> list[str]:
    """Problems found (empty when the allocation is valid). `cache` may carry selector verdicts
    between calls about the same slices."""
    problems: list[str] = []
    cache = {} if cache is None else cache
    devices = _devices(slices)
    class_map = {c["metadata"]["name"]: c for c in classes}
    taken: dict[tuple[str, str, str], str] = {}
    assert len(results) == len(claims)
    for claim, alloc in zip(claims, results):
        cname = claim["metadata"]["name"]
        got = alloc["devices"]["results"]
        by_request: dict[str, list[tuple[str, str, str]]] = {}
        for r in got:
            by_request.setdefault(r["request"], []).append((r["driver"], r["pool"], r["device"]))
        specs = {}
        for req in claim["spec"]["devices"]["requests"]:
            if "exactly" in req:
                members = [(req["name"], req["exactly"])]
            else:
                members = [(f"{req['name']}/{s['name']}", s) for s in req["firstAvailable"]]
            used = [m for m in members if m[0] in by_request]
            if len(used) != 1:
                problems.append(f"{cname}: request {req['name']}: {len(used)} members allocated")
                continue
            name, spec = used[0]
            specs[name] = (req["name"], spec)
            cls = class_map[spec["deviceClassName"]]
            selectable = [did for did, (drv, d) in devices.items()
                          if _passes(drv, d, (cls.get("spec") or {}).get("selectors") or [], cache)
                          and _passes(drv, d, spec.get("selectors") or [], cache)]
            ids = by_request[name]
            if spec.get("allocationMode") == "All":
                # Devices shared by capacity, or asked for capacity, may be left out when they
                # cannot hold the request (Kubernetes leaves them out); no other may.
                optional = {did for did in selectable if spec.get("capacity")
                            or devices[did][1].get("allowMultipleAllocations")}
                if not set(ids) <= set(selectable) or set(selectable) - set(ids) - optional:
                    problems.append(f"{cname}: {name}: All mode got {ids}, selectable {selectable}")
            elif len(ids) != spec.get("count", 1):
                problems.append(f"{cname}: {name}: {len(ids)} devices for count {spec.get('count', 1)}")
            for did in ids:
                if did not in selectable:
                    problems.append(f"{cname}: {name}: {did} does not pass the selectors")
                if not spec.get("adminAccess") and not devices[did][1].get("allowMultipleAllocations"):
                    if did in taken:
                        problems.append(f"{cname}: {name}: {did} also taken by {taken[did]}")
                    taken[did] = f"{cname}/{name}"
        for con in claim["spec"]["devices"].get("constraints") or []:
            names = con.get("requests") or []
            covered = [did for n, ids in by_request.items() for did in ids
                       if not names or n in names or n.split("/")[0] in names]
            attr = con.get("matchAttribute") or con.get("distinctAttribute")
            values = [_attr(devices[d][0], devices[d][1], attr) for d in covered]
            if any(v is None for v in values):
                problems.append(f"{cname}: a device lacks {attr}")
            elif "matchAttribute" in con and values and not frozenset.intersection(*values):
                problems.append(f"{cname}: {attr} differs: {values}")
            elif "distinctAttribute" in con:
                for i in range(len(values)):
                    for j in range(i):
                        if values[i] & values[j]:
                            problems.append(f"{cname}: {attr} repeats: {values}")
    return problems
