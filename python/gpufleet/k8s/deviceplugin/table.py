"""Device IDs the plugin advertises and their mapping back to physical GPUs.

whole:  one ID per GPU, the GPU's UUID.
shared: each GPU as `replicas` IDs `<uuid>-rep-<k>`, or as memory units `<uuid>-mem-<k>`
        (card memory // unit). Kubernetes counts IDs, so a pod asking for N units gets N IDs.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from gpufleet.errors import NotFoundError
from gpufleet.node.env import device_memory_bytes, index_devices

MAX_ID_LEN = 63  # kubelet limit on Device.ID
# The kubelet's gRPC client reads messages of at most 4 MiB (grpc-go's default receive limit),
# and ListAndWatch sends every ID in one message. The exact encoded size is checked in
# `listing`; here only a bound that needs no encoding: every Device entry takes at least
# 14 bytes (entry header 2, a one-character ID 3, "Healthy" 9), so more IDs than this can
# never fit, and are refused before millions of ID strings are built.
MAX_MESSAGE_BYTES = 4 * 1024 * 1024
MIN_DEVICE_BYTES = 14


class ListingTooLarge(ValueError):
    """The advertised IDs do not fit in one ListAndWatch message the kubelet can read."""

    def __init__(self, message: str, count: int) -> None:
        super().__init__(message)
        self.count = count


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
        self.count = sum(self._count(minor, spec) for minor, spec in self.specs.items())
        if self.count > MAX_MESSAGE_BYTES // MIN_DEVICE_BYTES:
            raise ListingTooLarge(f"{self.count:,} device IDs cannot fit in one ListAndWatch message "
                                  f"(at most {MAX_MESSAGE_BYTES // MIN_DEVICE_BYTES:,} even with "
                                  "one-character IDs)", self.count)
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

    def _count(self, minor: int, spec: Mapping[str, Any]) -> int:
        """IDs this GPU is advertised as."""
        if self.mode == "whole":
            return 1
        if self.replicas is not None:
            return self.replicas
        total = device_memory_bytes(spec)
        if not total:
            raise ValueError(f"GPU minor {minor}: memory size unknown, cannot advertise memory units")
        assert self.memory_unit_bytes is not None
        if total < self.memory_unit_bytes:
            raise ValueError(f"GPU minor {minor}: the memory unit ({self.memory_unit_bytes} bytes) is larger "
                             f"than the card ({total} bytes)")
        return total // self.memory_unit_bytes

    def _suffixes(self, minor: int, spec: Mapping[str, Any]) -> list[str]:
        kind = "rep" if self.replicas is not None else "mem"
        return [f"{kind}-{k}" for k in range(self._count(minor, spec))]

    def minor_of(self, device_id: str) -> int:
        try:
            return self.id_to_minor[device_id]
        except KeyError:
            raise NotFoundError(f"unknown device id {device_id!r}") from None

    def minors_of(self, device_ids: Sequence[str]) -> list[int]:
        """Physical minors behind `device_ids`, deduplicated, in first-seen order."""
        out: list[int] = []
        for d in device_ids:
            m = self.minor_of(d)
            if m not in out:
                out.append(m)
        return out
