"""
gpufleet native core
"""
from __future__ import annotations
import collections.abc
import numpy
import numpy.typing
import typing
__all__: list[str] = ['Allocation', 'BindDecision', 'Cluster', 'CycleResult', 'DeviceGrant', 'DeviceRequest', 'DraAnswer', 'DraClaimRequests', 'DraHeld', 'DraNodeTable', 'EngineScheduler', 'EvictDecision', 'FitResult', 'HeldCapacity', 'JobState', 'JobView', 'OpenbReplayRun', 'PlaceResult', 'Pod', 'QueueShare', 'QueueSpec', 'QueueView', 'Resources', 'SimJobs', 'SimRun', 'SimSummary', 'SimTimeseries', 'TaskView', 'VirtualFunction', 'dra_score', 'dra_solve', 'dra_solve_prepared', 'engine_callback_points', 'engine_check_config', 'engine_default_config', 'engine_dra_holdings', 'engine_dra_set', 'engine_plugin_switches', 'format_bytes', 'maximize_lp', 'mig_geometry', 'parse_milli', 'parse_quantity', 'parse_quantity_exact', 'parse_resource_quantity', 'place_gang', 'queue_drs', 'queue_fair_shares', 'queue_objects', 'queue_tree_check', 'registry_duplicates', 'registry_metadata', 'sim_check_policy', 'sim_run', 'simulate_queues', 'topology_domains', 'water_fill', 'wire_keys']
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
    A pod to place: its name ("namespace/name"), its requests as Kubernetes quantities (cpu, memory, nvidia.com/gpu, koordinator.sh/gpu-core, gpu-memory, gpu-memory-ratio, aliyun.com/gpu-mem, rdma, fpga), node selector, tolerations, allowed GPU models, topology scope and priority. The constructor raises ValueError naming a malformed quantity or an invalid combination.
    """
    @staticmethod
    def from_dict(spec: dict) -> Pod:
        """
        A pod from a scenario-format dict; ValueError names a bad field.
        """
    def __init__(self, name: str, requests: dict = {}, node_selector: typing.Any = None, tolerations: typing.Any = None, gpu_models: typing.Any = None, scope: str = 'none', priority: typing.Any = 0) -> None:
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
    def __eq__(self, arg0: VirtualFunction) -> bool:
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
class PlaceResult:
    def __bool__(self) -> bool:
        ...
    @property
    def placed(self) -> bool:
        ...
    @property
    def reason(self) -> str:
        ...
class Cluster:
    """
    The cluster's accounting: nodes, their devices and the allocations that hold them. Filter, score and place pods; reserve, commit, release; snapshot and restore. Safe to call from many threads: readers share a lock, changes hold it alone, and no change ever over-commits a device.
    """
    __hash__: typing.ClassVar[None] = None
    @staticmethod
    def restore(snapshot: str) -> Cluster:
        """
        A cluster from snapshot() text; ValueError names what is wrong in it.
        """
    def __eq__(self, other: Cluster) -> bool:
        ...
    def __init__(self) -> None:
        ...
    def add_node(self, spec: dict) -> None:
        """
        Add a node from a scenario-format dict (see docs/scenario.md).
        """
    def allocation(self, pod: str) -> typing.Any:
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
    def device_usage(self, copy: bool = False) -> dict:
        """
        Per-device arrays (node index, minor, type, model, health, capacities, usage) and the node names the node index refers to, read at one instant. With copy=False, core_used/memory_used are read-only zero-copy views of the core's live buffers: they follow later placements (not a consistent snapshot while other threads place) until a node is added or removed. copy=True returns private copies taken with the metadata under one lock.
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
    def host_priorities(self, pod: typing.Any, nodes: list, strategy: str = 'binpack', max_priority: typing.Any = 10) -> list:
        """
        The extender's prioritize in one native call: [{'Host': name, 'Score': s}] with s the node's score scaled from [0, 100] to [0, max_priority] (rounded half to even); 0 for a node this cluster does not have. Raises TypeError for an entry that is not a string, ValueError for an unknown strategy or a max_priority outside 1 to 2^31-1.
        """
    def node(self, name: str) -> typing.Any:
        """
        The node's spec as a dict; KeyError if absent.
        """
    def node_names(self) -> list[str]:
        """
        The node names, in the order they were added.
        """
    def partition_nodes(self, pod: typing.Any, nodes: list) -> tuple[list, dict, dict, list]:
        """
        The extender's filter in one native call: (passed, failed, unresolvable, unknown).
        
        `nodes` is a list of node names, read once when the call starts (another thread may change the list meanwhile). `passed` lists the nodes that fit, in the given order; `failed` maps a node that does not fit now to the reason (preemption may help); `unresolvable` maps a node that can never fit to the reason; `unknown` lists names this cluster does not have. Raises TypeError naming the first entry that is not a string.
        """
    def place(self, pod: typing.Any, strategy: str = 'binpack', commit: bool = True, nodes: typing.Any = None) -> tuple:
        """
        Filter, score and bind the best node. Returns (Allocation, '') or (None, reason).
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
class Resources:
    """
    A fairness vector: cpu in millicores, memory in bytes and gpu in whole-GPU equivalents (a 50% share counts 0.5); inf means unlimited.
    """
    def __repr__(self) -> str:
        ...
    def to_dict(self) -> dict:
        """
        Plain data: {"cpu", "memory", "gpu"}.
        """
    @property
    def cpu(self) -> float:
        """
        CPU in millicores.
        """
    @property
    def gpu(self) -> float:
        """
        GPUs in whole-GPU equivalents.
        """
    @property
    def memory(self) -> float:
        """
        Memory in bytes.
        """
class BindDecision:
    """
    A task the cycle bound: its job, the node and what it holds there (CPU, memory and the devices).
    """
    def __repr__(self) -> str:
        ...
    def to_dict(self) -> dict:
        """
        Plain data: node, cpu_milli, memory_bytes, devices (type, minor, core, memory_bytes), job, task.
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
    def gpu_core(self) -> int:
        """
        GPU compute held, in percent of one GPU summed over its GPUs.
        """
    @property
    def gpus(self) -> list[int]:
        """
        Minor numbers of the GPUs held, in grant order.
        """
    @property
    def job(self) -> str:
        """
        The job the task belongs to.
        """
    @property
    def memory_bytes(self) -> int:
        """
        Memory held, in bytes.
        """
    @property
    def node(self) -> str:
        """
        The node the task is bound to.
        """
    @property
    def task(self) -> str:
        """
        The task's pod name.
        """
