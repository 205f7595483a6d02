"""MIG instances as device-plugin resources, as NVIDIA's device plugin offers them.

A GPU in MIG mode appears in a node's device specs once, with its instances under "mig"
(the scenario format; `gpufleet node inventory` writes it from NVML):

    {"type": "gpu", "minor": 0, "id": "GPU-...", "model": "A100-80GB",
     "mig": [{"profile": "3g.40gb", "start": 0, "id": "MIG-...", "memory": "40Gi"}, ...]}

`mig_resources` turns such a list into one flat device list per extended resource:

- strategy "mixed": every profile is its own resource, `nvidia.com/mig-<profile>`, and the GPUs
  not in MIG mode stay `nvidia.com/gpu`;
- strategy "single": every GPU must be in MIG mode with one profile throughout, and the
  instances are `nvidia.com/gpu`;
- strategy "none": GPUs in MIG mode are refused (a MIG GPU is never offered whole).

Each instance becomes a device entry whose ID is its MIG UUID, so a `DevicePluginServer` in
"whole" mode serves it unchanged and Allocate sets `NVIDIA_VISIBLE_DEVICES=MIG-...`. Its minor is
8 x the GPU's minor + the start slot, the numbering the scheduling core uses.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping

from gpufleet.node.annotations import format_bytes
from gpufleet.node.keys import RES_GPU_CORE, RES_GPU_MEMORY, RES_NVIDIA_GPU, RES_NVIDIA_MIG_PREFIX

MEMORY_SLOTS = 8
STRATEGIES = ("none", "mixed", "single")


def instance_minor(parent_minor: int, start: int) -> int:
    """The device minor of the instance at `start` on GPU `parent_minor` (the core's numbering)."""
    return parent_minor * MEMORY_SLOTS + start


def has_mig(devices: Iterable[Mapping[str, Any]]) -> bool:
    """Whether any of the device entries is a GPU in MIG mode with instances."""
    return any(d.get("mig") for d in devices)


def _instances(gpu: Mapping[str, Any]) -> list[dict[str, Any]]:
    minor = int(gpu["minor"])
    where = f"GPU minor {minor}"
    out = []
    for i, inst in enumerate(gpu["mig"]):
        profile, start, uuid = inst.get("profile"), inst.get("start"), inst.get("id")
        if not profile or not isinstance(start, int) or not 0 <= start < MEMORY_SLOTS:
            raise ValueError(f"{where} mig[{i}]: needs a profile and a start slot 0..7, got {dict(inst)}")
        if not uuid:
            raise ValueError(f"{where} mig[{i}] {profile}: no MIG UUID to expose to containers")
        entry: dict[str, Any] = {
            "type": "gpu", "minor": instance_minor(minor, start), "id": str(uuid),
            "model": gpu.get("model", ""), "profile": str(profile), "parent_minor": minor,
            "parent_id": gpu.get("id", ""), "start": start,
            "health": bool(gpu.get("health", True)) and bool(inst.get("health", True)),
            "resources": {RES_GPU_CORE: "100"}}
        if inst.get("memory"):
            entry["resources"][RES_GPU_MEMORY] = (inst["memory"] if isinstance(inst["memory"], str)
                                                  else format_bytes(int(inst["memory"])))
        if gpu.get("topology"):
            entry["topology"] = dict(gpu["topology"])
        out.append(entry)
    return out


def mig_resources(devices: Iterable[Mapping[str, Any]], strategy: str = "mixed") -> dict[str, list[dict[str, Any]]]:
    """Resource name -> the device entries to advertise under it (see the module docstring).
    Raises ValueError naming the GPU when the devices do not suit the strategy."""
    if strategy not in STRATEGIES:
        raise ValueError(f"MIG strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
    gpus = [d for d in devices if d.get("type", "gpu") == "gpu"]
    out: dict[str, list[dict[str, Any]]] = {}
    for gpu in gpus:
        if not gpu.get("mig"):
            if strategy == "single":
                raise ValueError(f"MIG strategy single: GPU minor {gpu['minor']} is not in MIG mode; "
                                 "every GPU of the node must be")
            out.setdefault(RES_NVIDIA_GPU, []).append(dict(gpu))
            continue
        if strategy == "none":
            raise ValueError(f"GPU minor {gpu['minor']} is in MIG mode; choose the mixed or single "
                             "MIG strategy to advertise its instances")
        for inst in _instances(gpu):
            name = RES_NVIDIA_GPU if strategy == "single" else RES_NVIDIA_MIG_PREFIX + inst["profile"]
            out.setdefault(name, []).append(inst)
    if strategy == "single":
        profiles = sorted({d["profile"] for d in out.get(RES_NVIDIA_GPU, [])})
        if len(profiles) > 1:
            raise ValueError(f"MIG strategy single: all instances must have one profile, got "
                             f"{', '.join(profiles)}")
    return out
