"""Numbers the native core is given: a zero, negative, NaN or infinite value where it makes no
sense gets a ValueError naming the argument, never a crash (the crash-prone case runs in a child
interpreter) and never a nonsense answer."""
from __future__ import annotations

import math

import numpy as np
import pytest

from gpufleet import Cluster, Pod, _core, replay
from gpufleet._core import extender
from gpufleet.engine import Engine, water_fill
from gpufleet.traces import synthetic_openb

from conftest import gpu_node
from native_isolation import run_isolated


def gpushare_allocation():
    c = Cluster()
    c.add_node(gpu_node("n", 2))
    return c, c.reserve(Pod("p", {"aliyun.com/gpu-mem": "1024"}), "n")


def test_annotations_with_a_zero_memory_unit_is_a_value_error_not_a_crash():
    out = run_isolated("""
        from gpufleet import Cluster, Pod
        c = Cluster()
        c.add_node({"name": "n", "cpu": "8", "memory": "16Gi",
                    "gpus": {"count": 2, "model": "V100", "memory": "16Gi"}})
        a = c.reserve(Pod("p", {"aliyun.com/gpu-mem": "1024"}), "n")
        try:
            a.annotations(gpushare=True, unit_bytes=0)
        except ValueError as e:
            print(e)
        """)
    assert "unit_bytes must be a positive number of bytes, got 0" in out


@pytest.mark.parametrize("unit", [-1, -(1 << 20), -(1 << 63)])
def test_annotations_refuse_a_negative_memory_unit(unit):
    _, a = gpushare_allocation()
    with pytest.raises(ValueError, match=f"unit_bytes must be a positive number of bytes, got {unit}"):
        a.annotations(gpushare=True, unit_bytes=unit)
    assert a.annotations(gpushare=True)["ALIYUN_COM_GPU_MEM_POD"] == "1024"


@pytest.mark.parametrize("unit", [0, -1])
def test_restore_allocation_names_a_bad_memory_unit_and_changes_nothing(unit):
    c, a = gpushare_allocation()
    recorded = a.annotations(gpushare=True)
    recorded.pop("scheduling.koordinator.sh/device-allocated")
    before = c.snapshot()
    with pytest.raises(ValueError, match="unit_bytes must be a positive number of bytes"):
        c.restore_allocation(Pod("q", {"aliyun.com/gpu-mem": "1024"}), "n", recorded, unit)
    assert c.snapshot() == before


@pytest.mark.parametrize("total,weights,caps,named", [
    (math.nan, [1.0], [1.0], "total"),
    (math.inf, [1.0], [1.0], "total"),
    (-1.0, [1.0], [1.0], "total"),
    (1.0, [1.0], [1.0, 1.0], "1 weights but 2 caps"),
    (1.0, [math.nan, 1.0], [1.0, 1.0], r"weights\[0\]"),
    (1.0, [1.0, -2.0], [1.0, 1.0], r"weights\[1\]"),
    (1.0, [1.0, math.inf], [1.0, 1.0], r"weights\[1\]"),
    (1.0, [1.0], [math.nan], r"caps\[0\]"),
    (1.0, [1.0], [-1.0], r"caps\[0\]"),
])
def test_water_fill_names_a_bad_number(total, weights, caps, named):
    with pytest.raises(ValueError, match=named):
        water_fill(total, weights, caps)


def test_water_fill_still_takes_uncapped_queues():
    assert water_fill(6.0, [1.0, 2.0], [math.inf, math.inf]) == pytest.approx([2.0, 4.0])


@pytest.mark.parametrize("now", [math.nan, math.inf, -math.inf])
def test_run_cycle_at_a_time_that_is_not_a_number(now):
    e = Engine()
    e.add_node(gpu_node("n0", 2))
    with pytest.raises(ValueError, match="now must be a finite number of seconds"):
        e.run_cycle(now)
    assert e.cycles == 0
    assert e.run_cycle(5.0).cycle == 0


def simulate(**options):
    args = dict(restore_delay=0.0, tick=0.0, scheduling_interval=0.0, seed=0, memory_gib=None)
    args.update(options)
    return _core.sim_run([{"name": "v100", "count": 4}], np.arange(3), np.array([0.0, 1.0, 2.0]),
                         np.array([1, 2, 1]), np.array([10.0, 5.0, 3.0]), None, args["memory_gib"],
                         _core.SimOptions("fifo", restore_delay=args["restore_delay"], tick=args["tick"],
                                          scheduling_interval=args["scheduling_interval"],
                                          placement="", seed=args["seed"]))


@pytest.mark.parametrize("name", ["restore_delay", "tick", "scheduling_interval"])
@pytest.mark.parametrize("value", [math.inf, math.nan, -1.0])
def test_simulator_times_must_be_finite_and_not_negative(name, value):
    with pytest.raises(ValueError, match=f"{name} must be a finite number of seconds"):
        simulate(**{name: value})


@pytest.mark.parametrize("name", ["tick", "scheduling_interval"])
@pytest.mark.parametrize("value", [1e-300, 1e-9, 0.000999])
def test_simulator_steps_below_a_millisecond_are_refused(name, value):
    with pytest.raises(ValueError, match=f"{name} must be 0 \\(off\\) or at least 0.001 seconds"):
        simulate(**{name: value})
    assert simulate(**{name: 0.001}).summary.num_jobs == 3


