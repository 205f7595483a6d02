"""Tests for gpufleet.traces: real-file counts, row-level errors, generators, schema, registry."""
from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import gpufleet.traces as T
from gpufleet.traces import TraceError
from gpufleet.traces.gavel import THROUGHPUT_COLUMNS, TRACE_COLUMNS
from gpufleet.traces.openb import NODE_COLUMNS, POD_COLUMNS
from gpufleet.traces.philly import PHILLY_COLUMNS
from gpufleet.traces.tiresias import JOB_FILE_COLUMNS
from conftest import missing_shared_data

# The public traces sit in ../shared/data beside the checkout; GPUFLEET_SHARED_DATA points elsewhere.
DATA = Path(os.environ.get("GPUFLEET_SHARED_DATA",
                           Path(__file__).resolve().parents[2] / ".." / "shared" / "data")).resolve()


def shared(*parts: str) -> Path:
    path = DATA.joinpath(*parts)
    if not path.exists():
        missing_shared_data(path)
    return path


def assert_dtypes(df: pd.DataFrame, schema: dict[str, str]) -> None:
    assert list(df.columns) == list(schema)
    assert {c: str(t) for c, t in df.dtypes.items()} == schema


def assert_job_schema(jobs: pd.DataFrame) -> None:
    assert list(jobs.columns[:5]) == list(T.JOB_COLUMNS)
    for column, dtype in T.JOB_COLUMNS.items():
        assert str(jobs[column].dtype) == dtype, column
    assert jobs["job_id"].is_unique
    assert (jobs["num_gpu"] >= 1).all() and (jobs["duration"] > 0).all() and (jobs["submit_time"] >= 0).all()
    assert jobs["submit_time"].is_monotonic_increasing
    assert isinstance(jobs.index, pd.RangeIndex)
    tput = [c for c in jobs.columns if c.startswith("throughput_")]
    assert all(jobs[c].dtype == np.float64 for c in tput)
    ref = jobs.attrs.get("reference_model")
    if ref is not None:
        assert str(jobs["total_iterations"].dtype) == "int64"
        np.testing.assert_allclose(jobs["duration"], jobs["total_iterations"] / jobs[f"throughput_{ref}"])


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# --- real files: counts from shared/data/README.md ----------------------------------------

def test_openb_default_pods_counts() -> None:
    pods = T.load_openb_pods(shared("openb", "openb_pod_list_default.csv"))
    assert_dtypes(pods, POD_COLUMNS)
    assert len(pods) == 8152
    assert pods["num_gpu"].value_counts().to_dict() == {1: 6989, 0: 1088, 8: 44, 2: 16, 4: 15}
    assert ((pods["num_gpu"] == 1) & (pods["gpu_milli"] < 1000)).sum() == 3078
    assert (pods["gpu_spec"] == ()).all()
    assert pods["scheduled_time"].isna().sum() == 897  # pods never scheduled


def test_openb_nodes_counts() -> None:
    nodes = T.load_openb_nodes(shared("openb", "openb_node_list_gpu_node.csv"))
    assert_dtypes(nodes, NODE_COLUMNS)
    assert len(nodes) == 1213 and nodes["num_gpu"].sum() == 6212
    assert nodes.groupby("model")["num_gpu"].sum().to_dict() == {
        "G2": 4392, "T4": 842, "G3": 312, "P100": 265, "V100M32": 204, "V100M16": 195, "A10": 2}
    assert len(T.load_openb_nodes(shared("openb", "openb_node_list_all_node.csv"))) == 1523


@pytest.mark.parametrize("variant", ["cpu050", "cpu100", "gpushare20", "gpushare40", "gpushare100",
                                     "multigpu20", "multigpu30"])
def test_openb_variants_load(variant: str) -> None:
    pods = T.load_openb_pods(shared("openb", f"openb_pod_list_{variant}.csv"))
    assert_dtypes(pods, POD_COLUMNS)
    if variant.startswith("multigpu"):  # these files carry only the first five columns
        assert pods["creation_time"].isna().all() and (pods["qos"] == "").all()
        assert (pods["num_gpu"] > 1).sum() > 75
    else:
        assert pods["creation_time"].notna().all()


