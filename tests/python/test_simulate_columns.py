"""`gpufleet simulate` printing a summary reads the trace into plain columns (array.array, lists)
and builds no frame: the columns equal the frame's, the summary equals `simulate(...).summary` bit
for bit, the printed summary equals the one the frame path prints, and the process imports
neither pandas nor NumPy."""
from __future__ import annotations

import contextlib
import io
import json
import math
import random
import subprocess
import sys
from array import array
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import gpufleet.traces as T
from gpufleet import _core, _numpy_sums, sim
from gpufleet.cli import main
from gpufleet.sim import simulate, simulate_summary
from gpufleet.traces.limits import MAX_GPUS
from gpufleet.traces.pai2020 import load_pai2020_jobs, pai2020_as_jobs, pai2020_job_columns
from gpufleet.traces.philly import load_philly_jobs, philly_as_jobs, philly_job_columns
from gpufleet.traces.tiresias import load_tiresias_jobs, tiresias_as_jobs, tiresias_job_columns
from pai2020_support import write_pai_trace

PARITY = Path(__file__).resolve().parent / "data" / "tiresias_parity" / "jobs40.csv"


@pytest.fixture
def shuffled(tmp_path) -> Path:
    """jobs40.csv with its rows reversed and two equal submit times, so the columns must be sorted
    as the frame is (by submit time, then job id)."""
    lines = PARITY.read_text().splitlines()
    rows = lines[1:][::-1]
    first = rows[0].split(",")
    first[2] = rows[1].split(",")[2]
    rows[0] = ",".join(first)
    path = tmp_path / "jobs.csv"
    path.write_text("\n".join([lines[0], *rows]) + "\n")
    return path


# The plain column types: array.array typecode (None: a list) by the frame's dtype.
TYPECODES = {np.dtype(np.int64): "q", np.dtype(np.float64): "d", np.dtype(object): None}


def _assert_same(columns: dict, frame: pd.DataFrame) -> None:
    assert list(columns) == list(frame.columns)
    for name, values in columns.items():
        expected = frame[name].to_numpy()
        typecode = TYPECODES[expected.dtype]
        if typecode is None:
            assert isinstance(values, list), name
        else:
            assert isinstance(values, array) and values.typecode == typecode, name
            assert np.asarray(values).dtype == expected.dtype, name
        assert [_same_float(v) for v in values] == [_same_float(v) for v in expected.tolist()], name


def _same_float(v: object) -> object:
    return "nan" if isinstance(v, float) and math.isnan(v) else v   # NaN equals NaN here


def test_tiresias_columns_equal_the_frame(shuffled):
    for path in (PARITY, shuffled):
        _assert_same(tiresias_job_columns(path), tiresias_as_jobs(load_tiresias_jobs(path)))
    assert not np.all(np.diff(pd.read_csv(shuffled)["submit_time"]) >= 0)   # the file was unsorted


def test_load_with_columns_reads_tiresias_without_a_frame_and_others_as_before(shuffled):
    loaded = T.load(format="tiresias", trace=shuffled, cluster=8, columns=True)
    assert isinstance(loaded.jobs, dict) and loaded.cluster == 8
    _assert_same(loaded.jobs, T.load(format="tiresias", trace=shuffled, cluster=8).jobs)
    synthetic = T.load(format="synthetic", num_jobs=5, columns=True)   # no column reader: a frame
    assert isinstance(synthetic.jobs, pd.DataFrame)
    with pytest.raises(ValueError, match="tiresias traces take no throughputs"):
        T.load(format="tiresias", trace=shuffled, columns=True, throughputs="x.json")


@pytest.mark.parametrize("policy, options", [
    ("dlas-gpu", {}), ("fifo", {"seed": 3}), ("las", {"tiresias_compat": True}),
    ("srtf", {"restore_delay": 30.0, "placement": None}), ("dlas-gpu", {"seed": 7, "placement": "spread"}),
])
def test_summary_from_columns_equals_simulate(shuffled, policy, options):
    frame = T.load(format="tiresias", trace=shuffled).jobs
    expected = simulate(frame, 16, policy, **options).summary
    assert simulate_summary(tiresias_job_columns(shuffled), 16, policy, **options) == expected
    assert simulate_summary(frame, 16, policy, **options) == expected


