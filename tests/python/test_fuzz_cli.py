"""The hostile-input probe as a campaign over the command line: every file a command reads (scenario,
configuration, traces, node lists, device lists, NVML recordings, allocations) is replaced by
junk, by an empty file, a folder, a missing path, and by mutations of a valid file, in structure
(a value swapped for a huge number, a negative count, a wrong type, a key dropped or added) and in
text (bytes cut, repeated or inserted). Every run ends in a result (exit 0) or in one line on
stderr with a non-zero exit, never a traceback, and within a time limit. Settings and the longer
local campaign: tests/fuzz/README.md."""
from __future__ import annotations

import argparse
import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from conftest import SHARED_DATA
from fuzz_support import campaign, mutated_document, time_limit
from gpufleet.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[2]

# One valid input per kind: (file name, content). Documents are given as data (mutated as data).
DOCUMENTS: dict[str, tuple[str, Any]] = {
    "scenario": ("scenario.yaml", {
        "nodes": [{"name": "n1", "cpu": "8", "memory": "16Gi", "labels": {"zone": "a"},
                   "gpus": {"count": 2, "model": "V100M16", "memory": "16Gi"}}],
        "pods": [{"name": "p", "requests": {"nvidia.com/gpu": 1, "cpu": "1"}, "priority": 1},
                 {"name": "b", "node": "n1", "requests": {"aliyun.com/gpu-mem": 4096},
                  "annotations": {"ALIYUN_COM_GPU_MEM_IDX": "0", "ALIYUN_COM_GPU_MEM_POD": "4096"}}],
        "queues": [{"name": "q", "weight": 1}],
        "jobs": [{"name": "j", "queue": "q", "replicas": 2, "min_available": 2,
                  "requests": {"nvidia.com/gpu": 1}}]}),
    "conf": ("conf.yaml", {"actions": "enqueue, allocate, backfill",
                           "tiers": [{"plugins": [{"name": "priority"}, {"name": "gang"}]},
                                     {"plugins": [{"name": "drf"}, {"name": "predicates"},
                                                  {"name": "proportion"}, {"name": "nodeorder"}]}]}),
    "devices": ("devices.yaml", {
        "devices": [{"type": "gpu", "minor": 0, "model": "T4", "id": "GPU-a", "health": True,
                     "resources": {"koordinator.sh/gpu-core": "100",
                                   "koordinator.sh/gpu-memory": "16Gi",
                                   "koordinator.sh/gpu-memory-ratio": "100"},
                     "topology": {"socketID": 0, "nodeID": 0, "pcieID": "pci0",
                                  "busID": "0000:01:00.0"}}],
        "nvlink_groups": [[0]]}),
    "nvml": ("nvml.json", json.loads((ROOT / "tests/python/data/nvml_t4x2.json").read_text())),
    "allocation": ("allocation.json", {"gpu": [{"minor": 0, "resources": {
        "koordinator.sh/gpu-core": "50", "koordinator.sh/gpu-memory": "8Gi"}}]}),
}
TEXTS: dict[str, tuple[str, str]] = {
    "tiresias": ("jobs.csv", "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n"
                             "0,1,0,606,vgg19,164,30\n1,8,30,133,vgg11,147,23\n"),
    "cluster": ("cluster.csv", "num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node\n"
                               "1,2,8,40,256\n"),
    "openb_nodes": ("nodes.csv", "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,2,P100\n"
                                 "n1,64000,262144,8,V100M16\n"),
    "openb_pods": ("pods.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
                               "creation_time,deletion_time,scheduled_time\n"
                               "p0,12000,16384,1,1000,,LS,Running,0,12537496,0\n"
                               "p1,6000,12288,1,460,V100M16|P100,LS,Running,427061,12902960,427061\n"),
    "gavel": ("gavel.trace", "Transformer (batch size 128)\tcd x && python3 train.py\t-step\t1\t95121\t"
                             "0.000000\t1\nRecommendation (batch size 8192)\tcd y\t-n\t1\t10000\t6.000000\t1\n"),
    "gavel_cluster": ("cluster_specs.json", '{"philly": ["8:4:4"]}'),
}
# Gavel's throughputs from the public traces (CI has them; elsewhere the gavel runs stop there).
THROUGHPUTS = SHARED_DATA / "gavel" / "simulation_throughputs.json"


def commands(kind: str, path: str, good: dict[str, str]) -> list[list[str]]:
    """The command lines that read an input of ``kind`` from ``path``; the other inputs valid."""
    sim = ["simulate", "--policy", "fifo"]
    return {
        "scenario": [["place", path], ["cycle", path, "--cycles", "2", "-o", "json"]],
        "conf": [["cycle", good["scenario"], "--conf", path]],
        "devices": [["node", "run", "--print-env", "--allocation", f"@{good['allocation']}",
                     "--devices", path]],
        "nvml": [["node", "inventory", "--replay", path, "-o", "wide"]],
        "allocation": [["node", "run", "--print-env", "--allocation", f"@{path}",
                        "--devices", good["devices"]]],
        "tiresias": [sim + ["--format", "tiresias", "--trace", path, "--cluster", "8"]],
        "cluster": [sim + ["--format", "tiresias", "--trace", good["tiresias"], "--cluster", path]],
        "openb_nodes": [["simulate", "--format", "openb", "--policy", "fgd", "--trace",
                         good["openb_pods"], "--nodes", path]],
        "openb_pods": [["simulate", "--format", "openb", "--policy", "bestfit", "--trace", path,
                        "--nodes", good["openb_nodes"]]],
        "gavel": [sim + ["--format", "gavel", "--trace", path, "--cluster", "8", "--throughputs",
                         str(THROUGHPUTS)]],
        "gavel_cluster": [sim + ["--format", "tiresias", "--trace", good["tiresias"], "--cluster", path]],
    }[kind]


