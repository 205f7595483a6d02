"""One trace, every way in: `gpufleet simulate`, `gpufleet sweep`, gpufleet.simulate on
gpufleet.traces.load, gpufleet.sweep and the openb replay read the same jobs (or pods and nodes)
from the same arguments, Gavel's msr trace with its scale factors the throughput table lacks
included; and the missing-throughput rule is the documented one everywhere."""
from __future__ import annotations

import importlib
import json

import pandas as pd
import pytest

import gpufleet
import gpufleet.traces as T
from conftest import SHARED_DATA, missing_shared_data
from gpufleet.cli import main

S = importlib.import_module("gpufleet.sweep")      # the module: gpufleet.sweep is the function
inputs = importlib.import_module("gpufleet.sweep.inputs")

GAVEL = SHARED_DATA / "gavel"
CLUSTER = "k80:48,p100:48,v100:48"


def shared(*parts: str):
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        missing_shared_data(path)
    return path


def cli_json(argv: list[str], capsys) -> dict:
    assert main(argv + ["-o", "json", *(["--no-progress"] if argv[0] == "sweep" else [])]) == 0, \
        capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def sweep_metrics(doc: dict) -> dict[str, float]:
    return {r["metric"]: r["mean"] for r in doc["summary"]}


def sweep_jobs(trace: str, **kw) -> pd.DataFrame:
    """The jobs the sweep loads for a trace and ships to its workers."""
    spec = inputs.parse_trace(trace)
    given = {k: kw.pop(k) for k in ("nodes", "throughputs") if k in kw}
    setup = inputs.load_setup(spec, side_inputs=given, **{"missing": "single_worker", "num_jobs": 500,
                                                          "cluster": None, **kw})
    return setup.data["jobs"]


@pytest.mark.parametrize("missing, jobs", [("single_worker", 1181), ("drop", 984)])
def test_gavel_msr_trace_gives_the_same_jobs_everywhere(missing, jobs, tmp_path, capsys):
    trace = str(shared("gavel", "msr", "0e4a51.trace"))
    throughputs = str(shared("gavel", "simulation_throughputs.json"))
    rule = [] if missing == "single_worker" else ["--missing", missing]   # the default is the rule
    loaded = T.load(trace=trace, throughputs=throughputs, missing=missing, cluster=CLUSTER)
    assert loaded.format == "gavel" and len(loaded.jobs) == jobs
    # The sweep ships exactly these jobs to its workers.
    pd.testing.assert_frame_equal(sweep_jobs(trace, throughputs=throughputs, cluster=CLUSTER, missing=missing),
                                  loaded.jobs)
    api = gpufleet.simulate(loaded.jobs, loaded.cluster, "fifo").summary
    csv = tmp_path / "jobs.csv"
    cli = cli_json(["simulate", "--trace", trace, "--throughputs", throughputs, "--cluster", CLUSTER,
                    "--policy", "fifo", "--jobs-csv", str(csv), *rule], capsys)
    per_job = pd.read_csv(csv)
    assert sorted(per_job["job_id"]) == sorted(loaded.jobs["job_id"])
    assert per_job.set_index("job_id")["duration"].sort_index().tolist() == pytest.approx(
        loaded.jobs.set_index("job_id")["duration"].sort_index().tolist())
    swept = S.sweep([trace], ["fifo"], seeds=[0], cluster=CLUSTER, throughputs=throughputs, missing=missing,
                    workers=1, progress=False).set_index("metric")["value"]
    cli_sweep = sweep_metrics(cli_json(["sweep", "--trace", trace, "--throughputs", throughputs, "--cluster",
                                        CLUSTER, "--policy", "fifo", "--seed", "0", "--workers", "1", *rule],
                                       capsys))
    for summary in (cli, swept, cli_sweep):
        assert summary["num_jobs"] == jobs
        assert summary["avg_jct"] == pytest.approx(api["avg_jct"])


def test_the_rule_is_part_of_a_sweeps_experiment():
    trace = str(shared("gavel", "msr", "0e4a51.trace"))
    throughputs = str(shared("gavel", "simulation_throughputs.json"))
    keys = {m: S.experiments([trace], ["fifo"], cluster=CLUSTER, throughputs=throughputs, missing=m)[0].key
            for m in T.MISSING_RULES if m != "error"}
    assert len(set(keys.values())) == len(keys)
    with pytest.raises(S.SweepError, match="scale factor"):
        S.experiments([trace], ["fifo"], cluster=CLUSTER, throughputs=throughputs, missing="error")