def test_simulate_summary_passes_policy_parameters_and_checks_options(shuffled):
    columns = tiresias_job_columns(shuffled)
    frame = T.load(format="tiresias", trace=shuffled).jobs
    spec = "dlas-gpu(queue_limits=[500])"
    assert (simulate_summary(columns, 8, "dlas-gpu", queue_limits=[500])
            == simulate(frame, 8, "dlas-gpu", queue_limits=[500]).summary)
    assert simulate_summary(columns, 8, spec)["policy"] == simulate(frame, 8, spec).policy
    with pytest.raises(TypeError, match="restore_delay: expected a number of seconds"):
        simulate_summary(columns, 8, "fifo", restore_delay="soon")


# What a summary run has no use for: pandas, and the modules of the other commands.
UNUSED = ("pandas", "numpy", "yaml", "gpufleet.engine", "gpufleet.scenario", "gpufleet.replay",
          "gpufleet.report", "gpufleet.sweep")


def test_the_summary_command_imports_neither_pandas_nor_numpy(shuffled):
    code = ("import sys\nfrom gpufleet.cli import main\n"
            f"code = main(['simulate', '--format', 'tiresias', '--trace', {str(shuffled)!r}, "
            "'--cluster', '8', '--policy', 'dlas-gpu', '-o', 'json'])\n"
            f"print('pandas' in sys.modules, code, [m for m in {UNUSED!r} if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.splitlines()[-1] == "False 0 []", out.stdout
    # -o wide prints a row per job from the frame: there pandas is wanted, and loaded.
    wide = code.replace("'-o', 'json'", "'-o', 'wide'")
    out = subprocess.run([sys.executable, "-c", wide], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.splitlines()[-1].startswith("True 0"), out.stdout


# Policies the Tiresias trace is simulated with, and option sets (command-line flags).
POLICIES = ("fifo", "sjf", "srtf", "las", "dlas-gpu")
FLAGS = ([], ["--tiresias-compat"], ["--restore-delay", "30"], ["--placement", "none"],
         ["--placement", "spread", "--restore-delay", "12.5"])


def _cli(*argv: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["simulate", *argv]) == 0
    return out.getvalue()


@pytest.mark.parametrize("policy", POLICIES)
def test_the_printed_summary_equals_the_frame_paths(shuffled, policy):
    """The summary table of the plain path is the first part of `-o wide`'s output, which runs on
    the frame (the values themselves: test_the_plain_summary_is_the_frames_bit_for_bit)."""
    for flags in FLAGS:
        argv = ["--format", "tiresias", "--trace", str(shuffled), "--cluster", "16", "--policy", policy, *flags]
        summary = _cli(*argv)
        wide = _cli(*argv, "-o", "wide")
        assert wide.startswith(summary + "\n"), (policy, flags)
        assert "finish_time_fairness" in summary


def test_the_plain_summary_is_the_frames_bit_for_bit(shuffled, monkeypatch):
    """Every value equal as a float (== on floats: to the last bit here), including the finish-time
    fairness that the plain path reduces without NumPy, which it takes (the NumPy path is made to
    fail); a seed sends the same columns through NumPy."""
    frame = T.load(format="tiresias", trace=shuffled).jobs
    columns = tiresias_job_columns(shuffled)
    for policy in POLICIES:
        for options in ({}, {"tiresias_compat": True}, {"restore_delay": 30.0, "placement": None},
                        {"tick": 7.0}, {"scheduling_interval": 60.0}, {"record_timeseries": False}):
            expected = simulate(frame, 16, policy, **options).summary
            assert ("finish_time_fairness" in expected) == options.get("record_timeseries", True)
            with monkeypatch.context() as m:
                m.setattr(sim, "_run", lambda *a, **k: pytest.fail("the NumPy path ran"))
                got = simulate_summary(columns, 16, policy, **options)
            assert got == expected, (policy, options)
            assert all(type(got[k]) is type(v) for k, v in expected.items()), (policy, options)
    assert simulate_summary(columns, 16, "las", seed=5) == simulate(frame, 16, "las", seed=5).summary


def test_the_native_run_takes_buffers_and_lists_alike(shuffled):
    frame = T.load(format="tiresias", trace=shuffled).jobs
    columns = tiresias_job_columns(shuffled)
    options = _core.SimOptions("las", placement="binpack")
    names = ("job_id", "submit_time", "num_gpu", "duration")
    runs = [_core.sim_run([{"name": "gpu", "count": 16}], *(source(n) for n in names), None, None, options)
            for source in (lambda n: frame[n].to_numpy(), columns.__getitem__, lambda n: list(columns[n]))]
    for run in runs[1:]:
        assert run.summary.to_dict() == runs[0].summary.to_dict()
        assert run.jobs.to_lists() == runs[0].jobs.to_lists()
    lists, arrays = runs[0].jobs.to_lists(), runs[0].jobs.to_dict()
    assert list(lists) == list(arrays) == runs[0].jobs.columns
    for name, values in lists.items():
        assert values == arrays[name].tolist() and type(values[0]) is type(arrays[name].tolist()[0]), name
    assert runs[0].timeseries.to_lists() == {k: v.tolist() for k, v in runs[0].timeseries.to_dict().items()}
    # A 2-D buffer, or text, is refused naming the column.
    with pytest.raises(TypeError, match="simulate: submit_time must be a 1-D array of numbers"):
        _core.sim_run([{"name": "gpu", "count": 16}], columns["job_id"], np.zeros((len(frame), 2)),
                      columns["num_gpu"], columns["duration"], None, None, options)
    with pytest.raises(TypeError, match="simulate: duration must be a 1-D array of numbers"):
        _core.sim_run([{"name": "gpu", "count": 16}], columns["job_id"], columns["submit_time"],
                      columns["num_gpu"], ["long"] * len(frame), None, None, options)


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 64, 128, 129, 200, 1000, 4099])
def test_numpy_sums_in_plain_python_equal_numpys(n):
    rng = random.Random(n)
    values = [rng.uniform(0, 1) * 10 ** rng.randint(-6, 6) for _ in range(n)]
    values[1::17] = [math.nan] * len(values[1::17])   # nanmean and nanmax skip them
    x = np.asarray(values)
    assert _numpy_sums.nansum(values) == float(np.nansum(x))
    if n:
        assert _numpy_sums.nanmean(values) == float(np.nanmean(x))
        assert _numpy_sums.nanmax(values) == float(np.nanmax(x))


