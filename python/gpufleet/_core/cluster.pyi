"""
The cluster's accounting: pods, allocations and the Cluster that places them.
"""
from __future__ import annotations
import collections.abc
import gpufleet.cluster_results
import numpy
import numpy.typing
import typing
__all__: list[str] = ['Allocation', 'Cluster', 'DeviceGrant', 'DeviceRequest', 'FitResult', 'Pod', 'VirtualFunction', 'effective_requests']
class DeviceRequest:
    """
    What a pod asks of one device type: `count` devices (whole when `whole`), or a share of one: `core` percent of its compute, `memory_bytes` or `memory_ratio` percent of its memory. Read from Pod.devices.
    """
    def __repr__(self) -> str:
        ...
    @property
    def core(self) -> int:
        """
        Compute per device in percent (100 = a whole GPU).
        """
    @property
    def count(self) -> int:
        """
        How many devices of this type.
        """
    @property
    def memory_bytes(self) -> int:
        """
        Device memory per device in bytes (0 when asked as a ratio).
        """
    @property
    def memory_ratio(self) -> int:
        """
        Device memory per device in percent of its capacity.
        """
    @property
    def type(self) -> str:
        """
        Device type: gpu, rdma or fpga.
        """
    @property
    def whole(self) -> bool:
        """
        Whether whole devices are asked (no sharing).
        """
class Pod:
    """
    A pod to place: its name ("namespace/name"), its requests as Kubernetes quantities (cpu, memory, nvidia.com/gpu, koordinator.sh/gpu-core, gpu-memory, gpu-memory-ratio, aliyun.com/gpu-mem, rdma, fpga), node selector, tolerations, allowed GPU models, topology scope and priority. Instead of requests, `containers`, `init_containers` (an entry with restart_policy Always is a sidecar) and `overhead` give its effective request as Kubernetes computes it (see effective_requests). The constructor raises ValueError naming a malformed quantity or an invalid combination.
    """
    @staticmethod
    def from_dict(spec: dict) -> Pod:
        """
        A pod from a scenario-format dict; ValueError names a bad field.
        """
    def __init__(self, name: str, requests: dict = {}, node_selector: typing.Any = None, tolerations: typing.Any = None, gpu_models: typing.Any = None, scope: str = 'none', priority: typing.Any = 0, *, containers: typing.Any = None, init_containers: typing.Any = None, overhead: typing.Any = None) -> None:
        ...
    def __repr__(self) -> str:
        ...
    @property
    def cpu_milli(self) -> int:
        """
        CPU request in millicores.
        """
    @property
    def devices(self) -> list[DeviceRequest]:
        """
        Device requests, a list of DeviceRequest (one per device type).
        """
    @property
    def gpu_models(self) -> list[str]:
        """
        GPU models the pod accepts (empty: any).
        """
    @property
    def gpu_share(self) -> float:
        """
        Whether the pod asks for a share of one GPU rather than whole GPUs.
        """
    @property
    def memory_bytes(self) -> int:
        """
        Memory request in bytes.
        """
    @property
    def name(self) -> str:
        """
        The pod key, "namespace/name".
        """
    @property
    def priority(self) -> int:
        """
        Scheduling priority; higher may preempt lower.
        """
    @property
    def scope(self) -> str:
        """
        Topology scope the devices must share: none, pcie, numa or node.
        """
class FitResult:
    """
    Whether a pod fits a node: `code` is Ok, Unschedulable (it may fit once pods leave) or UnschedulableAndUnresolvable (it never will), with the `reason`. True when it fits.
    """
    def __bool__(self) -> bool:
        ...
    def __repr__(self) -> str:
        ...
    @property
    def code(self) -> str:
        """
        Ok, Unschedulable or UnschedulableAndUnresolvable.
        """
    @property
    def ok(self) -> bool:
        """
        True when the pod fits.
        """
    @property
    def reason(self) -> str:
        """
        Why the pod does not fit (empty when it does).
        """
class VirtualFunction:
    """
    One SR-IOV virtual function of an RDMA NIC: its minor and PCI bus id.
    """
    def __eq__(self, arg0: VirtualFunction) -> bool:  # type: ignore[override]
        ...
    def __hash__(self) -> int:
        ...
    def __repr__(self) -> str:
        ...
    @property
    def bus_id(self) -> str:
        """
        The VF's PCI bus id, e.g. 0000:1f:00.2.
        """
    @property
    def minor(self) -> int:
        """
        The VF's minor number on its NIC.
        """