def test_openb_as_jobs() -> None:
    pods = T.load_openb_pods(shared("openb", "openb_pod_list_default.csv"))
    jobs = T.openb_as_jobs(pods)
    assert_job_schema(jobs)
    assert 0 < len(jobs) <= 8152 - 1088 and jobs["submit_time"].iloc[0] == 0
    assert set(jobs["gpu_milli"]) <= set(range(1, 1001))


def test_tiresias_real_files() -> None:
    jobs = T.load_tiresias_jobs(shared("tiresias", "60_job.csv"))
    assert_dtypes(jobs, JOB_FILE_COLUMNS)
    assert len(jobs) == 60
    assert jobs["num_gpu"].value_counts().to_dict() == {1: 30, 2: 10, 4: 10, 8: 10}
    assert (jobs["duration"].min(), jobs["duration"].max()) == (121, 1800)
    unified = T.tiresias_as_jobs(jobs)
    assert_job_schema(unified)
    assert unified["duration"].tolist() == jobs.sort_values("submit_time")["duration"].tolist()
    spec = T.load_tiresias_cluster(shared("tiresias", "n32g4.csv"))
    assert (spec.num_nodes, spec.num_gpus, spec.gpus_per_node) == (32, 128, 4)
    assert T.load_tiresias_cluster(shared("tiresias", "n256g8.csv")).num_gpus == 2048
    dist = T.load_duration_distribution(shared("tiresias", "yarn-gput1000.csv"))
    assert dist.dtype == np.float64 and len(dist) == 1001 and dist.min() == 121


def test_gavel_throughputs_real() -> None:
    path = shared("gavel", "simulation_throughputs.json")
    df = T.load_gavel_throughputs(path)
    assert_dtypes(df, THROUGHPUT_COLUMNS)
    assert df["job_type"].nunique() == 26 and set(df["gpu_model"]) == {"k80", "p100", "v100"}
    table = T.throughput_table(df)
    resnet = table[("ResNet-50 (batch size 64)", 1)]
    assert [round(resnet[m], 3) for m in ("k80", "p100", "v100")] == [0.619, 2.619, 4.395]
    both = T.load_gavel_throughputs(path, unconsolidated=True)
    assert "v100_unconsolidated" in set(both["gpu_model"]) and len(both) > len(df)


@pytest.mark.parametrize("name, layout, rows", [
    ("physical_cluster/artifact_evaluation.trace", "physical_cluster", 15),
    ("physical_cluster/max_min_fairness.trace", "physical_cluster", 96),
    ("msr/0e4a51.trace", "msr", 1181),
    ("msr/23dbec.trace", "msr", 9),
])
def test_gavel_traces_real(name: str, layout: str, rows: int) -> None:
    trace = T.load_gavel_trace(shared("gavel", *name.split("/")))
    assert_dtypes(trace, TRACE_COLUMNS)
    assert trace.attrs["layout"] == layout and len(trace) == rows
    assert trace["SLO"].isna().all()  # physical files say -1 (none); msr has no SLO
    assert set(trace["scale_factor"]) <= {1, 2, 4, 8, 12, 16, 24, 32}


def test_gavel_as_jobs_real() -> None:
    throughputs = T.load_gavel_throughputs(shared("gavel", "simulation_throughputs.json"))
    trace = T.load_gavel_trace(shared("gavel", "physical_cluster", "artifact_evaluation.trace"))
    jobs = T.gavel_as_jobs(trace, throughputs)
    assert_job_schema(jobs)
    assert {"throughput_k80", "throughput_p100", "throughput_v100"} <= set(jobs.columns)
    first = trace.iloc[0]
    rate = T.throughput_table(throughputs)[(first["job_type"], int(first["scale_factor"]))]["v100"]
    assert jobs.loc[jobs["job_id"] == 0, "duration"].item() == pytest.approx(first["total_steps"] / rate)
    on_p100 = T.gavel_as_jobs(trace, throughputs, reference="p100")
    assert on_p100.attrs["reference_model"] == "p100" and not on_p100["duration"].equals(jobs["duration"])


