"""A stand-in for pynvml that replays answers recorded in a JSON file.

Lets the inventory, health and profiler code run on machines without a GPU (CI) and lets
`gpufleet node inventory --replay FILE` show what a given box would report. Format:

    {"driver_version": "550.54.15",
     "devices": [{"index": 0, "minor": 0, "uuid": "GPU-...", "name": "NVIDIA H100 80GB HBM3",
                  "memory_total": 85520809984, "memory_used": 0, "pci_bus_id": "00000000:18:00.0",
                  "numa_node": 0,                       # null: query not supported
                  "remapped_rows": [0, 0, false, false], # (corrected, uncorrected, pending, failed)
                  "retired_pages_pending": null, "lost": false,
                  "nvlinks": [{"link": 0, "remote_bus_id": "00000000:05:00.0"}],
                  "mig_mode": 1,                        # absent: MIG not supported
                  "mig_devices": [{"uuid": "MIG-...", "name": "NVIDIA A100-SXM4-80GB MIG 3g.40gb",
                                   "gpu_instance_id": 2, "profile_id": 9, "start": 0, "size": 4,
                                   "memory_total": 42346610688}]}],
     "topology_common_ancestor": [[0, 10, ...], ...]}   # NVML_TOPOLOGY_* level per GPU pair
"""
from __future__ import annotations

from typing import Any

NVML_ERROR_INVALID_ARGUMENT = 2
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NOT_FOUND = 6
NVML_ERROR_GPU_IS_LOST = 15
NVML_DEVICE_MIG_DISABLE = 0
NVML_DEVICE_MIG_ENABLE = 1
MAX_MIG_DEVICES = 7  # what NVML reports for A100/H100/H200


class NVMLError(Exception):
    def __init__(self, value: int) -> None:
        super().__init__(f"NVML error {value}")
        self.value = value


class _Obj:
    def __init__(self, **kw: Any) -> None:
        self.__dict__.update(kw)


class _MigHandle:
    """A MIG device handle: the recorded instance and its parent GPU's index."""

    def __init__(self, parent: int, entry: dict[str, Any]) -> None:
        self.parent = parent
        self.entry = entry


