"""gpufleet.sim: simulate(), policies by name, summary keys, fidelity, CLI, plots."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import gpufleet.traces as T
from gpufleet.cli import main
from gpufleet.sim import cluster_spec, compare, gain, policy_names, policy_spec, simulate
from conftest import REQUIRE_SHARED_DATA

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
SIXTY = DATA / "tiresias" / "60_job.csv"
# Under .ci/run (GPUFLEET_REQUIRE_SHARED_DATA) the tests run anyway and fail on the missing file.
needs_tiresias = pytest.mark.skipif(not SIXTY.exists() and not REQUIRE_SHARED_DATA,
                                    reason="shared data ../shared/data/tiresias not present")

SUMMARY_KEYS = {"avg_jct", "p50_jct", "p95_jct", "p99_jct", "avg_queueing_delay", "makespan", "preemptions",
                "migrations", "gpu_utilization", "finish_time_fairness", "num_jobs", "policy", "seed"}


def tiny_jobs() -> pd.DataFrame:
    return pd.DataFrame({"job_id": [1, 2, 3], "submit_time": [0.0, 10.0, 20.0], "num_gpu": [4, 2, 2],
                         "duration": [100.0, 50.0, 30.0], "model_name": ["a", "b", "c"]})


def test_policy_names_and_specs():
    names = policy_names()
    for n in ("fifo", "sjf", "srtf", "las", "dlas-gpu", "gittins", "hetero-las", "gavel-maxmin", "gavel-lp"):
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
    cluster = {"k80": 16, "p100": 16, "v100": 16}
    aware = simulate(jobs, cluster, "hetero-las")
    agnostic = simulate(jobs, cluster, "hetero-las(aware=false)")
    assert aware.summary["avg_jct"] < agnostic.summary["avg_jct"]
    assert aware.summary["migrations"] > agnostic.summary["migrations"]  # swaps and upgrades when aware
    g_aware = simulate(jobs, cluster, "gavel-maxmin")
    g_agnostic = simulate(jobs, cluster, "gavel-maxmin(aware=false)")
    assert g_aware.summary["avg_jct"] < g_agnostic.summary["avg_jct"]
    lp_aware = simulate(jobs, cluster, "gavel-lp")
    lp_agnostic = simulate(jobs, cluster, "gavel-lp(aware=false)")
    assert lp_aware.summary["avg_jct"] < lp_agnostic.summary["avg_jct"]


AGNOSTIC = ["fifo", "sjf", "srtf", "las", "dlas-gpu", "hetero-las(aware=false)", "gavel-maxmin(aware=false)",
            "gavel-lp(aware=false)"]
AWARE = ["hetero-las", "gavel-maxmin", "gavel-lp"]


@pytest.mark.parametrize("policy", AGNOSTIC + AWARE)
def test_results_ignore_the_cluster_listing_order(policy):
    # Same seed, same numbers, whichever order the cluster lists its models in: agnostic policies
    # draw models over the names, aware ones break ties and order their LP columns by name.
    jobs = T.synthetic_jobs(60, seed=2, arrival_rate=1 / 40)
    counts = {"k80": 12, "p100": 8, "v100": 8}
    orders = [["k80", "p100", "v100"], ["v100", "p100", "k80"], ["p100", "k80", "v100"]]
    for seed in (0, 3):
        runs = [simulate(jobs, {m: counts[m] for m in order}, policy, seed=seed, restore_delay=30)
                for order in orders]
        for r in runs[1:]:
            pd.testing.assert_frame_equal(r.jobs, runs[0].jobs)
            assert r.summary == runs[0].summary


def test_agnostic_draw_depends_on_the_seed_and_spreads_over_models():
    jobs = T.synthetic_jobs(60, seed=2, arrival_rate=1 / 40)
    cluster = {"k80": 12, "p100": 8, "v100": 8}
    runs = [simulate(jobs, cluster, "las", seed=s, restore_delay=30) for s in range(3)]
    assert len({r.summary["avg_jct"] for r in runs}) > 1
    # Service / GPU time is the mean perf factor of the models a job ran on: every model is used.
    factors = pd.concat([r.jobs["service"] / r.jobs["gpu_time"] for r in runs])
    assert factors.min() < 0.3 and factors.max() > 0.99  # K80 (0.28) and V100 (1.0) both drawn


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


def test_shares_by_group():
    jobs = tiny_jobs()
    jobs["user"] = ["ann", "bob", "bob"]
    shares = simulate(jobs, 4, "fifo").shares("user")
    assert shares.loc["ann", "gpu_time"] == 400.0 and shares.loc["bob", "gpu_time"] == 160.0
    assert shares["gpu_share"].sum() == pytest.approx(1.0)
    with pytest.raises(ValueError, match="vc"):
        simulate(jobs, 4, "fifo").shares("vc")


def test_compare_table():
    table = compare(tiny_jobs(), 4, ["fifo", "srtf", "las"])
    assert list(table.index) == ["fifo", "srtf", "las"]
    assert (table["avg_jct"] > 0).all()


def test_compare_over_seeds_reports_mean_and_spread():
    jobs = T.synthetic_jobs(60, seed=2, arrival_rate=1 / 40)
    cluster = {"k80": 12, "p100": 8, "v100": 8}
    policies = ["las", "hetero-las"]
    table = compare(jobs, cluster, policies, seeds=range(3), restore_delay=30)
    assert list(table.index) == policies and (table["seeds"] == 3).all()
    runs = compare(jobs, cluster, policies, seeds=range(3), per_seed=True, restore_delay=30)
    assert list(runs.index.get_level_values("seed")[:3]) == [0, 1, 2]
    for p in policies:
        one = [simulate(jobs, cluster, p, seed=s, restore_delay=30).summary["avg_jct"] for s in range(3)]
        assert table.loc[p, "avg_jct_mean"] == pytest.approx(np.mean(one))
        assert table.loc[p, "avg_jct_std"] == pytest.approx(np.std(one, ddof=1))
        assert table.loc[p, "avg_jct_min"] == min(one) and table.loc[p, "avg_jct_max"] == max(one)
        assert list(runs.loc[p, "avg_jct"]) == one
    first: dict = {}
    threaded = compare(jobs, cluster, policies, seeds=range(3), per_seed=True, workers=2, results=first,
                       restore_delay=30)
    pd.testing.assert_frame_equal(threaded, runs)
    assert set(first) == set(policies) and all(first[p].summary["seed"] == 0 for p in policies)
    assert first["las"].summary["avg_jct"] == runs.loc[("las", 0), "avg_jct"]
    g = gain(runs, "las", "hetero-las")
    per_seed = runs.loc["las", "avg_jct"] / runs.loc["hetero-las", "avg_jct"]
    assert g["mean"] == pytest.approx(per_seed.mean()) and g["min"] == per_seed.min()
    with pytest.raises(ValueError, match="seed= or seeds="):
        compare(jobs, cluster, policies, seeds=range(2), seed=1)
    with pytest.raises(ValueError, match="distinct"):
        compare(jobs, cluster, policies, seeds=[1, 1])
    with pytest.raises(KeyError, match="fifo"):
        gain(runs, "fifo", "las")


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


def test_cli_list_policies_names_the_dra_strategies(capsys, monkeypatch):
    """--list-policies lists what --as-dra takes, read from the allocator that checks it."""
    from gpufleet.dra import allocator
    assert main(["simulate", "--list-policies", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["dra_strategies"]
    assert [e["name"] for e in listed] == list(allocator.STRATEGIES) == ["pack", "first"]
    assert all(e["description"] == allocator.STRATEGY_DESCRIPTIONS[e["name"]] for e in listed)
    monkeypatch.setitem(allocator.STRATEGY_DESCRIPTIONS, "spread-test", "a strategy added later")
    assert main(["simulate", "--list-policies"]) == 0
    out = capsys.readouterr().out
    dra = out[out.index("DRA strategies"):]
    assert all(name in dra for name in ("pack", "first", "spread-test", "a strategy added later"))


def test_cli_synthetic_json(capsys):
    assert main(["simulate", "--format", "synthetic", "--num-jobs", "50", "--policy", "las", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["num_jobs"] == 50
    assert SUMMARY_KEYS <= set(summary)


def test_cli_errors(capsys):
    assert main(["simulate", "--format", "synthetic", "--policy", "lottery"]) == 1
    assert "lottery" in capsys.readouterr().err
    assert main(["simulate", "--format", "tiresias", "--policy", "fifo"]) == 2  # no --trace: usage
    assert "--trace" in capsys.readouterr().err


@needs_tiresias
def test_cli_tiresias(capsys):
    assert main(["simulate", "--trace", str(SIXTY), "--format", "tiresias", "--cluster", "8", "--policy", "srtf",
                 "--tiresias-compat", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["avg_jct"] == pytest.approx(519.9, rel=0.02)


def test_scheduling_interval_and_progress(capsys):
    jobs = T.synthetic_jobs(300, seed=6, arrival_rate=1 / 60)
    exact = simulate(jobs, 16, "dlas-gpu")
    coarse = simulate(jobs, 16, "dlas-gpu", scheduling_interval=300, progress=True)
    assert coarse.summary["scheduling_points"] < exact.summary["scheduling_points"]
    starts = coarse.jobs["first_start"].to_numpy()
    assert np.allclose(starts / 300, np.round(starts / 300))  # starts only on the 300-s grid
    assert "simulate dlas-gpu" in capsys.readouterr().err  # the tqdm bar
    with pytest.raises(ValueError, match="scheduling_interval"):
        simulate(jobs, 16, "fifo", scheduling_interval=-1)


def test_seed_breaks_submit_ties_only():
    jobs = pd.DataFrame({"job_id": [1, 2, 3, 4], "submit_time": [0.0] * 4, "num_gpu": [1] * 4,
                         "duration": [10.0, 20.0, 30.0, 40.0]})
    starts = set()
    for seed in range(6):
        r = simulate(jobs, 1, "fifo", seed=seed)
        starts.add(tuple(r.jobs.sort_values("job_id")["first_start"]))
        assert r.summary["seed"] == seed
    assert len(starts) > 1
    again = simulate(jobs, 1, "fifo", seed=3).jobs
    pd.testing.assert_frame_equal(again, simulate(jobs, 1, "fifo", seed=3).jobs)


def test_cli_openb_dispatches_to_replay(tmp_path, capsys):
    """--format openb hands the loaded frames to gpufleet.replay.replay_openb and prints its
    summary; --list-policies includes the replay policies."""
    from gpufleet import replay

    nodes_df, pods_df = T.synthetic_openb(4, 10, seed=1)
    nodes = tmp_path / "nodes.csv"
    pods = tmp_path / "pods.csv"
    nodes_df.rename(columns={"name": "sn", "num_gpu": "gpu"}).to_csv(nodes, index=False)
    out = pods_df.copy()
    out["gpu_spec"] = ["|".join(s) for s in out["gpu_spec"]]
    out.to_csv(pods, index=False)
    assert main(["simulate", "--format", "openb", "--trace", str(pods), "--nodes", str(nodes),
                 "--policy", "fgd", "--seed", "3", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    expected = replay.replay_openb(T.load_openb_nodes(nodes), T.load_openb_pods(pods), policy="fgd",
                                   seed=3).summary
    assert printed["policy"] == "fgd" and printed["seed"] == 3
    assert printed["alloc_ratio_at_130"] == pytest.approx(expected["alloc_ratio_at_130"])
    assert main(["simulate", "--list-policies"]) == 0
    listed = capsys.readouterr().out
    assert "fgd" in listed and "dlas-gpu" in listed
    assert main(["simulate", "--format", "openb", "--trace", str(pods), "--policy", "fgd"]) == 2


GAVEL = DATA / "gavel"


@pytest.mark.skipif(not GAVEL.exists() and not REQUIRE_SHARED_DATA,
                    reason="shared data ../shared/data/gavel not present")
def test_cli_gavel(capsys):
    args = ["simulate", "--format", "gavel", "--trace", str(GAVEL / "physical_cluster" / "max_min_fairness.trace"),
            "--cluster", "k80:8,p100:8,v100:8", "--policy", "hetero-las", "--json"]
    assert main(args) == 2  # no throughput table given: a usage error, as a missing openb node list
    assert "--throughputs" in capsys.readouterr().err
    assert main(args + ["--throughputs", str(GAVEL / "simulation_throughputs.json")]) == 0
    summary = json.loads(capsys.readouterr().out)
    trace = T.load_gavel_trace(GAVEL / "physical_cluster" / "max_min_fairness.trace")
    jobs = T.gavel_as_jobs(trace, GAVEL / "simulation_throughputs.json")
    api = simulate(jobs, "k80:8,p100:8,v100:8", "hetero-las").summary
    assert summary["num_jobs"] == len(trace) == len(jobs)  # every job of the trace
    assert summary["avg_jct"] == pytest.approx(api["avg_jct"])

def test_devices_are_placed_without_changing_times(capsys):
    # Two 4-GPU nodes: jobs of 3 + 3 GPUs leave one GPU on each, so a 2-GPU job must span both.
    jobs = pd.DataFrame({"job_id": [1, 2, 3], "submit_time": [0.0, 0.0, 1.0], "num_gpu": [3, 3, 2],
                         "duration": [100.0, 100.0, 10.0]})
    cluster = [{"name": "v100", "count": 8, "gpus_per_node": 4}]
    placed = simulate(jobs, cluster, "fifo(backfill=true)")
    counted = simulate(jobs, cluster, "fifo(backfill=true)", placement=None)
    assert list(placed.jobs["end_time"]) == list(counted.jobs["end_time"]) == [100.0, 100.0, 11.0]
    assert list(placed.jobs["max_nodes"]) == [1, 1, 2]
    assert placed.summary["jobs_spanning_nodes"] == 1
    assert list(counted.jobs["max_nodes"]) == [0, 0, 0]
    assert "jobs_spanning_nodes" not in counted.summary
    with pytest.raises((KeyError, ValueError), match="simulate placement"):
        simulate(jobs, cluster, "fifo", placement="no-such-strategy")
    with pytest.raises(ValueError, match="gpus_per_node"):
        simulate(jobs, [{"name": "v100", "count": 8, "gpus_per_node": 0}], "fifo")
    # A Tiresias cluster spec brings its node size.
    spec = T.ClusterSpec(num_switch=1, nodes_per_switch=2, gpus_per_node=4, cpus_per_node=32, mem_per_node=128)
    assert cluster_spec(spec) == [{"name": "gpu", "count": 8, "gpus_per_node": 4}]
    assert main(["simulate", "--format", "synthetic", "--num-jobs", "40", "--policy", "las", "--json",
                 "--placement", "spread"]) == 0
    assert "jobs_spanning_nodes" in json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("policy", ["fifo", "las"])
def test_unix_second_clocks_end_jobs_when_their_work_is_done(policy):
    # A job's end one second after another job's arrival: at a clock near 1.7e9 (a trace in Unix
    # seconds) a tolerance relative to the clock's value merged the two events and ended the job
    # a second early; times compare relative to the first arrival instead.
    jobs = pd.DataFrame({"job_id": [1, 2], "submit_time": [0.0, 99.0], "num_gpu": [8, 8],
                         "duration": [100.0, 50.0], "model_name": ["a", "b"]})
    base = simulate(jobs, 8, policy)
    unix = simulate(jobs.assign(submit_time=jobs["submit_time"] + 1.7e9), 8, policy)
    assert base.jobs["end_time"].iloc[0] >= 100.0   # job 1's 100 s of work, wherever it was paused
    jct = (unix.jobs["end_time"] - unix.jobs["submit_time"]).to_numpy()
    assert jct == pytest.approx((base.jobs["end_time"] - base.jobs["submit_time"]).to_numpy(), abs=1e-3)
    assert (unix.jobs["run_time"] >= jobs["duration"] - 1e-3).all()