class DeviceGrant:
    """
    One device given to an allocation: its type and minor number, the compute percent (`core`, 100 for a whole GPU) and the memory in bytes it holds.
    """
    def __repr__(self) -> str:
        ...
    @property
    def core(self) -> int:
        """
        Compute held, in percent of the device (100 = whole).
        """
    @property
    def memory_bytes(self) -> int:
        """
        Device memory held, in bytes.
        """
    @property
    def minor(self) -> int:
        """
        The device minor number on its node.
        """
    @property
    def type(self) -> str:
        """
        Device type: gpu, rdma or fpga.
        """
    @property
    def vfs(self) -> list[VirtualFunction]:
        """
        SR-IOV virtual functions held on an RDMA NIC, a list of VirtualFunction (empty for other devices).
        """
class Allocation:
    """
    The devices, CPU (millicores) and memory (bytes) a pod holds on a node, Reserved (between reserve and commit) or Bound. Renders the pod annotations that record it, from which Cluster.restore rebuilds the state.
    """
    def __repr__(self) -> str:
        ...
    def annotations(self, gpushare: bool = False, unit_bytes: typing.Any = 1048576) -> dict[str, str]:
        """
        Pod annotations recording this allocation (Koordinator's, and gpushare's if asked, with memory in units of `unit_bytes`; ValueError unless it is positive).
        """
    def device_allocated(self) -> typing.Any:
        """
        The Koordinator device-allocated annotation as a dict.
        """
    @property
    def assume_time_ns(self) -> int:
        """
        When it was reserved, in nanoseconds since the Unix epoch (gpushare's ASSUME_TIME).
        """
    @property
    def cpu_milli(self) -> int:
        """
        CPU held, in millicores.
        """
    @property
    def devices(self) -> list[DeviceGrant]:
        """
        The devices held, a list of DeviceGrant.
        """
    @property
    def memory_bytes(self) -> int:
        """
        Memory held, in bytes.
        """
    @property
    def node(self) -> str:
        """
        The node it is on.
        """
    @property
    def pod(self) -> str:
        """
        The pod key, "namespace/name".
        """
    @property
    def state(self) -> str:
        """
        Reserved (bind in flight) or Bound.
        """
