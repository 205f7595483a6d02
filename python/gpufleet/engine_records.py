"""The plain data of the engine's results (``to_dict()`` of ``gpufleet._core.CycleResult`` and
its rows, what ``gpufleet cycle -o json`` prints), as TypedDicts a type checker can follow. The
keys are each bound class's ``fields``; tests/python/test_typing.py checks they agree."""
from __future__ import annotations

from typing import TypedDict

__all__ = ["BindRecord", "CycleRecord", "DeviceRecord", "EvictRecord", "HeldRecord",
           "QueueShareRecord", "ResourcesRecord"]


class ResourcesRecord(TypedDict):
    """cpu in millicores, memory in bytes, gpu in whole-GPU equivalents (inf: unlimited)."""

    cpu: float
    memory: float
    gpu: float


class DeviceRecord(TypedDict):
    """One device a bind holds: core in percent of the device, memory in bytes."""

    type: str
    minor: int
    core: int
    memory_bytes: int


class BindRecord(TypedDict):
    node: str
    cpu_milli: int
    memory_bytes: int
    devices: list[DeviceRecord]
    job: str
    task: str


class EvictRecord(TypedDict):
    job: str
    task: str
    node: str
    reason: str


class QueueShareRecord(TypedDict):
    queue: str
    weight: float
    allocated: ResourcesRecord
    subtree_allocated: ResourcesRecord
    request: ResourcesRecord
    deserved: ResourcesRecord
    held: ResourcesRecord
    share: float


class HeldRecord(TypedDict):
    cpu: float
    memory: float
    gpu: float
    node: str
    job: str


class CycleRecord(TypedDict):
    cycle: int
    binds: list[BindRecord]
    evictions: list[EvictRecord]
    pending: dict[str, str]
    queues: list[QueueShareRecord]
    held: list[HeldRecord]
    target: str
