"""What claims count against queue quotas: devices per DeviceClass, as Kueue counts them.

A queue tree (docs/queues.md) has a resource for each DeviceClass that the engine's tasks'
claims name, or for the name a mapping gives a set of classes (Kueue's deviceClassMappings:
``{"whole-gpus": ["gpu.nvidia.com", "gpu.example.com"]}``). A task is charged, per resource:

- a request ``exactly`` with allocationMode ExactCount: its ``count`` (1 when absent);
- allocationMode All: the most devices of the class that one node of the engine offers (all
  such a request could take; the claim's own selectors are not applied);
- ``firstAvailable``: per resource, the most that any one alternative takes of it (the
  alternative chosen is only known once the claim is allocated, so each resource is charged
  what it may have to give);
- a request with adminAccess: nothing (it holds no device).

Claims already allocated (their pods run) are charged what they hold: one per device in their
results, of the class of the request (or alternative) each answers.

A resource's capacity is the number of distinct devices of its classes (by the classes'
selectors) in the slices that the engine's nodes can reach. An unmapped class named like a
resource the pods' own requests use (cpu, memory, gpu, mig-*) is not counted.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

# Resources the engine counts from the pods' own requests; a class mapped to one would count twice.
RESERVED = ("cpu", "memory", "gpu")


def resource_of_class(mappings: Mapping[str, Sequence[str]] | None) -> dict[str, str]:
    """{device class: queue resource} from ``{resource: [classes]}``; ValueError naming the
    entry when a name is reserved, empty, or a class is mapped twice."""
    out: dict[str, str] = {}
    for resource, classes in (mappings or {}).items():
        if not isinstance(resource, str) or not resource or resource in RESERVED or resource.startswith("mig-"):
            raise ValueError(f"device class mappings: resource {resource!r} is not a name for claims' devices "
                             f"(cpu, memory, gpu and mig-* count the pods' own requests)")
        if isinstance(classes, str) or not classes:
            raise ValueError(f"device class mappings: {resource}: expected a list of DeviceClass names")
        for cls in classes:
            if cls in out:
                raise ValueError(f"device class mappings: DeviceClass {cls} is mapped to both "
                                 f"{out[cls]} and {resource}")
            out[cls] = resource
    return out


def _members(request: dict[str, Any]) -> list[list[dict[str, Any]]]:
    """A request's alternatives (one for ``exactly``)."""
    if "firstAvailable" in request:
        return [[s] for s in request["firstAvailable"]]
    return [[request["exactly"]]]


def counted(cls: str, resource_of: Mapping[str, str]) -> str | None:
    """The queue resource a class's devices count in: its mapped name, else its own name unless
    that is one the pods' requests use (a DeviceClass named "gpu" is then not counted)."""
    if cls in resource_of:
        return resource_of[cls]
    return None if cls in RESERVED or cls.startswith("mig-") else cls


def claim_devices(claims: Iterable[dict[str, Any]], resource_of: Mapping[str, str],
                  all_devices: Mapping[str, int]) -> dict[str, float]:
    """The devices `claims` take per queue resource (module docstring); `all_devices` is the
    most devices of a class one node offers (for allocationMode All)."""
    out: dict[str, float] = {}
    for claim in claims:
        for request in claim["spec"]["devices"].get("requests") or []:
            most: dict[str, float] = {}
            for [spec] in _members(request):
                if spec.get("adminAccess"):
                    continue
                cls = spec["deviceClassName"]
                resource = counted(cls, resource_of)
                if resource is None:
                    continue
                if spec.get("allocationMode", "ExactCount") == "All":
                    n = float(all_devices.get(cls, 0))
                else:
                    n = float(spec.get("count", 1))
                most[resource] = max(most.get(resource, 0.0), n)
            for resource, n in most.items():
                out[resource] = out.get(resource, 0.0) + n
    return out


def class_names(claims: Iterable[dict[str, Any]]) -> set[str]:
    """Every DeviceClass the claims' requests and their alternatives name."""
    out = set()
    for claim in claims:
        for request in claim["spec"]["devices"].get("requests") or []:
            for [spec] in _members(request):
                out.add(spec["deviceClassName"])
    return out


def allocated_devices(claims: Iterable[dict[str, Any]], resource_of: Mapping[str, str]) -> dict[str, float]:
    """The devices allocated claims hold per queue resource: one per result (not adminAccess),
    of the class of the request (or alternative) it answers."""
    out: dict[str, float] = {}
    for claim in claims:
        class_of = {}
        for request in claim["spec"]["devices"].get("requests") or []:
            if "firstAvailable" in request:
                for sub in request["firstAvailable"]:
                    class_of[f"{request['name']}/{sub['name']}"] = sub["deviceClassName"]
            else:
                class_of[request["name"]] = request["exactly"]["deviceClassName"]
        for result in claim["status"]["allocation"]["devices"].get("results") or []:
            cls = class_of.get(result["request"])
            resource = counted(cls, resource_of) if cls is not None and not result.get("adminAccess") else None
            if resource is not None:
                out[resource] = out.get(resource, 0.0) + 1
    return out


def class_devices(tables: Sequence[Any], classes: Mapping[str, dict[str, Any]], names: Iterable[str],
                  matcher: Any) -> tuple[dict[str, int], dict[str, int]]:
    """Per class of `names`: the distinct devices its selectors admit over `tables` (the node
    nodes' tables), and the most one table holds. A class that is not defined admits nothing; a
    device where its selectors fail is not counted."""
    total: dict[str, int] = {}
    most: dict[str, int] = {}
    for name in names:
        cls = classes.get(name)
        seen: set[tuple[str, str, str]] = set()
        best = 0
        if cls is not None:
            exprs = tuple(s["cel"]["expression"] for s in (cls.get("spec") or {}).get("selectors") or [])
            for table in tables:
                admitted, _ = table.selectable(matcher, exprs)
                seen.update(table.devices[i].id for i in admitted)
                best = max(best, len(admitted))
        total[name] = len(seen)
        most[name] = best
    return total, most