class Cluster:
    """
    The cluster's accounting: nodes, their devices and the allocations that hold them. Filter, score and place pods; reserve, commit, release; snapshot and restore. Safe to call from many threads: readers share a lock, changes hold it alone, and no change ever over-commits a device.
    """
    __hash__: typing.ClassVar[None]  # type: ignore[assignment]
    @staticmethod
    def restore(snapshot: str) -> Cluster:
        """
        A cluster from snapshot() text; ValueError names what is wrong in it.
        """
    def __eq__(self, other: Cluster) -> bool:  # type: ignore[override]
        ...
    def __init__(self) -> None:
        ...
    def add_node(self, spec: dict) -> None:
        """
        Add a node from a scenario-format dict (see docs/scenario.md).
        """
    def allocation(self, pod: str) -> Allocation | None:
        """
        The pod's Allocation, or None.
        """
    def allocations(self) -> list[Allocation]:
        """
        Every allocation held (Reserved and Bound), as a list of Allocation.
        """
    def check_invariants(self) -> None:
        """
        Check that every device's usage equals the sum of the allocations on it and stays within its capacity; RuntimeError naming the first broken rule.
        """
    def commit(self, pod: str) -> None:
        """
        Reserved -> bound; KeyError if the pod holds no allocation.
        """
    def copy(self) -> Cluster:
        """
        A deep copy with its own lock and its own strategies (fresh memos, generators from their seeds).
        """
    def device_usage(self, copy: bool = False) -> gpufleet.cluster_results.DeviceUsage:
        """
        One row per device, as equal-length columns that pd.DataFrame takes as they are: node (index in node_names() order), node_name, minor, is_gpu, type, model, healthy, core/memory capacity and core/memory used, read at one instant (a node without devices has no row). With copy=False, core_used/memory_used are read-only zero-copy views of the core's live buffers: they follow later placements (not a consistent snapshot while other threads place) until a node is added or removed. copy=True returns private copies taken with the metadata under one lock.
        """
    def filter(self, pod: typing.Any, node: str) -> FitResult:
        """
        Whether the pod fits the node now (selector, taints, CPU, memory, pod count and each device): a FitResult with the reason when it does not. KeyError for an unknown node.
        """
    def filter_nodes(self, pod: typing.Any, nodes: collections.abc.Sequence[str]) -> tuple[numpy.typing.NDArray[numpy.int8], list[str]]:
        """
        Filter many nodes in one native call: (codes, reasons). Codes: 0 Ok, 1 Unschedulable, 2 UnschedulableAndUnresolvable, -1 unknown node.
        """
    def has_node(self, name: str) -> bool:
        """
        Whether a node of that name exists.
        """
    def node(self, name: str) -> gpufleet.cluster_results.NodeSpec:
        """
        The node's spec as a dict (a NodeSpec); KeyError if absent.
        """
    def node_device_use(self, nodes: collections.abc.Sequence[str]) -> list[dict[tuple[str, int], tuple[int, int]] | None]:
        """
        Per named node, read at one instant: its devices that hold some usage, as (type, minor) -> (core used, memory used) (what device_usage() gives for those rows), or None for a node that does not exist.
        """
    def node_names(self) -> list[str]:
        """
        The node names, in the order they were added.
        """
    def place(self, pod: typing.Any, strategy: str = 'binpack', commit: bool = True, nodes: typing.Any = None) -> gpufleet.cluster_results.PlaceResult:
        """
        Filter, score and bind the best node (`nodes`: only these, ties to the earlier one). Returns a PlaceResult(allocation, reason), a named tuple: (Allocation, '') or (None, reason).
        """
    def place_many(self, pods: collections.abc.Sequence[Pod], strategy: str = 'binpack') -> numpy.typing.NDArray[numpy.int32]:
        """
        Place pods in order, as one call that no other call on this cluster interleaves; returns each pod's node index (-1 when it did not fit).
        """
    def plan(self, pod: typing.Any, node: str, strategy: str = 'binpack') -> Allocation:
        """
        The devices `strategy` would choose, without changing the state.
        """
    def release(self, pod: str) -> None:
        """
        Free a reserved or bound allocation; KeyError if there is none.
        """
    def remove_node(self, name: str) -> None:
        """
        Remove a node; KeyError if absent, ValueError while pods hold it.
        """
    def reserve(self, pod: typing.Any, node: str, strategy: str = 'binpack') -> Allocation:
        """
        Hold the devices, CPU and memory the strategy picks on the node for the pod (state Reserved) and return the Allocation; commit() binds it, unreserve() gives it back. ValueError when the pod does not fit or already holds an allocation, KeyError for an unknown node; the state is unchanged on error.
        """
    def restore_allocation(self, pod: typing.Any, node: str, annotations: collections.abc.Mapping[str, str], unit_bytes: typing.Any = 1048576) -> Allocation:
        """
        Rebuild a bound pod's allocation from its annotations (after a restart); gpushare's memory counts in units of `unit_bytes` (ValueError unless it is positive).
        """
    def score(self, pod: typing.Any, node: str, strategy: str = 'binpack') -> float:
        """
        The strategy's score for placing the pod on the node, in [0, 100] (higher is better). KeyError for an unknown node or strategy.
        """
    def score_nodes(self, pod: typing.Any, nodes: collections.abc.Sequence[str], strategy: str = 'binpack') -> numpy.typing.NDArray[numpy.float64]:
        """
        Scores in [0, 100] for many nodes in one native call; NaN for an unknown node.
        """
    def set_device_health(self, node: str, minor: typing.Any, healthy: bool, type: str = 'gpu') -> None:
        """
        Mark one device (by node, type and minor) healthy or not; an unhealthy device takes no new pods, and pods already on it keep their allocation. KeyError for an unknown node or device.
        """
    def snapshot(self) -> str:
        """
        The state as JSON text, taken at one instant (no call on this cluster interleaves).
        """
    def unreserve(self, pod: str) -> None:
        """
        Drop a reserved (not yet bound) allocation; a no-op if there is none.
        """
    def usage_changes(self, since: int) -> tuple[int, list[str] | None]:
        """
        What changed since version `since` (0 the first time): (version, nodes). `version` is the state now, to pass next time; `nodes` names each node whose usage, health or allocations changed since `since` (added nodes too), once, in the order of its first change, or is None when that is not known any more (a version from another cluster or copy, one from before a node was removed, or one so old that the record was trimmed): then read every node. Versions only grow; reads leave them as they are. A change made after this call reaches the next call's answer.
        """
    @property
    def num_devices(self) -> int:
        """
        How many devices (GPUs, RDMA NICs, FPGAs) all nodes have together.
        """
    @property
    def num_nodes(self) -> int:
        """
        How many nodes the cluster has.
        """
def effective_requests(spec: dict, where: str = 'pod') -> dict[str, str]:
    """
    A pod's effective request as Kubernetes computes it, {resource: exact quantity text}: from `spec`'s containers ([{name, requests, limits}], a missing request defaulting to the limit), init_containers (restart_policy Always: a sidecar) and overhead, the larger of what initialization needs (each init container beside the sidecars started before it) and what runs after it (regular containers and sidecars), plus the overhead; from its requests when it lists no containers. Each quantity is read once, exactly; zero amounts are left out. ValueError names `where` and the field.
    """
