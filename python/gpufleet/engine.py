"""The batch scheduling engine: queues, gang jobs and scheduling cycles.

The cycle runs in the native core (``gpufleet._core.EngineScheduler``): a session opens on a copy
of the cluster's accounting, the configured actions (enqueue, allocate, backfill, preempt, reclaim,
and jobtime, which runs a simulator policy such as las or dlas-gpu on whole-GPU jobs) run with the
configured plugins (gang, drf, proportion, priority, predicates, nodeorder, deviceshare,
reservation), and the result is adopted only if no device is over-committed and no gang is left
partly running. See ``docs/engine.md``.

```python
from gpufleet.engine import Engine

eng = Engine()                                   # default configuration
eng.add_node({"name": "n1", "cpu": "64", "memory": "512Gi",
              "gpus": {"count": 8, "model": "A100", "memory": "80Gi"}})
eng.add_queue("team-a", weight=1)
eng.submit({"name": "train", "queue": "team-a", "replicas": 4,
            "requests": {"cpu": "4", "nvidia.com/gpu": 2}})
result = eng.run_cycle()
result.binds          # DataFrame: job, task, node, gpus, devices, ...
result.pending        # {job: reason}
result.native.binds   # the same binds as bound objects: BindDecision(train-0 -> n1, ...)
eng.queue_shares()    # DataFrame: allocated / deserved per queue and resource
```

Results are native objects (``gpufleet._core.engine``: ``CycleResult``, ``BindDecision``,
``EvictDecision``, ``QueueShare``, ``HeldCapacity``, ``JobState``, ``QueueSpec``, ``Resources``):
immutable copies with read-only properties, a ``repr`` and ``to_dict()`` for JSON/YAML, safe to
read from any thread; each class's ``fields`` names what ``to_dict()`` holds. The tables above
are built from them on first use.

Plugins written in Python are the slow path (every callback takes the GIL and receives small
read-only views: ``JobView``, ``TaskView``, ``QueueView``, with attributes such as ``task.name``,
``job.priority`` or ``queue.allocated.gpu`` and ``to_dict()``); use them to prototype a policy in
a notebook, then port it to C++ (``docs/adding-a-policy.md``)::

    class PreferEvenNodes:
        def __init__(self, bonus=10.0):
            self.bonus = bonus
        def node_order(self, task, node):       # task: TaskView, node: node name
            return self.bonus if node.endswith(("0", "2", "4", "6", "8")) else 0.0

    register_plugin("prefer-even", PreferEvenNodes)
    eng.configure({"actions": "allocate", "tiers": [{"plugins": [
        "gang", "predicates", {"name": "prefer-even", "arguments": {"bonus": 50}}]}]})

A Python plugin answers the callback points whose method it defines: :func:`callback_points`
lists each point with its ``python_method``, its signature and how the answers of several plugins
combine (``docs/engine.md`` has the same table). Orders return a number (negative when ``a`` goes
first); a check returns True/None to accept, or False or a reason string to refuse; victims are
the names of the allowed candidates; a node's score is a finite number. What a plugin defines is
what it answers, as for a native plugin: one that defines ``predicate`` serves the actions that
place tasks without the native ``predicates`` plugin.
"""
from __future__ import annotations

import threading
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from gpufleet import _core, registries
from gpufleet._core.engine import (
    BindDecision,
    EvictDecision,
    HeldCapacity,
    JobState,
    JobView,
    QueueShare,
    QueueSpec,
    QueueView,
    Resources,
    TaskView,
)
from gpufleet._lazy import lazy

if TYPE_CHECKING:  # checkers see the frames' type
    import pandas as pd

    from gpufleet.engine_records import CycleRecord
else:
    pd = lazy("pandas")  # imported by the first call that builds a frame: `import gpufleet` stays fast