class EvictDecision:
    """
    A running task the cycle evicted, and why.
    """
    def __repr__(self) -> str:
        ...
    def to_dict(self) -> dict:
        """
        Plain data: job, task, node, reason.
        """
    @property
    def job(self) -> str:
        """
        The job the task belongs to.
        """
    @property
    def node(self) -> str:
        """
        The node it was running on.
        """
    @property
    def reason(self) -> str:
        """
        Why it was evicted (e.g. preempted by task x, reclaimed for queue y).
        """
    @property
    def task(self) -> str:
        """
        The evicted task's pod name.
        """
class QueueShare:
    """
    A queue's standing at the end of a cycle: what it holds, asks for and deserves (Resources), and its share.
    """
    def __repr__(self) -> str:
        ...
    def to_dict(self) -> dict:
        """
        Plain data: queue, weight, allocated, request, deserved, held (each cpu, memory, gpu), share.
        """
    @property
    def allocated(self) -> Resources:
        """
        Resources its running tasks hold.
        """
    @property
    def deserved(self) -> Resources:
        """
        Its deserved resources (proportion plugin); inf when no plugin sets them.
        """
    @property
    def held(self) -> Resources:
        """
        Capacity held for this queue's starvation target (not in allocated).
        """
    @property
    def queue(self) -> str:
        """
        The queue's name.
        """
    @property
    def request(self) -> Resources:
        """
        Resources held plus pending requests (its demand).
        """
    @property
    def share(self) -> float:
        """
        Max over resources of allocated / deserved (0 when nothing is allocated).
        """
    @property
    def weight(self) -> float:
        """
        The queue's weight.
        """
class HeldCapacity:
    """
    Capacity a node holds for the starvation target at the end of a cycle: taken, not idle.
    """
    def __repr__(self) -> str:
        ...
    def to_dict(self) -> dict:
        """
        Plain data: cpu, memory, gpu, node, job.
        """
    @property
    def cpu(self) -> float:
        """
        CPU held, in millicores.
        """
    @property
    def gpu(self) -> float:
        """
        GPUs held, in whole-GPU equivalents.
        """
    @property
    def job(self) -> str:
        """
        The target job it is held for.
        """
    @property
    def memory(self) -> float:
        """
        Memory held, in bytes.
        """
    @property
    def node(self) -> str:
        """
        The node holding the capacity.
        """
    @property
    def resources(self) -> Resources:
        """
        The capacity held, as Resources.
        """
