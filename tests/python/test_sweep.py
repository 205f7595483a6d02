"""gpufleet.sweep and `gpufleet sweep`: the grid, the tidy frame, parallel runs equal to serial
ones (process pool and Ray), resuming from a results directory after a kill, and bad input
rejected before anything runs. Small synthetic traces only: every sweep here takes seconds."""
from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys
from pathlib import Path

import matplotlib
import pandas as pd
import pytest

matplotlib.use("Agg")

import gpufleet  # noqa: E402
import gpufleet.plots  # noqa: E402
from gpufleet.cli import main  # noqa: E402
from gpufleet.commands.sweep import parse_options  # noqa: E402
from gpufleet.traces import synthetic_jobs, synthetic_openb  # noqa: E402

# The module: the attribute gpufleet.sweep is the function.
S = importlib.import_module("gpufleet.sweep")
run = importlib.import_module("gpufleet.sweep.executors")
experiment = importlib.import_module("gpufleet.sweep.experiment")


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> dict[str, Path]:
    """A tiny openb pod list with its node list beside it (the default place), and a job CSV."""
    d = tmp_path_factory.mktemp("traces")
    nodes, pods = synthetic_openb(12, 90, seed=3)
    nodes.rename(columns={"name": "sn", "num_gpu": "gpu"}).to_csv(d / "openb_node_list_gpu_node.csv", index=False)
    pods = pods.assign(gpu_spec=["|".join(s) for s in pods["gpu_spec"]])
    pods.to_csv(d / "openb_pod_list_tiny.csv", index=False)
    jobs = synthetic_jobs(40, seed=2)
    jobs.to_csv(d / "jobs.csv", index=False)
    return {"openb": d / "openb_pod_list_tiny.csv", "jobs": d / "jobs.csv", "dir": d}


def _small(traces, **kw):
    """Two openb policies and two job policies over two seeds; 8 experiments."""
    openb = S.sweep([traces["openb"]], ["fgd", "bestfit"], seeds=[0, 1], progress=False, **kw)
    sim = S.sweep({"jobs": f"synthetic:{traces['jobs']}"}, ["fifo", "las"], seeds=[0, 1],
                  options={"restore_delay": [0, 30]}, cluster="v100:8,k80:8", progress=False, **kw)
    return openb, sim


def test_tidy_frame_one_row_per_experiment_and_metric(traces):
    openb, sim = _small(traces, workers=1)
    assert list(openb.columns) == ["kind", "trace", "policy", "seed", "metric", "value"]
    assert list(sim.columns) == ["kind", "trace", "policy", "seed", "restore_delay", "metric", "value"]
    assert set(openb["trace"]) == {"tiny"} and set(openb["kind"]) == {"openb"}
    # every experiment carries the same metrics, each once
    per_exp = sim.groupby(["policy", "seed", "restore_delay"]).size()
    assert len(per_exp) == 2 * 2 * 2 and per_exp.nunique() == 1
    assert not sim.duplicated(["policy", "seed", "restore_delay", "metric"]).any()
    # the values are the package's own runs
    direct = gpufleet.replay_openb(*_openb_frames(traces), policy="bestfit", seed=1).summary
    row = openb[(openb.policy == "bestfit") & (openb.seed == 1) & (openb.metric == "alloc_ratio_at_100")]
    assert row["value"].item() == pytest.approx(direct["alloc_ratio_at_100"])
    jobs = gpufleet.traces.load_jobs_csv(traces["jobs"])
    direct = gpufleet.simulate(jobs, "v100:8,k80:8", "las", seed=1, restore_delay=30).summary
    row = sim[(sim.policy == "las") & (sim.seed == 1) & (sim.restore_delay == 30) & (sim.metric == "avg_jct")]
    assert row["value"].item() == pytest.approx(direct["avg_jct"])
    # the option reaches the run: a preemptive policy's JCTs change with the restore delay
    las = sim[(sim.policy == "las") & (sim.metric == "avg_jct")].groupby("restore_delay")["value"].mean()
    assert las[30] != las[0]


