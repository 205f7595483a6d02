"""
The batch-scheduling engine and its bound results.
"""
from __future__ import annotations
import collections.abc
import gpufleet._core.cluster
import gpufleet.engine_records
import typing
__all__: list[str] = ['BindDecision', 'CycleResult', 'EngineScheduler', 'EvictDecision', 'HeldCapacity', 'JobState', 'JobView', 'QueueShare', 'QueueSpec', 'QueueView', 'Resources', 'TaskView', 'engine_callback_points', 'engine_check_config', 'engine_default_config', 'engine_plugin_switches', 'water_fill']
class Resources:
    """
    A fairness vector: cpu in millicores, memory in bytes and gpu in whole-GPU equivalents (a 50% share counts 0.5); inf means unlimited.
    """
    derived: typing.ClassVar[tuple[str, ...]] = tuple()
    fields: typing.ClassVar[tuple[str, ...]] = ('cpu', 'memory', 'gpu')
    def __repr__(self) -> str:
        ...
    def to_dict(self) -> gpufleet.engine_records.ResourcesRecord:
        """
        Plain data for JSON/YAML, one key per field: cpu, memory, gpu.
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
    derived: typing.ClassVar[tuple[str, ...]] = ('gpus', 'gpu_core')
    fields: typing.ClassVar[tuple[str, ...]] = ('node', 'cpu_milli', 'memory_bytes', 'devices', 'job', 'task')
    def __repr__(self) -> str:
        ...
    def to_dict(self) -> gpufleet.engine_records.BindRecord:
        """
        Plain data for JSON/YAML, one key per field: node, cpu_milli, memory_bytes, devices, job, task.
        """
    @property
    def cpu_milli(self) -> int:
        """
        CPU held, in millicores.
        """
    @property
    def devices(self) -> list[gpufleet._core.cluster.DeviceGrant]:
        """
        The devices held, a list of DeviceGrant (in to_dict: type, minor, core, memory_bytes).
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
    derived: typing.ClassVar[tuple[str, ...]] = tuple()
    fields: typing.ClassVar[tuple[str, ...]] = ('job', 'task', 'node', 'reason')
    def __repr__(self) -> str:
        ...
    def to_dict(self) -> gpufleet.engine_records.EvictRecord:
        """
        Plain data for JSON/YAML, one key per field: job, task, node, reason.
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
    derived: typing.ClassVar[tuple[str, ...]] = tuple()
    fields: typing.ClassVar[tuple[str, ...]] = ('queue', 'weight', 'allocated', 'subtree_allocated', 'request', 'deserved', 'held', 'share')
    def __repr__(self) -> str:
        ...
    def to_dict(self) -> gpufleet.engine_records.QueueShareRecord:
        """
        Plain data for JSON/YAML, one key per field: queue, weight, allocated, subtree_allocated, request, deserved, held, share.
        """
    @property
    def allocated(self) -> Resources:
        """
        Resources its own jobs' running tasks hold (0 for an inner queue: only leaves hold jobs).
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
        Max over resources of subtree_allocated / deserved (0 when nothing is allocated).
        """
    @property
    def subtree_allocated(self) -> Resources:
        """
        Resources the running tasks of its jobs and of every queue below it hold.
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
    derived: typing.ClassVar[tuple[str, ...]] = ('resources',)
    fields: typing.ClassVar[tuple[str, ...]] = ('cpu', 'memory', 'gpu', 'node', 'job')
    def __repr__(self) -> str:
        ...
    def to_dict(self) -> gpufleet.engine_records.HeldRecord:
        """
        Plain data for JSON/YAML, one key per field: cpu, memory, gpu, node, job.
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
        The capacity held (cpu, memory, gpu) as Resources.
        """
class CycleResult:
    """
    What one scheduling cycle decided: binds, evictions, pending reasons, queue shares and capacity held for the starvation target. Immutable.
    """
    derived: typing.ClassVar[tuple[str, ...]] = ('held_gpus',)
    fields: typing.ClassVar[tuple[str, ...]] = ('cycle', 'binds', 'evictions', 'pending', 'queues', 'held', 'target')
    def __repr__(self) -> str:
        ...
    def to_dict(self) -> gpufleet.engine_records.CycleRecord:
        """
        Plain data for JSON/YAML, one key per field: cycle, binds, evictions, pending, queues, held, target.
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
    derived: typing.ClassVar[tuple[str, ...]] = tuple()
    fields: typing.ClassVar[tuple[str, ...]] = ('name', 'queue', 'priority', 'min_available', 'tasks', 'running', 'admitted', 'waiting_cycles')
    def __repr__(self) -> str:
        ...
    def to_dict(self) -> dict:
        """
        Plain data for JSON/YAML, one key per field: name, queue, priority, min_available, tasks, running, admitted, waiting_cycles.
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
        The queue in the spec format (valid input to add_queue): name, weight, capability, reclaimable, and parent and quotas when set.
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
    derived: typing.ClassVar[tuple[str, ...]] = tuple()
    fields: typing.ClassVar[tuple[str, ...]] = ('name', 'queue', 'priority', 'min_available', 'tasks', 'occupied', 'waiting_cycles', 'allocated')
    def __repr__(self) -> str:
        ...
    def to_dict(self) -> dict:
        """
        Plain data for JSON/YAML, one key per field: name, queue, priority, min_available, tasks, occupied, waiting_cycles, allocated.
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
    derived: typing.ClassVar[tuple[str, ...]] = tuple()
    fields: typing.ClassVar[tuple[str, ...]] = ('name', 'job', 'priority', 'status', 'node', 'request')
    def __repr__(self) -> str:
        ...
    def to_dict(self) -> dict:
        """
        Plain data for JSON/YAML, one key per field: name, job, priority, status, node, request.
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
    derived: typing.ClassVar[tuple[str, ...]] = tuple()
    fields: typing.ClassVar[tuple[str, ...]] = ('name', 'weight', 'allocated', 'request', 'deserved')
    def __repr__(self) -> str:
        ...
    def to_dict(self) -> dict:
        """
        Plain data for JSON/YAML, one key per field: name, weight, allocated, request, deserved.
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
    def cluster(self) -> gpufleet._core.cluster.Cluster:
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
def engine_plugin_switches() -> list:
    """
    Volcano's per-plugin switches, as Volcano spells them: dicts with key, point (the callback point it gates, or None), on_when_absent and supported_on.
    """
def water_fill(total: typing.SupportsFloat | typing.SupportsIndex, weights: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex], caps: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex]) -> list[float]:
    """
    Weighted water-filling of `total` over queues capped by `caps` (the proportion rule). ValueError unless total is finite and >= 0, weights finite and >= 0, caps >= 0 (infinity: no cap) and weights and caps of one length.
    """