__all__ = [
    "BindDecision",
    "CycleResult",
    "Engine",
    "EvictDecision",
    "HeldCapacity",
    "JobState",
    "JobView",
    "QueueShare",
    "QueueSpec",
    "QueueView",
    "Resources",
    "TaskView",
    "Scheduler",
    "actions",
    "callback_points",
    "default_config",
    "engine_from_scenario",
    "load_config",
    "plugins",
    "register_plugin",
    "water_fill",
]

# name -> class (or factory) of plugins written in Python; the native registry looks names up here
# at every cycle, so registering a name again replaces the class.
_PYTHON_PLUGINS: dict[str, Callable[..., Any]] = {}

_RESOURCES = ("cpu", "memory", "gpu")


def plugins() -> list[str]:
    """Names of the registered plugins (native and Python)."""
    return registries.names("plugins")


def actions() -> list[str]:
    """Names of the registered actions."""
    return registries.names("actions")


def callback_points() -> list[dict[str, Any]]:
    """The questions plugins answer, in order: dicts with ``name``, ``signature``, ``combine``,
    ``python_method`` (what a Python plugin defines to answer it, or None) and ``volcano_switch``
    (the per-plugin switch of a configuration that turns it off, or None)."""
    return registries.callback_points()


def default_config() -> dict[str, Any]:
    """The default configuration: enqueue, allocate, backfill; priority+gang, then
    drf+predicates+proportion+nodeorder+deviceshare."""
    return _core.engine_default_config()


def water_fill(total: float, weights: list[float], caps: list[float]) -> list[float]:
    """Weighted water-filling (the proportion plugin's deserved-share rule for one resource)."""
    return list(_core.water_fill(float(total), [float(w) for w in weights], [float(c) for c in caps]))


def register_plugin(name: str, factory: Callable[..., Any]) -> None:
    """Register a plugin written in Python under ``name``. ``factory(**arguments)`` builds one per
    cycle from the configuration's arguments. The slow path: see the module docstring."""
    if not callable(factory):
        raise TypeError("factory must be a class or a callable returning a plugin object")
    _core._register_python_plugin(name)
    _PYTHON_PLUGINS[name] = factory


def _parse_configmap_text(data: dict[str, Any], where: str) -> dict[str, Any]:
    """Volcano ships its configuration as YAML text inside a ConfigMap; that text is parsed here
    (the core reads no YAML) and the core unwraps and checks the ConfigMap itself."""
    held = data.get("data")
    if data.get("kind") != "ConfigMap" or not isinstance(held, Mapping):
        return data
    from gpufleet.documents import read_embedded_yaml

    parsed = {key: read_embedded_yaml(value, f'{where}data "{key}"')
              if isinstance(value, str) and str(key).endswith(".conf") else value
              for key, value in held.items()}
    return {**data, "data": parsed}


# The data key that holds Volcano's scheduler configuration in its shipped ConfigMap.
_VOLCANO_CONF_KEY = "volcano-scheduler.conf"


def _scheduler_document(docs: list[Any], path: Path) -> Any:
    """The one document of a multi-document manifest that configures the scheduler: a ConfigMap
    whose data holds ``volcano-scheduler.conf`` (Volcano's installer ships it among the
    namespaces, accounts, roles and other ConfigMaps)."""
    if len(docs) == 1:
        return docs[0]
    found = [d for d in docs if isinstance(d, Mapping) and d.get("kind") == "ConfigMap"
             and isinstance(d.get("data"), Mapping) and _VOLCANO_CONF_KEY in d["data"]]
    if len(found) != 1:
        kinds = ", ".join(str(d.get("kind", "?")) if isinstance(d, Mapping) else type(d).__name__
                          for d in docs)
        raise ValueError(f"{path}: {len(docs)} YAML documents ({kinds}), of which {len(found)} "
                         f"are ConfigMaps holding {_VOLCANO_CONF_KEY}; expected exactly one")
    return found[0]


