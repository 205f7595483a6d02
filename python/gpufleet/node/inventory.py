"""GPU inventory of this node from NVML, in the scenario's device-spec format.

NVML is `pynvml` (package nvidia-ml-py), imported lazily; any object with the same functions
can be injected (tests replay recorded answers with `nvml_replay.ReplayNvml`).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

from gpufleet.node.annotations import format_bytes
from gpufleet.node.keys import RES_GPU_CORE, RES_GPU_MEMORY, RES_GPU_MEMORY_RATIO

_TOPOLOGY_MULTIPLE = 20  # NVML_TOPOLOGY_MULTIPLE: common ancestor is a PCIe switch (or closer)
_ERROR_GPU_IS_LOST = 15
_NVLINK_LINKS = 18  # NVLink links per GPU on Hopper/Blackwell; older parts have fewer
_MIG_ENABLE = 1     # NVML_DEVICE_MIG_ENABLE
_MIG_PROFILE = re.compile(r"\bMIG\s+(\d+g\.\d+gb(?:\+me)?)\s*$")
# Nominal sizes (GiB) of the MIG-capable models, to name a GPU the way the core's MIG geometry
# does ("A100-80GB"): NVML's names do not always carry the size ("NVIDIA H200").
_MIG_SIZES_GIB = {"A100": (40, 80), "H100": (80,), "H200": (141,)}


class NvmlUnavailable(RuntimeError):
    """No NVML library, no driver, or no GPU on this machine."""


@dataclass
class NodeInventory:
    devices: list[dict[str, Any]] = field(default_factory=list)
    nvlink_groups: list[list[int]] = field(default_factory=list)
    driver_version: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"devices": self.devices}
        if self.nvlink_groups:
            out["nvlink_groups"] = self.nvlink_groups
        if self.driver_version:
            out["driver_version"] = self.driver_version
        return out


_VENDOR = re.compile(r"^(NVIDIA|Tesla|GeForce|Quadro)\s+", re.IGNORECASE)


def normalize_model(name: str) -> str:
    """"NVIDIA H100 80GB HBM3" -> "H100", "Tesla T4" -> "T4", "NVIDIA A100-SXM4-80GB" -> "A100",
    "NVIDIA GeForce RTX 4090" -> "RTX4090", "NVIDIA RTX A6000" -> "RTXA6000"."""
    s = name.strip()
    while (m := _VENDOR.match(s)):
        s = s[m.end():]
    parts = [p for p in re.split(r"[\s\-_]+", s) if p]
    if not parts:
        return name.strip()
    if parts[0].upper() in ("RTX", "GTX") and len(parts) > 1:
        return parts[0].upper() + parts[1]
    return parts[0]


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, (bytes, bytearray)) else str(v)


def normalize_bus_id(bus_id: Any) -> str:
    """NVML's "00000000:16:00.0" -> sysfs-style "0000:16:00.0" (lower case)."""
    s = _text(bus_id).strip().lower()
    dom, _, rest = s.partition(":")
    return f"{dom[-4:]}:{rest}" if rest else s


def mig_model(name: str, memory_bytes: int | None) -> str:
    """The MIG geometry's model name: "NVIDIA A100-SXM4-80GB" -> "A100-80GB", "NVIDIA H200" with
    140 GiB -> "H200-141GB" (the nearest nominal size); other GPUs keep normalize_model's name."""
    family = normalize_model(name)
    sizes = _MIG_SIZES_GIB.get(family)
    if not sizes:
        return family
    m = re.search(r"(\d+)\s*GB", name, re.IGNORECASE)
    if m and int(m.group(1)) in sizes:
        return f"{family}-{int(m.group(1))}GB"
    if memory_bytes:
        gib = memory_bytes / (1 << 30)
        return f"{family}-{min(sizes, key=lambda s: abs(s - gib))}GB"
    return f"{family}-{sizes[0]}GB"