def _openb_frames(traces):
    from gpufleet.traces import load_openb_nodes, load_openb_pods
    return load_openb_nodes(traces["dir"] / "openb_node_list_gpu_node.csv"), load_openb_pods(traces["openb"])


def test_pool_of_two_gives_the_serial_results(traces):
    serial = _small(traces, workers=1)
    pooled = _small(traces, workers=2)
    for a, b in zip(serial, pooled):
        pd.testing.assert_frame_equal(a, b)


@pytest.mark.skipif(importlib.util.find_spec("ray") is None,
                    reason="Ray is not installed (the optional extra `ray`: pip install '.[ray]' in the source tree)")
def test_ray_gives_the_pool_results(traces):
    # One test and one Ray start: a local instance takes seconds (tens on a loaded machine) to
    # start. The sweeps use the running instance and leave it running.
    import ray
    pooled = _small(traces, workers=2)
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        on_ray = _small(traces, executor="ray")
        assert ray.is_initialized()
    finally:
        ray.shutdown()
    for a, b in zip(pooled, on_ray):
        pd.testing.assert_frame_equal(a, b)


def test_missing_ray_is_a_clear_error(traces, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    with pytest.raises(S.SweepError, match=r"needs ray.*gpufleet\[ray\].*executor='process'"):
        S.sweep([traces["openb"]], ["fgd"], seeds=[0], executor="ray", results_dir=tmp_path / "r",
                progress=False)
    assert not (tmp_path / "r").exists()


def test_resume_after_a_kill_runs_only_what_is_missing(traces, tmp_path, monkeypatch):
    results = tmp_path / "results"
    first = S.sweep([traces["openb"]], ["fgd", "bestfit"], seeds=[0], results_dir=results, workers=1,
                    progress=False)
    assert first.attrs["ran"] == 2 and len(list(results.glob("*.json"))) == 2
    done = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in results.glob("*.json")}
    # A kill in the middle of a write leaves at most a temporary file: a half-written record.
    exps = S.experiments([traces["openb"]], ["fgd", "bestfit"], seeds=[0, 1])
    pending = [e for e in exps if f"{e.key}.json" not in done]
    (results / f".{pending[0].key}.4242.deadbeef.tmp").write_text('{"format": 1, "metrics": {"alloc_ra')
    ran = []
    timed = run._timed
    monkeypatch.setattr(run, "_timed", lambda setup, exp: (ran.append(exp.key), timed(setup, exp))[1])
    full = S.sweep([traces["openb"]], ["fgd", "bestfit"], seeds=[0, 1], results_dir=results, workers=1,
                   progress=False)
    assert sorted(ran) == sorted(e.key for e in pending)          # the finished two were not re-run
    assert full.attrs["ran"] == 2 and full.attrs["reused"] == 2
    for name, (mtime, data) in done.items():                     # nor rewritten
        assert (results / name).stat().st_mtime_ns == mtime and (results / name).read_bytes() == data
    assert len(list(results.glob("*.json"))) == 4
    # the reused numbers are the numbers: a fresh run without the directory agrees
    fresh = S.sweep([traces["openb"]], ["fgd", "bestfit"], seeds=[0, 1], workers=1, progress=False)
    pd.testing.assert_frame_equal(full, fresh)
    # each file is one complete record; read_results gives the same rows back
    record = json.loads((results / f"{pending[0].key}.json").read_text())
    assert record["description"] == pending[0].description and record["labels"]["seed"] == 1
    back = S.read_results(results)
    assert len(back) == len(full) and set(back["policy"]) == {"fgd", "bestfit"}