def test_a_tick_over_an_idle_stretch_is_not_stepped_through():
    """Arrivals at Unix timestamps (1.7e9 s in) with a 10 ms tick: the first tick after the idle
    stretch is computed, not reached by 1.7e11 steps (a child, so a hang fails on time)."""
    out = run_isolated("""
        import numpy as np
        from gpufleet import _core
        r = _core.sim_run([{"name": "v100", "count": 4}], np.arange(2), np.array([1.7e9, 1.7e9 + 1]),
                          np.array([1, 4]), np.array([1.0, 1.0]), None, None,
                          _core.SimOptions("fifo", tick=0.01, record_timeseries=False))
        print(r.summary.num_jobs, r.scheduling_points)
        """, timeout=30)
    jobs, points = map(int, out.split())
    assert jobs == 2 and points < 1000, out


def test_simulate_refuses_a_cluster_larger_than_the_traces_bound():
    import pandas as pd

    from gpufleet import simulate as simulate_jobs

    jobs = pd.DataFrame({"job_id": [0], "submit_time": [0.0], "num_gpu": [1], "duration": [1.0]})
    for cluster, gpus in ((10**8, "100000000"), ({"a": 2**31 - 1, "b": 2**31 - 1}, "4294967294"),
                          ("v100:1048576,k80:1", "1048577")):
        with pytest.raises(ValueError, match=f"cluster: {gpus} GPUs is more than the 1048576"):
            simulate_jobs(jobs, cluster, "fifo")
    assert simulate_jobs(jobs, 2**20, "fifo", placement=None).summary["num_gpus"] == 2**20


def test_simulate_names_an_option_of_the_wrong_type():
    import pandas as pd

    from gpufleet import simulate as simulate_jobs

    jobs = pd.DataFrame({"job_id": [0], "submit_time": [0.0], "num_gpu": [1], "duration": [1.0]})
    for options, error, message in (
            (dict(tiresias_compat=[1]), TypeError, "tiresias_compat: expected true or false, got [1]"),
            (dict(record_timeseries="yes"), TypeError, "record_timeseries: expected true or false"),
            (dict(tick=[1]), TypeError, "tick: expected a number of seconds, got [1]"),
            (dict(restore_delay="1"), TypeError, "restore_delay: expected a number of seconds"),
            (dict(seed=2**64), ValueError, "seed: 18446744073709551616 is out of range"),
            (dict(seed=1.5), TypeError, "seed: expected a whole number"),
            (dict(placement=3), TypeError, "placement: expected a strategy name or None")):
        with pytest.raises(error) as info:
            simulate_jobs(jobs, 4, "fifo", **options)
        assert message in str(info.value) and "\n" not in str(info.value), options
    assert simulate_jobs(jobs, 4, "fifo", seed=np.int64(2), tiresias_compat=np.bool_(True)
                         ).summary["seed"] == 2


def test_integers_past_the_c_range_are_one_line_errors_naming_the_argument():
    c, a = gpushare_allocation()
    pod = Pod("q", {"nvidia.com/gpu": "1"})
    for call, message in (
            (lambda: extender.host_priorities(c, pod, ["n"], "binpack", 2**40),
             "max_priority: 1099511627776 is out of range: 1 to 2147483647"),
            (lambda: extender.host_priorities(c, pod, ["n"], "binpack", 1.5),
             "max_priority: expected a whole number, got float"),
            (lambda: Pod("q", {}, priority=2**40), "priority"),
            (lambda: c.set_device_health("n", 2**40, False), "minor: 1099511627776 is out of range"),
            (lambda: a.annotations(unit_bytes=2**70), "unit_bytes: 1180591620717411303424 is out"),
            (lambda: c.restore_allocation(pod, "n", {}, unit_bytes=2**64), "unit_bytes: 1844"),
            (lambda: _core.format_bytes(2**64), "bytes: 18446744073709551616 is out of range"),
            (lambda: _core.maximize_lp([[1.0]], [1.0], [1.0], max_iterations=2**40),
             "max_iterations: 1099511627776 is out of range"),
            (lambda: Engine().start_task("j", 2**40, "n"), "task: 1099511627776 is out of range")):
        with pytest.raises((ValueError, TypeError)) as info:
            call()
        assert message in str(info.value) and "\n" not in str(info.value), str(info.value)
    assert extender.host_priorities(c, pod, ["n"], "binpack", np.int64(10))[0]["Host"] == "n"
    assert _core.format_bytes(np.int64(1 << 30)) == "1Gi"


def test_simulator_refuses_a_negative_seed_and_bad_memory():
    assert simulate(seed=3).summary.num_jobs == 3
    with pytest.raises(ValueError, match="seed must be >= 0, got -1"):
        simulate(seed=-1)
    for bad in (math.nan, -1.0, math.inf):
        with pytest.raises(ValueError, match="memory_gib must be finite and >= 0"):
            simulate(memory_gib=np.array([bad, 1.0, 1.0]))


def test_simulator_names_a_gpu_count_out_of_range():
    with pytest.raises(ValueError, match=r"num_gpu must be from 1 to 2\^30, got 0"):
        _core.sim_run([{"name": "v100", "count": 4}], np.arange(1), np.array([0.0]),
                      np.array([0]), np.array([1.0]), None, None, _core.SimOptions("fifo"))


@pytest.mark.parametrize("stop_at", [1000.0, math.inf, math.nan, -1.0])
def test_replay_refuses_a_stop_at_it_could_not_reach(stop_at):
    """Arrivals are drawn until they reach stop_at times the cluster's GPUs and kept per row: a
    huge stop_at would draw for ever, so it is bounded."""
    nodes, pods = synthetic_openb(4, 20, seed=1)
    with pytest.raises(ValueError, match="stop_at must be > 0 and at most 100"):
        replay.replay_openb(nodes, pods, stop_at=stop_at)