def test_gavel_msr_trace_loads_every_job_with_gavels_throughputs() -> None:
    # The msr traces give scale factors above 1 to job types that Gavel measured on one GPU only
    # (Recommendation, A3C, CycleGAN); Gavel's simulator, when it read these traces, used one
    # throughput per job type whatever the scale factor, so those jobs take the scale-factor-1
    # entry. Every other job keeps its own (job type, scale factor) entry.
    throughputs = T.load_gavel_throughputs(shared("gavel", "simulation_throughputs.json"))
    table = T.throughput_table(throughputs)
    msr = T.load_gavel_trace(shared("gavel", "msr", "0e4a51.trace"))
    jobs = T.gavel_as_jobs(msr, throughputs)
    assert_job_schema(jobs)
    assert len(jobs) == len(msr) == 1181
    keys = list(zip(msr["job_type"], msr["scale_factor"]))
    absent = [row for row, key in enumerate(keys) if key not in table]
    assert jobs.attrs["single_worker_rows"] == absent and absent  # the trace has such jobs
    assert {keys[row][0] for row in absent} <= {t for t, s in table if s == 1}
    by_id = jobs.set_index("job_id")
    present = [row for row in range(len(keys)) if keys[row] in table and keys[row][1] > 1]
    for row in absent[:5] + present[:3] + [0]:
        job_type, scale = keys[row]
        expected = table[(job_type, scale)] if (job_type, scale) in table else table[(job_type, 1)]
        for model in ("k80", "p100", "v100"):
            assert by_id.at[row, f"throughput_{model}"] == expected[model]
        assert by_id.at[row, "num_gpu"] == scale
        assert by_id.at[row, "duration"] == pytest.approx(msr["total_steps"].iloc[row] / expected["v100"])
    dropped = T.gavel_as_jobs(msr, throughputs, missing="drop")
    assert len(dropped) == len(msr) - len(absent) and dropped.attrs["dropped"] == len(absent)
    assert not set(dropped["job_id"]) & set(absent)
    first = absent[0]
    with pytest.raises(TraceError, match=rf"^0e4a51\.trace line {msr.attrs['lines'][first]}, field job_type: "
                       rf"row {first} \({re.escape(repr(keys[first][0]))}, scale factor {keys[first][1]}\): "
                       "the table has no entry"):
        T.gavel_as_jobs(msr, throughputs, missing="error")


def test_gavel_unknown_job_type_names_the_row(tmp_path: Path) -> None:
    throughputs = shared("gavel", "simulation_throughputs.json")
    text = MSR.format(steps=10, arrival=0, scale=1) + "\n" + MSR.format(steps=10, arrival=1, scale=2).replace(
        "A3C", "Mystery-Net")
    trace = T.load_gavel_trace(write(tmp_path, "m.trace", text))
    assert trace.attrs["lines"] == [1, 3]  # the blank line is skipped
    with pytest.raises(TraceError, match=r"^m\.trace line 3, field job_type: row 1 \('Mystery-Net', scale factor 2\): "
                       r"no v100 throughput .* \(the table has no entry for this job type\)"):
        T.gavel_as_jobs(trace, throughputs)
    # A frame no longer as loaded (re-indexed) is named by its row alone.
    with pytest.raises(TraceError, match=r"^gavel trace, field job_type: row 0 \('Mystery-Net'"):
        T.gavel_as_jobs(trace.iloc[1:], throughputs)
    assert T.gavel_as_jobs(trace, throughputs, missing="drop")["model_name"].tolist() == ["A3C"]
    with pytest.raises(ValueError, match="missing must be"):
        T.gavel_as_jobs(trace, throughputs, missing="skip")  # type: ignore[arg-type]


