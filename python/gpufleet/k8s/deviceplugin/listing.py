"""The ListAndWatch device list, and the rule that the kubelet must be able to read it.

The kubelet reads each ListAndWatch message with grpc-go's default receive limit, 4 MiB; a
larger message fails on its side (`ResourceExhausted: received message larger than max`) and
the node advertises nothing. So the plugin measures the list it would send, encoded with the
real protobuf messages, in its largest form (every GPU "Unhealthy", the longer health string),
and refuses at start a configuration whose list does not fit, naming the smallest memory unit
(or the most replicas) that does.
"""
from __future__ import annotations

from collections import Counter
from typing import Any, Callable, Iterable, Mapping

from gpufleet._extras import require

require("google.protobuf", "k8s", "the device plugin (gpufleet deviceplugin)")

from gpufleet.node.annotations import MIB, format_bytes
from gpufleet.k8s.deviceplugin import api_pb2 as pb
from gpufleet.k8s.deviceplugin.table import MAX_MESSAGE_BYTES, MIN_DEVICE_BYTES, DeviceTable, ListingTooLarge
from gpufleet.k8s.deviceplugin.topology import Topology

HEALTHY, UNHEALTHY = "Healthy", "Unhealthy"

__all__ = ["HEALTHY", "MAX_MESSAGE_BYTES", "UNHEALTHY", "ListingTooLarge", "build_table", "device_list",
           "largest_size"]


def device_list(table: DeviceTable, topology: Topology, healthy: Callable[[int], bool]) -> pb.ListAndWatchResponse:
    """Every advertised ID with its GPU's health and NUMA node."""
    out: list[pb.Device] = []
    for minor, ids in table.ids_by_minor.items():
        numa = topology.numa.get(minor)
        topo = pb.TopologyInfo(nodes=[pb.NUMANode(ID=numa)]) if numa is not None else None
        health = HEALTHY if healthy(minor) else UNHEALTHY
        out.extend(pb.Device(ID=i, health=health, topology=topo) for i in ids)
    return pb.ListAndWatchResponse(devices=out)


def largest_size(table: DeviceTable, topology: Topology) -> int:
    """Encoded bytes of the largest list this table can produce (all GPUs unhealthy).

    Exactly ``device_list(table, topology, lambda _: False).ByteSize()``, without building
    every message: a repeated field encodes as the concatenation of its entries, and entries
    of one GPU differ only in their ID, so one entry per (GPU, ID length) is encoded with the
    real protobuf messages and multiplied by how many IDs share that shape.
    """
    total = 0
    for minor, ids in table.ids_by_minor.items():
        lengths = Counter(len(i) for i in ids)
        numa = topology.numa.get(minor)
        topo = pb.TopologyInfo(nodes=[pb.NUMANode(ID=numa)]) if numa is not None else None
        for length, count in lengths.items():
            one = pb.ListAndWatchResponse(devices=[pb.Device(ID="x" * length, health=UNHEALTHY, topology=topo)])
            total += count * one.ByteSize()
    return total


def build_table(devices: Iterable[Mapping[str, Any]], mode: str, topology: Topology, *,
                replicas: int | None = None, memory_unit_bytes: int | None = None) -> DeviceTable:
    """The device table, if its ListAndWatch list fits in what the kubelet reads; else
    :class:`ListingTooLarge` saying how many IDs and bytes it would take and what fits."""
    devices = list(devices)
    size = _size(devices, mode, topology, replicas, memory_unit_bytes)
    if isinstance(size, DeviceTable):
        return size
    count, encoded = size
    setting = (f"memory unit {format_bytes(memory_unit_bytes)}" if memory_unit_bytes is not None
               else f"{replicas} replicas" if replicas is not None else "one ID per GPU")
    told = (f"up to {encoded / MIB:.1f} MiB encoded" if encoded
            else f"at least {count * MIN_DEVICE_BYTES / MIB:.1f} MiB encoded")
    problem = (f"{setting} gives {count:,} device IDs ({told}); the kubelet reads at most "
               f"{MAX_MESSAGE_BYTES // MIB} MiB per ListAndWatch message")
    raise ListingTooLarge(f"{problem}; {_advice(devices, mode, topology, replicas, memory_unit_bytes)}", count)


def _size(devices: list, mode: str, topology: Topology, replicas: int | None,
          unit: int | None) -> DeviceTable | tuple[int, int]:
    """The table when it fits, else (IDs, encoded bytes; 0 when refused before encoding)."""
    try:
        table = DeviceTable(devices, mode, replicas=replicas, memory_unit_bytes=unit)
    except ListingTooLarge as err:  # refused by count, before any ID was built
        return err.count, 0
    encoded = largest_size(table, topology)
    return table if encoded <= MAX_MESSAGE_BYTES else (table.count, encoded)


def _fits(devices: list, mode: str, topology: Topology, replicas: int | None, unit: int | None) -> bool:
    try:
        return isinstance(_size(devices, mode, topology, replicas, unit), DeviceTable)
    except ValueError:  # e.g. a unit larger than a card
        return False


def _advice(devices: list, mode: str, topology: Topology, replicas: int | None, unit: int | None) -> str:
    if unit is not None:
        candidate = MIB
        while candidate <= unit or not _fits(devices, mode, topology, None, candidate):
            candidate *= 2
            if candidate > (1 << 50):
                return "no memory unit fits on these GPUs"
        return f"use a memory unit of {format_bytes(candidate)} or larger (--memory-unit {format_bytes(candidate)})"
    if replicas is not None:
        low, high = 0, replicas - 1  # the most replicas that fit lies in [low, high]
        while low < high:
            mid = (low + high + 1) // 2
            low, high = (mid, high) if _fits(devices, mode, topology, mid, None) else (low, mid - 1)
        return (f"use at most {low} replicas (--replicas {low})" if low else
                "not even one replica per GPU fits")
    return "this node has more GPUs than one message can list"
