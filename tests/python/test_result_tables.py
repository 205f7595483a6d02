"""Each engine result class is one table of fields: every property is a field (a key of
to_dict(), in `fields` order) or declared derived from them, and the shipped stub declares each."""
from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

import gpufleet
from gpufleet._core import engine as native
from gpufleet.engine import Engine, register_plugin

import conftest

ROOT = Path(__file__).resolve().parents[2]
TABLES = ("CycleResult", "BindDecision", "EvictDecision", "QueueShare", "HeldCapacity", "JobState",
          "Resources", "JobView", "TaskView", "QueueView")
STUB = Path(gpufleet.__file__).with_name("_core") / "engine.pyi"


def _properties(cls) -> set[str]:
    return {n for n, v in vars(cls).items() if not n.startswith("_") and isinstance(v, property)}


class Viewer:
    """A Python plugin that keeps the views its callbacks are given."""

    seen: dict[str, list] = {}

    def job_order(self, a, b):
        Viewer.seen.setdefault("JobView", []).extend([a, b])
        return 0

    def predicate(self, task, node):
        Viewer.seen.setdefault("TaskView", []).append(task)

    def overused(self, queue):
        Viewer.seen.setdefault("QueueView", []).append(queue)
        return False


def _instances() -> dict[str, list]:
    """Real objects of every class: a cycle that binds, evicts and leaves a job pending, a
    starving gang that has capacity held for it, and a Python plugin's callbacks."""
    e = Engine({"actions": "allocate, preempt, reclaim",
                "tiers": [{"plugins": ["priority", "gang"]},
                          {"plugins": ["drf", "predicates", "proportion", "nodeorder"]}]})
    e.add_node(conftest.gpu_node("n1", 4, memory="80Gi", model="A100", ram="512Gi"))
    e.add_queue("a")
    e.add_queue("b")
    e.submit(conftest.job("a-low", 4, 1, queue="a", min_available=1, priority=1))
    e.run_cycle()
    e.submit(conftest.job("a-high", 1, 1, queue="a", priority=5))
    e.submit(conftest.job("b-job", 2, 1, queue="b"))
    r = e.run_cycle().native
    out = {"CycleResult": [r], "BindDecision": list(r.binds), "EvictDecision": list(r.evictions),
           "QueueShare": list(r.queues), "JobState": list(e._native.jobs()),
           "Resources": [q.allocated for q in r.queues]}
    # Capacity held for a starving gang (the stream of test_engine_reservation.py).
    s = Engine(str(ROOT / "examples" / "scheduler-conf.yaml"))
    for n in ("n0", "n1"):
        s.add_node(conftest.gpu_node(n, 8, memory="80Gi", model="A100", cpu="128", ram="1024Gi"))
    for k in range(6):
        s.submit(conftest.job(f"small{k}", 1, 1, creation=1 + k))
    s.submit(conftest.job("gang", 2, 8, creation=8))
    for c in range(10):
        for k in range(3):
            s.submit(conftest.job(f"late{c}-{k}", 1, 1, creation=20 + 3 * c + k))
        held = s.run_cycle().native
        if held.held:
            out["HeldCapacity"] = list(held.held)
            out["CycleResult"].append(held)
            break
    Viewer.seen = {}
    register_plugin("viewer", Viewer)
    p = Engine({"actions": "allocate", "tiers": [{"plugins": ["gang", "predicates", "viewer", "proportion"]}]})
    p.add_node(conftest.gpu_node("n1", 2))
    p.submit(conftest.job("a"))
    p.submit(conftest.job("b"))
    p.run_cycle()
    return out | Viewer.seen


@pytest.fixture(scope="module")
def instances():
    return _instances()


@pytest.mark.parametrize("name", TABLES)
def test_every_property_is_a_field_or_derived(name, instances):
    cls = getattr(native, name)
    fields, derived = tuple(cls.fields), tuple(cls.derived)
    assert fields and not set(fields) & set(derived), name
    assert _properties(cls) == set(fields) | set(derived), name
    for member in fields + derived:
        assert len(inspect.getdoc(vars(cls)[member]) or "") >= 12, f"{name}.{member} lacks help"
    for obj in instances.get(name, []):
        d = obj.to_dict()
        assert list(d) == list(fields), name
        for f in fields:  # to_dict holds each property's plain data
            v = getattr(obj, f)
            if hasattr(v, "to_dict"):
                assert d[f] == v.to_dict()
            elif isinstance(v, list) and v and hasattr(v[0], "to_dict"):
                assert d[f] == [x.to_dict() for x in v]
            elif f != "devices":
                assert d[f] == v, (name, f)
    assert instances.get(name), f"no {name} was made"


def test_derived_properties_follow_from_the_fields(instances):
    for b in instances["BindDecision"]:
        assert b.gpus == [d["minor"] for d in b.to_dict()["devices"] if d["type"] == "gpu"]
        assert b.gpu_core == sum(d["core"] for d in b.to_dict()["devices"] if d["type"] == "gpu")
    cycle = instances["CycleResult"][0]
    assert cycle.held_gpus == sum(h["gpu"] for h in cycle.to_dict()["held"])


@pytest.mark.parametrize("name", TABLES)
def test_the_stub_declares_every_property(name):
    text = STUB.read_text()
    block = re.search(rf"^class {name}\b.*?(?=^class |\Z)", text, flags=re.M | re.S)
    assert block, f"{name} missing from {STUB.name}; regenerate with tools/make_stubs.sh"
    # Properties are declared as methods; the class-level `fields` and `derived` as ClassVars.
    declared = set(re.findall(r"def (\w+)\(|^\s+(\w+): typing\.ClassVar", block.group(0), flags=re.M))
    declared = {name for pair in declared for name in pair if name}
    missing = (_properties(getattr(native, name)) | {"fields", "derived"}) - declared
    assert not missing, f"{name}: {sorted(missing)} missing from the stub; run tools/make_stubs.sh"