class CycleResult:
    """
    What one scheduling cycle decided: binds, evictions, pending reasons, queue shares and capacity held for the starvation target. Immutable.
    """
    def __repr__(self) -> str:
        ...
    def to_dict(self) -> dict:
        """
        Plain data for JSON/YAML: cycle, binds, evictions, pending, queues, held, target.
        """
    @property
    def binds(self) -> list[BindDecision]:
        """
        Tasks bound this cycle, a list of BindDecision.
        """
    @property
    def cycle(self) -> int:
        """
        This cycle's number (0 for the first).
        """
    @property
    def evictions(self) -> list[EvictDecision]:
        """
        Tasks evicted this cycle, a list of EvictDecision.
        """
    @property
    def held(self) -> list[HeldCapacity]:
        """
        Capacity held for the target per node, a list of HeldCapacity (empty: no target).
        """
    @property
    def held_gpus(self) -> float:
        """
        GPUs (whole-GPU equivalents) held for the target at the end of the cycle.
        """
    @property
    def pending(self) -> dict[str, str]:
        """
        Why each job short of its gang did not run: {job: reason}.
        """
    @property
    def queues(self) -> list[QueueShare]:
        """
        Each queue's standing, a list of QueueShare.
        """
    @property
    def target(self) -> str:
        """
        The starvation target this cycle ("" none), whether or not it started.
        """
class JobState:
    """
    A job's standing in the engine, read under the engine's lock.
    """
    def __repr__(self) -> str:
        ...
    def to_dict(self) -> dict:
        """
        Plain data: name, queue, priority, min_available, tasks, running, admitted, waiting_cycles.
        """
    @property
    def admitted(self) -> bool:
        """
        Whether the enqueue action admitted it.
        """
    @property
    def min_available(self) -> int:
        """
        Tasks that must run together (the gang).
        """
    @property
    def name(self) -> str:
        """
        The job's name.
        """
    @property
    def priority(self) -> int:
        """
        Its priority (higher goes first).
        """
    @property
    def queue(self) -> str:
        """
        The queue it belongs to.
        """
    @property
    def running(self) -> int:
        """
        Number of its tasks running.
        """
    @property
    def tasks(self) -> int:
        """
        Number of tasks in the job.
        """
    @property
    def waiting_cycles(self) -> int:
        """
        Consecutive cycles the job was not ready to run.
        """
class QueueSpec:
    """
    A queue as configured: name, weight, capability and reclaimable flag.
    """
    def __repr__(self) -> str:
        ...
    def to_dict(self) -> typing.Any:
        """
        The queue in the spec format (valid input to add_queue): name, weight, capability, reclaimable.
        """
    @property
    def capability(self) -> typing.Any:
        """
        Its hard limits in the spec's units ({cpu: cores, memory: bytes, gpu}); only the limits set, empty when none.
        """
    @property
    def name(self) -> str:
        """
        The queue's name.
        """
    @property
    def parent(self) -> str:
        """
        Its parent queue in a queue tree ("": top).
        """
    @property
    def reclaimable(self) -> bool:
        """
        Whether others may take back what exceeds its share.
        """
    @property
    def weight(self) -> float:
        """
        Its weight in the proportion plugin's split.
        """
class JobView:
    """
    A job as a Python plugin's callbacks see it (a copy taken for the call).
    """
    def __repr__(self) -> str:
        ...
    def to_dict(self) -> dict:
        """
        Plain data: name, queue, priority, min_available, tasks, occupied, waiting_cycles, allocated.
        """
    @property
    def allocated(self) -> Resources:
        """
        Resources its occupying tasks hold.
        """
    @property
    def min_available(self) -> int:
        """
        Tasks that must run together (the gang).
        """
    @property
    def name(self) -> str:
        """
        The job's name.
        """
    @property
    def occupied(self) -> int:
        """
        Number of its tasks allocated or running.
        """
    @property
    def priority(self) -> int:
        """
        Its priority (higher goes first).
        """
    @property
    def queue(self) -> str:
        """
        The queue it belongs to.
        """
    @property
    def tasks(self) -> int:
        """
        Number of tasks in the job.
        """
    @property
    def waiting_cycles(self) -> int:
        """
        Consecutive cycles the job was not ready to run.
        """
