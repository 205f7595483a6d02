"""
gpufleet native core
"""
from __future__ import annotations
import collections.abc
import numpy
import numpy.typing
import typing
__all__: list[str] = ['Allocation', 'Cluster', 'DeviceGrant', 'DeviceRequest', 'EngineScheduler', 'FitResult', 'PlaceResult', 'Pod', 'engine_action_description', 'engine_actions', 'engine_check_config', 'engine_default_config', 'engine_plugin_description', 'engine_plugins', 'engine_registry_duplicates', 'format_bytes', 'parse_milli', 'parse_quantity', 'parse_quantity_exact', 'parse_resource_quantity', 'registry_duplicates', 'registry_metadata', 'sim_check_policy', 'sim_policy_description', 'sim_policy_names', 'sim_run', 'strategies', 'strategy_description', 'water_fill', 'wire_keys']
class DeviceRequest:
    def __repr__(self) -> str:
        ...
    @property
    def core(self) -> int:
        ...
    @property
    def count(self) -> int:
        ...
    @property
    def memory_bytes(self) -> int:
        ...
    @property
    def memory_ratio(self) -> int:
        ...
    @property
    def type(self) -> str:
        ...
    @property
    def whole(self) -> bool:
        ...
class Pod:
    @staticmethod
    def from_dict(spec: dict) -> Pod:
        """
        A pod from a scenario-format dict; ValueError names a bad field.
        """
    def __init__(self, name: str, requests: dict = {}, node_selector: typing.Any = None, tolerations: typing.Any = None, gpu_models: typing.Any = None, scope: str = 'none', priority: typing.SupportsInt | typing.SupportsIndex = 0) -> None:
        ...
    def __repr__(self) -> str:
        ...
    @property
    def cpu_milli(self) -> int:
        ...
    @property
    def devices(self) -> list[DeviceRequest]:
        ...
    @property
    def gpu_models(self) -> list[str]:
        ...
    @property
    def gpu_share(self) -> float:
        ...
    @property
    def memory_bytes(self) -> int:
        ...
    @property
    def name(self) -> str:
        ...
    @property
    def priority(self) -> int:
        ...
    @property
    def scope(self) -> str:
        ...
class FitResult:
    def __bool__(self) -> bool:
        ...
    def __repr__(self) -> str:
        ...
    @property
    def code(self) -> str:
        ...
    @property
    def ok(self) -> bool:
        ...
    @property
    def reason(self) -> str:
        ...
class DeviceGrant:
    def __repr__(self) -> str:
        ...
    @property
    def core(self) -> int:
        ...
    @property
    def memory_bytes(self) -> int:
        ...
    @property
    def minor(self) -> int:
        ...
    @property
    def type(self) -> str:
        ...
class Allocation:
    def __repr__(self) -> str:
        ...
    def annotations(self, gpushare: bool = False, unit_bytes: typing.SupportsInt | typing.SupportsIndex = 1048576) -> dict[str, str]:
        """
        Pod annotations recording this allocation (Koordinator's, and gpushare's if asked).
        """
    def device_allocated(self) -> typing.Any:
        """
        The Koordinator device-allocated annotation as a dict.
        """
    @property
    def assume_time_ns(self) -> int:
        ...
    @property
    def cpu_milli(self) -> int:
        ...
    @property
    def devices(self) -> list[DeviceGrant]:
        ...
    @property
    def memory_bytes(self) -> int:
        ...
    @property
    def node(self) -> str:
        ...
    @property
    def pod(self) -> str:
        ...
    @property
    def state(self) -> str:
        ...
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
        ...
    def check_invariants(self) -> None:
        ...
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
        ...
    def filter_nodes(self, pod: typing.Any, nodes: collections.abc.Sequence[str]) -> tuple[numpy.typing.NDArray[numpy.int8], list[str]]:
        """
        Filter many nodes in one native call: (codes, reasons). Codes: 0 Ok, 1 Unschedulable, 2 UnschedulableAndUnresolvable, -1 unknown node.
        """
    def has_node(self, name: str) -> bool:
        """
        Whether a node of that name exists.
        """
    def node(self, name: str) -> typing.Any:
        """
        The node's spec as a dict; KeyError if absent.
        """
    def node_names(self) -> list[str]:
        ...
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
        ...
    def restore_allocation(self, pod: typing.Any, node: str, annotations: collections.abc.Mapping[str, str], unit_bytes: typing.SupportsInt | typing.SupportsIndex = 1048576) -> Allocation:
        """
        Rebuild a bound pod's allocation from its annotations (after a restart).
        """
    def score(self, pod: typing.Any, node: str, strategy: str = 'binpack') -> float:
        ...
    def score_nodes(self, pod: typing.Any, nodes: collections.abc.Sequence[str], strategy: str = 'binpack') -> numpy.typing.NDArray[numpy.float64]:
        """
        Scores in [0, 100] for many nodes in one native call; NaN for an unknown node.
        """
    def set_device_health(self, node: str, minor: typing.SupportsInt | typing.SupportsIndex, healthy: bool, type: str = 'gpu') -> None:
        ...
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
        ...
    @property
    def num_nodes(self) -> int:
        ...
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
    def jobs(self) -> list:
        ...
    def load_scenario(self, scenario: typing.Any) -> None:
        """
        Add the nodes, queues and jobs of a scenario dict all at once: on any error nothing is added.
        """
    def now(self) -> float:
        """
        Seconds on the scheduler's clock (monotonic, 0 when the scheduler was created).
        """
    def queues(self) -> list:
        ...
    def run_cycle(self, now: typing.SupportsFloat | typing.SupportsIndex | None = None) -> dict:
        """
        Run one cycle at the clock's time, or at `now` seconds; returns {binds, evictions, pending, queues, cycle} (cycle: this cycle's number). Releases the GIL and holds the engine's lock for the whole cycle.
        """
    def start_task(self, job: str, task: typing.SupportsInt | typing.SupportsIndex, node: str) -> None:
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
def _register_python_plugin(name: str) -> None:
    ...