KINDS = sorted(DOCUMENTS) + sorted(TEXTS)


def _text(kind: str, doc: Any = None) -> str:
    if kind in TEXTS:
        return TEXTS[kind][1]
    name, default = DOCUMENTS[kind]
    doc = default if doc is None else doc
    return json.dumps(doc) if name.endswith(".json") else yaml.safe_dump(doc)


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> dict[str, str]:
    """A folder of valid inputs, one per kind: the companions of the input under test."""
    folder = tmp_path_factory.mktemp("good")
    out = {}
    for kind in KINDS:
        name = (DOCUMENTS.get(kind) or TEXTS[kind])[0]
        (folder / name).write_text(_text(kind))
        out[kind] = str(folder / name)
    return out


def run(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with time_limit(30, f"gpufleet {' '.join(argv)}"), contextlib.redirect_stderr(err), \
            contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(argv)
        except SystemExit as e:   # argparse, or sys.exit("message")
            code = e.code if isinstance(e.code, int) else 1
            if isinstance(e.code, str):
                err.write(e.code + "\n")
    return code, err.getvalue()


def check(argv: list[str], what: str) -> None:
    code, err = run(argv)
    if code == 0:
        return
    lines = err.strip().splitlines()
    assert "Traceback" not in err and len(lines) == 1, f"{what}: gpufleet {' '.join(argv)}: {err}"
    assert lines[0].startswith("gpufleet"), lines[0]


# --- files that are not files of the kind at all -----------------------------------------------------
JUNK = {"empty": b"", "binary": bytes(range(256)) * 4, "nul": b"\x00" * 64, "text": b"hello\n",
        "number": b"42", "list": b"[1, 2, 3]", "null": b"null", "deep": b"[" * 5000 + b"]" * 5000,
        "alias bomb": ("l0: &l0 [x, x, x, x, x, x, x, x, x]\n" + "".join(
            f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]\n" for i in range(1, 9))).encode()}


@pytest.mark.parametrize("kind", KINDS)
def test_junk_folders_and_missing_files_are_one_line(good, tmp_path: Path, kind: str):
    name = (DOCUMENTS.get(kind) or TEXTS[kind])[0]
    for label, data in JUNK.items():
        path = tmp_path / f"{label.replace(' ', '_')}-{name}"
        path.write_bytes(data)
        for argv in commands(kind, str(path), good):
            check(argv, f"{kind} {label}")
    folder = tmp_path / f"folder-{name}"
    folder.mkdir()
    for path, label in ((folder, "a folder"), (tmp_path / f"missing-{name}", "a missing file")):
        for argv in commands(kind, str(path), good):
            check(argv, f"{kind} {label}")


def test_the_valid_inputs_run(good):
    """The campaign's seeds are valid, so that mutations start from inputs that get far."""
    for kind in KINDS:
        for argv in commands(kind, good[kind], good):
            if kind == "gavel" and not THROUGHPUTS.exists():
                continue   # without the public traces the gavel run stops at its throughputs
            code, err = run(argv)
            assert code == 0, (argv, err)


def _command_paths(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield path + (name,)
                yield from _command_paths(sub, path + (name,))


def test_every_command_answers_help():
    paths = [()] + list(_command_paths(build_parser()))
    assert {("deviceplugin",), ("node", "run"), ("extender",), ("sweep",)} <= set(paths)
    for path in paths:
        out = io.StringIO()
        with time_limit(20, f"{path} --help"), contextlib.redirect_stdout(out), \
                pytest.raises(SystemExit) as done:
            main([*path, "--help"])
        assert done.value.code == 0 and "usage: gpufleet" in out.getvalue(), path


# --- mutations ---------------------------------------------------------------------------------------
@st.composite
def mutated_text(draw, text: str) -> str:
    """``text`` with one to four edits: bytes cut, inserted, replaced by an odd number, repeated."""
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, max(len(text) - 1, 0)))
        op = draw(st.sampled_from(["cut", "insert", "number", "repeat", "truncate"]))
        if op == "cut":
            text = text[:i] + text[i + draw(st.integers(1, 12)):]
        elif op == "insert":
            text = text[:i] + draw(st.text(st.sampled_from(list(",\n\t\"' -.e0123456789|:{}[]x\x00é")),
                                           max_size=6)) + text[i:]
        elif op == "number":
            text = text[:i] + draw(st.sampled_from(["-1", "0", "99999999999999999999999", "1e400",
                                                    "nan", "inf", "1.5", "2147483648", ""])) + \
                text[i + draw(st.integers(0, 6)):]
        elif op == "repeat":
            text = text + text[i:]
        else:
            text = text[:i]
    return text


@st.composite
def mutated_input(draw) -> tuple[str, str]:
    kind = draw(st.sampled_from(KINDS))
    if kind in DOCUMENTS and draw(st.booleans()):
        return kind, _text(kind, draw(mutated_document(DOCUMENTS[kind][1])))
    return kind, draw(mutated_text(_text(kind)))


@campaign(300)
@given(mutated_input())
def test_mutated_inputs_give_a_result_or_one_line(good, tmp_path_factory, case):
    kind, text = case
    folder = tmp_path_factory.mktemp("case", numbered=True)
    path = folder / (DOCUMENTS.get(kind) or TEXTS[kind])[0]
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    for argv in commands(kind, str(path), good):
        check(argv, f"{kind} mutated")