def test_results_are_pinned_to_the_code_that_computed_them(traces, tmp_path, monkeypatch):
    results = tmp_path / "results"
    first = S.sweep([traces["openb"]], ["bestfit"], seeds=[0], results_dir=results, workers=1,
                    progress=False)
    assert first.attrs["ran"] == 1
    (record,) = [json.loads(p.read_text()) for p in results.glob("*.json")]
    code = record["description"]["code"]
    assert code["gpufleet"] == gpufleet.__version__ and len(code["files_sha256"]) == 16
    again = S.sweep([traces["openb"]], ["bestfit"], seeds=[0], results_dir=results, workers=1,
                    progress=False)
    assert again.attrs["reused"] == 1 and again.attrs["ran"] == 0
    # Other code (a rebuilt module, an edited policy): the experiment is another one and runs.
    monkeypatch.setattr(experiment, "code_identity", lambda: {**code, "files_sha256": "0" * 16})
    changed = S.sweep([traces["openb"]], ["bestfit"], seeds=[0], results_dir=results, workers=1,
                      progress=False)
    assert changed.attrs["ran"] == 1 and changed.attrs["reused"] == 0
    assert len(list(results.glob("*.json"))) == 2
    pd.testing.assert_frame_equal(first, changed)  # same code really: same numbers


def test_an_unreadable_result_is_run_again(traces, tmp_path):
    results = tmp_path / "results"
    S.sweep([traces["openb"]], ["fgd"], seeds=[0, 1], results_dir=results, workers=1, progress=False)
    victim = sorted(results.glob("*.json"))[0]
    victim.write_text("not json")
    again = S.sweep([traces["openb"]], ["fgd"], seeds=[0, 1], results_dir=results, workers=1, progress=False)
    assert again.attrs["ran"] == 1 and json.loads(victim.read_text())["metrics"]


def test_a_changed_option_seed_or_trace_is_another_experiment(traces, tmp_path):
    def key(**kw):
        args = {"traces": [traces["openb"]], "policies": ["fgd"], "seeds": [0]} | kw
        return S.experiments(**args)[0].key

    base = key()
    assert key() == base
    assert key(traces={"renamed": traces["openb"]}) == base        # a label is not the experiment
    assert key(seeds=[1]) != base
    assert key(options={"stop_at": 1.2}) != base
    assert key(options={"integer_scores": False}) != base
    lines = traces["openb"].read_text().splitlines()
    lines[1] = lines[1].replace("synth-pod-0000", "synth-pod-renamed")
    changed = tmp_path / "openb_pod_list_tiny.csv"
    changed.write_text("\n".join(lines) + "\n")
    os.link(traces["dir"] / "openb_node_list_gpu_node.csv", tmp_path / "openb_node_list_gpu_node.csv")
    assert key(traces=[changed]) != base                           # the trace's contents are


@pytest.mark.parametrize("kwargs, message", [
    ({"policies": ["fgdx"]}, r"policy 'fgdx'.*unknown placement strategy.*did you mean \"fgd\""),
    ({"policies": ["fgd(bogus=1)"]}, r"policy 'fgd\(bogus=1\)'.*unknown parameter \"bogus\""),
    ({"policies": ["fgd(integer_scores=false"]}, r"expected NAME or NAME\(key=value"),
    ({"policies": ["fgd(integer_scores=false)"], "options": {"integer_scores": True}},
     r"integer_scores given in the spec and as an option"),
    ({"options": {"integer_scores": [True, 3]}}, r"integer_scores=3.*wrong type"),
    ({"options": {"stop_at": "high"}}, r"stop_at='high'"),
    ({"options": {"seed": [1, 2]}}, r"option 'seed' is set by the sweep"),
    ({"options": {"coverage": []}}, r"option 'coverage': no values"),
    ({"traces": ["no/such/openb_pod_list_x.csv"]}, r"no such file"),
    ({"traces": ["nosuchformat:x.csv"]}, r"no such file 'nosuchformat:x.csv'"),
    ({"seeds": [-1]}, r"seed -1"),
    ({"seeds": []}, r"no seeds"),
    ({"policies": []}, r"no policies"),
])
def test_bad_input_fails_before_anything_runs(traces, tmp_path, kwargs, message):
    args = {"traces": [traces["openb"]], "policies": ["fgd"], "seeds": [0]} | kwargs
    with pytest.raises(S.SweepError, match=message):
        S.sweep(**args, results_dir=tmp_path / "results", workers=2, progress=False)
    assert not (tmp_path / "results").exists()


