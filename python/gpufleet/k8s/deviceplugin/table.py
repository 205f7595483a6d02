"""Device IDs the plugin advertises and their mapping back to physical GPUs.

whole:  one ID per GPU, the GPU's UUID.
shared: each GPU as `replicas` IDs `<uuid>-rep-<k>`, or as memory units `<uuid>-mem-<k>`
        (card memory // unit). Kubernetes counts IDs, so a pod asking for N units gets N IDs.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from gpufleet.node.env import device_memory_bytes, index_devices

MAX_ID_LEN = 63  # kubelet limit on Device.ID
MAX_IDS = 100_000  # keeps ListAndWatch messages well under gRPC's 4 MiB default


class DeviceTable:
    def __init__(self, devices: Iterable[Mapping[str, Any]], mode: str = "whole", *,
                 replicas: int | None = None, memory_unit_bytes: int | None = None) -> None:
        if mode not in ("whole", "shared"):
            raise ValueError(f"mode must be 'whole' or 'shared', got {mode!r}")
        if mode == "shared" and (replicas is None) == (memory_unit_bytes is None):
            raise ValueError("shared mode needs exactly one of replicas=N or memory_unit_bytes=B")
        if replicas is not None and replicas <= 0:
            raise ValueError(f"replicas must be positive, got {replicas}")
        if memory_unit_bytes is not None and memory_unit_bytes <= 0:
            raise ValueError(f"memory unit must be positive, got {memory_unit_bytes}")
        self.mode = mode
        self.replicas = replicas
        self.memory_unit_bytes = memory_unit_bytes
        self.specs = index_devices(devices)
        if not self.specs:
            raise ValueError("no GPUs to advertise")
        self.ids: list[str] = []
        self.id_to_minor: dict[str, int] = {}
        self.ids_by_minor: dict[int, list[str]] = {}
        for minor in sorted(self.specs):
            spec = self.specs[minor]
            base = str(spec.get("id") or spec.get("uuid") or f"gpu-{minor}")
            ids = [f"{base}-{suffix}" for suffix in self._suffixes(minor, spec)] if mode == "shared" else [base]
            for i in ids:
                if len(i) > MAX_ID_LEN:
                    raise ValueError(f"device id {i!r} is longer than {MAX_ID_LEN} characters")
                if i in self.id_to_minor:
                    raise ValueError(f"duplicate device id {i!r}")
                self.id_to_minor[i] = minor
            self.ids.extend(ids)
            self.ids_by_minor[minor] = ids
        if len(self.ids) > MAX_IDS:
            raise ValueError(f"{len(self.ids)} device ids is too many for one ListAndWatch message; "
                             "use a larger memory unit")

    def _suffixes(self, minor: int, spec: Mapping[str, Any]) -> list[str]:
        if self.replicas is not None:
            return [f"rep-{k}" for k in range(self.replicas)]
        total = device_memory_bytes(spec)
        if not total:
            raise ValueError(f"GPU minor {minor}: memory size unknown, cannot advertise memory units")
        assert self.memory_unit_bytes is not None
        return [f"mem-{k}" for k in range(total // self.memory_unit_bytes)]

    def minor_of(self, device_id: str) -> int:
        try:
            return self.id_to_minor[device_id]
        except KeyError:
            raise KeyError(f"unknown device id {device_id!r}") from None

    def minors_of(self, device_ids: Sequence[str]) -> list[int]:
        """Physical minors behind `device_ids`, deduplicated, in first-seen order."""
        out: list[int] = []
        for d in device_ids:
            m = self.minor_of(d)
            if m not in out:
                out.append(m)
        return out
