"""Container environment for a GPU allocation: visibility, NVIDIA MPS limits, gpushare variables.

The same function feeds the device plugin's Allocate response and `gpufleet node run`, so a pod
and a bare process given the same allocation see the same GPUs with the same limits.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from gpufleet.node.annotations import MIB, DeviceGrant, GpuShareAllocation, PodAllocation, parse_quantity
from gpufleet.node.keys import (GPUSHARE_CONTAINER, GPUSHARE_DEV, GPUSHARE_IDX, GPUSHARE_POD,
                               RES_GPU_MEMORY)

DeviceSpec = Mapping[str, Any]


def index_devices(devices: Iterable[DeviceSpec] | Mapping[str, Any]) -> dict[int, DeviceSpec]:
    """Minor -> GPU spec entry. Accepts a list of entries or an inventory dict with "devices"."""
    items: Iterable[DeviceSpec] = devices.get("devices", []) if isinstance(devices, Mapping) else devices
    out: dict[int, DeviceSpec] = {}
    for d in items:
        if d.get("type", "gpu") != "gpu":
            continue
        minor = int(d["minor"])
        if minor in out:
            raise ValueError(f"duplicate GPU minor {minor} in the node's device list")
        out[minor] = d
    return out


# A MIG instance's device minor: 8 memory slots per GPU (core/mig.h, MigInstanceMinor).
MIG_SLOTS_PER_GPU = 8


def _mig_strategy(devices: Iterable[DeviceSpec] | Mapping[str, Any], gpus: list[DeviceSpec]) -> str:
    """The node's MIG strategy: stated in an inventory dict, else "single" when every GPU is split."""
    if isinstance(devices, Mapping) and devices.get("mig_strategy"):
        return str(devices["mig_strategy"])
    return "single" if gpus and all(g.get("mig") for g in gpus) else "mixed"


def index_units(devices: Iterable[DeviceSpec] | Mapping[str, Any]) -> dict[tuple[str, int], DeviceSpec]:
    """(grant type, minor) -> what a grant of that type and minor makes visible.

    Whole GPUs are ("gpu", minor). A GPU with a `mig` list is its instances instead, never itself:
    ("mig-<profile>", 8 x minor + start) under the mixed strategy and ("gpu", 8 x minor + start)
    under single, as the core numbers them; an instance's entry has its MIG UUID as `id`.
    """
    plain = index_devices(devices)
    strategy = _mig_strategy(devices, list(plain.values()))
    out: dict[tuple[str, int], DeviceSpec] = {}
    for minor, spec in plain.items():
        instances = spec.get("mig") or []
        if not instances:
            out[("gpu", minor)] = spec
            continue
        for inst in instances:
            kind = "gpu" if strategy == "single" else f"mig-{inst['profile']}"
            out[(kind, MIG_SLOTS_PER_GPU * minor + int(inst["start"]))] = {**inst, "mig_instance": True}
    return out


def device_memory_bytes(spec: DeviceSpec) -> int | None:
    res = spec.get("resources") or {}
    if RES_GPU_MEMORY in res:
        return parse_quantity(str(res[RES_GPU_MEMORY]))
    return None