def test_bad_job_trace_input_names_what_is_wrong(traces, tmp_path):
    jobs = f"synthetic:{traces['jobs']}"
    with pytest.raises(S.SweepError, match=r"policy 'lass'.*did you mean"):
        S.sweep([jobs], ["lass"], cluster=8, progress=False)
    with pytest.raises(S.SweepError, match=r"needs? cluster="):
        S.sweep([f"tiresias:{traces['jobs']}"], ["fifo"], progress=False)
    with pytest.raises(S.SweepError, match=r"cannot tell its format"):
        odd = tmp_path / "odd.csv"
        odd.write_text("a,b\n1,2\n")
        S.sweep([odd], ["fifo"], cluster=8, progress=False)
    with pytest.raises(S.SweepError, match=r"cluster 'v100:x'"):
        S.sweep([jobs], ["fifo"], cluster="v100:x", progress=False)
    with pytest.raises(S.SweepError, match=r"needs 8 GPUs.*largest group has 4"):
        S.sweep([jobs], ["fifo"], cluster="v100:4,k80:4", progress=False)
    with pytest.raises(S.SweepError, match=r"unknown executor"):
        S.sweep([jobs], ["fifo"], cluster=8, executor="dask", progress=False)


def test_summarize_and_the_figure(traces):
    import matplotlib.pyplot as plt
    openb, sim = _small(traces, workers=1)
    table = S.summarize(openb, ["alloc_ratio_at_100"])
    assert list(table["policy"]) == ["fgd", "bestfit"] and list(table["runs"]) == [2, 2]
    mean = openb[(openb.policy == "fgd") & (openb.metric == "alloc_ratio_at_100")]["value"].mean()
    assert table["mean"].iloc[0] == pytest.approx(mean)
    with pytest.raises(S.SweepError, match="no metric 'nope'"):
        S.summarize(openb, ["nope"])
    published = pd.DataFrame({"trace": ["tiny"], "policy": ["fgd"], "published": [0.95]})
    ax = gpufleet.plots.sweep_errorbars(openb, "alloc_ratio_at_100", published=published)
    bars = [p for p in ax.patches]
    # fractions drawn, the axis labelled in percent; the published cross in the same unit
    assert len(bars) == 2 and bars[0].get_height() == pytest.approx(mean)
    assert ax.yaxis.get_major_formatter()(0.95, 0) == "95%" and ax.get_ylim()[1] == 1
    crosses = [line for line in ax.lines if line.get_label() == "published"]
    assert list(crosses[0].get_ydata()) == [pytest.approx(0.95)]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["tiny"]
    plt.close(ax.figure)
    with pytest.raises(ValueError, match="restore_delay take several values"):
        gpufleet.plots.sweep_errorbars(sim, "avg_jct")
    ax = gpufleet.plots.sweep_errorbars(sim[sim.restore_delay == 0], "avg_jct", error="sem")
    assert len(ax.patches) == 2
    plt.close(ax.figure)


def test_published_figures_by_trace_and_policy(tmp_path):
    csv = tmp_path / "expected.csv"
    csv.write_text("workload,sc_policy,tune,seed,total_gpus,0,100\n"
                   "openb_pod_list_tiny,06-FGD,0,42,8,0,90\nopenb_pod_list_tiny,06-FGD,0,43,8,0,92\n"
                   "openb_pod_list_tiny,01-Random,0,42,8,0,80\n")
    pub = S.load_published_alloc(csv)
    # fractions, as every ratio of the package (the study's table holds percent)
    assert pub.set_index(["trace", "policy"])["published"].to_dict() == {
        ("tiny", "fgd"): pytest.approx(0.91), ("tiny", "random"): pytest.approx(0.80)}
    with pytest.raises(S.SweepError, match="lacks column"):
        S.load_published_alloc(csv, at="130")