def test_pai2020_columns_and_printed_summary_equal_the_frames(tmp_path):
    """The PAI-2020 reader's plain columns (fractional GPUs, gangs, blank estimates as NaN, ties in
    submit time) equal the frame's; the printed summary too, and a gang over the GPU limit is the
    frame's error."""
    path = write_pai_trace(tmp_path / "pai.csv", num_rows=300, wide_job=False)
    _assert_same(pai2020_job_columns(path), pai2020_as_jobs(load_pai2020_jobs(path)))
    for policy in POLICIES:
        argv = ["--format", "pai2020", "--trace", str(path), "--cluster", "64", "--policy", policy]
        assert _cli(*argv, "-o", "wide").startswith(_cli(*argv) + "\n"), policy
    wide_gang = tmp_path / "gang.csv"
    wide_gang.write_text(f"job_id,duration,num_gpu,num_inst\n1,10,1,1\n2,10,8,{MAX_GPUS}\n")
    with pytest.raises(T.TraceError, match="pai2020 jobs, field num_gpu: row 1: .* is out of range"):
        pai2020_job_columns(wide_gang)


def _philly_log(path: Path, jobs: int = 80) -> Path:
    """A Philly cluster_job_log: submissions out of order with ties, jobs of 0 s (dropped by the
    unified schema) and jobs that never ran (dropped by the reader)."""
    rng = random.Random(3)
    records = []
    for k in range(jobs):
        submitted = 1_506_990_000 + rng.randrange(0, 4000, 20)
        start = submitted + rng.randrange(0, 300)
        end = start + (0 if k % 11 == 3 else rng.randrange(1, 7200))
        stamp = [f"{datetime.fromtimestamp(t, UTC):%Y-%m-%d %H:%M:%S}" for t in (submitted, start, end)]
        attempts = [] if k % 13 == 5 else [{"start_time": stamp[1], "end_time": stamp[2],
                                            "detail": [{"ip": "m1", "gpus": ["g"] * rng.choice([1, 2, 4, 8])}]}]
        records.append({"status": "Pass", "vc": f"vc{k % 3}", "jobid": f"application_{k}", "user": f"u{k % 5}",
                        "submitted_time": stamp[0], "attempts": attempts})
    path.write_text(json.dumps(records, indent=1))
    return path


def test_philly_columns_and_printed_summary_equal_the_frames(tmp_path):
    path = _philly_log(tmp_path / "cluster_job_log.json")
    frame = philly_as_jobs(load_philly_jobs(path))
    assert 0 < len(frame) < 80   # some dropped
    _assert_same(philly_job_columns(path), frame)
    for policy in POLICIES:
        argv = ["--format", "philly", "--trace", str(path), "--cluster", "16", "--policy", policy]
        assert _cli(*argv, "-o", "wide").startswith(_cli(*argv) + "\n"), policy