class TaskView:
    """
    A task as a Python plugin's callbacks see it (a copy taken for the call).
    """
    def __repr__(self) -> str:
        ...
    def to_dict(self) -> dict:
        """
        Plain data: name, job, priority, status, node, request.
        """
    @property
    def job(self) -> str:
        """
        The job it belongs to.
        """
    @property
    def name(self) -> str:
        """
        The task's pod name.
        """
    @property
    def node(self) -> str | None:
        """
        The node while allocated or running, else None.
        """
    @property
    def priority(self) -> int:
        """
        The pod's priority.
        """
    @property
    def request(self) -> Resources:
        """
        What the task asks for, as Resources.
        """
    @property
    def status(self) -> str:
        """
        The task's state: pending, allocated, running or releasing.
        """
class QueueView:
    """
    A queue as a Python plugin's callbacks see it (a copy taken for the call).
    """
    def __repr__(self) -> str:
        ...
    def to_dict(self) -> dict:
        """
        Plain data: name, weight, allocated, request, deserved.
        """
    @property
    def allocated(self) -> Resources:
        """
        Resources its running tasks hold.
        """
    @property
    def deserved(self) -> Resources:
        """
        Its deserved resources; inf when no plugin sets them.
        """
    @property
    def name(self) -> str:
        """
        The queue's name.
        """
    @property
    def request(self) -> Resources:
        """
        Resources held plus pending requests (its demand).
        """
    @property
    def weight(self) -> float:
        """
        The queue's weight.
        """
class EngineScheduler:
    def __init__(self, config: typing.Any = None) -> None:
        ...
    def add_node(self, spec: typing.Any) -> None:
        """
        Add a node from its spec (the scenario format); ValueError for a bad spec or a duplicate name.
        """
    def add_queue(self, spec: typing.Any) -> None:
        """
        Add a queue {name, weight, capability{cpu cores, memory bytes, gpu}, reclaimable}; ValueError if it exists or is invalid.
        """
    def config(self) -> typing.Any:
        ...
    def configure(self, config: typing.Any) -> None:
        """
        Replace the configuration (actions, tiers, plugin arguments); ValueError names a bad entry and changes nothing.
        """
    def delete_job(self, name: str) -> None:
        """
        Delete a job and free what its tasks hold; KeyError if absent.
        """
    def delete_queue(self, name: str) -> None:
        """
        Delete an empty queue; KeyError if absent, ValueError while jobs use it.
        """
    def job_tasks(self, name: str) -> list[str]:
        """
        The pod names of a job's tasks, in order; KeyError if absent.
        """
    def jobs(self) -> list[JobState]:
        """
        Every job's standing, a list of JobState (copies read under the engine's lock).
        """
    def load_scenario(self, scenario: typing.Any) -> None:
        """
        Add the nodes, queues and jobs of a scenario dict all at once: on any error nothing is added.
        """
    def now(self) -> float:
        """
        Seconds on the scheduler's clock (monotonic, 0 when the scheduler was created).
        """
    def queues(self) -> list[QueueSpec]:
        """
        The queues, a list of QueueSpec (copies read under the engine's lock).
        """
    def run_cycle(self, now: typing.SupportsFloat | typing.SupportsIndex | None = None) -> CycleResult:
        """
        Run one cycle at the clock's time, or at `now` seconds; returns its CycleResult (numbered with the cycle). Releases the GIL and holds the engine's lock for the whole cycle.
        """
    def start_task(self, job: str, task: typing.Any, node: str) -> None:
        ...
    def submit_job(self, spec: typing.Any) -> None:
        """
        Submit a job {name, queue, replicas, min_available, priority, requests, ...}; ValueError if invalid or the name exists.
        """
    def update_job(self, spec: typing.Any) -> None:
        """
        Replace a pending job's spec; KeyError if absent.
        """
    def update_queue(self, spec: typing.Any) -> None:
        """
        Replace a queue's weight, capability and reclaimable flag; KeyError if it does not exist.
        """
    @property
    def cluster(self) -> Cluster:
        """
        The accounting as a Cluster that shares this engine's lock.
        """
    @property
    def cycles(self) -> int:
        ...
    @property
    def last_cycle_time(self) -> float:
        ...
