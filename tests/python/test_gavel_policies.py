"""Gavel's policy family in gpufleet's own rounds: gavel-maxmin's GPU-count weighting, the agnostic
baselines that move jobs between models each round (as Gavel's do) against the sticky ones, and
every member's aware variant ahead of its agnostic one on a heterogeneous cluster."""
from __future__ import annotations

import pandas as pd
import pytest

import gpufleet.traces as T
from gpufleet.sim import simulate

def _jobs(rows):
    return pd.DataFrame(rows, columns=["job_id", "submit_time", "num_gpu", "duration"])


def test_maxmin_weights_progress_by_gpu_count():
    # One model of 4 GPUs: a 4-GPU job and a 1-GPU job never run together. Weighting progress by
    # GPU count, as Gavel's LP does, the 1-GPU job gets 4/5 of the rounds (equal GPU time), so its
    # 3,600 s take about 4,500 s; ranking by run time alone would alternate them (about 7,200 s).
    jobs = _jobs([(0, 0.0, 4, 100_000.0), (1, 0.0, 1, 3_600.0)])
    r = simulate(jobs, {"v100": 4}, "gavel-maxmin", placement=None)
    assert r.jobs.loc[1, "jct"] < 5_000


@pytest.mark.parametrize("policy", ["gavel-lp(aware=false)", "gavel-maxmin(aware=false)"])
def test_agnostic_baselines_move_jobs_between_models_unless_sticky(policy):
    jobs = T.synthetic_jobs(60, seed=2, arrival_rate=1 / 40)
    cluster = {"k80": 8, "p100": 8, "v100": 8}
    moving = simulate(jobs, cluster, policy, placement=None)
    sticky = simulate(jobs, cluster, policy.replace(")", ", sticky=true)"), placement=None)
    # A running job changes models only when its round puts it elsewhere.
    assert moving.summary["migrations"] > 5 * max(1, sticky.summary["migrations"])


# Each member against its agnostic variant on what it optimises (min total duration: the makespan,
# at the cost of the average JCT).
@pytest.mark.parametrize("policy,metric", [("gavel-lp", "avg_jct"), ("gavel-ftf", "avg_jct"),
                                           ("gavel-makespan", "makespan"), ("gavel-throughput", "avg_jct"),
                                           ("gavel-fifo", "avg_jct")])
def test_each_aware_member_beats_its_agnostic_variant(policy, metric):
    jobs = T.synthetic_jobs(80, seed=3, arrival_rate=1 / 120)
    cluster = {"k80": 8, "p100": 8, "v100": 8}
    aware = simulate(jobs, cluster, policy, placement=None)
    agnostic = simulate(jobs, cluster, f"{policy}(aware=false)", placement=None)
    assert (aware.jobs["end_time"] > 0).all() and (agnostic.jobs["end_time"] > 0).all()
    assert aware.summary[metric] < agnostic.summary[metric]