def load_config(source: str | Path | Mapping[str, Any]) -> dict[str, Any]:
    """Read a configuration from a YAML/JSON file (or take a dict) and validate it: unknown plugin
    or action names, bad arguments and inconsistent settings raise ValueError/KeyError. Volcano's
    files load unchanged, including its ConfigMap wrapper (``volcano-scheduler-configmap``), also
    when it is one document of a multi-document manifest such as Volcano's installer."""
    if isinstance(source, Mapping):
        data = _parse_configmap_text(dict(source), "ConfigMap: ")
    else:
        # The scenario reader's strict rules: duplicate keys, NaN/Infinity, binary junk and deep
        # nesting are errors naming the file (ScenarioError is a ValueError).
        from gpufleet.documents import read_documents

        path = Path(source)
        data = _scheduler_document(read_documents(path), path)
        if not isinstance(data, dict):
            raise ValueError(f"{path}: expected a mapping with 'actions' and 'tiers'")
        data = _parse_configmap_text(data, f"{path}: ")
        try:
            _core.engine_check_config(data)
        except (ValueError, KeyError) as e:
            raise ValueError(f"{path}: {e}") from None
        return data
    _core.engine_check_config(data)
    return data


class CycleResult:
    """What one cycle decided, as tables over the native result (:attr:`native`, a
    ``gpufleet._core.CycleResult`` of bound, immutable objects: ``BindDecision``,
    ``EvictDecision``, ``QueueShare``, ``HeldCapacity``).

    ``binds`` (job, task, node, gpus, gpu_core, cpu_milli, memory_bytes, devices), ``evictions``
    (job, task, node, reason) and ``queues`` (each queue's weight, share and allocated / deserved /
    request / held cpu (milli-cores), memory (bytes) and gpu) are DataFrames, built on first use;
    ``pending`` is {job: why it did not run}; ``held`` and ``target`` describe capacity reserved for
    a starving job. :meth:`to_dict` is the plain data ``gpufleet cycle -o json`` prints."""

    def __init__(self, native: _core.CycleResult) -> None:
        self._native = native

    @property
    def native(self) -> _core.CycleResult:
        """The native result: the same decisions as bound objects (``r.native.binds[0].devices``)."""
        return self._native

    @property
    def cycle(self) -> int:
        """This cycle's number (0 for the first), taken with the cycle under the engine's lock."""
        return self._native.cycle

    @property
    def pending(self) -> dict[str, str]:
        """Why each job short of its gang did not run: {job: reason} (a fresh dict)."""
        return self._native.pending

    @property
    def target(self) -> str:
        """The reservation target this cycle ("" none), whether or not it started."""
        return self._native.target

    @property
    def held_gpus(self) -> float:
        """GPUs (whole-GPU equivalents) held for the target at the end of the cycle."""
        return float(self._native.held_gpus)

    @cached_property
    def binds(self) -> pd.DataFrame:
        """One row per bound task: job, task, node, gpus (minors), gpu_core (percent summed over
        its GPUs), cpu_milli, memory_bytes and devices (a list of DeviceGrant)."""
        return _table(self._native.binds, _BIND_COLUMNS)

    @cached_property
    def evictions(self) -> pd.DataFrame:
        """One row per evicted task: job, task, node and the reason."""
        return _table(self._native.evictions, EvictDecision.fields)

    @cached_property
    def queues(self) -> pd.DataFrame:
        """One row per queue: queue, weight, share, then allocated / subtree_allocated / deserved /
        request / held for cpu (milli-cores), memory (bytes) and gpu. Only leaf queues hold jobs:
        an inner queue's ``allocated_*`` is 0 and ``subtree_allocated_*`` what its descendants hold."""
        return _queues_frame(self._native.queues)

    @cached_property
    def held(self) -> pd.DataFrame:
        """Capacity held for the starvation target, per node (node, job, cpu, memory, gpu): taken,
        not idle. Empty when no target waits."""
        return _table(self._native.held, _HELD_COLUMNS)

    def to_dict(self) -> CycleRecord:
        """Plain data for JSON/YAML: cycle, binds, evictions, pending, queues, held, target
        (the keys and value types of :class:`gpufleet.engine_records.CycleRecord`)."""
        return self._native.to_dict()

    def __repr__(self) -> str:
        return repr(self._native)