def _mig_instances(nvml: Any, handle: Any, minor: int) -> list[dict[str, Any]] | None:
    """The GPU's MIG instances, or None when MIG is off or unsupported. Each: profile (from the
    MIG device's name, "... MIG 3g.40gb"), start slot (the GPU instance's placement), MIG UUID and
    memory."""
    mode = _try(nvml, "nvmlDeviceGetMigMode", handle)
    if mode is None or int(mode[0]) != _MIG_ENABLE:
        return None
    out = []
    for index in range(int(nvml.nvmlDeviceGetMaxMigDeviceCount(handle))):
        mig = _try(nvml, "nvmlDeviceGetMigDeviceHandleByIndex", handle, index)
        if mig is None:  # NVML_ERROR_NOT_FOUND: no instance at this index
            continue
        name = _text(nvml.nvmlDeviceGetName(mig))
        m = _MIG_PROFILE.search(name)
        if m is None:
            raise NvmlUnavailable(f"GPU minor {minor}: MIG device {index} is named {name!r}, "
                                  "which names no MIG profile")
        gi = nvml.nvmlDeviceGetGpuInstanceById(handle, nvml.nvmlDeviceGetGpuInstanceId(mig))
        info = nvml.nvmlGpuInstanceGetInfo(gi)
        entry: dict[str, Any] = {"profile": m.group(1), "start": int(info.placement.start),
                                 "id": _text(nvml.nvmlDeviceGetUUID(mig))}
        mem = _try(nvml, "nvmlDeviceGetMemoryInfo", mig)
        if mem is not None:
            entry["memory"] = format_bytes(int(mem.total))
        out.append(entry)
    return sorted(out, key=lambda e: e["start"])


def load_nvml() -> Any:
    """Imports and initialises pynvml, or raises NvmlUnavailable with a readable reason."""
    from gpufleet._extras import MissingExtra, require
    try:
        pynvml = require("pynvml", "node", "reading the GPUs through NVML")
    except MissingExtra as e:
        raise NvmlUnavailable(str(e)) from e
    try:
        pynvml.nvmlInit()
    except Exception as e:  # NVMLError_LibraryNotFound / DriverNotLoaded / ...
        raise NvmlUnavailable(f"NVML could not start ({e}); no NVIDIA driver or GPU here?") from e
    return pynvml


def _try(nvml: Any, fn: str, *args: Any) -> Any:
    """Optional query: None when this NVML/GPU does not support it."""
    f = getattr(nvml, fn, None)
    if f is None:
        return None
    try:
        return f(*args)
    except nvml.NVMLError:
        return None


def _numa_node(nvml: Any, handle: Any, bus_id: str, sysfs: str) -> int | None:
    n = _try(nvml, "nvmlDeviceGetNumaNodeId", handle)
    if n is None:
        try:
            with open(os.path.join(sysfs, "bus/pci/devices", bus_id, "numa_node")) as f:
                n = int(f.read().strip())
        except (OSError, ValueError):
            return None
    return int(n) if n is not None and int(n) >= 0 else None


def _socket_of_numa(node: int, sysfs: str) -> int | None:
    """Package id of the first CPU of a NUMA node, from sysfs."""
    try:
        with open(os.path.join(sysfs, f"devices/system/node/node{node}/cpulist")) as f:
            first = int(re.split(r"[-,]", f.read().strip())[0])
        with open(os.path.join(sysfs, f"devices/system/cpu/cpu{first}/topology/physical_package_id")) as f:
            return int(f.read().strip())
    except (OSError, ValueError, IndexError):
        return None


def probe_health(nvml: Any, handle: Any) -> bool:
    """False when NVML says the GPU is lost or a memory row remap failed / is pending a reset."""
    try:
        nvml.nvmlDeviceGetMemoryInfo(handle)
    except nvml.NVMLError as e:
        if getattr(e, "value", None) == _ERROR_GPU_IS_LOST:
            return False
    rows = _try(nvml, "nvmlDeviceGetRemappedRows", handle)
    if rows is not None and len(rows) >= 4 and (rows[2] or rows[3]):
        return False
    pending = _try(nvml, "nvmlDeviceGetRetiredPagesPendingStatus", handle)
    return not pending  # older GPUs (no row remapping) retire pages instead


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[Any, Any] = {}

    def find(self, x: Any) -> Any:
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: Any, b: Any) -> None:
        self.parent[self.find(a)] = self.find(b)