def _replay_openb(node_name: collections.abc.Sequence[str], node_cpu: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], node_memory: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], node_gpus: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], node_model: collections.abc.Sequence[str], pod_name: collections.abc.Sequence[str], pod_cpu: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], pod_memory: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], pod_gpus: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], pod_milli: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], pod_spec: collections.abc.Sequence[collections.abc.Sequence[str]], policy: str, params: typing.Any, seed: typing.SupportsInt | typing.SupportsIndex, stop_at: typing.SupportsFloat | typing.SupportsIndex, coverage: typing.SupportsFloat | typing.SupportsIndex, random_ties: bool) -> dict:
    """
    Native openb replay over column lists; use gpufleet.replay.replay_openb.
    """
def engine_action_description(name: str) -> str:
    """
    One line describing a registered engine action ("" if unknown).
    """
def engine_actions() -> list[str]:
    """
    Names of the registered engine actions.
    """
def engine_check_config(config: typing.Any) -> typing.Any:
    """
    Validate a scheduler configuration; returns it in canonical form or raises ValueError.
    """
def engine_default_config() -> typing.Any:
    ...
def engine_plugin_description(name: str) -> str:
    """
    One line describing a registered engine plugin ("" if unknown).
    """
def engine_plugins() -> list[str]:
    """
    Names of the registered engine plugins.
    """
def engine_registry_duplicates() -> list[str]:
    ...
def format_bytes(bytes: typing.SupportsInt | typing.SupportsIndex) -> str:
    """
    Bytes with the largest binary suffix that divides them exactly ("80Gi", "81559Mi").
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
def registry_duplicates() -> list[str]:
    ...
def registry_metadata() -> dict:
    """
    Per registry (strategies, plugins, actions, policies), what each registered name declares: a list of dicts with name, description, parameters (name, type, default, help, example) and capabilities.
    """
def sim_check_policy(spec: str) -> None:
    """
    Raises KeyError/ValueError if the policy spec is not valid.
    """
def sim_policy_description(name: str) -> str:
    ...
def sim_policy_names() -> list[str]:
    """
    Registered job-time policy names.
    """
def sim_run(cluster: typing.Any, job_id: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], submit_time: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], num_gpu: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], duration: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], speed: typing.Any, memory_gib: typing.Any, policy: str, tiresias_compat: bool = False, restore_delay: typing.SupportsFloat | typing.SupportsIndex = 0.0, tick: typing.SupportsFloat | typing.SupportsIndex = 0.0, scheduling_interval: typing.SupportsFloat | typing.SupportsIndex = 0.0, record_timeseries: bool = True, progress: typing.Any = None, placement: str = 'binpack') -> dict:
    """
    Runs the job-time simulator; see gpufleet.sim.simulate for the friendly wrapper.
    """
def strategies() -> list[str]:
    """
    Names of the registered placement strategies.
    """
def strategy_description(name: str) -> str:
    """
    One line describing a registered placement strategy ("" if unknown).
    """
def water_fill(total: typing.SupportsFloat | typing.SupportsIndex, weights: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex], caps: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex]) -> list[float]:
    """
    Weighted water-filling of `total` over queues capped by `caps` (the proportion rule).
    """
def wire_keys() -> dict[str, str]:
    """
    The Kubernetes resource and annotation names the core reads and writes, by short name (gpufleet.k8s.keys holds the same names for Python).
    """