# The frames' column orders (the identity first); every column is a field of the bound class.
_BIND_COLUMNS = ["job", "task", "node", "gpus", "gpu_core", "cpu_milli", "memory_bytes", "devices"]
_HELD_COLUMNS = ["node", "job", *_RESOURCES]
_SHARE_KINDS = ("allocated", "subtree_allocated", "deserved", "request", "held")
_QUEUE_COLUMNS = ["queue", "weight", "share"] + [f"{k}_{r}" for k in _SHARE_KINDS for r in _RESOURCES]


def _frame(rows: list[tuple[Any, ...]], columns: Sequence[str]) -> pd.DataFrame:
    return pd.DataFrame.from_records(rows, columns=list(columns))


def _table(objects: Sequence[Any], columns: Sequence[str]) -> pd.DataFrame:
    """A row per bound result, a column per named property."""
    return _frame([tuple(getattr(o, c) for c in columns) for o in objects], columns)


def _queues_frame(shares: list[_core.QueueShare]) -> pd.DataFrame:
    rows = []
    for q in shares:
        row: list[Any] = [q.queue, q.weight, q.share]
        for kind in _SHARE_KINDS:
            res = getattr(q, kind)
            row += [res.cpu, res.memory, res.gpu]
        rows.append(tuple(row))
    return _frame(rows, _QUEUE_COLUMNS)