class SimJobs:
    """
    A simulator run's per-job columns, in input order, as NumPy arrays (one property per column, each a fresh copy). Immutable.
    """
    columns: typing.ClassVar[list] = ['first_start', 'end_time', 'queueing_delay', 'run_time', 'gpu_time', 'service', 'preemptions', 'migrations', 'max_nodes']
    def __len__(self) -> int:
        """
        Number of rows.
        """
    def __repr__(self) -> str:
        ...
    def to_dict(self) -> dict:
        """
        Every column by name, as NumPy arrays in a fixed order (a DataFrame's input).
        """
    @property
    def end_time(self) -> numpy.ndarray:
        """
        Seconds at which the job finished (-1: never).
        """
    @property
    def first_start(self) -> numpy.ndarray:
        """
        Seconds at which the job first ran (-1: never).
        """
    @property
    def gpu_time(self) -> numpy.ndarray:
        """
        run_time x GPUs.
        """
    @property
    def max_nodes(self) -> numpy.ndarray:
        """
        Most nodes the job's GPUs spanned in one start (0 without device placement).
        """
    @property
    def migrations(self) -> numpy.ndarray:
        """
        Times the job moved to another GPU model.
        """
    @property
    def preemptions(self) -> numpy.ndarray:
        """
        Times the job was preempted.
        """
    @property
    def queueing_delay(self) -> numpy.ndarray:
        """
        Total seconds pending.
        """
    @property
    def run_time(self) -> numpy.ndarray:
        """
        Seconds holding GPUs (restore stalls included).
        """
    @property
    def service(self) -> numpy.ndarray:
        """
        Attained service: gpu_time x the model's performance factor.
        """
class SimTimeseries:
    """
    A simulator run's state after each scheduling point, as NumPy columns (empty unless the run recorded it). Immutable.
    """
    columns: typing.ClassVar[list] = ['time', 'running_jobs', 'pending_jobs', 'busy_gpus']
    def __len__(self) -> int:
        """
        Number of rows.
        """
    def __repr__(self) -> str:
        ...
    def to_dict(self) -> dict:
        """
        Every column by name, as NumPy arrays in a fixed order (a DataFrame's input).
        """
    @property
    def busy_gpus(self) -> numpy.ndarray:
        """
        GPUs held after it.
        """
    @property
    def pending_jobs(self) -> numpy.ndarray:
        """
        Jobs submitted and waiting after it.
        """
    @property
    def running_jobs(self) -> numpy.ndarray:
        """
        Jobs running after it.
        """
    @property
    def time(self) -> numpy.ndarray:
        """
        Seconds of the scheduling point.
        """
class SimSummary:
    """
    A simulator run's totals (docs/simulator.md). Immutable.
    """
    def __repr__(self) -> str:
        ...
    def to_dict(self) -> dict:
        """
        Plain data with stable snake_case keys, in a fixed order (jobs_spanning_nodes only when devices were placed).
        """
    @property
    def avg_jct(self) -> float:
        """
        Mean job completion time, seconds.
        """
    @property
    def avg_queueing_delay(self) -> float:
        """
        Mean seconds pending.
        """
    @property
    def gpu_utilization(self) -> float:
        """
        Busy GPU-seconds / (GPUs x makespan).
        """
    @property
    def jobs_spanning_nodes(self) -> int | None:
        """
        Jobs whose GPUs were ever on more than one node; None when no devices were placed.
        """
    @property
    def makespan(self) -> float:
        """
        Last completion minus first submission, seconds.
        """
    @property
    def migrations(self) -> int:
        """
        Migrations between GPU models over all jobs.
        """
    @property
    def num_jobs(self) -> int:
        """
        Jobs simulated.
        """
    @property
    def p50_jct(self) -> float:
        """
        Median JCT.
        """
    @property
    def p95_jct(self) -> float:
        """
        95th percentile JCT.
        """
    @property
    def p99_jct(self) -> float:
        """
        99th percentile JCT.
        """
    @property
    def preemptions(self) -> int:
        """
        Preemptions over all jobs.
        """
