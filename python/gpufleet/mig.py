"""A MIG repartition planner: given pending MIG requests, propose new layouts for idle GPUs.

Only idle GPUs are touched (a GPU not in MIG mode that no allocation uses, or a GPU in MIG mode
none of whose instances is allocated), only on nodes with the `mixed` MIG strategy, and only with
the geometry the core holds (`gpufleet._core.mig_geometry()`, from NVIDIA's MIG user guide):
profiles the model offers, allowed start slots, no shared memory slot, at most 7 compute slices
and the published instance counts. Pods are taken in queue order, each whole or not at all, and
all instances of one pod on one node (as the scheduler will place them). The proposal is advice:
applying it (nvidia-smi mig / the MIG manager) and declaring the new layout is the operator's.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from gpufleet.node.keys import RES_NVIDIA_MIG_PREFIX

MEMORY_SLOTS = 8


@dataclass
class GpuLayout:
    """A proposed layout for one GPU: instances as {"profile", "start"} and the pods they serve."""
    node: str
    minor: int
    model: str
    instances: list[dict[str, Any]] = field(default_factory=list)
    pods: list[str] = field(default_factory=list)


def _geometry() -> dict[str, dict[str, Any]]:
    from gpufleet import _core

    out: dict[str, dict[str, Any]] = {}
    for m in _core.mig_geometry():
        for name in [m["model"], *m["aliases"]]:
            out[name] = m
    return out


def _fits(model: Mapping[str, Any], instances: Sequence[Mapping[str, Any]], profile: str) -> int | None:
    """The lowest start slot at which `profile` can join `instances` on a GPU of `model`."""
    profiles = {p["name"]: p for p in model["profiles"]}
    p = profiles.get(profile)
    if p is None:
        return None
    if sum(1 for i in instances if i["profile"] == profile) >= p["max_instances"]:
        return None
    if sum(profiles[i["profile"]]["compute_slices"] for i in instances) + p["compute_slices"] > model["compute_slices"]:
        return None
    used = 0
    for i in instances:
        used |= ((1 << profiles[i["profile"]]["memory_slices"]) - 1) << i["start"]
    for start in p["start_slots"]:
        span = ((1 << p["memory_slices"]) - 1) << start
        if not used & span:
            return start
    return None


def _demand(pod: Mapping[str, Any]) -> list[str]:
    """The MIG profiles a pod asks for, one entry per instance, largest first."""
    out: list[str] = []
    for name, count in (pod.get("requests") or {}).items():
        if name.startswith(RES_NVIDIA_MIG_PREFIX):
            out += [name[len(RES_NVIDIA_MIG_PREFIX):]] * int(count)
    return sorted(out, key=lambda p: (-int(p.split("g.")[0]), p))


def _idle_gpus(cluster: Any, geometry: Mapping[str, Any]) -> dict[str, list[GpuLayout]]:
    used: dict[str, set[tuple[str, int]]] = {}
    for a in cluster.allocations():
        used.setdefault(a.node, set()).update((g.type, g.minor) for g in a.devices)
    out: dict[str, list[GpuLayout]] = {}
    for name in cluster.node_names():
        spec = cluster.node(name)
        if spec.get("mig_strategy", "mixed") != "mixed":
            continue
        busy = used.get(name, set())
        for d in spec["devices"]:
            if d.get("type", "gpu") != "gpu" or d.get("model") not in geometry:
                continue
            minor = int(d["minor"])
            if d.get("mig"):
                taken = any((f"mig-{i['profile']}", minor * MEMORY_SLOTS + i["start"]) in busy for i in d["mig"])
            else:
                taken = ("gpu", minor) in busy
            if not taken:
                out.setdefault(name, []).append(GpuLayout(name, minor, geometry[d["model"]]["model"]))
    return out


def plan_repartition(cluster: Any, queue: Iterable[Mapping[str, Any]]) -> list[GpuLayout]:
    """Layouts for idle GPUs that serve as many queued pods (scenario pod dicts with
    `nvidia.com/mig-<profile>` requests), in order, as fit; GPUs given no instance are left out."""
    geometry = _geometry()
    idle = _idle_gpus(cluster, geometry)
    for pod in queue:
        demand = _demand(pod)
        if not demand:
            continue
        for gpus in idle.values():
            trial = [list(g.instances) for g in gpus]
            placed = True
            for profile in demand:
                for k, g in enumerate(gpus):
                    start = _fits(geometry[g.model], trial[k], profile)
                    if start is not None:
                        trial[k].append({"profile": profile, "start": start})
                        break
                else:
                    placed = False
                    break
            if placed:
                for g, instances in zip(gpus, trial):
                    if len(instances) > len(g.instances):
                        g.instances = instances
                        g.pods.append(str(pod.get("name", "")))
                break
    return [g for gpus in idle.values() for g in gpus if g.instances]