def test_gavel_cluster_specs_real() -> None:
    assert T.load_gavel_cluster_spec(shared("gavel", "msr", "cluster_specs.json")) == [
        {"v100": 500, "p100": 0, "k80": 0}]
    assert T.load_gavel_cluster_spec(shared("gavel", "msr", "cluster_specs_heterogeneous.json"), "philly") == [
        {"v100": 300, "p100": 300, "k80": 300}]


# --- error paths: the message names file, line and field ---------------------------------

POD_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
GOOD_POD = "p0,1000,2048,1,500,,LS,Running,0,10,1\n"


@pytest.mark.parametrize("row, field, problem", [
    ("p1,1000,2048,1,abc,,LS,Running,0,10,1", "gpu_milli", "'abc' is not an integer"),
    ("p1,-5,2048,1,500,,LS,Running,0,10,1", "cpu_milli", "-5 is negative"),
    ("p1,1000,2048,2,500,,LS,Running,0,10,1", "gpu_milli", "multi-GPU"),
    ("p1,1000,2048,0,300,,LS,Running,0,10,1", "gpu_milli", "CPU-only"),
    ("p1,1000,2048,1,1200,,LS,Running,0,10,1", "gpu_milli", "outside 1-1000"),
    ("p1,1000,2048,1,500,T4|H100,LS,Running,0,10,1", "gpu_spec", "unknown GPU model 'H100'"),
    ("p1,1000,2048", "num_gpu", "missing"),
    ("p1,1000,2048,1,500,,LS,Running,5,1,5", "deletion_time", "before creation_time"),
    ("p1,1000,2048,1,500,,LS,Running,x,10,1", "creation_time", "'x' is not a number"),
    ("p1,1000,2048,1,500,,LS,Running,0,10,1,extra", "column 12", "unexpected extra value"),
])
def test_openb_pod_errors(tmp_path: Path, row: str, field: str, problem: str) -> None:
    path = write(tmp_path, "openb_pod_list_default.csv", POD_HEADER + GOOD_POD + row + "\n")
    with pytest.raises(TraceError) as info:
        T.load_openb_pods(path)
    message = str(info.value)
    assert message.startswith(f"openb_pod_list_default.csv line 3, field {field}: "), message
    assert problem in message
    assert (info.value.line, info.value.field) == (3, field)


def test_openb_error_example_from_spec(tmp_path: Path) -> None:
    lines = POD_HEADER + "".join(GOOD_POD.replace("p0,", f"p{i},") for i in range(15)) + "p16,1000,2048,1,abc,,LS,Running,0,10,1\n"
    with pytest.raises(TraceError, match=r"^openb_pod_list_default\.csv line 17, field gpu_milli: "
                                         r"'abc' is not an integer$"):
        T.load_openb_pods(write(tmp_path, "openb_pod_list_default.csv", lines))


def test_openb_header_and_node_errors(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match=r"^pods\.csv line 1, field gpu_milli: column missing"):
        T.load_openb_pods(write(tmp_path, "pods.csv", "name,cpu_milli,memory_mib,num_gpu\np,1,1,0\n"))
    header = "sn,cpu_milli,memory_mib,gpu,model\n"
    with pytest.raises(TraceError, match=r"^nodes\.csv line 3, field model: unknown GPU model 'X9'"):
        T.load_openb_nodes(write(tmp_path, "nodes.csv", header + "n0,1000,1024,2,T4\nn1,1000,1024,8,X9\n"))
    with pytest.raises(TraceError, match=r"^nodes\.csv line 2, field gpu: '2\.5' is not an integer"):
        T.load_openb_nodes(write(tmp_path, "nodes.csv", header + "n0,1000,1024,2.5,T4\n"))
    nodes = T.load_openb_nodes(write(tmp_path, "nodes.csv", header + "n0,1000,1024,1,H9\n"), known_models=["H9"])
    assert nodes["model"].tolist() == ["H9"]


TIRESIAS_HEADER = "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\r\n"