class SimRun:
    """
    What the job-time simulator returns (gpufleet.sim.simulate shapes it into DataFrames): per-job columns, the time series, the summary and the pool's models. Immutable.
    """
    def __repr__(self) -> str:
        ...
    def to_dict(self) -> dict:
        """
        Plain data: jobs and timeseries (column dicts), summary, models, total_gpus, scheduling_points.
        """
    @property
    def jobs(self) -> SimJobs:
        """
        Per-job columns (SimJobs), in input order.
        """
    @property
    def models(self) -> list[str]:
        """
        The pool's GPU model names, in its order.
        """
    @property
    def scheduling_points(self) -> int:
        """
        Times the policy was asked.
        """
    @property
    def summary(self) -> SimSummary:
        """
        The run's totals (SimSummary).
        """
    @property
    def timeseries(self) -> SimTimeseries:
        """
        State after each scheduling point (SimTimeseries).
        """
    @property
    def total_gpus(self) -> int:
        """
        GPUs in the pool.
        """
class OpenbReplayRun:
    """
    What the native openb replay returns (gpufleet.replay.replay_openb shapes it into a ReplayResult): one NumPy column per series with a row per arrival (each access a fresh copy), the cluster's GPUs, the typical-pod workload and the final cluster. Immutable.
    """
    columns: typing.ClassVar[list] = ['pod', 'placed', 'node', 'arrived', 'allocated', 'fragmented', 'idle', 'failed', 'failed_gpu']
    def __len__(self) -> int:
        """
        Number of arrivals.
        """
    def __repr__(self) -> str:
        ...
    def to_dict(self) -> dict:
        """
        Plain data: every per-arrival column by name, gpu_capacity and workload (not the cluster; its snapshot() serialises it).
        """
    @property
    def allocated(self) -> numpy.ndarray:
        """
        Allocated GPU share / cluster GPUs.
        """
    @property
    def arrived(self) -> numpy.ndarray:
        """
        Arrived GPU requests / cluster GPUs.
        """
    @property
    def cluster(self) -> typing.Any:
        """
        The final state, a Cluster of its own.
        """
    @property
    def failed(self) -> numpy.ndarray:
        """
        Failed pods so far.
        """
    @property
    def failed_gpu(self) -> numpy.ndarray:
        """
        GPU requests of the failed pods so far / cluster GPUs.
        """
    @property
    def fragmented(self) -> numpy.ndarray:
        """
        Fragmented free GPU share / cluster GPUs (against the typical pods).
        """
    @property
    def gpu_capacity(self) -> int:
        """
        GPUs in the cluster.
        """
    @property
    def idle(self) -> numpy.ndarray:
        """
        Free GPU share / cluster GPUs.
        """
    @property
    def node(self) -> numpy.ndarray:
        """
        Row of the input nodes the pod went to, -1 when it failed.
        """
    @property
    def placed(self) -> numpy.ndarray:
        """
        1 placed, 0 failed.
        """
    @property
    def pod(self) -> numpy.ndarray:
        """
        Row of the input pods (resampled pods repeat a row).
        """
    @property
    def workload(self) -> typing.Any:
        """
        The typical pods fgd and the fragmentation measure used, as plain data.
        """
class DraNodeTable:
    """
    What one node profile offers, by position: devices (multi, counters, unit, root), counter and capacity totals, packing units (gpufleet.dra.node_devices builds it).
    """
    def __init__(self, table: dict) -> None:
        ...
    @property
    def num_devices(self) -> int:
        ...
class DraClaimRequests:
    """
    What a set of claims asks of a node of one profile: requests with their candidates, constraints, twin signatures; checked against `table`.
    """
    def __init__(self, table: DraNodeTable, requests: dict) -> None:
        ...
class DraHeld:
    """
    What earlier claims hold on one node of `table`: devices held whole, devices whose capacity is consumed (once per result), capacity used per slot, counters used by devices published for other nodes.
    """
    def __init__(self, table: DraNodeTable, in_use: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = [], sharers: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = [], capacity_used: collections.abc.Sequence[tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex]] = [], counter_used: collections.abc.Sequence[tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex]] = []) -> None:
        ...
class DraAnswer:
    """
    One native answer (see dra_solve for its fields).
    """
    def to_dict(self) -> dict:
        ...
    @property
    def gave_up(self) -> bool:
        ...
    @property
    def ok(self) -> bool:
        ...
    @property
    def rank(self) -> tuple[int, int, int]:
        ...
    @property
    def reason(self) -> str:
        ...
    @property
    def steps(self) -> int:
        ...
    @property
    def verdict(self) -> str:
        ...