def test_option_values_on_the_command_line():
    assert parse_options(["restore_delay=0,30", "placement=binpack", "workload=[[1,2],[3,4]]"]) == {
        "restore_delay": [0, 30], "placement": ["binpack"], "workload": [[[1, 2], [3, 4]]]}
    with pytest.raises(ValueError, match="KEY=VALUE"):
        parse_options(["restore_delay"])


def test_cli_prints_means_next_to_the_published_ones(traces, tmp_path, capsys):
    csv = tmp_path / "expected.csv"
    csv.write_text("workload,sc_policy,100\nopenb_pod_list_tiny,06-FGD,90\nopenb_pod_list_tiny,05-BestFit,80\n")
    argv = ["sweep", "--trace", str(traces["openb"]), "--policy", "fgd", "bestfit", "--seeds", "2",
            "--workers", "1", "--published", str(csv), "--results", str(tmp_path / "r"), "--no-progress"]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    header, *rows = out.strip().splitlines()
    assert header.split()[:5] == ["KIND", "TRACE", "POLICY", "METRIC", "MEAN"] and "PUBLISHED" in header
    assert len(rows) == 2 and rows[0].split()[2] == "fgd" and rows[0].split()[-2] == "90"
    assert "4 experiments: 4 run, 0 reused" in err
    assert main(argv + ["-o", "json"]) == 0
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert doc["ran"] == 0 and doc["reused"] == 4
    fgd = [r for r in doc["summary"] if r["policy"] == "fgd" and r["metric"] == "alloc_ratio_at_100"][0]
    # one unit per metric: the document holds fractions, as simulate/replay and summarize do;
    # only the table prints them in percent
    assert fgd["published"] == pytest.approx(0.90) and fgd["difference"] == pytest.approx(fgd["mean"] - 0.90)
    frame = S.read_results(tmp_path / "r")
    summary = S.summarize(frame[frame.policy == "fgd"], ["alloc_ratio_at_100"])
    assert 0 < fgd["mean"] <= 1 and fgd["mean"] == pytest.approx(float(summary["mean"].iloc[0]))
    cells = rows[0].split()
    assert cells[3] == "alloc_ratio_at_100" and cells[4] == "(%)"
    assert float(cells[5]) == pytest.approx(100 * fgd["mean"], abs=0.01)
    assert float(cells[-1]) == pytest.approx(100 * fgd["difference"], abs=0.01) and cells[-1][0] in "+-"
    # one format per column: the same decimals in every row
    for column in (5, -1):
        assert len({len(r.split()[column].partition(".")[2]) for r in rows}) == 1, rows


def test_cli_bad_input_exits_1_naming_it(traces, capsys):
    assert main(["sweep", "--trace", str(traces["openb"]), "--policy", "fgdx", "--no-progress"]) == 1
    assert "fgdx" in capsys.readouterr().err
    assert main(["sweep", "--trace", str(traces["openb"]), "--policy", "fgd", "--option", "stop_at",
                 "--no-progress"]) == 1
    assert "KEY=VALUE" in capsys.readouterr().err


def test_openb_policy_spec_parameters_reach_the_strategy(traces):
    df = S.sweep([traces["openb"]], ["fgd(integer_scores=false)"], seeds=[0], workers=1, progress=False)
    exact = gpufleet.replay_openb(*_openb_frames(traces), policy="fgd", seed=0, integer_scores=False).summary
    got = df.set_index("metric")["value"]
    assert got["alloc_ratio_at_100"] == pytest.approx(exact["alloc_ratio_at_100"])
    assert got["frag_gpus_at_130"] == pytest.approx(exact["frag_gpus_at_130"])
    assert S.split_spec("las(queue_limits=[3250, 7200], service=time)") == (
        "las", {"queue_limits": [3250, 7200], "service": "time"})