@pytest.mark.parametrize("row, field, problem", [
    ("1,2,30,100,vgg19,fast,10", "duration", "'fast' is not a number"),
    ("1,0,30,100,vgg19,50,10", "num_gpu", "0 is below 1"),
    ("0,2,30,100,vgg19,50,10", "job_id", r"duplicate job_id 0 \(first on line 2\)"),
    ("1,2,30,100,,50,10", "model_name", "empty"),
])
def test_tiresias_job_errors(tmp_path: Path, row: str, field: str, problem: str) -> None:
    path = write(tmp_path, "60_job.csv", TIRESIAS_HEADER + "0,1,0,606,vgg19,164,30\r\n" + row + "\r\n")
    with pytest.raises(TraceError, match=rf"^60_job\.csv line 3, field {field}: {problem}"):
        T.load_tiresias_jobs(path)


def test_tiresias_cluster_and_distribution_errors(tmp_path: Path) -> None:
    header = "num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node\n"
    with pytest.raises(TraceError, match=r"^n\.csv line 2, field num_gpu_p_node: -4 is below 1$"):
        T.load_tiresias_cluster(write(tmp_path, "n.csv", header + "1,2,-4,40,256\n"))
    with pytest.raises(TraceError, match=r"^n\.csv line 3: expected exactly one data row, found 2"):
        T.load_tiresias_cluster(write(tmp_path, "n.csv", header + "1,2,4,40,256\n1,2,4,40,256\n"))
    with pytest.raises(TraceError, match=r"^yarn\.csv line 4, field duration: '12s' is not a number"):
        T.load_duration_distribution(write(tmp_path, "yarn.csv", "duration\n121\n122\n12s\n"))


PHYSICAL = "ResNet-50 (batch size 64)\tpython3 main.py\timage_classification/imagenet\t--num_minibatches\t1\t{steps}\t{scale}\t1\t-1.000000\t{arrival}\n"
MSR = "A3C\tcd %s && python3 main.py\t--max-steps\t0\t{steps}\t{arrival}\t{scale}\n"


def test_gavel_trace_errors(tmp_path: Path) -> None:
    good = PHYSICAL.format(steps=100, scale=1, arrival=0)
    with pytest.raises(TraceError, match=r"^t\.trace line 2, field scale_factor: 0 is below 1$"):
        T.load_gavel_trace(write(tmp_path, "t.trace", good + PHYSICAL.format(steps=100, scale=0, arrival=5)))
    with pytest.raises(TraceError, match=r"^t\.trace line 2, field total_steps: 'many' is not an integer"):
        T.load_gavel_trace(write(tmp_path, "t.trace", good + PHYSICAL.format(steps="many", scale=1, arrival=5)))
    with pytest.raises(TraceError, match=r"^t\.trace line 2: 8 tab-separated fields"):
        T.load_gavel_trace(write(tmp_path, "t.trace", good + "a\tb\tc\td\te\tf\tg\th\n"))
    with pytest.raises(TraceError, match=r"^t\.trace line 2: msr layout after physical_cluster"):
        T.load_gavel_trace(write(tmp_path, "t.trace", good + MSR.format(steps=10, arrival=1, scale=1)))
    with pytest.raises(TraceError, match=r"^m\.trace line 1, field arrival_time: -3 is negative$"):
        T.load_gavel_trace(write(tmp_path, "m.trace", MSR.format(steps=10, arrival=-3, scale=1)))
    msr = T.load_gavel_trace(write(tmp_path, "m.trace", MSR.format(steps=10, arrival=2.5, scale=4)))
    assert msr.iloc[0].to_dict() == {"job_type": "A3C", "scale_factor": 4, "total_steps": 10,
                                     "arrival_time": 2.5, "priority_weight": 1.0, "SLO": pytest.approx(math.nan, nan_ok=True)}


