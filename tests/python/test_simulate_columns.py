"""`gpufleet simulate` printing a summary reads the trace into NumPy columns and builds no frame:
the columns equal the frame's, the summary equals `simulate(...).summary`, and the process never
imports pandas."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import gpufleet.traces as T
from gpufleet.sim import simulate, simulate_summary
from gpufleet.traces.tiresias import load_tiresias_jobs, tiresias_as_jobs, tiresias_job_columns

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


def _assert_same(columns: dict, frame: pd.DataFrame) -> None:
    assert list(columns) == list(frame.columns)
    for name, values in columns.items():
        assert values.dtype == frame[name].to_numpy().dtype, name
        np.testing.assert_array_equal(values, frame[name].to_numpy(), err_msg=name)


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


def test_the_summary_command_imports_no_pandas(shuffled):
    code = ("import sys\nfrom gpufleet.cli import main\n"
            f"code = main(['simulate', '--format', 'tiresias', '--trace', {str(shuffled)!r}, "
            "'--cluster', '8', '--policy', 'dlas-gpu', '-o', 'json'])\n"
            "print('pandas' in sys.modules, code)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.splitlines()[-1] == "False 0", out.stdout
    # -o wide prints a row per job from the frame: there pandas is wanted, and loaded.
    wide = code.replace("'-o', 'json'", "'-o', 'wide'")
    out = subprocess.run([sys.executable, "-c", wide], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.splitlines()[-1] == "True 0", out.stdout