def _nvlink_groups(nvml: Any, handles: dict[int, Any], bus_of: dict[int, str]) -> list[list[int]]:
    """GPUs joined by active NVLinks, directly or through a shared NVSwitch (a remote end that
    is not one of our GPUs). Groups of one are dropped."""
    gpu_by_bus = {b: m for m, b in bus_of.items()}
    uf = _UnionFind()
    for minor, h in handles.items():
        for link in range(_NVLINK_LINKS):
            if not _try(nvml, "nvmlDeviceGetNvLinkState", h, link):
                continue
            remote = _try(nvml, "nvmlDeviceGetNvLinkRemotePciInfo", h, link)
            if remote is None:
                continue
            rbus = normalize_bus_id(remote.busId)
            uf.union(("gpu", minor), ("gpu", gpu_by_bus[rbus]) if rbus in gpu_by_bus else ("switch", rbus))
    groups: dict[Any, list[int]] = {}
    for minor in handles:
        if ("gpu", minor) in uf.parent:
            groups.setdefault(uf.find(("gpu", minor)), []).append(minor)
    return sorted(sorted(g) for g in groups.values() if len(g) > 1)


def _pcie_ids(nvml: Any, handles: dict[int, Any], bus_of: dict[int, str]) -> dict[int, str]:
    """Label per GPU for "behind the same PCIe switch": GPUs whose common ancestor is a switch
    share a label, "pci<domain>:<bus>" of the lowest bus in the group."""
    uf = _UnionFind()
    minors = sorted(handles)
    for i, a in enumerate(minors):
        uf.find(a)
        for b in minors[i + 1:]:
            level = _try(nvml, "nvmlDeviceGetTopologyCommonAncestor", handles[a], handles[b])
            if level is not None and int(level) <= _TOPOLOGY_MULTIPLE:
                uf.union(a, b)
    groups: dict[int, list[int]] = {}
    for m in minors:
        groups.setdefault(uf.find(m), []).append(m)
    out: dict[int, str] = {}
    for members in groups.values():
        dom, bus = min(bus_of[m] for m in members).split(":")[:2]
        for m in members:
            out[m] = f"pci{dom}:{bus}"
    return out


def read_inventory(nvml: Any = None, *, sysfs: str = "/sys") -> NodeInventory:
    """Reads every GPU NVML reports. `nvml` defaults to pynvml (initialised here and shut down
    afterwards); an injected object is used as is. Raises NvmlUnavailable without a GPU."""
    own = nvml is None
    if own:
        nvml = load_nvml()
    try:
        return _read(nvml, sysfs)
    except nvml.NVMLError as e:
        raise NvmlUnavailable(f"NVML query failed: {e}") from e
    finally:
        if own:
            try:
                nvml.nvmlShutdown()
            except Exception:
                pass


