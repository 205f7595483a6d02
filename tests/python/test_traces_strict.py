"""Hostile trace files: binary junk, out-of-range numbers and duplicate ids, in every format.

Each test feeds one bad input and asserts the TraceError message: file, line and field. The
last tests check that the largest values a loader accepts reach the native core as clear
ValueErrors (or results), never as a pybind TypeError or an overflow.
"""
from __future__ import annotations

import json
import random
from pathlib import Path

import pandas as pd
import pytest

import gpufleet.traces as T
from gpufleet.traces import TraceError
from gpufleet.traces.limits import (MAX_COUNT, MAX_CPU_MILLI, MAX_GPUS, MAX_MEMORY_MIB, MAX_RATE,
                                    MAX_SECONDS)

POD_HEADER = b"name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase," \
             b"creation_time,deletion_time,scheduled_time\n"
POD = b"p0,1000,2048,1,500,,LS,Running,0,10,1\n"
NODE_HEADER = b"sn,cpu_milli,memory_mib,gpu,model\n"
TIRESIAS_HEADER = b"job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n"
JOBS_HEADER = b"job_id,submit_time,num_gpu,duration,model_name\n"
GAVEL_LINE = "ResNet-18\tcmd\tdir\t--steps\t1\t1000\t1\t1\t-1\t0\n"


def write(tmp_path: Path, name: str, data: bytes | str) -> Path:
    path = tmp_path / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return path


def refused(load, path: Path, line: int | None, field: str | None, problem: str) -> TraceError:
    with pytest.raises(TraceError) as info:
        load(path)
    err = info.value
    assert (err.source, err.line, err.field) == (path.name, line, field), str(err)
    where = path.name if line is None else f"{path.name} line {line}"
    if field is not None:
        where += f", field {field}"
    assert str(err).startswith(f"{where}: "), str(err)
    assert problem in err.problem, str(err)
    return err


def pods(tmp_path: Path, *rows: bytes) -> Path:
    return write(tmp_path, "openb_pod_list_x.csv", POD_HEADER + POD + b"".join(rows))


# --- binary junk ---------------------------------------------------------------------------------

def test_invalid_utf8_names_line_and_column(tmp_path):
    path = pods(tmp_path, b"p1,10\xff0,2048,1,500,,LS,Running,0,10,1\n")
    refused(T.load_openb_pods, path, 3, None, "not UTF-8 text: byte 0xff at column 6")


def test_nul_byte_is_binary_data(tmp_path):
    path = pods(tmp_path, b"p1,1000,2048,1,500,,LS,Running,0,10,1\n", b"p2,1000\x00,2048,1,500,,LS,,0,10,1\n")
    refused(T.load_openb_pods, path, 4, None, "control character U+0000 at column 8")


def test_control_character_in_a_quoted_field(tmp_path):
    path = pods(tmp_path, b'"p\x01",1000,2048,1,500,,LS,Running,0,10,1\n')
    refused(T.load_openb_pods, path, 3, None, "control character U+0001")


@pytest.mark.parametrize("seed", range(5))
def test_random_bytes_give_a_trace_error_in_every_format(tmp_path, seed):
    junk = random.Random(seed).randbytes(4096)
    for load, name in ((T.load_openb_pods, "pods.csv"), (T.load_openb_nodes, "nodes.csv"),
                       (T.load_tiresias_jobs, "jobs.csv"), (T.load_jobs_csv, "unified.csv"),
                       (T.load_gavel_trace, "x.trace"), (T.load_gavel_throughputs, "t.json"),
                       (T.load_gavel_cluster_spec, "c.json"), (T.load_philly_jobs, "log.json")):
        with pytest.raises(TraceError) as info:
            load(write(tmp_path, name, junk))
        assert info.value.source == name and info.value.line is not None, str(info.value)


