"""The simulator's Gavel-compatible mode against Gavel's own simulator: a few fast runs of the
recorded reference (tests/python/data/gavel_reference/reference.json; the whole table is
benchmarks/gavel_fidelity.py) agree within 2% in average JCT (over the jobs Gavel kept) and in
makespan, drop the same stuck jobs, and loop forever where Gavel does. Gavel's throughput table
comes from the public data (../shared/data/gavel)."""
from __future__ import annotations

from pathlib import Path

import pytest

from gpufleet import gavel_fidelity, published
import gpufleet.traces as T
from gpufleet.sim import simulate

REFERENCE = Path(__file__).parent / "data" / "gavel_reference"

# (trace, cluster, Gavel policy, seed): one per mechanism the runs exercise, each under a second.
CASES = [
    ("probe-idle-gap", "1:0:0", "max_min_fairness_perf", 0),      # arrivals wait for a re-solve
    ("probe-idle-gap", "1:0:0", "min_total_duration_perf", 0),
    ("gen-static-single-n60-s0", "8:8:8", "max_min_fairness_perf", 0),
    ("gen-static-single-n60-s0", "8:8:8", "max_min_fairness", 0),  # the agnostic per-round shuffle
    ("gen-static-multi-n60-s1", "8:8:8", "max_min_fairness", 2),   # ... with another seed
    ("gen-static-single-n60-s0", "4:8:16", "min_total_duration_perf", 0),
    ("gen-cont-multi-n100-s3-lam300", "36:36:36", "fifo", 0),      # fifo's stale type, a dropped job
    ("gen-cont-multi-n100-s3-lam300", "4:8:16", "max_min_fairness_perf", 0),
    ("physical-max_min_fairness", "8:16:24", "max_min_fairness_perf", 0),
    ("gen-static-single-n60-s0", "8:8:8", "fifo_packed", 0),        # queued jobs packed onto running ones
    ("gen-cont-multi-n100-s3-lam300", "36:36:36", "fifo_packed", 0),  # multi-GPU pairs, two dropped jobs
    ("gen-static-single-n60-s0", "4:8:16", "min_total_duration_packed", 0),  # an LP with pairs
]


@pytest.fixture(scope="module")
def runs():
    return published.gavel_runs(REFERENCE / "reference.json")


def _run(runs, trace, cluster, policy, seed):
    hit = runs[(runs.trace == trace) & (runs.cluster == cluster) & (runs.policy == policy) & (runs.seed == seed)
               & (runs.solver == "ECOS")]
    assert len(hit) == 1
    return hit.iloc[0]


@pytest.mark.parametrize("trace,cluster,policy,seed", CASES)
def test_within_two_percent_of_gavel(runs, shared_data, trace, cluster, policy, seed):
    row = gavel_fidelity.reproduce(_run(runs, trace, cluster, policy, seed), runs.attrs["traces"],
                                   reference_dir=REFERENCE, shared_dir=shared_data)
    assert row["outcome"] == "ok"
    assert abs(row["avg_jct_gap"]) < 0.02, row
    assert abs(row["makespan_gap"]) < 0.02, row
    assert row["gpufleet_dropped"] == row["gavel_dropped"]


def test_loops_forever_where_gavel_does(runs, shared_data):
    # Gavel's fifo pins an 8-GPU job to the 4 V100s: its run never ends; ours says so.
    row = gavel_fidelity.reproduce(_run(runs, "philly-static-multi-n60-s0", "4:8:16", "fifo", 0),
                                   runs.attrs["traces"], reference_dir=REFERENCE, shared_dir=shared_data)
    assert row["outcome"] == "never ends"


def test_reference_file_names_every_run_it_can_reproduce(runs):
    assert runs.attrs["gavel"]["commit"] == "c4fa40097339e9608ab71fd64c8bdea96a5e4a4c"
    for name, entry in runs.attrs["traces"].items():
        if not entry["file"].startswith("shared:"):
            assert (REFERENCE / entry["file"]).is_file(), name
    policies = set(runs.policy)
    assert policies == set(published.GAVEL_POLICY_NAMES) | set(published.GAVEL_UNREPRODUCED)
    assert set(runs.status) == {"ok", "crash", "timeout"}


