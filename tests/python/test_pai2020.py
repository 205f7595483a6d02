"""The PAI-2020 simulator reproduced (gpufleet.pai2020) and its trace format (gpufleet.traces.pai2020).

The simulator's own input (pai_job_duration_estimate_100K.csv) is not available in CI, so these tests
run on a small trace in its format written here (pai2020_support.py), against the figures the PAI
simulator itself printed on that trace (data/pai2020_reference.json, which says how they were made).
benchmarks/pai2020_table.py compares the README's table on the real file."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import gpufleet
import gpufleet.traces as T
from gpufleet.pai2020 import POLICIES, prepare_pai_jobs, simulate_pai
from gpufleet.published import PAI2020_README, PAI2020_README_SETTINGS
from pai2020_support import pai_rows, write_pai_trace

REFERENCE = json.loads((Path(__file__).parent / "data" / "pai2020_reference.json").read_text())


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> dict[tuple[int, int, bool], pd.DataFrame]:
    """Each trace the reference runs were recorded on, by (rows, seed, wide job)."""
    folder = tmp_path_factory.mktemp("pai")
    kinds = {(r["trace"]["num_rows"], r["trace"]["seed"], r["trace"]["wide_job"]) for r in REFERENCE["runs"]}
    return {k: T.load_pai2020_jobs(write_pai_trace(folder / f"pai_job_{k[0]}_{k[1]}_{k[2]}.csv", *k))
            for k in kinds}


@pytest.mark.parametrize("run", REFERENCE["runs"], ids=lambda r: r["command"][:60])
def test_every_policy_gives_the_pai_simulators_figures(traces, run) -> None:
    """Average JCT, waiting time and makespan to the printed digit and the same jobs done, for each
    of the five policies: on one node and on nodes of 8 GPUs (packed and balanced), with arrival
    rates and the trace's own submit times, a draw of fewer jobs than rows and more, two repeats, and
    2,000 jobs on 100 GPUs (waits of over an hour, long queues)."""
    settings = dict(run["settings"])
    jobs = traces[(run["trace"]["num_rows"], run["trace"]["seed"], run["trace"]["wide_job"])]
    for policy, want in run["figures"].items():
        got = simulate_pai(jobs, policy, **settings).summary
        assert round(got["avg_jct"], 2) == want["avg_jct"], policy
        assert round(got["avg_queueing_delay"], 2) == want["wait_time"], policy
        assert float(f"{got['makespan']:.0f}") == want["makespan"], policy   # printed as %.0f
        assert got["jobs_done"] == want["jobs_done"], policy


def test_unified_schema_runs_the_same(traces) -> None:
    """The converted frame (as gpufleet.traces.load and the sweep give it, sorted by submit time)
    keeps the file order in trace_row, so the draw and the figures are the same."""
    raw = traces[(800, 7, True)]
    jobs = T.pai2020_as_jobs(raw)
    assert list(jobs["job_id"]) != list(raw["job_id"])           # reordered by submit time
    for policy in ("sjf", "sjgg"):
        a = simulate_pai(raw, policy, num_jobs=60, num_gpus=16, arrival_rate=6).summary
        b = simulate_pai(jobs, policy, num_jobs=60, num_gpus=16, arrival_rate=6).summary
        assert a == b
    assert (jobs["duration"] >= 1).all() and (jobs["num_gpu"] >= 1).all()


def test_preparation_draws_like_python_random(traces) -> None:
    """The draw is Python's random.shuffle seeded by the seed over the first 10 x num_jobs + 1 rows;
    the arrivals are num_jobs // rate batches, interval seconds apart, in (submit, job id) order."""
    import random
    jobs = traces[(800, 7, True)]
    drawn = prepare_pai_jobs(jobs, num_jobs=30, arrival_rate=7, interval=60, seed=5)[0]
    rows = list(range(301))
    random.Random(5).shuffle(rows)
    assert sorted(drawn["job_id"]) == sorted(jobs["job_id"].to_numpy()[rows[:30]])
    assert list(drawn["arrival"]) == [60 * (k // 7) for k in range(30)]
    submit = np.round(jobs.set_index("job_id").loc[drawn["job_id"], "submit_time"].to_numpy())
    assert list(zip(submit, drawn["job_id"])) == sorted(zip(submit, drawn["job_id"]))
    kept = prepare_pai_jobs(jobs, num_jobs=30, arrival_rate=None, seed=5)[0]
    assert list(kept["arrival"]) == list(np.round(jobs.set_index("job_id").loc[kept["job_id"], "submit_time"]))
    pd.testing.assert_frame_equal(prepare_pai_jobs(jobs, num_jobs=30, arrival_rate=-1, seed=5)[0], kept)


def test_backfill_and_order_on_a_hand_made_trace(tmp_path: Path) -> None:
    """Two GPUs: SJF starts the short job first and backfills a half-GPU job past a 2-GPU one that
    does not fit; FIFO keeps arrival order but still backfills; CPUs count like GPUs."""
    path = tmp_path / "pai_job_hand.csv"
    path.write_text("job_id,num_gpu,num_cpu,submit_time,duration,user_dur\n"
                    "1,1,1,0,100,5\n2,2,1,0,50,1\n3,0.5,1,0,10,9\n4,1,40,0,10,2\n")
    jobs = T.load_pai2020_jobs(path)
    common = dict(num_jobs=10, arrival_rate=None, num_gpus=2, num_cpus=42)
    sjf = simulate_pai(jobs, "sjf", **common).jobs.set_index("job_id")
    # order 3 (10 s), 4 (10 s), 2 (50 s), 1 (100 s): 3 and 4 start, leaving half a GPU; at 10 s
    # job 2 takes both GPUs, job 1 waits for it
    assert sjf.loc[[3, 4, 2, 1], "start"].tolist() == [0, 0, 10, 60]
    fifo = simulate_pai(jobs, "fifo", **common).jobs.set_index("job_id")
    # job id order: 1 starts, 2 does not fit, 3 backfills, 4 waits for half a GPU more (at 10 s),
    # 2 for job 1's end
    assert fifo.loc[[1, 3, 4, 2], "start"].tolist() == [0, 0, 10, 100]
    sju = simulate_pai(jobs, "sju", **common).jobs.set_index("job_id")
    assert sju.loc[2, "start"] == 0                                 # user_dur 1 goes first
    summary = simulate_pai(jobs, "sjf", **common).summary
    assert summary["makespan"] == 161                               # last finish 160, plus one second
    assert summary["avg_jct"] == pytest.approx((10 + 10 + 60 + 160) / 4)
    assert summary["avg_queueing_delay"] == pytest.approx((0 + 0 + 10 + 60) / 4)


def test_bad_input_is_one_clear_error(tmp_path: Path, traces) -> None:
    bad = tmp_path / "pai_job_bad.csv"
    bad.write_text("job_id,duration,num_gpu\n1,10,1\n2,ten,1\n")
    with pytest.raises(T.TraceError, match=r"pai_job_bad.csv.*line 3.*duration"):
        T.load_pai2020_jobs(bad)
    bad.write_text("job_id,duration,num_gpu\n1,10,1\n1,10,1\n")
    with pytest.raises(T.TraceError, match="job_id"):
        T.load_pai2020_jobs(bad)
    bad.write_text("job_id,duration,num_gpu,num_inst\n1,10,1,0\n")
    with pytest.raises(T.TraceError, match="num_inst"):
        T.load_pai2020_jobs(bad)
    bad.write_text("job_id,duration,num_gpu,num_inst\n1,10,1,1e12\n")
    with pytest.raises(T.TraceError, match="num_inst.*out of range"):
        T.load_pai2020_jobs(bad)
    jobs = traces[(800, 7, True)]
    with pytest.raises(ValueError, match="unknown PAI-2020 policy 'sjx'"):
        simulate_pai(jobs, "sjx")
    with pytest.raises(ValueError, match="arrival_rate"):
        simulate_pai(jobs, "sjf", arrival_rate=0)
    with pytest.raises(TypeError, match="packing: expected true or false"):
        simulate_pai(jobs, "sjf", packing="yes")
    with pytest.raises(ValueError, match="num_jobs"):
        simulate_pai(jobs, "sjf", num_jobs=0)
    no_estimates = jobs.drop(columns=["user_dur"])
    with pytest.raises(ValueError, match="no user_dur column"):
        simulate_pai(no_estimates, "sju", num_jobs=10)
    # the job wider than the cluster is cut to 6 x 8 GPUs, which no node of 8 holds: never starts
    with pytest.raises(ValueError, match=r"never fit the cluster"):
        simulate_pai(jobs, "sjf", num_jobs=2000, num_nodes=6, arrival_rate=40)


def test_format_is_recognised_and_loaded(tmp_path: Path) -> None:
    path = write_pai_trace(tmp_path / "pai_job_duration_estimate_100K.csv", num_rows=50)
    assert T.detect_format(path) == "pai2020"
    loaded = T.load(trace=path)
    assert loaded.format == "pai2020" and loaded.cluster == 6500 and len(loaded.jobs) == 50
    other = tmp_path / "jobs.csv"
    other.write_text("job_id,user,num_cpu,num_gpu,submit_time,duration\n3,a,2,0.5,10,60\n")
    assert T.detect_format(other) == "pai2020"
    assert len(pai_rows(50)) == 50


def test_sweep_runs_the_pai_policies_and_shows_the_readme_figures(tmp_path: Path) -> None:
    """A sweep over a PAI-2020 trace runs these rules (the figures of a direct call) and, on the
    README's trace name, seed and settings, prints the README's figures beside ours."""
    path = write_pai_trace(tmp_path / "pai_job_duration_estimate_100K.csv", num_rows=400)
    df = gpufleet.sweep([str(path)], ["sjf", "fifo"], seeds=[42], workers=1, progress=False,
                        options={"num_gpus": 16, "num_jobs": 60, "arrival_rate": 6})
    assert set(df["kind"]) == {"pai2020"}
    jobs = T.load_pai2020_jobs(path)
    for policy in ("sjf", "fifo"):
        got = df[(df.policy == policy) & (df.metric == "avg_jct")]["value"].item()
        assert got == simulate_pai(jobs, policy, num_gpus=16, num_jobs=60, arrival_rate=6).summary["avg_jct"]
    cli = subprocess.run([sys.executable, "-m", "gpufleet", "sweep", "--trace", str(path), "--policy", "sjf",
                          "--seed", "42", "--workers", "1", "--no-progress", "--metric", "avg_jct", "makespan",
                          "-o", "json"], capture_output=True, text=True, check=True)
    rows = {r["metric"]: r for r in json.loads(cli.stdout)["summary"]}
    assert rows["avg_jct"]["published"] == PAI2020_README["sjf"]["avg_jct"]
    assert rows["makespan"]["difference"] == rows["makespan"]["mean"] - PAI2020_README["sjf"]["makespan"]
    other_seed = subprocess.run([sys.executable, "-m", "gpufleet", "sweep", "--trace", str(path), "--policy", "sjf",
                                 "--seed", "1", "--workers", "1", "--no-progress", "-o", "json"],
                                capture_output=True, text=True, check=True)
    assert all("published" not in r for r in json.loads(other_seed.stdout)["summary"])


def test_published_table_is_the_readmes() -> None:
    assert set(PAI2020_README) == set(POLICIES)
    assert PAI2020_README["sjf"] == {"avg_jct": 5988.61, "avg_queueing_delay": 949.91, "makespan": 535706.0}
    assert PAI2020_README_SETTINGS["num_jobs"] == 20000 and PAI2020_README_SETTINGS["seed"] == 42