class ReplayNvml:
    NVMLError = NVMLError

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        self.devices: list[dict[str, Any]] = sorted(data["devices"], key=lambda d: d.get("index", 0))
        self.initialised = 0

    @classmethod
    def from_json(cls, path: str) -> "ReplayNvml":
        """The recording in ``path``, read by the strict reader (gpufleet.documents); ValueError,
        one line naming the file, when it is unreadable or has no list of device mappings."""
        from gpufleet.documents import ScenarioError, read_document
        data = read_document(path)
        devices = data.get("devices") if isinstance(data, dict) else None
        if not isinstance(devices, list) or not all(
                isinstance(d, dict) and type(d.get("index", 0)) is int for d in devices):
            raise ScenarioError(f"{path}: expected recorded NVML answers: a mapping whose 'devices' "
                                "is a list of mappings (with an integer 'index')")
        return cls(data)

    def _dev(self, handle: Any, *, lost_ok: bool = False) -> dict[str, Any]:
        if isinstance(handle, _MigHandle):
            return handle.entry
        if not isinstance(handle, int) or not 0 <= handle < len(self.devices):
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        d = self.devices[handle]
        if d.get("lost") and not lost_ok:
            raise NVMLError(NVML_ERROR_GPU_IS_LOST)
        return d

    def _field(self, handle: int, key: str) -> Any:
        v = self._dev(handle).get(key)
        if v is None:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        return v

    # --- the pynvml functions gpufleet uses ---
    def nvmlInit(self) -> None:
        self.initialised += 1

    def nvmlShutdown(self) -> None:
        self.initialised -= 1

    def nvmlSystemGetDriverVersion(self) -> str:
        return self.data.get("driver_version", "")

    def nvmlDeviceGetCount(self) -> int:
        return len(self.devices)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        self._dev(index, lost_ok=True)
        return index

    def nvmlDeviceGetUUID(self, h: int) -> str:
        return self._dev(h, lost_ok=True)["uuid"]

    def nvmlDeviceGetMinorNumber(self, h: int) -> int:
        return self._dev(h, lost_ok=True).get("minor", h)

    def nvmlDeviceGetName(self, h: int) -> str:
        return self._dev(h, lost_ok=True)["name"]

    def nvmlDeviceGetPciInfo(self, h: int) -> _Obj:
        return _Obj(busId=self._dev(h, lost_ok=True)["pci_bus_id"])

    def nvmlDeviceGetMemoryInfo(self, h: int) -> _Obj:
        d = self._dev(h)  # a lost GPU fails live queries; static facts above stay readable
        used = int(d.get("memory_used", 0))
        total = int(d["memory_total"])
        return _Obj(total=total, used=used, free=total - used)

    def nvmlDeviceGetNumaNodeId(self, h: int) -> int:
        return int(self._field(h, "numa_node"))

    def nvmlDeviceGetRemappedRows(self, h: int) -> tuple:
        return tuple(self._field(h, "remapped_rows"))

    def nvmlDeviceGetRetiredPagesPendingStatus(self, h: int) -> int:
        return int(self._field(h, "retired_pages_pending"))

    def nvmlDeviceGetTopologyCommonAncestor(self, h1: int, h2: int) -> int:
        m = self.data.get("topology_common_ancestor")
        if m is None:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        return int(m[h1][h2])

    def _link(self, h: int, link: int) -> dict[str, Any] | None:
        for entry in self._dev(h).get("nvlinks") or []:
            if entry["link"] == link:
                return entry
        return None

    def nvmlDeviceGetNvLinkState(self, h: int, link: int) -> int:
        if not self._dev(h).get("nvlinks"):
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        return 1 if self._link(h, link) else 0

    def nvmlDeviceGetNvLinkRemotePciInfo(self, h: int, link: int) -> _Obj:
        entry = self._link(h, link)
        if entry is None:
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        return _Obj(busId=entry["remote_bus_id"])

    # --- MIG ---
    def _mig_devices(self, h: int) -> list[dict[str, Any]]:
        d = self._dev(h)
        if d.get("mig_mode") is None:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        return list(d.get("mig_devices") or [])

    def nvmlDeviceGetMigMode(self, h: int) -> list[int]:
        mode = self._dev(h).get("mig_mode")
        if mode is None:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        return [int(mode), int(mode)]  # (current, pending)

    def nvmlDeviceGetMaxMigDeviceCount(self, h: int) -> int:
        self._mig_devices(h)
        return MAX_MIG_DEVICES

    def nvmlDeviceGetMigDeviceHandleByIndex(self, h: int, index: int) -> _MigHandle:
        migs = self._mig_devices(h)
        if not 0 <= index < MAX_MIG_DEVICES:
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        if index >= len(migs):
            raise NVMLError(NVML_ERROR_NOT_FOUND)
        return _MigHandle(h, migs[index])

    def nvmlDeviceIsMigDeviceHandle(self, h: Any) -> int:
        return int(isinstance(h, _MigHandle))

    def nvmlDeviceGetDeviceHandleFromMigDeviceHandle(self, h: _MigHandle) -> int:
        return h.parent

    def nvmlDeviceGetGpuInstanceId(self, h: _MigHandle) -> int:
        if not isinstance(h, _MigHandle):
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        return int(h.entry["gpu_instance_id"])

    def nvmlDeviceGetGpuInstanceById(self, h: int, gi_id: int) -> _Obj:
        for m in self._mig_devices(h):
            if int(m["gpu_instance_id"]) == gi_id:
                return _Obj(entry=m, parent=h)
        raise NVMLError(NVML_ERROR_NOT_FOUND)

    def nvmlGpuInstanceGetInfo(self, gi: _Obj) -> _Obj:
        m = gi.entry
        return _Obj(device=gi.parent, id=int(m["gpu_instance_id"]), profileId=int(m["profile_id"]),
                    placement=_Obj(start=int(m["start"]), size=int(m["size"])))
