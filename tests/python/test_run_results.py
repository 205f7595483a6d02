"""The simulator's and the openb replay's native results as bound classes: read-only, a column
per property equal to to_dict()'s, a repr, and exactly what the Python wrappers put in their
DataFrames and summaries."""
from __future__ import annotations

import numpy as np
import pytest

from gpufleet import _core, replay, sim
from gpufleet.traces import synthetic_jobs, synthetic_openb


def _jobs():
    jobs = synthetic_jobs(40, seed=3)
    return jobs.drop(columns=[c for c in jobs.columns if c.startswith(sim.THROUGHPUT_PREFIX)])


def _sim_run(placement: str):
    jobs = _jobs()
    return _core.sim_run(sim.cluster_spec({"v100": 8, "k80": 8}), jobs["job_id"].to_numpy(np.int64),
                         jobs["submit_time"].to_numpy(np.float64), jobs["num_gpu"].to_numpy(np.int64),
                         jobs["duration"].to_numpy(np.float64), None, None,
                         _core.SimOptions("las", placement=placement))


def test_sim_run_columns_and_summary_are_bound_values():
    run = _sim_run("binpack")
    assert repr(run).startswith("SimRun(jobs=40, total_gpus=16,")
    assert run.models == ["v100", "k80"] and run.total_gpus == 16
    jobs = run.jobs.to_dict()
    assert list(jobs) == list(_core.SimJobs.columns) and len(run.jobs) == 40
    for name, column in jobs.items():
        assert len(column) == 40
        np.testing.assert_array_equal(getattr(run.jobs, name), column)
    assert jobs["preemptions"].dtype == np.int64 and jobs["end_time"].dtype == np.float64
    assert np.all(jobs["end_time"] >= jobs["first_start"])
    ts = run.timeseries.to_dict()
    assert list(ts) == ["time", "running_jobs", "pending_jobs", "busy_gpus"]
    assert len(run.timeseries) == len(ts["time"]) > 0
    assert ts["busy_gpus"].max() <= 16
    summary = run.summary.to_dict()
    assert summary["num_jobs"] == run.summary.num_jobs == 40
    assert summary["jobs_spanning_nodes"] == run.summary.jobs_spanning_nodes
    assert run.summary.avg_jct == pytest.approx(summary["avg_jct"])
    assert "SimSummary(num_jobs=40" in repr(run.summary)
    assert run.to_dict()["summary"] == summary
    with pytest.raises(AttributeError):
        run.total_gpus = 3
    with pytest.raises(AttributeError):
        run.summary.avg_jct = 0.0


def test_sim_summary_without_devices_has_no_spanning_count():
    run = _sim_run("")
    assert run.summary.jobs_spanning_nodes is None
    assert "jobs_spanning_nodes" not in run.summary.to_dict()
    assert np.all(run.jobs.max_nodes == 0)


def test_sim_options_are_one_keyword_object_checked_when_made():
    o = _core.SimOptions("las", placement="", seed=7)
    assert (o.policy, o.placement, o.seed, o.gavel_compat) == ("las", "", 7, False)
    assert repr(o) == "SimOptions(policy=las, placement=, seed=7)"
    assert _core.SimOptions("fifo", gavel={"drop_stuck_jobs": False}).gavel_compat
    with pytest.raises(TypeError):
        _core.SimOptions("las", False)  # every setting after the policy is a keyword
    with pytest.raises(ValueError, match="seed must be >= 0, got -1"):
        _core.SimOptions("las", seed=-1)
    with pytest.raises(ValueError, match="unknown gavel_compat option 'typo'"):
        _core.SimOptions("fifo", gavel={"typo": True})
    with pytest.raises(TypeError, match="progress must be a callable"):
        _core.SimOptions("las", progress=3)
    with pytest.raises(AttributeError):
        o.seed = 1


def test_simulate_frames_hold_the_bound_columns():
    r = sim.simulate(_jobs(), {"v100": 8, "k80": 8}, "las")
    run = _sim_run("binpack")
    for name in _core.SimJobs.columns:
        np.testing.assert_array_equal(r.jobs[name].to_numpy(), getattr(run.jobs, name))
    assert list(r.timeseries.columns) == ["time", "running_jobs", "pending_jobs", "busy_gpus", "utilization"]
    assert r.timeseries["busy_gpus"].dtype == np.int64
    assert {k: r.summary[k] for k in run.summary.to_dict()} == run.summary.to_dict()


def test_replay_run_is_a_bound_value_with_a_column_per_series():
    nodes, pods = synthetic_openb(12, 120, seed=4)
    node_columns = {c: nodes[c].tolist() for c in ("cpu_milli", "memory_mib", "num_gpu")}
    node_columns |= {"name": [str(n) for n in nodes["name"]], "model": [str(m) for m in nodes["model"]]}
    pod_columns = {c: pods[c].tolist() for c in ("cpu_milli", "memory_mib", "num_gpu", "gpu_milli")}
    pod_columns |= {"name": [str(n) for n in pods["name"]], "gpu_spec": [[] for _ in range(len(pods))]}
    options = _core.replay.ReplayOptions(policy="bestfit", seed=1)
    assert (options.stop_at, options.coverage, options.ties, options.params) == (1.3, 0.95, "seeded", {})
    raw = _core.replay._replay_openb(node_columns, pod_columns, options)
    d = raw.to_dict()
    assert list(d) == [*_core.OpenbReplayRun.columns, "gpu_capacity", "workload"]
    n = len(raw)
    assert n > 0 and all(len(d[c]) == n for c in _core.OpenbReplayRun.columns)
    for c in _core.OpenbReplayRun.columns:
        np.testing.assert_array_equal(getattr(raw, c), d[c])
    assert raw.gpu_capacity == int(nodes["num_gpu"].sum())
    assert isinstance(raw.cluster, _core.Cluster)
    assert len(raw.cluster.allocations()) == int(d["placed"].sum())
    assert np.all((d["node"] >= 0) == (d["placed"] == 1))
    assert repr(raw).startswith(f"OpenbReplayRun(arrivals={n}, failed={int(d['failed'][-1])},")
    with pytest.raises(AttributeError):
        raw.cluster = None
    # The wrapper's frame is these columns.
    res = replay.replay_openb(nodes, pods.assign(gpu_spec=[[] for _ in range(len(pods))]), "bestfit", seed=1)
    np.testing.assert_array_equal(res.timeseries["pod"].to_numpy(), d["pod"])
    np.testing.assert_array_equal(res.timeseries["allocated"].to_numpy(), d["allocated"])
    assert res.workload == d["workload"]