class Engine:
    """A batch scheduler: nodes, queues and jobs that live across cycles.

    ``config`` is a dict (or a YAML/JSON path) with ``actions`` and ``tiers``; None takes
    :func:`default_config`. A queue named ``default`` exists from the start.

    Safe to share between threads: every call takes the native scheduler's lock (reads share it;
    submit, delete, configure and a whole cycle hold it alone), and the one piece of state kept
    here, the last cycle's result, is guarded by a lock of its own. A plugin callback must not
    call back into the engine that runs it (RuntimeError).
    """

    def __init__(self, config: str | Path | Mapping[str, Any] | None = None) -> None:
        self._native = _core.EngineScheduler(None if config is None else load_config(config))
        self._last: CycleResult | None = None
        self._last_lock = threading.Lock()

    # --- configuration and cluster ---------------------------------------------------------
    def configure(self, config: str | Path | Mapping[str, Any]) -> None:
        """Replace the configuration (validated first; unchanged on error)."""
        self._native.configure(load_config(config))

    @property
    def config(self) -> dict[str, Any]:
        """The configuration in force, normalised: ``{"actions": [{name, arguments}], "tiers":
        [{"plugins": [{name, arguments}]}]}``."""
        return self._native.config()

    @property
    def cluster(self) -> _core.Cluster:
        """The accounting (nodes, devices, running pods); see gpufleet.Cluster."""
        return self._native.cluster

    def add_node(self, spec: Mapping[str, Any]) -> None:
        """Add a node in the scenario format (``name``, ``cpu``, ``memory``, ``gpus`` or
        ``devices``, ...; docs/scenario.md). ValueError names the node and the bad field."""
        self._native.add_node(dict(spec))

    # --- queues ----------------------------------------------------------------------------
    def add_queue(self, name: str | Mapping[str, Any], weight: float = 1.0,
                  capability: Mapping[str, Any] | None = None, reclaimable: bool = True) -> None:
        """Add a queue: ``add_queue("team-a", weight=3, capability={"gpu": 16})`` or a dict."""
        self._native.add_queue(self._queue_spec(name, weight, capability, reclaimable))

    def update_queue(self, name: str | Mapping[str, Any], weight: float = 1.0,
                     capability: Mapping[str, Any] | None = None, reclaimable: bool = True) -> None:
        """Replace an existing queue's weight, capability and reclaimable flag (same arguments as
        :meth:`add_queue`). KeyError when no queue has that name."""
        self._native.update_queue(self._queue_spec(name, weight, capability, reclaimable))

    def load_queues(self, source: str | Path | Sequence[Mapping[str, Any]]) -> None:
        """Add a queue tree: a YAML/JSON file of KAI ``Queue``, Kueue ``ClusterQueue``/``Cohort``
        or Volcano ``Queue`` objects, or a list of such objects and gpufleet queue dicts
        (:mod:`gpufleet.queues`). Parents are added before their children; a bad tree (a cycle of
        parents, a child's guarantee above its parent's, ...) raises ValueError and adds nothing.
        Use the ``queuetree`` plugin (and ``treereclaim``) to schedule by the tree."""
        from gpufleet.queues import queue_specs, read_queue_objects

        specs = read_queue_objects(source) if isinstance(source, (str, Path)) else queue_specs(source)
        self._native.load_scenario({"queues": specs})

    def delete_queue(self, name: str) -> None:
        """Remove the queue ``name``; KeyError when there is none."""
        self._native.delete_queue(name)

    def queues(self) -> pd.DataFrame:
        """One row per queue: ``queue``, ``weight``, ``capability`` (dict of limits, empty: none),
        ``reclaimable`` and ``parent`` (its parent in a queue tree, "" at the top)."""
        return _frame([(q.name, q.weight, q.capability, q.reclaimable, q.parent)
                       for q in self._native.queues()],
                      ["queue", "weight", "capability", "reclaimable", "parent"])

    @staticmethod
    def _queue_spec(name: Any, weight: float, capability: Any, reclaimable: bool) -> dict[str, Any]:
        if isinstance(name, Mapping):
            return dict(name)
        spec: dict[str, Any] = {"name": name, "weight": weight, "reclaimable": reclaimable}
        if capability:
            spec["capability"] = dict(capability)
        return spec

    # --- jobs ------------------------------------------------------------------------------
    def submit(self, job: Mapping[str, Any] | None = None, **fields: Any) -> None:
        """Submit a job: a dict in the scenario format or keyword fields, e.g.
        ``submit(name="a", queue="team-a", replicas=4, requests={"nvidia.com/gpu": 1})``.
        Job-time policies (the ``jobtime`` action) also read ``throughput`` ({GPU model: speed
        relative to the reference model}; models not listed cannot run the job) and
        ``expected_duration`` (seconds on the reference model)."""
        self._native.submit_job({**(dict(job) if job else {}), **fields})

    def update(self, job: Mapping[str, Any] | None = None, **fields: Any) -> None:
        """Replace a job's spec; while tasks run only priority and min_available may change."""
        self._native.update_job({**(dict(job) if job else {}), **fields})

    def delete(self, name: str) -> None:
        """Remove a job, releasing its running tasks (finished or cancelled)."""
        self._native.delete_job(name)

    def start_task(self, job: str, task: int, node: str) -> None:
        """Mark a job's task as already running on ``node`` (restoring state)."""
        self._native.start_task(job, task, node)

    def jobs(self) -> pd.DataFrame:
        """One row per job: ``name``, ``queue``, ``priority``, ``min_available``, ``tasks``,
        ``running`` (tasks), ``admitted`` (past enqueue) and ``waiting_cycles``."""
        return _table(self._native.jobs(), JobState.fields)

    def job_tasks(self, name: str) -> list[str]:
        """The task names of job ``name``; KeyError when there is no such job."""
        return list(self._native.job_tasks(name))

    def load(self, scenario: Mapping[str, Any]) -> None:
        """Add a scenario's nodes, queues and jobs (see ``gpufleet cycle``)."""
        self._native.load_scenario(dict(scenario))

    # --- cycles ----------------------------------------------------------------------------
    def run_cycle(self, now: float | None = None) -> CycleResult:
        """Run one scheduling cycle and return its decisions. A failing cycle (an error raised
        by a Python plugin) raises and changes nothing.

        ``now`` (seconds) sets the cycle's time, which actions that track time read (the
        ``jobtime`` action advances its jobs' attained service by it); without it the cycle runs
        at :attr:`now`, a monotonic clock from the engine's creation. A time before the last
        cycle's raises ValueError."""
        # numbered under the engine's lock, with the cycle
        result = CycleResult(self._native.run_cycle(None if now is None else float(now)))
        with self._last_lock:  # cycles from several threads finish in any order: keep the latest
            if self._last is None or result.cycle > self._last.cycle:
                self._last = result
        return result

    @property
    def last(self) -> CycleResult | None:
        """The result of the latest cycle (by number) that has returned."""
        with self._last_lock:
            return self._last

    def queue_shares(self) -> pd.DataFrame:
        """Each queue's allocated, deserved and requested resources as of the last cycle (an empty
        frame before the first)."""
        last = self.last
        if last is None:
            return _queues_frame([])
        return last.queues.copy()

    @property
    def cycles(self) -> int:
        """Cycles run so far (the next cycle's number)."""
        return int(self._native.cycles)

    @property
    def now(self) -> float:
        """Seconds on the engine's clock: monotonic, 0 when the engine was created."""
        return float(self._native.now())

    @property
    def last_cycle_time(self) -> float:
        """The time (seconds) the last successful cycle ran at; 0 before the first."""
        return float(self._native.last_cycle_time)


