"""gpufleet.sim: simulate(), policies by name, summary keys, fidelity, CLI, plots."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import gpufleet.traces as T
from gpufleet.cli import main
from gpufleet.sim import cluster_spec, compare, policy_names, policy_spec, simulate

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
SIXTY = DATA / "tiresias" / "60_job.csv"
needs_tiresias = pytest.mark.skipif(not SIXTY.exists(), reason="shared data ../shared/data/tiresias not present")

SUMMARY_KEYS = {"avg_jct", "p50_jct", "p95_jct", "p99_jct", "avg_queueing_delay", "makespan", "preemptions",
                "migrations", "gpu_utilization", "finish_time_fairness", "num_jobs", "policy", "seed"}


def tiny_jobs() -> pd.DataFrame:
    return pd.DataFrame({"job_id": [1, 2, 3], "submit_time": [0.0, 10.0, 20.0], "num_gpu": [4, 2, 2],
                         "duration": [100.0, 50.0, 30.0], "model_name": ["a", "b", "c"]})


def test_policy_names_and_specs():
    names = policy_names()
    for n in ("fifo", "sjf", "srtf", "las", "dlas-gpu", "gittins", "hetero-las", "gavel-maxmin"):
        assert n in names
    assert policy_spec({"name": "dlas-gpu", "queue_limits": [3250, 7200]}) == "dlas-gpu(queue_limits=[3250, 7200])"
    assert policy_spec("las", service="time") == 'las(service="time")'
    with pytest.raises(KeyError, match="lottery"):
        policy_spec("lottery")
    with pytest.raises(ValueError, match="queue_limits"):
        policy_spec("dlas-gpu(queue_limits=[7200,3250])")


def test_simulate_small_fifo_exact():
    r = simulate(tiny_jobs(), 4, "fifo")
    assert list(r.jobs["end_time"]) == [100.0, 150.0, 130.0]
    assert r.summary["avg_jct"] == pytest.approx((100 + 140 + 110) / 3)
    assert r.summary["makespan"] == 150.0
    assert SUMMARY_KEYS <= set(r.summary)
    assert {"time", "running_jobs", "pending_jobs", "busy_gpus", "utilization"} <= set(r.timeseries.columns)
    assert r.timeseries["utilization"].max() == 1.0


def test_cluster_specs():
    assert cluster_spec(8) == [{"name": "gpu", "count": 8}]
    assert cluster_spec("v100:4, k80:2") == [{"name": "v100", "count": 4}, {"name": "k80", "count": 2}]
    assert cluster_spec({"v100": {"count": 2, "memory_gib": 16}})[0]["memory_gib"] == 16
    with pytest.raises(ValueError, match="bad part"):
        cluster_spec("v100=4")
    with pytest.raises(ValueError, match="v100"):
        simulate(tiny_jobs(), {"v100": -2}, "fifo")


def test_bad_jobs_are_errors_naming_the_job():
    jobs = tiny_jobs()
    jobs.loc[1, "num_gpu"] = 64
    with pytest.raises(ValueError, match="job 2"):
        simulate(jobs, 8, "fifo")
    with pytest.raises(ValueError, match="lack columns"):
        simulate(tiny_jobs().drop(columns=["duration"]), 8, "fifo")


def test_deterministic_given_seed():
    jobs = T.synthetic_jobs(300, seed=3)
    a = simulate(jobs, {"k80": 8, "v100": 8}, "las", seed=5)
    b = simulate(jobs, {"k80": 8, "v100": 8}, "las", seed=5)
    pd.testing.assert_frame_equal(a.jobs, b.jobs)
    assert a.summary == b.summary


@needs_tiresias
@pytest.mark.parametrize("policy,published", [("fifo", 1556.5), ("dlas-gpu", 715.3), ("srtf", 519.9)])
def test_tiresias_sixty_jobs_compat(policy, published):
    jobs = T.tiresias_as_jobs(T.load_tiresias_jobs(SIXTY))
    r = simulate(jobs, 8, policy, tiresias_compat=True)
    assert r.summary["avg_jct"] == pytest.approx(published, rel=0.02)


@needs_tiresias
def test_gittins_from_distribution_file():
    jobs = T.tiresias_as_jobs(T.load_tiresias_jobs(SIXTY))
    path = DATA / "tiresias" / "yarn-gput1000.csv"
    r = simulate(jobs, 8, f'gittins(distribution_file="{path}")')
    fifo = simulate(jobs, 8, "fifo")
    assert r.summary["avg_jct"] < fifo.summary["avg_jct"]


def test_heterogeneity_aware_beats_agnostic():
    jobs = T.synthetic_jobs(400, seed=3, arrival_rate=1 / 300)
    cluster = {"k80": 16, "p100": 16, "v100": 16}  # first fit tries the slow K80 first
    aware = simulate(jobs, cluster, "hetero-las")
    agnostic = simulate(jobs, cluster, "hetero-las(aware=false)")
    assert aware.summary["avg_jct"] < agnostic.summary["avg_jct"]
    assert aware.summary["migrations"] > 0 and agnostic.summary["migrations"] == 0  # swaps only when aware
    g_aware = simulate(jobs, cluster, "gavel-maxmin")
    g_agnostic = simulate(jobs, cluster, "gavel-maxmin(aware=false)")
    assert g_aware.summary["avg_jct"] < g_agnostic.summary["avg_jct"]


def test_restore_delay_costs_time_for_preemptive_policy():
    jobs = T.synthetic_jobs(200, seed=4, arrival_rate=1 / 30)
    fast = simulate(jobs, 16, "las")
    slow = simulate(jobs, 16, "las", restore_delay=60)
    assert fast.summary["preemptions"] > 0
    assert slow.summary["avg_jct"] > fast.summary["avg_jct"]


def test_memory_limits_models():
    jobs = tiny_jobs()
    r = simulate(jobs, [{"name": "small", "count": 8, "memory_gib": 8}], "fifo", memory_gib=[4, 4, 4])
    assert r.summary["num_jobs"] == 3
    with pytest.raises(ValueError, match="job 1"):
        simulate(jobs, [{"name": "small", "count": 8, "memory_gib": 8}], "fifo", memory_gib=[16, 4, 4])


def test_compare_table():
    table = compare(tiny_jobs(), 4, ["fifo", "srtf", "las"])
    assert list(table.index) == ["fifo", "srtf", "las"]
    assert (table["avg_jct"] > 0).all()


def test_plots(tmp_path):
    matplotlib = pytest.importorskip("matplotlib", reason="matplotlib is the optional plot extra")
    matplotlib.use("Agg")
    r = simulate(tiny_jobs(), 4, "fifo")
    ax = r.plot_jct_cdf()
    assert len(ax.lines) == 1
    ax = r.plot_utilization()
    ax.figure.savefig(tmp_path / "u.png")
    assert (tmp_path / "u.png").stat().st_size > 0


def test_cli_list_policies(capsys):
    assert main(["simulate", "--list-policies"]) == 0
    out = capsys.readouterr().out
    assert "dlas-gpu" in out and "hetero-las" in out


def test_cli_synthetic_json(capsys):
    assert main(["simulate", "--format", "synthetic", "--num-jobs", "50", "--policy", "las", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["num_jobs"] == 50
    assert SUMMARY_KEYS <= set(summary)


def test_cli_errors(capsys):
    assert main(["simulate", "--format", "synthetic", "--policy", "lottery"]) == 1
    assert "lottery" in capsys.readouterr().err
    assert main(["simulate", "--format", "tiresias", "--policy", "fifo"]) == 1


@needs_tiresias
def test_cli_tiresias(capsys):
    assert main(["simulate", "--trace", str(SIXTY), "--format", "tiresias", "--cluster", "8", "--policy", "srtf",
                 "--tiresias-compat", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["avg_jct"] == pytest.approx(519.9, rel=0.02)