def test_gavel_json_errors(tmp_path: Path) -> None:
    doc = {"k80": {"('A3C', 1)": {"null": 1.5}, "('LM (batch size 5)', 1)": {"x": [1, 2], "null": "fast"}}}
    path = write(tmp_path, "simulation_throughputs.json", json.dumps(doc, indent=4))
    # line 1 "{", 2 "k80", 3 A3C key, 4 null, 5 "}", 6 LM key, 7-10 "x" list, 11 null
    with pytest.raises(TraceError, match=r"^simulation_throughputs\.json line 11, field "
                                         r"k80/\('LM \(batch size 5\)', 1\)/null: 'fast' is not a number"):
        T.load_gavel_throughputs(path)
    path = write(tmp_path, "simulation_throughputs.json", json.dumps({"v100": {"('A3C', one)": {"null": 1}}}, indent=1))
    with pytest.raises(TraceError, match=r"line 3, field v100/\('A3C', one\): .* is not a \('job type'"):
        T.load_gavel_throughputs(path)
    with pytest.raises(TraceError, match=r"^s\.json line 2: invalid JSON"):
        T.load_gavel_throughputs(write(tmp_path, "s.json", '{"k80": {\n  "a": nope}}'))
    spec = write(tmp_path, "cluster_specs.json", '{\n  "philly": [\n    "1:2:3",\n    "4:x:6"\n  ]\n}\n')
    with pytest.raises(TraceError, match=r"^cluster_specs\.json line 4, field philly\[1\]\.p100: 'x' is not an integer"):
        T.load_gavel_cluster_spec(spec)
    with pytest.raises(TraceError, match=r"field other: no such key"):
        T.load_gavel_cluster_spec(spec, "other")


def _philly_job(jobid: str, submitted: str, attempts: list[dict]) -> dict:
    return {"status": "Pass", "vc": "vc1", "jobid": jobid, "user": "u1", "submitted_time": submitted,
            "attempts": attempts}


def _attempt(start: str | None, end: str | None, gpus_per_machine: tuple[int, ...] = (2,)) -> dict:
    detail = [{"ip": f"m{i}", "gpus": [f"gpu{g}" for g in range(n)]} for i, n in enumerate(gpus_per_machine)]
    return {"start_time": start, "end_time": end, "detail": detail}


PHILLY_SAMPLE = [
    _philly_job("application_1_0002", "2017-10-03 01:00:30", [
        _attempt("2017-10-03 01:01:00", "2017-10-03 01:02:00", (4, 4)),   # first: 8 GPUs
        _attempt("2017-10-03 01:05:00", "2017-10-03 02:05:00", (2,)),     # last: 3600 s
    ]),
    _philly_job("application_1_0001", "2017-10-03 01:00:00", [_attempt("2017-10-03 01:00:10", "2017-10-03 01:10:10")]),
    _philly_job("application_1_0003", "2017-10-03 01:01:00", []),                                   # never ran
    _philly_job("application_1_0004", "2017-10-03 01:02:00", [_attempt("2017-10-03 01:03:00", None)]),  # unfinished
    _philly_job("application_1_0005", "2017-10-03 01:03:00", [_attempt("None", "None")]),               # unfinished
]


def test_philly_sample(tmp_path: Path) -> None:
    path = write(tmp_path, "cluster_job_log", json.dumps(PHILLY_SAMPLE, indent=2))
    jobs = T.load_philly_jobs(path)
    assert_dtypes(jobs, PHILLY_COLUMNS)
    assert jobs.attrs["dropped"] == 3
    assert jobs["job_id"].tolist() == ["application_1_0001", "application_1_0002"]
    assert jobs["submit_time"].tolist() == [0.0, 30.0]
    assert jobs["num_gpu"].tolist() == [2, 8]
    assert jobs["duration"].tolist() == [600.0, 3600.0]
    unified = T.philly_as_jobs(jobs)
    assert_job_schema(unified)
    assert unified[["user", "vc"]].values.tolist() == [["u1", "vc1"]] * 2