# The name for the same thing.
Scheduler = Engine


def engine_from_scenario(data: Mapping[str, Any], where: str = "<scenario>",
                         config: str | Path | Mapping[str, Any] | None = None) -> Engine:
    """An Engine from the scenario format extended with ``queues`` and ``jobs``::

        nodes:  [...]                      # as for `gpufleet place`
        pods:   [...]                      # bound pods (with node + annotations) are restored;
                                           # unbound pods become one-task jobs in queue "default"
        queues: [{name: team-a, weight: 1, capability: {gpu: 16}, reclaimable: true}]
        jobs:   [{name: train, queue: team-a, priority: 5, min_available: 4, replicas: 4,
                  requests: {nvidia.com/gpu: 2}, running: [n1, n1]}]   # `running`: already on nodes

    Errors name ``where``, the entry and the problem (ValueError)."""
    from gpufleet.scenario import SCENARIO_KEYS, ScenarioError, build_scenario, check_keys

    if not isinstance(data, Mapping):
        raise ScenarioError(f"{where}: expected a mapping")
    check_keys(data, SCENARIO_KEYS, where)
    base = build_scenario({k: data.get(k) for k in ("nodes", "pods")}, where)
    engine = Engine(config)
    for name in base.cluster.node_names():
        engine.add_node(base.cluster.node(name))
    for alloc in base.cluster.allocations():
        spec = next(p for p in data.get("pods") or [] if isinstance(p, Mapping) and p.get("name") == alloc.pod)
        annotations = {str(k): str(v) for k, v in (spec.get("annotations") or {}).items()}
        pod_fields = {k: v for k, v in spec.items() if k not in ("node", "annotations")}
        engine.cluster.restore_allocation(pod_fields, alloc.node, annotations)
    try:
        from gpufleet.queues import queue_specs  # KAI, Kueue and Volcano queue objects as well

        engine.load({"queues": queue_specs(data.get("queues") or []), "jobs": data.get("jobs") or []})
        for pod in base.pending:
            spec = next(p for p in data.get("pods") or [] if isinstance(p, Mapping) and p.get("name") == pod.name)
            engine.submit({"name": pod.name, "queue": "default", "priority": pod.priority,
                           "tasks": [{k: v for k, v in spec.items() if k not in ("node", "annotations")}]})
    except (ValueError, KeyError) as e:
        raise ScenarioError(f"{where}: {e}") from None
    return engine
