"""The engine's results as bound classes: every cycle decision, job and queue summary and plugin
view is an immutable native object with documented read-only properties, a repr and to_dict();
the DataFrames and the CLI's JSON are built from exactly those objects."""
from __future__ import annotations

import inspect
import json
import threading

import pytest

from gpufleet import _core
from gpufleet import engine as eng
from gpufleet.engine import Engine, register_plugin

import conftest

NATIVE = ("CycleResult", "BindDecision", "EvictDecision", "QueueShare", "HeldCapacity", "JobState",
          "QueueSpec", "Resources", "JobView", "TaskView", "QueueView")


def _node(name: str, gpus: int = 4) -> dict:
    return conftest.gpu_node(name, gpus, memory="80Gi", model="A100", ram="512Gi")


def _preempting_engine() -> Engine:
    """One cycle that binds, evicts (preempt and reclaim) and leaves a job pending."""
    e = Engine({"actions": "allocate, preempt, reclaim",
                "tiers": [{"plugins": ["priority", "gang"]},
                          {"plugins": ["drf", "predicates", "proportion", "nodeorder"]}]})
    e.add_node(_node("n1", 4))
    e.add_queue("a")
    e.add_queue("b")
    e.submit(conftest.job("a-low", 4, 1, queue="a", min_available=1, priority=1))
    e.run_cycle()
    e.submit(conftest.job("a-high", 1, 1, queue="a", priority=5))
    e.submit(conftest.job("b-job", 2, 1, queue="b"))
    e.submit(conftest.job("huge", 1, 16, queue="b"))
    return e


@pytest.mark.parametrize("name", NATIVE)
def test_native_result_classes_are_documented_and_read_only(name):
    cls = getattr(_core, name)
    assert len(inspect.getdoc(cls) or "") >= 25, name
    members = [(n, v) for n, v in vars(cls).items() if not n.startswith("_")]
    assert any(n == "to_dict" for n, _ in members), name
    for member, value in members:
        if member in ("fields", "derived"):  # constant tuples of property names, not members
            assert isinstance(value, tuple) and all(hasattr(cls, f) for f in value), f"{name}.{member}"
            continue
        doc = inspect.getdoc(value) or ""
        if doc.startswith(f"{member}("):
            doc = doc.partition("\n")[2].strip()
        assert len(doc) >= 12 and len(doc.split()) >= 3, f"{name}.{member} lacks a docstring"
        if isinstance(value, property):
            assert value.fset is None, f"{name}.{member} can be set"
    with pytest.raises(TypeError):
        cls()  # built by the engine only


def test_cycle_result_objects_match_the_tables_and_the_document():
    r = _preempting_engine().run_cycle()
    native = r.native
    assert isinstance(native, _core.CycleResult) and native.cycle == r.cycle == 1
    assert len(native.binds) == len(r.binds) == 3 and len(native.evictions) == len(r.evictions) == 3
    for b, row in zip(native.binds, r.binds.itertuples()):
        assert isinstance(b, eng.BindDecision)
        assert (b.job, b.task, b.node, b.gpus, b.gpu_core) == (row.job, row.task, row.node, row.gpus, row.gpu_core)
        assert b.gpus == [d.minor for d in b.devices if d.type == "gpu"] and b.gpu_core == 100
        assert b.cpu_milli == row.cpu_milli == 1000
        assert b.task in repr(b) and b.node in repr(b)
    reasons = {e.task: e.reason for e in native.evictions}
    assert sum("preempted by task a-high-0" in x for x in reasons.values()) == 1
    assert "huge" in native.pending and native.pending == r.pending
    shares = {q.queue: q for q in native.queues}
    assert shares["b"].allocated.gpu == r.queues.set_index("queue").loc["b", "allocated_gpu"] == 2.0
    assert isinstance(shares["b"].deserved, eng.Resources)
    assert shares["b"].allocated.to_dict() == {"cpu": 2000.0, "memory": 0.0, "gpu": 2.0}
    # to_dict is the members' to_dict, in the document's key order
    doc = r.to_dict()
    assert list(doc) == ["cycle", "binds", "evictions", "pending", "queues", "held", "target"]
    assert doc["binds"] == [b.to_dict() for b in native.binds]
    assert doc["evictions"] == [e.to_dict() for e in native.evictions]
    assert doc["queues"] == [q.to_dict() for q in native.queues]
    assert list(doc["binds"][0]) == ["node", "cpu_milli", "memory_bytes", "devices", "job", "task"]
    assert json.loads(json.dumps(doc)) == doc
    assert repr(r) == repr(native) == "CycleResult(cycle=1, binds=3, evictions=3, pending=1, target='')"