def test_compat_mode_needs_steps_and_rejects_bad_options(shared_data):
    jobs = T.gavel_as_jobs(T.load_gavel_trace(REFERENCE / "traces" / "probe-idle-gap.trace"),
                           shared_data / "gavel" / "simulation_throughputs.json")
    with pytest.raises(ValueError, match="total_iterations"):
        simulate(jobs.drop(columns="total_iterations"), {"v100": 1}, "gavel-lp", gavel_compat=True)
    with pytest.raises(ValueError, match="unknown option"):
        simulate(jobs, {"v100": 1}, "gavel-lp", gavel_compat={"drop_jobs": False})
    with pytest.raises(ValueError, match="gavel-"):
        simulate(jobs, {"v100": 1}, "las", gavel_compat=True)
    r = simulate(jobs, {"v100": 1}, "gavel-lp", gavel_compat={"charge_idle_gaps": False})
    assert r.summary["dropped_jobs"] == 0 and not r.jobs["dropped"].any()
    assert "dropped_jobs" not in simulate(jobs, {"v100": 1}, "gavel-lp").summary


def test_a_sweep_runs_gavels_study_under_its_rules(shared_data):
    from gpufleet.sweep import sweep
    df = sweep(f"gavel:{REFERENCE / 'traces' / 'probe-idle-gap.trace'}", ["gavel-lp", "gavel-fifo"], seeds=[0],
               options={"gavel_compat": [True]}, cluster={"v100": 1},
               throughputs=shared_data / "gavel" / "simulation_throughputs.json", workers=1, progress=False)
    avg = df[df.metric == "avg_jct"].set_index("policy")["value"]
    # Gavel's simulator: 4,115.0 s (max_min_fairness_perf) and 4,175.0 s (fifo_perf).
    assert avg["gavel-lp"] == pytest.approx(4115.0, abs=0.1)
    assert avg["gavel-fifo"] == pytest.approx(4175.0, abs=0.1)


def test_colocated_rates_reach_the_simulator(shared_data):
    # Gavel's file: ResNet-18 (batch 16) runs at 32.35 steps/s beside ResNet-18 (batch 64) on a V100.
    table = T.load_gavel_throughputs(shared_data / "gavel" / "simulation_throughputs.json")
    colocated = table.attrs["colocated"]
    rate = colocated[("ResNet-18 (batch size 16)", 1, "ResNet-18 (batch size 64)")]["v100"]
    assert rate == pytest.approx(32.353384, abs=1e-5)
    assert all(k[1] >= 1 for k in colocated)
    trace = T.load_gavel_trace(REFERENCE / "traces" / "gen-static-single-n60-s0.trace")
    jobs = T.gavel_as_jobs(trace, table)
    kinds = set(zip(jobs["model_name"], jobs["num_gpu"]))
    assert {(a, s) for a, s, _ in jobs.attrs["colocated_throughputs"]} <= kinds
    cluster = {"v100": 8, "p100": 8, "k80": 8}
    packed = simulate(jobs, cluster, "gavel-fifo(packing=true)", gavel_compat=True).summary
    alone = simulate(jobs, cluster, "gavel-fifo", gavel_compat=True).summary
    assert packed["avg_jct"] < alone["avg_jct"]  # Gavel: 20,471.9 s packed, 21,250.5 s alone
    # Without co-located rates nothing is packed.
    jobs.attrs["colocated_throughputs"] = {}
    plain = simulate(jobs, cluster, "gavel-fifo(packing=true)", gavel_compat=True).summary
    assert plain["avg_jct"] == pytest.approx(alone["avg_jct"], rel=1e-12)


def test_packing_refuses_bad_rates_and_the_default_mode(shared_data, tmp_path):
    bad = tmp_path / "throughputs.json"
    bad.write_text('{"v100": {"(\'A\', 1)": {"null": 2.0, "(\'B\', 1)": 3.0}}}')
    with pytest.raises(T.TraceError, match=r"v100/\('A', 1\)/\('B', 1\).*pair"):
        T.load_gavel_throughputs(bad)
    jobs = T.gavel_as_jobs(T.load_gavel_trace(REFERENCE / "traces" / "probe-idle-gap.trace"),
                           shared_data / "gavel" / "simulation_throughputs.json")
    with pytest.raises(ValueError, match="only in the Gavel-compatible mode"):
        simulate(jobs, {"v100": 1}, "gavel-lp(packing=true)")
    with pytest.raises(ValueError, match="heterogeneity-aware only"):
        simulate(jobs, {"v100": 1}, "gavel-fifo(packing=true,aware=false)", gavel_compat=True)