def test_a_file_over_the_size_bound_is_refused_in_every_format(tmp_path, monkeypatch):
    monkeypatch.setattr("gpufleet.traces.limits.MAX_TRACE_BYTES", 4096)
    big = POD_HEADER + POD * (4097 // len(POD))   # one line past the bound
    for load, name in ((T.load_openb_pods, "pods.csv"), (T.load_openb_nodes, "nodes.csv"),
                       (T.load_tiresias_jobs, "jobs.csv"), (T.load_jobs_csv, "unified.csv"),
                       (T.load_gavel_trace, "x.trace"), (T.load_gavel_throughputs, "t.json"),
                       (T.load_gavel_cluster_spec, "c.json"), (T.load_philly_jobs, "log.json")):
        refused(load, write(tmp_path, name, big), None, None,
                "larger than 4,096 bytes, the limit for a trace file")
    rows = b"".join(POD.replace(b"p0,", f"p{i},".encode()) for i in range(40))
    assert len(POD_HEADER + rows) < 4096
    assert T.load_openb_pods(write(tmp_path, "ok.csv", POD_HEADER + rows)).shape[0] == 40


def test_an_endless_file_is_refused_after_the_bound(monkeypatch):
    monkeypatch.setattr("gpufleet.traces.limits.MAX_TRACE_BYTES", 1 << 20)
    refused(T.load_tiresias_jobs, Path("/dev/zero"), None, None, "larger than 1,048,576 bytes")


def test_csv_field_over_the_csv_module_limit(tmp_path):
    path = pods(tmp_path, b'"' + b"x" * 200_000 + b'",1000,2048,1,500,,LS,Running,0,10,1\n')
    refused(T.load_openb_pods, path, 3, None, "malformed CSV: field larger than field limit")


def test_duplicate_header_column(tmp_path):
    path = write(tmp_path, "60_job.csv", b"job_id,num_gpu,num_gpu,submit_time,iterations,model_name,"
                                         b"duration,interval\n")
    refused(T.load_tiresias_jobs, path, 1, "num_gpu", "appears twice in the header")


def test_json_with_invalid_utf8(tmp_path):
    path = write(tmp_path, "log.json", b'[\n{"jobid": "a\xc3"}\n]')
    refused(T.load_philly_jobs, path, 2, None, "not UTF-8 text: byte 0xc3 at column 13")


def test_json_string_escape_of_a_control_character(tmp_path):
    job = {"jobid": "a\u0000b", "user": "u", "vc": "v", "submitted_time": "2017-10-01 00:00:00",
           "status": "Pass", "attempts": []}
    path = write(tmp_path, "log.json", "[\n" + json.dumps(job) + "\n]")
    refused(T.load_philly_jobs, path, 2, "jobid", "control character U+0000")


def test_json_nested_too_deeply(tmp_path):
    path = write(tmp_path, "c.json", '{"philly": ' + "[" * 100_000 + "]" * 100_000 + "}")
    refused(T.load_gavel_cluster_spec, path, 1, None, "nested too deeply")


def test_json_integer_too_long_to_convert(tmp_path):
    path = write(tmp_path, "t.json", '{"v100": {"(\'A\', 1)": {"null": ' + "9" * 5000 + "}}}")
    err = refused(T.load_gavel_throughputs, path, 1, None, "invalid JSON")
    assert len(str(err)) < 300  # the value is not echoed in full


# --- numbers out of range -----------------------------------------------------------------------

@pytest.mark.parametrize("row, field, problem", [
    (b"p1,1000,2048,-1,0,,LS,Running,0,10,1\n", "num_gpu", "-1 is negative"),
    (b"p1,1000,2048,2147483648,1000,,LS,Running,0,10,1\n", "num_gpu",
     f"2147483648 is out of range (at most {MAX_GPUS:,})"),
    (b"p1,99999999999999999999,2048,1,500,,LS,Running,0,10,1\n", "cpu_milli", "out of range"),
    (b"p1,1000," + str(MAX_MEMORY_MIB + 1).encode() + b",1,500,,LS,Running,0,10,1\n", "memory_mib",
     f"at most {MAX_MEMORY_MIB:,}"),
    (b"p1," + b"9" * 5000 + b",2048,1,500,,LS,Running,0,10,1\n", "cpu_milli", "(5000 characters)"),
    (b"p1,1000,2048,1,500,,LS,Running,1e11,1e11,1e11\n", "creation_time", "1e11 is out of range"),
    (b"p1,1000,2048,1,500,,LS,Running,0,1e999,1\n", "deletion_time", "'1e999' is not a finite number"),
    (b"p1,1000,2048,1,500,,LS,Running,1_0,10,1\n", "creation_time", "'1_0' is not a number"),
])
def test_openb_pod_out_of_range(tmp_path, row, field, problem):
    refused(T.load_openb_pods, pods(tmp_path, row), 3, field, problem)


def test_openb_node_gpu_count_beyond_int32(tmp_path):
    path = write(tmp_path, "nodes.csv", NODE_HEADER + b"n0,1000,2048,8,T4\nn1,1000,2048,4294967296,T4\n")
    refused(T.load_openb_nodes, path, 3, "gpu", "out of range")


@pytest.mark.parametrize("row, field, problem", [
    (b"1,1,0,100,vgg,1e12,0", "duration", "1e12 is out of range (at most 1e+10)"),
    (b"1,1,0,9223372036854775807,vgg,10,0", "iterations", f"at most {MAX_COUNT:,}"),
    (b"9223372036854775808,1,0,100,vgg,10,0", "job_id", "out of range (at most 9,223,372,036,854,775,807)"),
    (b"1,1,0,100,vgg,10,inf", "interval", "'inf' is not a finite number"),
    (b"1,-4,0,100,vgg,10,0", "num_gpu", "-4 is below 1"),
])
def test_tiresias_out_of_range(tmp_path, row, field, problem):
    path = write(tmp_path, "60_job.csv", TIRESIAS_HEADER + b"0,1,0,100,vgg,10,0\n" + row + b"\n")
    refused(T.load_tiresias_jobs, path, 3, field, problem)


def test_tiresias_cluster_with_more_gpus_than_int32_counts(tmp_path):
    path = write(tmp_path, "n.csv", b"num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node\n"
                                    b"1024,1024,8,64,256\n")
    refused(T.load_tiresias_cluster, path, 2, "num_gpu_p_node", "8,388,608 GPUs")


@pytest.mark.parametrize("fields, field, problem", [
    ({5: "9223372036854775807"}, "total_steps", "out of range"),
    ({6: "4294967296"}, "scale_factor", "out of range"),
    ({9: "1e300"}, "arrival_time", "out of range"),
    ({7: "1e12"}, "priority_weight", f"at most {MAX_RATE:g}"),
])
def test_gavel_trace_out_of_range(tmp_path, fields, field, problem):
    cells = GAVEL_LINE.rstrip("\n").split("\t")
    for index, value in fields.items():
        cells[index] = value
    path = write(tmp_path, "x.trace", GAVEL_LINE + "\t".join(cells) + "\n")
    refused(T.load_gavel_trace, path, 2, field, problem)


def test_gavel_throughput_too_large_for_a_float(tmp_path):
    path = write(tmp_path, "t.json", '{"v100": {\n"(\'A\', 1)": {\n"null": 1' + "0" * 400 + "}}}")
    refused(T.load_gavel_throughputs, path, 3, "v100/('A', 1)/null", "out of range")


def test_gavel_scale_factor_key_beyond_int32(tmp_path):
    path = write(tmp_path, "t.json", '{"v100": {\n"(\'A\', 4294967296)": {"null": 1.0}}}')
    refused(T.load_gavel_throughputs, path, 2, "v100/('A', 4294967296)", "scale_factor in 1-1,048,576")


def test_philly_attempt_longer_than_the_bound(tmp_path):
    job = {"jobid": "j", "user": "u", "vc": "v", "submitted_time": "1970-01-01 00:00:00", "status": "Pass",
           "attempts": [{"start_time": "1970-01-01 00:00:00", "end_time": "9999-01-01 00:00:00",
                         "detail": [{"ip": "m", "gpus": ["gpu0"]}]}]}
    path = write(tmp_path, "log.json", "[\n" + json.dumps(job) + "\n]")
    refused(T.load_philly_jobs, path, 2, "attempts[0].end_time", "after start_time (at most 1e+10)")


def test_philly_submissions_spread_beyond_the_bound(tmp_path):
    def job(name: str, when: str) -> dict:
        return {"jobid": name, "user": "u", "vc": "v", "submitted_time": when, "status": "Pass",
                "attempts": [{"start_time": when, "end_time": when, "detail": [{"ip": "m", "gpus": ["g"]}]}]}
    text = "[\n" + json.dumps(job("a", "1970-01-01 00:00:00")) + ",\n" + \
        json.dumps(job("b", "9000-01-01 00:00:00")) + "\n]"
    refused(T.load_philly_jobs, write(tmp_path, "log.json", text), 3, "submitted_time", "after the first")


@pytest.mark.parametrize("row, field, problem", [
    (b"1,0,2147483648,10,m", "num_gpu", "out of range"),
    (b"1,0,1,1e11,m", "duration", "out of range"),
    (b"1,-5,1,10,m", "submit_time", "-5 is negative"),
])
def test_jobs_csv_out_of_range(tmp_path, row, field, problem):
    path = write(tmp_path, "jobs.csv", JOBS_HEADER + b"0,0,1,10,m\n" + row + b"\n")
    refused(T.load_jobs_csv, path, 3, field, problem)


def test_converted_duration_out_of_range_names_the_row(tmp_path):
    trace = write(tmp_path, "x.trace", GAVEL_LINE.replace("\t1000\t", f"\t{10**15}\t"))
    tput = write(tmp_path, "t.json", json.dumps({"v100": {"('ResNet-18', 1)": {"null": 1.0}}}))
    with pytest.raises(TraceError, match=r"^gavel trace, field duration: row 0: 1000000000000000.0 is out of range"):
        T.gavel_as_jobs(T.load_gavel_trace(trace), tput)


# --- duplicate ids -----------------------------------------------------------------------------

def test_duplicate_openb_pod_name(tmp_path):
    path = pods(tmp_path, b"p1,1000,2048,1,500,,LS,Running,0,10,1\n", POD)
    refused(T.load_openb_pods, path, 4, "name", "duplicate pod name 'p0' (first on line 2)")


def test_duplicate_openb_node_name(tmp_path):
    path = write(tmp_path, "nodes.csv", NODE_HEADER + b"n0,1000,2048,8,T4\nn1,1,1,0,\nn0,1,1,0,\n")
    refused(T.load_openb_nodes, path, 4, "sn", "duplicate node name 'n0' (first on line 2)")


def test_duplicate_philly_jobid(tmp_path):
    job = {"jobid": "app_1", "user": "u", "vc": "v", "submitted_time": "2017-10-01 00:00:00",
           "status": "Pass", "attempts": []}
    path = write(tmp_path, "log.json", "[\n" + json.dumps(job) + ",\n" + json.dumps(job) + "\n]")
    refused(T.load_philly_jobs, path, 3, "jobid", "duplicate jobid 'app_1' (first on line 2)")


def test_duplicate_gavel_job_type_key(tmp_path):
    # Two spellings of one (job type, scale factor): the second would silently win.
    text = '{"v100": {\n"(\'A\', 1)": {"null": 1.0},\n"(\'A\',1)": {"null": 2.0}}}'
    refused(T.load_gavel_throughputs, write(tmp_path, "t.json", text), 3, "v100/('A',1)",
            "duplicate (job type, scale factor) ('A', 1) (first on line 2)")


def test_duplicate_gavel_model_key(tmp_path):
    text = '{"v100": {"(\'A\', 1)": {"null": 1.0}},\n"v100": {"(\'A\', 1)": {"null": 2.0}}}'
    refused(T.load_gavel_throughputs, write(tmp_path, "t.json", text), 2, "v100",
            "duplicate GPU model 'v100' (first on line 1)")


def test_duplicate_gavel_cluster_spec_key(tmp_path):
    text = '{"philly": ["1:2:3"],\n"philly": ["4:5:6"]}'
    refused(T.load_gavel_cluster_spec, write(tmp_path, "c.json", text), 2, "philly", "duplicate key")


def test_duplicate_tiresias_job_id(tmp_path):
    path = write(tmp_path, "60_job.csv", TIRESIAS_HEADER + b"7,1,0,1,a,1,0\n8,1,0,1,a,1,0\n7,1,0,1,a,1,0\n")
    refused(T.load_tiresias_jobs, path, 4, "job_id", "duplicate job_id 7 (first on line 2)")


# --- the largest accepted values reach the native core cleanly --------------------------------

def test_largest_openb_values_reach_the_replay(tmp_path):
    replay = pytest.importorskip("gpufleet.replay", reason="the openb replay needs the native extension")
    nodes = T.load_openb_nodes(write(
        tmp_path, "nodes.csv", NODE_HEADER + f"n0,{MAX_CPU_MILLI},{MAX_MEMORY_MIB},8,T4\n".encode()))
    pod_rows = POD_HEADER + f"p0,{MAX_CPU_MILLI},{MAX_MEMORY_MIB},8,1000,,LS,Running,0,10,1\n".encode()
    result = replay.replay_openb(nodes, T.load_openb_pods(write(tmp_path, "pods.csv", pod_rows)), "fgd")
    assert result.summary["final_alloc_ratio"] == 1.0
    # A GPU count the loader accepts but a node cannot hold is the core's clear ValueError.
    big = T.load_openb_nodes(write(tmp_path, "big.csv", NODE_HEADER + f"n0,1,1,{MAX_GPUS},T4\n".encode()))
    with pytest.raises(ValueError, match="num_gpu is 1048576; at most 32 GPUs per node"):
        replay.replay_openb(big, T.load_openb_pods(write(tmp_path, "pods.csv", pod_rows)), "fgd")


def test_largest_job_values_reach_the_simulator(tmp_path):
    sim = pytest.importorskip("gpufleet.sim", reason="the simulator needs the native extension")
    rows = f"0,{MAX_SECONDS},1,{MAX_SECONDS},m\n1,0,{MAX_GPUS},1,m\n".encode()
    jobs = T.load_jobs_csv(write(tmp_path, "jobs.csv", JOBS_HEADER + rows))
    assert isinstance(jobs, pd.DataFrame) and len(jobs) == 2
    with pytest.raises(ValueError, match="needs 1048576 GPUs"):
        sim.simulate(jobs, 8)
    done = sim.simulate(jobs[jobs["num_gpu"] == 1], 8)
    assert done.jobs["end_time"].iloc[0] == 2 * MAX_SECONDS