def test_tiresias_and_synthetic_traces_give_the_same_jobs_everywhere(tmp_path, capsys):
    sixty = str(shared("tiresias", "60_job.csv"))
    synthetic = tmp_path / "jobs.csv"
    T.synthetic_jobs(30, seed=4).to_csv(synthetic, index=False)
    for trace, cluster in ((sixty, "8"), (str(synthetic), "v100:8,k80:8")):
        loaded = T.load(trace=trace, cluster=cluster)
        pd.testing.assert_frame_equal(sweep_jobs(trace, cluster=cluster), loaded.jobs)
        api = gpufleet.simulate(loaded.jobs, loaded.cluster, "las").summary
        cli = cli_json(["simulate", "--trace", trace, "--cluster", cluster, "--policy", "las"], capsys)
        swept = S.sweep([trace], ["las"], seeds=[0], cluster=cluster, workers=1,
                        progress=False).set_index("metric")["value"]
        for summary in (cli, swept):
            assert summary["num_jobs"] == len(loaded.jobs)
            assert summary["avg_jct"] == pytest.approx(api["avg_jct"])
    # Generated jobs: the same seed draws the same trace in simulate and in the sweep.
    loaded = T.load(format="synthetic", num_jobs=40, seed=2)
    api = gpufleet.simulate(loaded.jobs, loaded.cluster, "fifo", seed=2).summary
    cli = cli_json(["simulate", "--format", "synthetic", "--num-jobs", "40", "--seed", "2", "--policy", "fifo"],
                   capsys)
    swept = S.sweep(["synthetic"], ["fifo"], seeds=[2], num_jobs=40, workers=1,
                    progress=False).set_index("metric")["value"]
    assert cli["avg_jct"] == pytest.approx(api["avg_jct"]) and swept["avg_jct"] == pytest.approx(api["avg_jct"])


@pytest.fixture
def openb_files(tmp_path):
    nodes, pods = T.synthetic_openb(6, 60, seed=5)
    nodes.rename(columns={"name": "sn", "num_gpu": "gpu"}).to_csv(tmp_path / "openb_node_list_gpu_node.csv",
                                                                 index=False)
    pods.assign(gpu_spec=["|".join(s) for s in pods["gpu_spec"]]).to_csv(tmp_path / "openb_pod_list_small.csv",
                                                                         index=False)
    return tmp_path / "openb_pod_list_small.csv", tmp_path / "openb_node_list_gpu_node.csv"


def test_openb_pods_and_nodes_are_the_same_everywhere(openb_files, capsys, monkeypatch):
    pods, nodes = openb_files
    loaded = T.load(trace=pods)           # the node list beside the pod list, by default
    assert loaded.replayed and loaded.files["nodes"] == nodes
    pd.testing.assert_frame_equal(loaded.nodes, T.load_openb_nodes(nodes))
    setup = inputs.load_setup(inputs.parse_trace(str(pods)), cluster=None, side_inputs={},
                              missing="single_worker", num_jobs=500)
    pd.testing.assert_frame_equal(setup.data["pods"], loaded.pods)
    pd.testing.assert_frame_equal(setup.data["nodes"], loaded.nodes)
    api = gpufleet.replay_openb(loaded.nodes, loaded.pods, policy="bestfit", seed=1).summary
    cli = cli_json(["simulate", "--trace", str(pods), "--policy", "bestfit", "--seed", "1"], capsys)
    named = cli_json(["simulate", "--trace", str(pods), "--nodes", str(nodes), "--policy", "bestfit",
                      "--seed", "1"], capsys)
    swept = sweep_metrics(cli_json(["sweep", "--trace", str(pods), "--policy", "bestfit", "--seed", "1",
                                    "--workers", "1"], capsys))
    for summary in (cli, named):
        assert summary["alloc_ratio_at_130"] == pytest.approx(api["alloc_ratio_at_130"])
    assert swept["alloc_ratio_at_100"] == pytest.approx(api["alloc_ratio_at_100"])  # a fraction everywhere
    # python -m gpufleet.replay reads the same frames.
    seen = {}
    monkeypatch.setattr(gpufleet.replay, "compare_with_published",
                        lambda n, p, **kw: seen.update(nodes=n, pods=p) or pd.DataFrame())
    gpufleet.replay.main(["--pods", str(pods), "--seeds", "1"])
    pd.testing.assert_frame_equal(seen["pods"], loaded.pods)
    pd.testing.assert_frame_equal(seen["nodes"], loaded.nodes)


def test_inputs_a_format_does_not_take_or_lacks_are_named(openb_files, capsys):
    pods, nodes = openb_files
    sixty = str(shared("tiresias", "60_job.csv"))
    with pytest.raises(ValueError, match="tiresias traces take no nodes"):
        T.load(trace=sixty, nodes=nodes)
    with pytest.raises(T.MissingInput, match="gavel traces need throughputs") as err:
        T.load(trace=shared("gavel", "msr", "0e4a51.trace"))
    assert err.value.input == "throughputs"
    assert main(["simulate", "--trace", sixty, "--nodes", str(nodes), "--cluster", "8", "--policy", "fifo"]) == 1
    assert "tiresias traces take no nodes" in capsys.readouterr().err
    with pytest.raises(S.SweepError, match="nodes: no trace of this sweep takes it"):
        S.sweep([sixty], ["fifo"], cluster=8, nodes=nodes, progress=False)
    assert main(["sweep", "--trace", str(shared("gavel", "msr", "0e4a51.trace")), "--cluster", "8",
                 "--policy", "fifo", "--no-progress"]) == 2
    assert "give --throughputs" in capsys.readouterr().err
    with pytest.raises(ValueError, match="missing must be one of"):
        T.load(trace=sixty, missing="skip")


def test_the_commands_offer_the_loaders_rules():
    from gpufleet.commands import _traces
    assert _traces.MISSING_RULES == T.MISSING_RULES
    import inspect
    assert inspect.signature(T.load).parameters["missing"].default == "single_worker"
    assert inspect.signature(S.sweep).parameters["missing"].default == "single_worker"
    assert inspect.signature(T.gavel_as_jobs).parameters["missing"].default == "single_worker"