def _register_python_plugin(name: str) -> None:
    ...
def _replay_openb(node_name: collections.abc.Sequence[str], node_cpu: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], node_memory: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], node_gpus: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], node_model: collections.abc.Sequence[str], pod_name: collections.abc.Sequence[str], pod_cpu: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], pod_memory: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], pod_gpus: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], pod_milli: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], pod_spec: collections.abc.Sequence[collections.abc.Sequence[str]], policy: str, params: typing.Any, seed: typing.Any, stop_at: typing.SupportsFloat | typing.SupportsIndex, coverage: typing.SupportsFloat | typing.SupportsIndex, ties: str) -> OpenbReplayRun:
    """
    Native openb replay over column lists; use gpufleet.replay.replay_openb.
    """
def dra_score(problem: dict, choices: collections.abc.Sequence[tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex]]) -> dict:
    """
    The score of an allocation given as (request, device, candidate) choices.
    """
def dra_solve(problem: dict) -> dict:
    """
    Solves one DRA allocation question (a dict of dra::Problem's fields; see gpufleet.dra.problem). Returns verdict, choices (request, device, candidate), score, reason, steps, gave_up, proved_best, error_request and error_device.
    """
def dra_solve_prepared(questions: collections.abc.Sequence[tuple[DraNodeTable, DraClaimRequests, DraHeld]], objective: str = 'pack', budget: typing.SupportsInt | typing.SupportsIndex = 200000) -> list[DraAnswer]:
    """
    Answers each (DraNodeTable, DraClaimRequests, DraHeld) question; a list of DraAnswer.
    """
def engine_callback_points() -> list:
    """
    The engine's callback points, in order: dicts with name, signature, combine (how the answers of several plugins combine), python_method (what a Python plugin defines to answer it, or None) and volcano_switch (the per-plugin switch that turns it off, or None).
    """
def engine_check_config(config: typing.Any) -> typing.Any:
    """
    Validate a scheduler configuration; returns it in canonical form or raises ValueError.
    """
def engine_default_config() -> typing.Any:
    ...
def engine_dra_holdings(engine: EngineScheduler) -> dict:
    """
    What each task's claims hold: {task: (node, [(request, device, candidate)])}.
    """
def engine_dra_set(engine: EngineScheduler, tables: collections.abc.Sequence[DraNodeTable], nodes: collections.abc.Sequence[tuple[str, typing.SupportsInt | typing.SupportsIndex, DraHeld, collections.abc.Sequence[collections.abc.Sequence[tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex]]], collections.abc.Sequence[tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex]]]], tasks: list) -> None:
    """
    Sets the engine's DRA ledger (gpufleet.dra.engine builds the arguments): tables per node profile; nodes as (name, profile, DraHeld, counterparts, claims' usage); tasks as (name, DraClaimRequests or None per profile, refusal per profile).
    """
def engine_plugin_switches() -> list:
    """
    Volcano's per-plugin switches, as Volcano spells them: dicts with key, point (the callback point it gates, or None), on_when_absent and supported_on.
    """
def format_bytes(bytes: typing.Any) -> str:
    """
    Bytes with the largest binary suffix that divides them exactly ("80Gi", "81559Mi").
    """
def maximize_lp(a: collections.abc.Sequence[collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex]], b: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex], c: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex], max_iterations: typing.Any = 100000) -> tuple[float, numpy.typing.NDArray[numpy.float64]]:
    """
    Maximises c.x subject to a x <= b, x >= 0 with COIN-OR CLP (the solver behind gavel-lp); `a` is a list of rows (or a 2-D array). Returns (objective, x). ValueError for bad shapes, non-finite or too large entries, and infeasible or unbounded LPs; RuntimeError when max_iterations is reached.
    """
def mig_geometry() -> list:
    """
    NVIDIA MIG geometry per GPU model (from NVIDIA's MIG user guide): profiles with their compute and memory slices, instance limits and allowed start slots.
    """
def parse_milli(quantity: str) -> int:
    """
    Kubernetes quantity -> milli-units (cpu); ValueError if malformed.
    """
def parse_quantity(quantity: str) -> int:
    """
    Kubernetes quantity -> integer (bytes or count), rounded up like Kubernetes; ValueError names what is wrong.
    """
