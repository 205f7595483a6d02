"""The trace format registry: formats recognise their files, a new format is one new module that
registers itself (the commands and the sweep take it with no other change), and cluster files are
read by the format that published them."""
from __future__ import annotations

import json
import sys
import textwrap

import pytest

import gpufleet.traces as T
from conftest import SHARED_DATA, missing_shared_data
from gpufleet.cli import main
from gpufleet.traces import registry


def shared(*parts: str):
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        missing_shared_data(path)
    return path


@pytest.mark.parametrize("parts, fmt", [
    (("openb", "openb_pod_list_default.csv"), "openb"),
    (("openb", "openb_pod_list_multigpu20.csv"), "openb"),
    (("tiresias", "60_job.csv"), "tiresias"),
    (("gavel", "msr", "0e4a51.trace"), "gavel"),
    (("gavel", "physical_cluster", "small_test.trace"), "gavel"),
])
def test_formats_recognise_the_public_files(parts, fmt):
    assert T.detect_format(shared(*parts)) == fmt


def test_recognising_small_files(tmp_path):
    jobs = tmp_path / "mine.csv"
    T.synthetic_jobs(5, seed=1).to_csv(jobs, index=False)
    assert T.detect_format(jobs) == "synthetic"
    log = tmp_path / "log.json"
    log.write_text('\ufeff[\n {"jobid": "a"}]')
    assert T.detect_format(log) == "philly"
    pods = tmp_path / "pods.csv"       # no telling name, but a gpu_milli column
    pods.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1000,10,1,500\n")
    assert T.detect_format(pods) == "openb"
    odd = tmp_path / "odd.csv"
    odd.write_text("a,b\n1,2\n")
    with pytest.raises(T.TraceError, match=r"odd.csv: cannot tell its format.*one of openb, tiresias"):
        T.detect_format(odd)
    # A unified-schema CSV with a column of its own is not claimed either: the format must be named.
    extra = tmp_path / "extra.csv"
    extra.write_text(jobs.read_text().replace("job_id,", "note,job_id,", 1))
    with pytest.raises(T.TraceError, match="cannot tell"):
        T.detect_format(extra)


def test_two_formats_claiming_one_file_is_an_error(monkeypatch, tmp_path):
    monkeypatch.setattr(registry, "_FORMATS", dict(registry._FORMATS))
    gavel = T.trace_format("gavel")
    registry.register(registry.TraceFormat("gavel-copy", "a copy", gavel.load, gavel.as_jobs, sniff=gavel.sniff))
    trace = tmp_path / "t.trace"
    trace.write_text("")
    with pytest.raises(T.TraceError, match="looks like formats gavel and gavel-copy"):
        T.detect_format(trace)
    with pytest.raises(ValueError, match="'gavel' is registered twice"):
        registry.register(gavel)


NEW_FORMAT = '''
    """A format of one test: rows of start,gpus,seconds, and a speed-up in a side file."""
    from pathlib import Path

    import pandas as pd

    from gpufleet.traces.registry import SideInput, TraceFormat, register
    from gpufleet.traces.schema import finish_jobs


    def as_jobs(frame, speedup):
        return finish_jobs(pd.DataFrame({
            "job_id": range(len(frame)), "submit_time": frame["start"].astype(float),
            "num_gpu": frame["gpus"], "duration": frame["seconds"] / speedup, "model_name": "tiny"}), "tiny")


    register(TraceFormat(
        name="tiny", summary="a test format", load=pd.read_csv, as_jobs=as_jobs,
        side_inputs=(SideInput("speedup", "a number in a file", lambda p: float(Path(p).read_text())),),
        sniff=lambda path, head: path.suffix == ".tiny", recognised="a .tiny file"))
'''


@pytest.fixture
def new_format(tmp_path, monkeypatch):
    """A folder holding one new format module, searched as part of gpufleet.traces; the registry
    as it was before discovery, so that it finds the module on its own."""
    folder = tmp_path / "formats"
    folder.mkdir()
    (folder / "tiny_format.py").write_text(textwrap.dedent(NEW_FORMAT))
    monkeypatch.setattr(T, "__path__", [*T.__path__, str(folder)])
    monkeypatch.setattr(registry, "_FORMATS", dict(registry._FORMATS))
    monkeypatch.setattr(registry, "_discovered", False)
    trace = tmp_path / "jobs.tiny"
    trace.write_text("start,gpus,seconds\n0,1,100\n10,2,300\n")
    speedup = tmp_path / "speedup.txt"
    speedup.write_text("2")
    yield trace, speedup
    sys.modules.pop("gpufleet.traces.tiny_format", None)


def test_a_new_format_is_one_module_that_registers_itself(new_format, capsys):
    trace, speedup = new_format
    assert "tiny" in T.trace_formats()
    loaded = T.load(trace=trace, speedup=speedup, cluster=4)
    assert loaded.format == "tiny" and list(loaded.jobs["duration"]) == [50.0, 150.0]
    argv = ["--trace", str(trace), "--input", f"speedup={speedup}", "--cluster", "4", "--policy", "fifo"]
    assert main(["simulate", *argv, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["num_jobs"] == 2
    assert main(["sweep", *argv, "--seed", "0", "--workers", "1", "--no-progress", "-o", "json"]) == 0
    summary = {r["metric"]: r["mean"] for r in json.loads(capsys.readouterr().out)["summary"]}
    assert summary["num_jobs"] == 2 and summary["makespan"] == pytest.approx(160.0)
    assert main(["simulate", "--trace", str(trace), "--cluster", "4", "--policy", "fifo"]) == 2
    assert "tiny traces need speedup (a number in a file): give --input speedup=FILE" in capsys.readouterr().err
    assert main(["simulate", "--list-formats"]) == 0
    assert any(line.split()[:3] == ["tiny", "jobs", "speedup"] for line in capsys.readouterr().out.splitlines())


def test_cluster_files_are_read_by_the_format_that_published_them(tmp_path):
    spec = T.load_cluster(shared("tiresias", "n32g4.csv"))
    assert (spec.num_gpus, spec.gpus_per_node) == (128, 4)
    assert T.load_cluster(shared("gavel", "msr", "cluster_specs.json")) == \
        T.load_gavel_cluster_spec(shared("gavel", "msr", "cluster_specs.json"))[0]
    assert T.load_cluster("v100:4,k80:4") == "v100:4,k80:4" and T.load_cluster(8) == 8
    with pytest.raises(FileNotFoundError, match="cluster: no such file 'nope.csv'"):
        T.load_cluster("nope.csv")
    empty = tmp_path / "cluster_specs.json"
    empty.write_text('{"philly": []}')
    with pytest.raises(T.TraceError, match="holds no 'V100:P100:K80' spec"):
        T.load_cluster(empty)
    with pytest.raises(ValueError, match="not a cluster file"):
        T.load_cluster(tmp_path / "cluster.yaml")


def test_the_docs_name_only_data_that_exists():
    """Every ../shared/data path in docs/traces.md (relative to the project root) is there."""
    import re
    from conftest import ROOT
    text = (ROOT / "docs" / "traces.md").read_text()
    paths = set(re.findall(r"\.\./shared/data[\w./-]*\w", text))
    assert len(paths) >= 5
    missing = sorted(p for p in paths if not (ROOT / p).exists())
    if missing and not SHARED_DATA.is_dir():
        missing_shared_data(SHARED_DATA)
    assert missing == []