def test_results_are_immutable_copies_that_outlive_the_engine_and_later_cycles():
    e = _preempting_engine()
    r = e.run_cycle()
    bind, share = r.native.binds[0], r.native.queues[0]
    before = (r.to_dict(), bind.to_dict(), share.to_dict())
    with pytest.raises(AttributeError):
        bind.job = "other"
    with pytest.raises(AttributeError):
        share.allocated.gpu = 7.0
    e.delete("a-high")
    e.delete("b-job")
    e.run_cycle()
    del e, r
    assert (bind.to_dict(), share.to_dict()) == before[1:]  # a view keeps its result alive
    assert bind.devices[0].core == 100


def test_results_read_from_many_threads_while_the_engine_runs_cycles():
    e = _preempting_engine()
    r = e.run_cycle()
    expected = json.dumps(r.to_dict())
    seen, errors = [], []

    def reader():
        try:
            for _ in range(50):
                seen.append(json.dumps(r.to_dict()) == expected and len(r.native.binds) == 3)
        except Exception as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=reader) for _ in range(4)]
    for t in threads:
        t.start()
    for n in range(5):
        e.submit(conftest.job(f"late{n}", 1, 1, queue="b"))
        e.run_cycle()
    for t in threads:
        t.join()
    assert not errors and len(seen) == 200 and all(seen)


def test_jobs_and_queues_are_bound_summaries():
    e = _preempting_engine()
    e.add_queue("capped", weight=2, capability={"gpu": 3})
    jobs = {j.name: j for j in e._native.jobs()}
    assert isinstance(jobs["a-low"], eng.JobState)
    assert jobs["a-low"].to_dict() == e.jobs().set_index("name").loc["a-low"].to_dict() | {"name": "a-low"}
    assert jobs["a-low"].running == 4 and jobs["huge"].running == 0
    queues = {q.name: q for q in e._native.queues()}
    assert isinstance(queues["capped"], eng.QueueSpec)
    assert queues["capped"].capability == {"gpu": 3.0} and queues["a"].capability == {}
    assert queues["capped"].to_dict() == {"name": "capped", "weight": 2.0, "capability": {"gpu": 3.0},
                                          "reclaimable": True}
    assert "QueueSpec(capped" in repr(queues["capped"])


class Recorder:
    """A Python plugin that records the views it is handed and orders jobs by name, descending."""

    seen: dict[str, list] = {}

    def job_order(self, a, b):
        Recorder.seen.setdefault("job", []).extend([a, b])
        return -1 if a.name > b.name else (1 if a.name < b.name else 0)

    def predicate(self, task, node):
        Recorder.seen.setdefault("task", []).append(task)
        return None if task.request.gpu <= 1 else f"{task.job} asks {task.request.gpu:g} GPUs"

    def overused(self, queue):
        Recorder.seen.setdefault("queue", []).append(queue)
        return False


def test_python_plugins_receive_read_only_views():
    Recorder.seen = {}
    register_plugin("recorder", Recorder)
    e = Engine({"actions": "allocate",
                "tiers": [{"plugins": ["gang", "predicates", "recorder", "proportion"]}]})
    e.add_node(_node("n1", 4))
    e.submit(conftest.job("alpha", 1, 1, priority=3))
    e.submit(conftest.job("beta", 1, 1))
    e.submit(conftest.job("wide", 1, 2))
    r = e.run_cycle()
    assert set(r.binds["job"]) == {"alpha", "beta"}
    assert "wide asks 2 GPUs" in r.pending["wide"]
    job, task, queue = Recorder.seen["job"][0], Recorder.seen["task"][0], Recorder.seen["queue"][0]
    assert isinstance(job, eng.JobView) and isinstance(task, eng.TaskView) and isinstance(queue, eng.QueueView)
    views = {j.name: j for j in Recorder.seen["job"]}
    assert views["alpha"].priority == 3 and views["alpha"].queue == "default" and views["alpha"].tasks == 1
    assert task.status == "pending" and task.node is None and task.to_dict()["request"]["gpu"] == task.request.gpu
    assert queue.name == "default" and set(queue.to_dict()) == {"name", "weight", "allocated", "request", "deserved"}
    with pytest.raises(AttributeError):
        task.name = "x"
