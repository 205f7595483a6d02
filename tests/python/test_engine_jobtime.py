"""The jobtime action from Python: a simulator policy decides, the engine binds and evicts, and
the caller drives time with ``run_cycle(now=...)``."""
from __future__ import annotations

import pytest

from gpufleet.engine import Engine

import conftest
from conftest import job


def node(name: str, model: str = "A100", gpus: int = 2):
    return conftest.gpu_node(name, gpus, model=model, ram="512Gi")




def jobtime(policy: str, **args):
    return {"actions": [{"name": "jobtime", "arguments": {"policy": policy, **args}}],
            "tiers": [{"plugins": ["predicates", "nodeorder"]}]}


def engine(policy: str, nodes, **args) -> Engine:
    e = Engine(jobtime(policy, **args))
    for n in nodes:
        e.add_node(n)
    return e


def test_las_preempts_the_job_with_most_service():
    e = engine("las", [node("n1"), node("n2")])
    e.submit(job("a", 2))
    assert set(e.run_cycle(now=0).binds["job"]) == {"a"}
    e.submit(job("b", 2))
    assert set(e.run_cycle(now=50).binds["job"]) == {"b"}
    e.submit(job("c", 2))
    r = e.run_cycle(now=100)  # service: a 200, b 100, c 0
    assert set(r.evictions["job"]) == {"a"}
    assert set(r.evictions["reason"]) == {"jobtime las: preempted"}
    assert set(r.binds["job"]) == {"c"}
    assert e.last_cycle_time == 100
    r = e.run_cycle(now=120)
    assert r.pending["a"] == "jobtime las: waiting for 2 GPUs (not in the policy's plan)"


def test_las_takes_turns_as_time_passes():
    # Two 4-GPU jobs on 4 GPUs: whichever has had less service runs; ties go to the earlier job.
    e = engine("las", [node("n1"), node("n2")])
    e.submit(job("a", 4))
    e.submit(job("b", 4))
    running = []
    for t in (0, 10, 20, 30):
        r = e.run_cycle(now=t)
        bound = set(r.binds["job"])
        assert len(bound) == 1
        if t > 0:
            assert set(r.evictions["job"]) == {running[-1]}
        running.append(bound.pop())
    assert running == ["a", "b", "a", "b"]


def test_hetero_las_places_on_the_fastest_model():
    e = engine("hetero-las", [node("v1", "V100"), node("k1", "K80"), node("k2", "K80")])
    e.submit(job("likes-k80", 2, throughput={"V100": 0.5, "K80": 1.0}, expected_duration=600))
    r = e.run_cycle(now=0)
    assert set(r.binds["node"]) <= {"k1", "k2"}
    assert len(r.binds) == 2


def test_gang_is_all_or_nothing():
    # 4 A100s free by count (n1: 2, n2: 1, n3: 1), but each of the job's two tasks needs 2 on one
    # node: the first task would fit n1, the second nowhere, so neither is placed.
    e = engine("fifo", [node("n1"), node("n2"), node("n3")])
    for n in ("n2", "n3"):
        e.cluster.place({"name": f"other-{n}", "requests": {"nvidia.com/gpu": 1}}, nodes=[n])
    e.submit(job("gang", 2, 2))
    r = e.run_cycle(now=0)
    assert r.binds.empty
    assert "jobtime fifo: planned on A100, but task gang-1" in r.pending["gang"]
    assert len(e.cluster.allocations()) == 2
    e.cluster.release("other-n2")
    r = e.run_cycle(now=10)
    assert set(r.binds["job"]) == {"gang"} and len(r.binds) == 2


def test_restored_jobs_count_as_running():
    # A job restored with start_task arrives running: fifo leaves it alone and queues the next.
    e = engine("fifo", [node("n1")])
    e.submit(job("restored", 2))
    e.start_task("restored", 0, "n1")
    e.start_task("restored", 1, "n1")
    e.submit(job("next", 1))
    r = e.run_cycle(now=0)
    assert r.binds.empty and r.evictions.empty
    assert r.pending["next"].startswith("jobtime fifo: waiting for 1 GPUs")
    e.delete("restored")
    assert set(e.run_cycle(now=5).binds["job"]) == {"next"}


def test_time_and_config_errors():
    e = engine("las", [node("n1")])
    e.run_cycle(now=10)
    with pytest.raises(ValueError, match="before the last cycle"):
        e.run_cycle(now=5)
    # Without now, cycles run on the engine's monotonic clock (seconds since its creation).
    fresh = engine("las", [node("n1")])
    fresh.run_cycle()
    assert 0 <= fresh.last_cycle_time <= fresh.now
    with pytest.raises((ValueError, KeyError), match="unknown policy"):
        Engine(jobtime("nope"))
    with pytest.raises(ValueError, match="bogus"):
        Engine(jobtime("las", bogus=1))


def test_job_time_fields_are_validated():
    e = engine("las", [node("n1")])
    with pytest.raises(ValueError, match="job x: throughput.A100"):
        e.submit(job("x", 1, throughput={"A100": -1}))
    with pytest.raises(ValueError, match="job y: expected_duration"):
        e.submit(job("y", 1, expected_duration="long"))
