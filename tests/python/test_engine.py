"""The engine's Python API and CLI: jobs and queues, cycles and decisions, configuration errors,
Python plugins, the seed scenarios and a property test of deserved shares."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpufleet import engine as eng
from gpufleet.cli import main
from gpufleet.engine import Engine, register_plugin

import conftest

ROOT = Path(__file__).resolve().parents[2]


def gpu_node(name: str, gpus: int = 8, **extra):
    return conftest.gpu_node(name, gpus, memory="80Gi", model="A100", ram="512Gi", **extra)


def gang(name: str, replicas: int, gpus: int = 1, queue: str = "default", **extra):
    return conftest.job(name, replicas, gpus, queue=queue, **extra)


def test_registries_list_the_builtins():
    assert {"gang", "drf", "proportion", "priority", "predicates", "nodeorder", "deviceshare",
            "reservation", "queuetree"} <= set(eng.plugins())
    assert set(eng.actions()) == {"enqueue", "allocate", "backfill", "preempt", "reclaim",
                                  "jobtime", "treereclaim"}
    from gpufleet import _core
    assert _core.registry_duplicates() == []


def test_seed_scenarios_all_or_nothing():
    # room for 9 (one GPU held elsewhere), a 10-worker gang: nothing starts
    e = Engine()
    e.add_node(gpu_node("n1", 8))
    e.add_node(gpu_node("n2", 2))
    e.submit(gang("holder", 1))
    e.start_task("holder", 0, "n2")
    e.submit(gang("big", 10))
    r = e.run_cycle()
    assert r.binds.empty
    assert "gang: 9/10" in r.pending["big"]
    # two 10-worker jobs on room for 10: one runs fully, the other waits
    e = Engine()
    e.add_node(gpu_node("n1", 5))
    e.add_node(gpu_node("n2", 5))
    e.submit(gang("a", 10))
    e.submit(gang("b", 10))
    for _ in range(3):
        e.run_cycle()
    jobs = e.jobs().set_index("name")
    assert jobs.loc["a", "running"] == 10
    assert jobs.loc["b", "running"] == 0
    assert jobs.loc["b", "waiting_cycles"] == 3


def test_binds_carry_device_allocations_and_shares_are_reported():
    e = Engine()
    e.add_node(gpu_node("n1", 4))
    e.add_queue("a", weight=1)
    e.add_queue("b", weight=3)
    for i in range(4):
        e.submit(gang(f"a{i}", 1, queue="a"))
        e.submit(gang(f"b{i}", 1, queue="b"))
    r = e.run_cycle()
    assert sorted(r.binds["job"].str[0].value_counts().to_dict().items()) == [("a", 1), ("b", 3)]
    assert all(len(g) == 1 for g in r.binds["gpus"])
    shares = e.queue_shares().set_index("queue")
    assert shares.loc["a", "deserved_gpu"] == pytest.approx(1.0)
    assert shares.loc["b", "deserved_gpu"] == pytest.approx(3.0)
    assert shares.loc["b", "allocated_gpu"] == pytest.approx(3.0)
    # the bound pods are in the accounting with their devices
    alloc = e.cluster.allocation(r.binds["task"].iloc[0])
    assert alloc is not None and alloc.state == "Bound" and len(alloc.devices) == 1
    e.cluster.check_invariants()


def test_submit_update_delete_and_errors_leave_state_unchanged():
    e = Engine()
    e.add_node(gpu_node("n1", 2))
    with pytest.raises(KeyError, match="queue nowhere does not exist"):
        e.submit(gang("x", 1, queue="nowhere"))
    with pytest.raises(ValueError, match="min_available: must be >= 0"):
        e.submit(gang("x", 1, min_available=-1))
    with pytest.raises(ValueError, match="give either"):
        e.submit({"name": "x", "tasks": [], "replicas": 2})
    e.submit(gang("x", 2))
    with pytest.raises(ValueError, match="job x already exists"):
        e.submit(gang("x", 1))
    with pytest.raises(ValueError, match="task x-0 already belongs to job x"):
        e.submit({"name": "y", "tasks": [{"name": "x-0"}]})
    assert list(e.jobs()["name"]) == ["x"]
    e.run_cycle()
    assert e.jobs().iloc[0]["running"] == 2
    with pytest.raises(ValueError, match="only priority and min_available may change"):
        e.update(gang("x", 3))
    e.update(gang("x", 2, priority=7))
    assert e.jobs().iloc[0]["priority"] == 7
    with pytest.raises(ValueError, match="queue default still has job x"):
        e.delete_queue("default")
    e.delete("x")
    assert e.cluster.allocations() == []
    with pytest.raises(KeyError):
        e.delete("x")
    with pytest.raises(ValueError, match="weight: must be a finite number >= 0"):
        e.add_queue("bad", weight=-1)
    with pytest.raises(ValueError, match="capability.gpus: unknown resource"):
        e.add_queue({"name": "bad", "capability": {"gpus": 2}})


def test_config_errors_are_clear(tmp_path):
    with pytest.raises(KeyError, match='unknown plugin "gangg"'):
        Engine({"actions": "allocate", "tiers": [{"plugins": ["gangg", "predicates"]}]})
    with pytest.raises(ValueError, match='"enqueue" must be the first action'):
        eng.load_config({"actions": "allocate, enqueue", "tiers": [{"plugins": ["predicates"]}]})
    bad = tmp_path / "conf.yaml"
    bad.write_text("actions: allocate\ntiers:\n  - plugins: [{name: nodeorder, arguments: {binpack: x}}]\n")
    with pytest.raises(ValueError, match='nodeorder: parameter "binpack" has the wrong type'):
        eng.load_config(bad)
    e = Engine()
    before = e.config
    with pytest.raises(KeyError):
        e.configure({"actions": "allocate, teleport", "tiers": [{"plugins": ["predicates"]}]})
    assert e.config == before
    assert eng.load_config(ROOT / "examples" / "scheduler-conf.yaml")["actions"].startswith("enqueue")


def test_preempt_and_reclaim_report_evictions_with_reasons():
    conf = {"actions": "allocate, preempt, reclaim",
            "tiers": [{"plugins": ["priority", "gang"]},
                      {"plugins": ["drf", "predicates", "proportion", "nodeorder"]}]}
    e = Engine(conf)
    e.add_node(gpu_node("n1", 4))
    e.add_queue("a")
    e.add_queue("b")
    e.submit(gang("a-low", 4, queue="a", min_available=1, priority=1))
    e.run_cycle()
    e.submit(gang("a-high", 1, queue="a", priority=5))
    e.submit(gang("b-job", 2, queue="b"))
    r = e.run_cycle()
    reasons = r.evictions.set_index("task")["reason"].to_dict()
    assert len(reasons) == 3
    assert sum("preempted by task a-high-0" in x for x in reasons.values()) == 1
    assert sum("reclaimed for queue b" in x for x in reasons.values()) == 2
    assert set(r.binds["job"]) == {"a-high", "b-job"}
    e.cluster.check_invariants()


class EvenNodesOnly:
    """A Python predicate: only nodes whose name ends in an even digit."""

    def __init__(self, strict: bool = True):
        self.strict = strict

    def predicate(self, task, node):
        return None if int(node[-1]) % 2 == 0 else "odd node"


class Explodes:
    def node_order(self, task, node):
        raise RuntimeError("boom")


def test_python_plugins_slow_path():
    register_plugin("even-only", EvenNodesOnly)
    register_plugin("even-only", EvenNodesOnly)  # re-registering (notebook re-run) replaces
    with pytest.raises(ValueError, match='a native plugin named "gang" exists'):
        register_plugin("gang", EvenNodesOnly)
    e = Engine({"actions": "allocate",
                "tiers": [{"plugins": ["gang", "predicates", {"name": "even-only", "arguments": {"strict": True}}]}]})
    for i in range(4):
        e.add_node(gpu_node(f"n{i}", 1))
    e.submit(gang("j", 2))
    r = e.run_cycle()
    assert set(r.binds["node"]) == {"n0", "n2"}
    with pytest.raises(ValueError, match="plugin even-only"):
        e.configure({"actions": "allocate", "tiers": [{"plugins": [
            "gang", "predicates", {"name": "even-only", "arguments": {"nope": 1}}]}]})
    # an exception inside a callback fails the cycle and changes nothing
    register_plugin("explodes", Explodes)
    e2 = Engine({"actions": "allocate", "tiers": [{"plugins": ["gang", "predicates", "explodes"]}]})
    e2.add_node(gpu_node("n0", 2))
    e2.submit(gang("k", 1))
    snapshot = e2.cluster.snapshot()
    with pytest.raises(RuntimeError, match="boom"):
        e2.run_cycle()
    assert e2.cluster.snapshot() == snapshot
    assert e2.cycles == 0


class ScoresOnly:
    def node_order(self, task, node):
        return 0.0


def test_a_python_plugin_is_what_its_methods_make_it():
    """A Python plugin that defines `predicate` answers predicates: allocate needs no native
    predicates plugin beside it. The answer is observed, so replacing the class changes it."""
    from gpufleet.registries import entries

    register_plugin("even-only-alone", EvenNodesOnly)
    listed = {e["name"]: e for e in entries("plugins")}["even-only-alone"]
    assert listed["answers"] == ["predicates"] and listed["open_parameters"]
    assert [p["python_method"] for p in eng.callback_points() if p["name"] == "predicates"] == [
        "predicate"]
    e = Engine({"actions": "allocate", "tiers": [{"plugins": ["gang", "even-only-alone"]}]})
    for i in range(5):
        e.add_node(gpu_node(f"n{i}", 1))
    e.submit(gang("j", 2))
    assert set(e.run_cycle().binds["node"]) == {"n0", "n2"}
    # Without `predicate` the same name answers no predicates: the configuration is refused, and
    # a cycle of an engine configured before the change fails, changing nothing.
    register_plugin("even-only-alone", ScoresOnly)
    with pytest.raises(ValueError, match='"allocate" needs a plugin that answers "predicates"'):
        Engine({"actions": "allocate", "tiers": [{"plugins": ["gang", "even-only-alone"]}]})
    e.submit(gang("k", 1))
    snapshot = e.cluster.snapshot()
    with pytest.raises(ValueError, match='"allocate" needs a plugin that answers "predicates"'):
        e.run_cycle()
    assert e.cluster.snapshot() == snapshot and e.cycles == 1
    register_plugin("even-only-alone", EvenNodesOnly)
    assert e.run_cycle().binds["node"].tolist() == ["n4"]


@settings(max_examples=150, deadline=None)
@given(total=st.floats(min_value=0, max_value=1000),
       queues=st.lists(st.tuples(st.integers(0, 5), st.floats(min_value=0, max_value=500)),
                       min_size=0, max_size=8))
def test_water_fill_properties(total, queues):
    weights = [float(w) for w, _ in queues]
    caps = [c for _, c in queues]
    got = eng.water_fill(total, weights, caps)
    assert all(0 <= g <= c + 1e-9 for g, c in zip(got, caps))
    assert math.isclose(sum(got), min(total, sum(caps)), rel_tol=1e-9, abs_tol=1e-6)
    # weighted max-min: a weighted queue below its cap has the highest level among weighted ones
    levels = [g / w for g, w, c in zip(got, weights, caps) if w > 0]
    for g, w, c in zip(got, weights, caps):
        if w > 0 and g < c - 1e-6:
            assert g / w >= max(levels) - 1e-6


def test_cli_cycle_tables_and_json(capsys):
    scenario = str(ROOT / "examples" / "queues-scenario.yaml")
    conf = str(ROOT / "examples" / "scheduler-conf.yaml")
    assert main(["cycle", scenario, "--conf", conf, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    cycle = out["cycles"][0]
    bound = {b["job"] for b in cycle["binds"]}
    assert "llm-pretrain" in bound and "log-shipper" in bound and "notebooks" in bound
    assert sum(b["job"] == "llm-pretrain" for b in cycle["binds"]) == 4
    assert all(b["node"] == "n4" for b in cycle["binds"] if b["job"] == "notebooks")
    assert "not admitted" in cycle["pending"]["too-big"]
    assert main(["cycle", scenario]) == 0
    text = capsys.readouterr().out
    assert "PENDING BECAUSE" in text and "llm-pretrain" in text


def test_cli_errors(tmp_path, capsys):
    bad = tmp_path / "s.yaml"
    bad.write_text("nodes: []\njobs:\n  - {name: j, queue: ghost, replicas: 1}\n")
    assert main(["cycle", str(bad)]) == 1
    assert "queue ghost does not exist" in capsys.readouterr().err
    conf = tmp_path / "c.yaml"
    conf.write_text("actions: allocate\ntiers: [{plugins: [gang]}]\n")
    assert main(["cycle", str(bad), "--conf", str(conf)]) == 2
    assert 'needs a plugin that answers "predicates"' in capsys.readouterr().err


def test_a_queue_read_back_is_the_queue_written():
    e = Engine()
    e.add_queue("a", weight=2, capability={"cpu": "1500m", "memory": "8Gi", "gpu": 3})
    first = e.queues().set_index("queue").loc["a"]
    assert first["capability"] == {"cpu": 1.5, "memory": 8 << 30, "gpu": 3}
    # What queues() reports is valid input that means the same queue.
    e.add_queue("b", weight=first["weight"], capability=first["capability"])
    again = e.queues().set_index("queue").loc["b"]
    assert again["capability"] == first["capability"] and again["weight"] == 2