def container_env(grants: Sequence[DeviceGrant] | PodAllocation | GpuShareAllocation,
                  devices: Iterable[DeviceSpec] | Mapping[str, Any], *,
                  gpushare: GpuShareAllocation | None = None, container_units: int | None = None,
                  unit_bytes: int = MIB) -> dict[str, str]:
    """Environment variables that confine a container to `grants` on a node with `devices`.

    Visible devices are listed in grant order, by UUID when the node knows it, else by minor;
    `all` is never produced. MPS limits are set only when they restrict something: the thread
    percentage when the (smallest) gpu-core grant is below 100, and a pinned-memory limit for each
    visible position whose grant is smaller than the card. `gpushare` adds the ALIYUN_COM_GPU_MEM_*
    compatibility variables (`container_units` defaults to the pod's units).
    """
    if isinstance(grants, GpuShareAllocation):
        gpushare = gpushare or grants
        grants = grants.to_grants(unit_bytes)
    elif isinstance(grants, PodAllocation):
        gpushare = gpushare or grants.gpushare
        grants = list(grants.grants)
    gpus = [g for g in grants if g.type == "gpu" or g.type.startswith("mig-")]
    if not gpus:
        raise ValueError("allocation grants no GPU; refusing to expose devices")
    units = index_units(devices)
    by_minor = {minor: spec for (kind, minor), spec in units.items() if kind == "gpu"}
    seen: set[tuple[str, int]] = set()
    visible: list[str] = []
    by_uuid = True
    mem_limits: list[str] = []
    cores: list[int] = []
    for pos, g in enumerate(gpus):
        what = "GPU" if g.type == "gpu" else g.type
        key = (g.type, g.minor)
        if key not in units:
            have = ",".join(str(m) for kind, m in sorted(units) if kind == g.type) or "none"
            raise ValueError(f"allocation names {what} minor {g.minor}, which this node does not have "
                             f"(minors: {have})")
        if key in seen:
            raise ValueError(f"allocation names {what} minor {g.minor} twice")
        seen.add(key)
        spec = units[key]
        uuid = spec.get("id") or spec.get("uuid")
        if spec.get("mig_instance"):
            # A MIG instance is isolated by the hardware and only ever granted whole; the NVIDIA
            # container runtime accepts its MIG UUID in the visible-devices list.
            if not uuid:
                raise ValueError(f"{what} minor {g.minor}: the node does not record the instance's MIG UUID")
            if g.core_percent is not None and g.core_percent < 100:
                raise ValueError(f"{what} minor {g.minor}: a MIG instance cannot be shared "
                                 f"(gpu-core {g.core_percent})")
            visible.append(str(uuid))
            continue
        by_uuid = by_uuid and bool(uuid)
        visible.append(str(uuid) if uuid else str(g.minor))
        if g.core_percent is not None:
            if not 0 <= g.core_percent <= 100:
                raise ValueError(f"GPU minor {g.minor}: gpu-core {g.core_percent} outside 0..100")
            # 0 means a memory-only share; MPS cannot express 0%, so no thread limit from it.
            if g.core_percent > 0:
                cores.append(g.core_percent)
        limit = _memory_limit(g, device_memory_bytes(spec))
        if limit is not None:
            # MPS indexes by position within the visible list, not by minor.
            mem_limits.append(f"{pos}={max(1, limit // MIB)}M")
    env = {"NVIDIA_VISIBLE_DEVICES": ",".join(visible), "CUDA_VISIBLE_DEVICES": ",".join(visible)}
    if not by_uuid:
        # Numeric ids must mean the same GPUs as nvidia-smi's order, not CUDA's fastest-first.
        env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    if cores and min(cores) < 100:
        # One value per client process; the smallest grant keeps every device within its share.
        env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = str(min(cores))
    if mem_limits:
        env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] = ",".join(mem_limits)
    if gpushare is not None:
        env[GPUSHARE_IDX] = ",".join(str(g.minor) for g in gpus)
        env[GPUSHARE_POD] = str(gpushare.pod_units)
        dev = gpushare.dev_units
        if dev is None:
            total = device_memory_bytes(by_minor[gpus[0].minor])
            dev = total // unit_bytes if total else None
        if dev is not None:
            env[GPUSHARE_DEV] = str(dev)
        env[GPUSHARE_CONTAINER] = str(container_units if container_units is not None else gpushare.pod_units)
    return env


def _memory_limit(g: DeviceGrant, total: int | None) -> int | None:
    """Bytes to pin for this grant, or None when it covers the whole card."""
    want = g.memory_bytes
    if want is None and g.memory_ratio is not None and total:
        want = total * g.memory_ratio // 100
    if want is None:
        return None
    if want <= 0:
        raise ValueError(f"GPU minor {g.minor}: gpu-memory must be positive, got {want}")
    if total is not None and want >= total:
        return None
    return want