@pytest.mark.parametrize("index, change, field, problem", [
    (2, {"submitted_time": None}, "submitted_time", "missing"),
    (2, {"submitted_time": "03/10/2017"}, "submitted_time", "is not a 'YYYY-MM-DD HH:MM:SS' time"),
    (2, {"attempts": [_attempt("2017-10-03 02:00:00", "2017-10-03 01:00:00")]}, "attempts[0].end_time", "before"),
    (2, {"attempts": [{"start_time": "2017-10-03 02:00:00", "end_time": "2017-10-03 03:00:00",
                       "detail": [{"ip": "m1"}]}]}, "attempts[0].detail[0].gpus", "missing"),
    (2, {"jobid": 17}, "jobid", "17 is not a string"),
])
def test_philly_errors(tmp_path: Path, index: int, change: dict, field: str, problem: str) -> None:
    jobs = [dict(job) for job in PHILLY_SAMPLE]
    jobs[index].update(change)
    text = "[\n" + ",\n".join(json.dumps(job) for job in jobs) + "\n]\n"  # one job per line: job i on line i + 2
    with pytest.raises(TraceError) as info:
        T.load_philly_jobs(write(tmp_path, "cluster_job_log", text))
    assert str(info.value).startswith(f"cluster_job_log line {index + 2}, field {field}: "), str(info.value)
    assert problem in str(info.value)


def test_jobs_csv_errors(tmp_path: Path) -> None:
    header = "job_id,submit_time,num_gpu,duration,model_name,throughput_v100\n"
    with pytest.raises(TraceError, match=r"^jobs\.csv line 3, field duration: 0 is not positive"):
        T.load_jobs_csv(write(tmp_path, "jobs.csv", header + "0,0,1,10,m,1.5\n1,5,1,0,m,1.5\n"))
    with pytest.raises(TraceError, match=r"^jobs\.csv line 2, field throughput_v100: 'nan' is not a finite"):
        T.load_jobs_csv(write(tmp_path, "jobs.csv", header + "0,0,1,10,m,nan\n"))
    with pytest.raises(TraceError, match=r"^jobs\.csv line 3, field job_id: duplicate job_id 0 \(first on line 2\)"):
        T.load_jobs_csv(write(tmp_path, "jobs.csv", header + "0,0,1,10,m,1\n0,1,1,10,m,1\n"))


# --- synthetic generators -------------------------------------------------------------------

def test_synthetic_jobs_deterministic_and_valid() -> None:
    a, b, c = T.synthetic_jobs(300, seed=7), T.synthetic_jobs(300, seed=7), T.synthetic_jobs(300, seed=8)
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(c)
    assert_job_schema(a)
    assert list(a.columns) == [*T.JOB_COLUMNS, "total_iterations", "throughput_k80", "throughput_p100",
                               "throughput_v100"]
    assert set(a["num_gpu"]) <= {1, 2, 4, 8} and a["submit_time"].iloc[0] == 0
    # K80s are slower on average, and the speed-up depends on the DL model, not the job.
    assert (a["throughput_k80"] < a["throughput_v100"]).mean() > 0.9
    ratio = (a["throughput_k80"] / a["throughput_v100"]).round(9).groupby(a["model_name"]).nunique()
    assert (ratio == 1).all()


def test_synthetic_jobs_options(tmp_path: Path) -> None:
    pool = np.array([100.0, 200.0, 400.0])
    jobs = T.synthetic_jobs(200, seed=np.random.default_rng(3), durations=pool, gpu_choices=(1, 2), gpu_probs=None,
                            gpu_models=("a", "b"), speedups={"a": 0.5}, reference_model="b", iteration_rate=(1, 1))
    assert_job_schema(jobs)
    assert set(jobs["duration"]) <= set(pool) and set(jobs["num_gpu"]) <= {1, 2}
    assert T.synthetic_jobs(0, seed=1).empty
    with pytest.raises(ValueError, match="reference_model"):
        T.synthetic_jobs(5, seed=1, reference_model="h100")
    # a saved synthetic trace loads back through the registry unchanged
    path = tmp_path / "jobs.csv"
    jobs.to_csv(path, index=False)
    pd.testing.assert_frame_equal(T.load_trace(path, "synthetic"), jobs)


