"""What a Cluster answers, as types a checker can follow: :class:`PlaceResult` (``Cluster.place``),
:class:`DeviceUsage` (``Cluster.device_usage``) and :class:`NodeSpec` (``Cluster.node``).

``PlaceResult`` is a ``typing.NamedTuple`` that the extension builds, not a bound class: it stays a
real tuple (``alloc, reason = cluster.place(pod)``, ``== (None, reason)``, ``isinstance(r,
tuple)`` all keep working), and a type checker sees each field's own type when the result is
unpacked or read by name, which a bound class with ``__iter__`` cannot give.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple, TypedDict

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from gpufleet._core import Allocation

__all__ = ["DeviceSpec", "DeviceTopology", "DeviceUsage", "NodeSpec", "PlaceResult", "Taint"]


class PlaceResult(NamedTuple):
    """Where ``Cluster.place`` put the pod: its ``allocation`` and an empty ``reason``, or no
    allocation and the ``reason`` no node took it."""

    allocation: Allocation | None
    reason: str


class DeviceUsage(TypedDict):
    """``Cluster.device_usage()``: one column per field, one row per device (``pd.DataFrame(u)``
    takes it as is). ``node`` is the device's node index in ``Cluster.node_names()`` order and
    ``node_name`` that node's name, repeated for each of its devices."""

    node: npt.NDArray[np.int32]
    node_name: list[str]
    minor: npt.NDArray[np.int32]
    type: list[str]
    model: list[str]
    is_gpu: npt.NDArray[np.bool_]
    healthy: npt.NDArray[np.bool_]
    core_capacity: npt.NDArray[np.int64]
    memory_capacity: npt.NDArray[np.int64]
    core_used: npt.NDArray[np.int64]
    memory_used: npt.NDArray[np.int64]


class Taint(TypedDict):
    key: str
    value: str
    effect: str


class DeviceTopology(TypedDict):
    socketID: int
    nodeID: int
    pcieID: str
    busID: str


class _DeviceSpecFields(TypedDict):
    type: str
    minor: int
    id: str
    model: str
    topology: DeviceTopology


class DeviceSpec(_DeviceSpecFields, total=False):
    """One entry of :attr:`NodeSpec.devices`: a device (with ``health`` and ``resources``), or a
    GPU in MIG mode with its ``mig`` instances."""

    health: bool
    resources: dict[str, str]
    mig: list[dict[str, Any]]
    vfGroups: list[dict[str, Any]]


class _NodeSpecFields(TypedDict):
    name: str
    cpu: str
    memory: str
    pods: int
    labels: dict[str, str]
    gpu_sharing: str
    taints: list[Taint]
    nvlink_groups: list[list[int]]
    devices: list[DeviceSpec]


class NodeSpec(_NodeSpecFields, total=False):
    """``Cluster.node(name)``: the node in the scenario format (docs/scenario.md), quantities as
    text; ``mig_strategy`` only when a GPU is in MIG mode."""

    mig_strategy: str
