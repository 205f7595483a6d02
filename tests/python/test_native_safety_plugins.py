"""Engine plugins written in Python that misbehave: callbacks that call another engine whose own
callbacks call back (a lock-order cycle between two engines), order callbacks that answer at random,
scores that are not numbers. The engine must neither hang nor crash: the cases that did run in a
child interpreter with a timeout, so a hang or a crash fails the test instead of the run."""
from __future__ import annotations

import math

import pytest

from gpufleet.engine import Engine, register_plugin

from conftest import gpu_node, job
from native_isolation import run_isolated

# Two engines, each with a plugin whose predicate calls the other engine. A gang of three tasks
# that can never fit two GPUs keeps the predicate called in every cycle.
_TWO_ENGINES = """
    import sys, threading
    from gpufleet.engine import Engine, register_plugin
    sys.setswitchinterval(1e-6)
    engines = {}
    together = threading.Barrier(2, timeout=10)
    local = threading.local()

    def calling(other):
        class CallsTheOther:
            def predicate(self, task, node):
                if getattr(local, "meet", False):
                    local.meet = False
                    together.wait()  # both cycles are inside a callback now
                engines[other].jobs()
                return None
        return CallsTheOther

    for me, other in (("a", "b"), ("b", "a")):
        register_plugin(f"calls-{other}", calling(other))
        e = Engine({"actions": "allocate",
                    "tiers": [{"plugins": ["gang", "predicates", f"calls-{other}"]}]})
        e.add_node({"name": "n0", "cpu": "8", "memory": "32Gi",
                    "gpus": {"count": 2, "model": "V100", "memory": "16Gi"}})
        e.submit({"name": "gang", "replicas": 3, "min_available": 3,
                  "requests": {"cpu": "1", "nvidia.com/gpu": 1}})
        engines[me] = e
"""


def test_two_engines_whose_plugins_call_each_other_finish():
    """Both cycles enter their plugins together, then each calls the other engine: one of them
    closes the ring and gets a RuntimeError naming both engines (its cycle fails and changes
    nothing); the other then gets the lock and finishes. Then more rounds without the meeting:
    every cycle either succeeds or fails with that error, and none hangs."""
    out = run_isolated(_TWO_ENGINES + """
    outcomes = {}

    def run(me, rounds, meet):
        mine = outcomes.setdefault(me, [])
        for _ in range(rounds):
            local.meet = meet
            try:
                mine.append(engines[me].run_cycle().cycle >= 0)
            except RuntimeError as err:
                mine.append(str(err))

    threads = [threading.Thread(target=run, args=(me, 1, True)) for me in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    first = outcomes["a"] + outcomes["b"]
    errors = [o for o in first if o is not True]
    assert len(errors) == 1, first
    assert "would deadlock" in errors[0] and errors[0].count("engine #") >= 2, errors[0]

    outcomes.clear()
    threads = [threading.Thread(target=run, args=(me, 40, False)) for me in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    later = outcomes["a"] + outcomes["b"]
    assert len(later) == 80
    assert all(o is True or "would deadlock" in o for o in later), later
    for e in engines.values():
        e.cluster.check_invariants()
        assert e.cluster.allocations() == []
    print(sum(o is True for o in first + later))
    """, timeout=60)
    assert int(out) >= 1


def test_plugins_calling_another_idle_engine_work():
    """Calling another engine from a plugin is allowed: with the other engine idle it answers."""
    out = run_isolated(_TWO_ENGINES + """
    assert engines["a"].run_cycle().cycle == 0
    assert engines["b"].run_cycle().cycle == 0
    print("ok")
    """, timeout=60)
    assert out.strip() == "ok"


def test_order_callbacks_that_answer_at_random_do_not_crash_the_engine():
    """The engine's sorts trust a comparator to answer a pair the same way each time; a Python
    order callback that does not (here: at random) must still leave a cycle that finishes with
    the cluster's invariants intact."""
    out = run_isolated("""
        import random
        from gpufleet.engine import Engine, register_plugin
        random.seed(7)

        class Chaos:
            def job_order(self, a, b):
                return random.choice([-1, 1])
            def task_order(self, a, b):
                return random.choice([-1, 1])
            def queue_order(self, a, b):
                return random.choice([-1, 1])

        register_plugin("chaos", Chaos)
        for trial in range(4):
            e = Engine({"actions": "enqueue, allocate",
                        "tiers": [{"plugins": ["chaos", "gang", "predicates", "proportion"]}]})
            for q in range(20):
                e.add_queue(f"q{q}")
            for n in range(4):
                e.add_node({"name": f"n{n}", "cpu": "64", "memory": "256Gi",
                            "gpus": {"count": 8, "model": "V100", "memory": "16Gi"}})
            for j in range(200):
                e.submit({"name": f"j{j}", "queue": f"q{j % 20}", "replicas": 3,
                          "requests": {"cpu": "1", "nvidia.com/gpu": 1}})
            r = e.run_cycle()
            e.cluster.check_invariants()
            assert 0 < len(r.binds) <= 32
        print("ok")
        """, timeout=120)
    assert out.strip() == "ok"


class NotANumber:
    """A node_order callback whose score is NaN."""

    def node_order(self, task, node):
        return math.nan


def test_a_node_score_that_is_not_a_number_fails_the_cycle_by_name():
    register_plugin("test-nan-score", NotANumber)
    e = Engine({"actions": "allocate",
                "tiers": [{"plugins": ["gang", "predicates", "test-nan-score"]}]})
    e.add_node(gpu_node("n0", 2))
    e.submit(job("a"))
    before = e.cluster.snapshot()
    with pytest.raises(ValueError, match="plugin test-nan-score: node_order returned nan for task .* "
                                         "on node n0; a score must be a finite number"):
        e.run_cycle()
    assert e.cluster.snapshot() == before
    assert e.cycles == 0