def test_synthetic_openb_deterministic_and_roundtrip(tmp_path: Path) -> None:
    nodes, pods = T.synthetic_openb(50, 2000, seed=11)
    nodes2, pods2 = T.synthetic_openb(50, 2000, seed=11)
    pd.testing.assert_frame_equal(nodes, nodes2)
    pd.testing.assert_frame_equal(pods, pods2)
    assert not T.synthetic_openb(50, 2000, seed=12)[1].equals(pods)
    assert_dtypes(nodes, NODE_COLUMNS)
    assert_dtypes(pods, POD_COLUMNS)
    shared_gpu = (pods["num_gpu"] == 1) & (pods["gpu_milli"] < 1000)
    assert shared_gpu.any() and (pods["num_gpu"] > 1).any() and (pods["num_gpu"] == 0).any()
    assert ((pods["num_gpu"] == 1) & (pods["gpu_milli"] == 1000)).any()
    assert pods["num_gpu"].max() <= nodes["num_gpu"].max()
    pinned = {m for spec in pods["gpu_spec"] for m in spec}
    assert pinned and pinned <= set(nodes["model"])
    # the generated frames pass the loaders' row validation
    pods_path, nodes_path = tmp_path / "pods.csv", tmp_path / "nodes.csv"
    pods.assign(gpu_spec=pods["gpu_spec"].map("|".join)).to_csv(pods_path, index=False)
    nodes.rename(columns={"name": "sn", "num_gpu": "gpu"}).to_csv(nodes_path, index=False)
    pd.testing.assert_frame_equal(T.load_openb_pods(pods_path), pods)
    pd.testing.assert_frame_equal(T.load_openb_nodes(nodes_path), nodes)
    assert_job_schema(T.openb_as_jobs(pods))


# --- registry -------------------------------------------------------------------------------

def test_registry(tmp_path: Path) -> None:
    assert T.trace_formats() == ["openb", "tiresias", "gavel", "philly", "pai2020", "synthetic"]
    with pytest.raises(ValueError, match="unknown trace format 'csv'; known formats: openb, tiresias, gavel, "
                                         "philly, pai2020, synthetic"):
        T.load_trace(tmp_path / "x.csv", "csv")
    with pytest.raises(ValueError, match="known formats"):
        T.to_jobs(pd.DataFrame(), "alibaba")
    path = write(tmp_path, "jobs.csv", TIRESIAS_HEADER + "0,1,0,606,vgg19,164,30\r\n1,4,12,100,alexnet,50,12\r\n")
    raw = T.load_trace(path, "tiresias")
    pd.testing.assert_frame_equal(raw, T.load_tiresias_jobs(path))
    assert_job_schema(T.to_jobs(raw, "tiresias"))
    philly = T.load_trace(write(tmp_path, "log.json", json.dumps(PHILLY_SAMPLE)), "philly")
    assert_job_schema(T.to_jobs(philly, "philly"))
    generated = T.load_trace(None, "synthetic", n=20, seed=5)
    pd.testing.assert_frame_equal(generated, T.synthetic_jobs(20, seed=5))
    pd.testing.assert_frame_equal(T.to_jobs(generated, "synthetic"), generated)
    _, pods = T.synthetic_openb(5, 50, seed=1)
    assert_job_schema(T.to_jobs(pods, "openb"))


def test_registry_gavel_and_openb_real() -> None:
    trace = T.load_trace(shared("gavel", "physical_cluster", "small_test.trace"), "gavel")
    jobs = T.to_jobs(trace, "gavel", throughputs=shared("gavel", "simulation_throughputs.json"), reference="k80")
    assert_job_schema(jobs)
    assert jobs.attrs["reference_model"] == "k80"
    assert len(T.load_trace(shared("openb", "openb_pod_list_default.csv"), "openb")) == 8152