def test_cli_output_formats(traces, tmp_path, capsys):
    import yaml
    argv = ["sweep", "--trace", f"synthetic:{traces['jobs']}", "--cluster", "v100:8,k80:8", "--policy",
            "fifo", "las", "--seed", "0", "1", "--option", "restore_delay=0,30", "--workers", "1",
            "--results", str(tmp_path / "r"), "--no-progress", "--csv", str(tmp_path / "all.csv")]
    assert main(argv) == 0                                   # runs, then every call below reuses
    default = capsys.readouterr().out
    header = default.splitlines()[0].split()
    assert header == ["KIND", "TRACE", "POLICY", "RESTORE_DELAY", "METRIC", "MEAN", "STD", "RUNS"]
    assert len(default.splitlines()) == 1 + 2 * 2             # avg_jct per policy and delay
    assert len(pd.read_csv(tmp_path / "all.csv")) == len(S.read_results(tmp_path / "r"))
    assert main(argv + ["-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert main(argv + ["-o", "yaml"]) == 0
    assert yaml.safe_load(capsys.readouterr().out) == doc
    assert doc["reused"] == 8 and {r["metric"] for r in doc["summary"]} > {"avg_jct", "makespan"}
    assert main(argv + ["-o", "wide"]) == 0
    wide = capsys.readouterr().out
    assert wide.splitlines()[0].split() == header and len(wide.splitlines()) == 1 + len(doc["summary"])


GAVEL_REFERENCE = Path(__file__).parent / "data" / "gavel_reference"
GAVEL_THROUGHPUTS = Path(__file__).parents[2] / ".." / "shared" / "data" / "gavel" / "simulation_throughputs.json"


@pytest.mark.skipif(not GAVEL_THROUGHPUTS.exists(), reason="needs ../shared/data/gavel (Gavel's throughput table)")
def test_cli_sets_gavels_own_figures_beside_its_traces_run_under_its_rules(capsys):
    """--reference: a gavel-* policy run with gavel_compat on a trace, cluster and seed Gavel's
    simulator ran gets Gavel's figure beside it; the same run without Gavel's rules, or on another
    cluster, gets none (another experiment)."""
    reference = GAVEL_REFERENCE / "reference.json"
    runs = {(r["policy"], r["seed"]): r for r in json.loads(reference.read_text())["runs"]
            if r["trace"] == "probe-idle-gap" and r["cluster"] == "1:0:0" and r["solver"] == "ECOS"}
    argv = ["sweep", "--trace", f"gavel:{GAVEL_REFERENCE / 'traces' / 'probe-idle-gap.trace'}",
            "--throughputs", str(GAVEL_THROUGHPUTS), "--policy", "gavel-lp", "gavel-fifo", "--seed", "0",
            "--workers", "1", "--no-progress", "--metric", "avg_jct", "makespan",
            "--reference", str(reference), "-o", "json"]
    assert main(argv + ["--cluster", "v100:1", "--option", "gavel_compat=true"]) == 0
    rows = {(r["policy"], r["metric"]): r for r in json.loads(capsys.readouterr().out)["summary"]}
    for ours, gavels in (("gavel-lp", "max_min_fairness_perf"), ("gavel-fifo", "fifo_perf")):
        for metric, key in (("avg_jct", "avg_jct_s"), ("makespan", "makespan_s")):
            row = rows[(ours, metric)]
            assert row["published"] == pytest.approx(runs[(gavels, 0)][key])
            assert row["difference"] == pytest.approx(row["mean"] - row["published"])
            assert abs(row["difference"]) <= 0.02 * row["published"]
    assert main(argv + ["--cluster", "v100:1"]) == 0   # the package's own rules: not Gavel's runs
    assert not any("published" in r for r in json.loads(capsys.readouterr().out)["summary"])
    assert main(argv + ["--cluster", "v100:2", "--option", "gavel_compat=true"]) == 0
    assert not any("published" in r for r in json.loads(capsys.readouterr().out)["summary"])
    bad = argv[:-3] + [str(GAVEL_THROUGHPUTS), "--cluster", "v100:1"]
    assert main(bad) == 1
    assert "--reference" in capsys.readouterr().err