def _read(nvml: Any, sysfs: str) -> NodeInventory:
    count = nvml.nvmlDeviceGetCount()
    if count == 0:
        raise NvmlUnavailable("NVML reports no GPUs")
    handles: dict[int, Any] = {}
    raw: dict[int, dict[str, Any]] = {}
    for i in range(count):
        h = nvml.nvmlDeviceGetHandleByIndex(i)
        minor = _try(nvml, "nvmlDeviceGetMinorNumber", h)
        minor = int(minor) if minor is not None else i
        bus = normalize_bus_id(nvml.nvmlDeviceGetPciInfo(h).busId)
        handles[minor] = h
        mem = _try(nvml, "nvmlDeviceGetMemoryInfo", h)  # fails on a lost GPU
        raw[minor] = {"uuid": _text(nvml.nvmlDeviceGetUUID(h)), "mig": _mig_instances(nvml, h, minor),
                      "name": _text(nvml.nvmlDeviceGetName(h)),
                      "memory": int(mem.total) if mem is not None else None, "bus": bus,
                      "numa": _numa_node(nvml, h, bus, sysfs), "health": probe_health(nvml, h)}
    bus_of = {m: r["bus"] for m, r in raw.items()}
    pcie = _pcie_ids(nvml, handles, bus_of)
    devices = []
    for minor in sorted(raw):
        r = raw[minor]
        topo: dict[str, Any] = {}
        if r["numa"] is not None:
            sock = _socket_of_numa(r["numa"], sysfs)
            # Without sysfs assume one NUMA node per socket (the common 2-socket layout).
            topo["socketID"] = sock if sock is not None else r["numa"]
            topo["nodeID"] = r["numa"]
        topo["pcieID"] = pcie[minor]
        topo["busID"] = r["bus"]
        res = {RES_GPU_CORE: "100", RES_GPU_MEMORY_RATIO: "100"}
        if r["memory"] is not None:
            res[RES_GPU_MEMORY] = format_bytes(r["memory"])
        entry = {"type": "gpu", "minor": minor, "id": r["uuid"],
                 "model": normalize_model(r["name"]), "health": r["health"],
                 "resources": {k: res[k] for k in (RES_GPU_CORE, RES_GPU_MEMORY,
                                                   RES_GPU_MEMORY_RATIO) if k in res},
                 "topology": topo}
        if r["mig"] is not None:
            # A GPU in MIG mode is its instances (the scenario's "mig" list); an empty list
            # means MIG is on but no instance exists yet.
            entry["model"] = mig_model(r["name"], r["memory"])
            entry["mig"] = r["mig"]
        devices.append(entry)
    driver = _try(nvml, "nvmlSystemGetDriverVersion")
    return NodeInventory(devices, _nvlink_groups(nvml, handles, bus_of),
                         _text(driver) if driver is not None else None)


def load_devices_file(path: str) -> NodeInventory:
    """Reads device specs from a YAML/JSON file: a list of entries, or a mapping with `devices`
    (and optionally `nvlink_groups`), e.g. the output of `gpufleet node inventory --json`."""
    from gpufleet.documents import read_document

    doc = read_document(path)
    if isinstance(doc, list):
        doc = {"devices": doc}
    if not isinstance(doc, dict) or not isinstance(doc.get("devices"), list):
        raise ValueError(f"{path}: expected a list of devices or a mapping with 'devices'")
    groups = doc.get("nvlink_groups") or []
    _check_device_list(doc["devices"], groups, path)
    return NodeInventory(doc["devices"], [list(g) for g in groups], doc.get("driver_version"))


def _check_device_list(devices: list[Any], groups: Any, path: str) -> None:
    """The shape the node tools rely on, so that a malformed file is one line naming the entry."""
    for i, d in enumerate(devices):
        where = f"{path}: devices[{i}]"
        if not isinstance(d, dict):
            raise ValueError(f"{where}: expected a mapping")
        if type(d.get("minor")) is not int or d["minor"] < 0:
            raise ValueError(f"{where}: minor: expected a whole number >= 0, got {d.get('minor')!r}")
        for key in ("resources", "topology"):
            if d.get(key) is not None and not isinstance(d[key], dict):
                raise ValueError(f"{where}: {key}: expected a mapping")
        mig = d.get("mig")
        if mig is not None and not (isinstance(mig, list) and all(isinstance(m, dict) for m in mig)):
            raise ValueError(f"{where}: mig: expected a list of mappings")
    if not isinstance(groups, list) or not all(
            isinstance(g, list) and all(type(m) is int for m in g) for g in groups):
        raise ValueError(f"{path}: nvlink_groups: expected lists of GPU minors")