def parse_quantity_exact(quantity: str) -> str:
    """
    Kubernetes quantity -> its exact value as decimal text ("1.5", "0.000000001").
    """
def parse_resource_quantity(resource: str, quantity: str) -> int:
    """
    A resource's quantity in the core's unit: milli-cores for cpu, whole numbers only for pods and extended resources (nvidia.com/gpu, koordinator.sh/*, aliyun.com/gpu-mem), bytes rounded up otherwise.
    """
def place_gang(cluster: Cluster, topology: typing.Any, gang: typing.Any, strategy: str = 'binpack', commit: bool = False) -> dict:
    """
    Where a gang goes across topology levels: {'placed', 'reason', 'level', 'domain', 'groups': [{'name', 'level', 'domain', 'nodes': [(node, pods)], 'pods' (with commit)}]}. With commit, every pod is planned on its node and bound, all or none.
    """
def queue_drs(specs: typing.Any, usage: dict) -> dict:
    """
    Kueue's Dominant Resource Share of every queue for leaf usage (a fraction; inf for weight 0).
    """
def queue_fair_shares(specs: typing.Any, capacity: dict, requests: dict, policy: str = 'kai', usage: typing.Any = None, k_value: typing.SupportsFloat | typing.SupportsIndex = 0.0) -> dict:
    """
    Fair shares of every queue ({queue: {resource: amount}}) for leaf requests.
    """
def queue_objects(objects: typing.Any) -> list:
    """
    KAI Queue, Kueue ClusterQueue/Cohort and Volcano Queue objects (dicts as their YAML reads) as gpufleet queue dicts; implicit Kueue cohorts are added.
    """
def queue_tree_check(specs: typing.Any) -> None:
    """
    Checks gpufleet queue dicts as a tree; ValueError names the first problem.
    """
def registry_duplicates() -> list[str]:
    """
    Names registered twice in any registry (the second registration is refused).
    """
def registry_metadata(kinds: collections.abc.Sequence[str] | None = None) -> dict:
    """
    Per registry (strategies, plugins, actions, policies; all, or those in `kinds`), what each registered name declares: a list of dicts with name, description, parameters (name, type, default, help, example, range), traits and open_parameters; plugins also list the callback points they answer (observed on an empty session; None when they cannot be built without arguments).
    """
def sim_check_policy(spec: str) -> None:
    """
    Raises KeyError/ValueError if the policy spec is not valid.
    """
def sim_run(cluster: typing.Any, job_id: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], submit_time: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], num_gpu: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], duration: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], speed: typing.Any, memory_gib: typing.Any, policy: str, tiresias_compat: bool = False, restore_delay: typing.SupportsFloat | typing.SupportsIndex = 0.0, tick: typing.SupportsFloat | typing.SupportsIndex = 0.0, scheduling_interval: typing.SupportsFloat | typing.SupportsIndex = 0.0, record_timeseries: bool = True, progress: typing.Any = None, placement: str = 'binpack', seed: typing.SupportsInt | typing.SupportsIndex = 0, nodes_per_rack: typing.SupportsInt | typing.SupportsIndex = 0, racks_per_block: typing.SupportsInt | typing.SupportsIndex = 0) -> SimRun:
    """
    Runs the job-time simulator; see gpufleet.sim.simulate for the friendly wrapper.
    """
def simulate_queues(specs: typing.Any, gpus: typing.SupportsInt | typing.SupportsIndex, id: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], submit_time: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], duration: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], num_gpu: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], queue: collections.abc.Sequence[str], priority: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], options: dict = {}) -> dict:
    """
    The multi-tenant simulation over a queue tree; columns of jobs and queue samples.
    """
def topology_domains(cluster: Cluster, topology: typing.Any) -> dict:
    """
    Each node's domain on every level (columns level, domain, node) and the nodes outside.
    """
def water_fill(total: typing.SupportsFloat | typing.SupportsIndex, weights: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex], caps: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex]) -> list[float]:
    """
    Weighted water-filling of `total` over queues capped by `caps` (the proportion rule). ValueError unless total is finite and >= 0, weights finite and >= 0, caps >= 0 (infinity: no cap) and weights and caps of one length.
    """
def wire_keys() -> dict[str, str]:
    """
    The Kubernetes resource and annotation names the core reads and writes, by short name (gpufleet.k8s.keys holds the same names for Python).
    """
