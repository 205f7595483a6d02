"""`-o json|yaml|wide` on every command that prints results: json is the `--json` document, yaml
parses to the same object, wide has every default column and more."""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import pytest
import yaml

import gpufleet.traces as T
from gpufleet.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[2]
NVML = Path(__file__).resolve().parent / "data"


@pytest.fixture(scope="module")
def openb_files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("openb")
    nodes_df, pods_df = T.synthetic_openb(4, 10, seed=1)
    nodes_df.rename(columns={"name": "sn", "num_gpu": "gpu"}).to_csv(tmp / "nodes.csv", index=False)
    pods = pods_df.copy()
    pods["gpu_spec"] = ["|".join(s) for s in pods["gpu_spec"]]
    pods.to_csv(tmp / "pods.csv", index=False)
    return tmp / "pods.csv", tmp / "nodes.csv"


@pytest.fixture
def fixed_profile(monkeypatch):
    """`node profile` times a script; a fixed result makes two runs print the same document."""
    from gpufleet.node import profiler
    monkeypatch.setattr(profiler, "profile", lambda step, **kw: profiler.ProfileResult(
        iterations_per_s=250.0, peak_memory_bytes=None, gpu_model=None, iterations=5, seconds=0.02))


def _commands(openb_files, tmp_path):
    pods, nodes = openb_files
    script = tmp_path / "job.py"
    script.write_text("def step():\n    return sum(range(100))\n")
    return {
        "simulate": ["simulate", "--format", "synthetic", "--num-jobs", "30", "--policy", "las"],
        "simulate-openb": ["simulate", "--format", "openb", "--trace", str(pods), "--nodes", str(nodes),
                           "--policy", "fgd", "--seed", "2"],
        "place": ["place", str(ROOT / "examples" / "scenarios" / "quickstart.yaml"), "--strategy", "topology"],
        "cycle": ["cycle", str(ROOT / "examples" / "queues-scenario.yaml"), "--conf",
                  str(ROOT / "examples" / "scheduler-conf.yaml"), "--cycles", "2"],
        "node-profile": ["node", "profile", str(script), "--steps", "5"],
    }


LISTINGS = {
    "list-policies": (["simulate", "--list-policies"], {"policies", "strategies", "dra_strategies"}),
    "list-strategies": (["place", "--list-strategies"], {"strategies"}),
    "list-plugins": (["cycle", "--list-plugins"], {"plugins"}),
    "list-actions": (["cycle", "--list-actions"], {"actions"}),
    "list-plugins-and-actions": (["cycle", "--list-plugins", "--list-actions"], {"plugins", "actions"}),
}


def _out(capsys, argv: list[str]) -> str:
    assert main(argv) == 0, argv
    return capsys.readouterr().out


def _headers(text: str) -> list[list[str]]:
    """Column names of every table: upper-case lines, columns two or more spaces apart."""
    return [re.split(r"\s{2,}", line.strip()) for line in text.splitlines()
            if line.strip() and line == line.upper() and any(c.isalpha() for c in line)
            and not line.startswith("==")]


@pytest.mark.parametrize("name", ["simulate", "simulate-openb", "place", "cycle", "node-profile"])
def test_output_formats(name, openb_files, tmp_path, capsys, fixed_profile):
    argv = _commands(openb_files, tmp_path)[name]
    doc = json.loads(_out(capsys, argv + ["--json"]))
    assert json.loads(_out(capsys, argv + ["-o", "json"])) == doc
    assert json.loads(_out(capsys, argv + ["--output", "json"])) == doc
    assert yaml.safe_load(_out(capsys, argv + ["-o", "yaml"])) == doc

    default, wide = _out(capsys, argv), _out(capsys, argv + ["-o", "wide"])
    narrow_headers, wide_headers = _headers(default), _headers(wide)
    if name != "node-profile":  # the profiler prints lines, not tables
        assert narrow_headers, default
    assert len(wide_headers) >= len(narrow_headers)
    for narrow_h, wide_h in zip(narrow_headers, wide_headers):
        assert set(narrow_h) <= set(wide_h), (narrow_h, wide_h)
    assert sum(map(len, wide_headers)) > sum(map(len, narrow_headers)) or len(wide) > len(default)
    assert len(wide.splitlines()) >= len(default.splitlines())


def test_wide_details(openb_files, tmp_path, capsys):
    cmds = _commands(openb_files, tmp_path)
    sim = _out(capsys, cmds["simulate"] + ["-o", "wide"])
    assert "JCT S" in sim and len(sim.splitlines()) > 30  # one row per job
    replay = _out(capsys, cmds["simulate-openb"] + ["-o", "wide"])
    checkpoints = replay.split("ARRIVED %")[1].strip().splitlines()[1:]
    assert "ALLOCATED %" in replay and len(checkpoints) >= 10  # one row per 10% of arrived GPUs
    place = _out(capsys, cmds["place"] + ["-o", "wide"])
    assert "DEVICES REQUESTED" in place and "notebook-a,notebook-b" in place  # pods sharing gpu0
    cycle = _out(capsys, cmds["cycle"] + ["-o", "wide"])
    assert "MEMORY DESERVED" in cycle and "gpu0:50%/40Gi" in cycle


@pytest.mark.parametrize("name", sorted(LISTINGS))
def test_listing_formats(name, capsys):
    argv, kinds = LISTINGS[name]
    doc = json.loads(_out(capsys, argv + ["--json"]))
    assert set(doc) == kinds
    assert json.loads(_out(capsys, argv + ["-o", "json"])) == doc
    assert yaml.safe_load(_out(capsys, argv + ["-o", "yaml"])) == doc
    default, wide = _out(capsys, argv), _out(capsys, argv + ["-o", "wide"])
    header = _headers(wide)[0]
    assert header[:4] == ["REGISTRY", "NAME", "CAPABILITIES", "PARAMETER"]
    rows = [re.split(r"\s{2,}", line) for line in wide.splitlines()[1:]]
    for kind in kinds:
        for e in doc[kind]:
            assert e["name"] in default
            listed = {r[3] for r in rows if r[0] == kind and r[1] == e["name"]}
            assert listed == {"-"} | {p["name"] for p in e["parameters"]}, (kind, e["name"])


def test_inventory_default_is_the_yaml_document(capsys):
    argv = ["node", "inventory", "--replay", str(NVML / "nvml_h100_pcie4_bridged.json")]
    doc = json.loads(_out(capsys, argv + ["--json"]))
    assert json.loads(_out(capsys, argv + ["-o", "json"])) == doc
    assert yaml.safe_load(_out(capsys, argv + ["-o", "yaml"])) == doc
    assert yaml.safe_load(_out(capsys, argv)) == doc
    wide = _out(capsys, argv + ["-o", "wide"])
    assert _headers(wide)[0][:3] == ["MINOR", "TYPE", "MODEL"]
    assert all(d["id"] in wide for d in doc["devices"]) and "NVLINK GROUP" in wide


def test_invalid_output_is_a_usage_error_listing_the_choices(capsys):
    with pytest.raises(SystemExit) as err:
        main(["simulate", "--list-policies", "-o", "xml"])
    assert err.value.code == 2
    msg = capsys.readouterr().err
    assert "invalid choice: 'xml'" in msg and all(f in msg for f in ("json", "yaml", "wide"))


def test_yaml_missing_names_the_package(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "yaml", None)  # import yaml now raises ImportError
    with pytest.raises(SystemExit) as err:
        main(["place", "--list-strategies", "-o", "yaml"])
    assert "pip install pyyaml" in str(err.value.code)


def _subparsers(parser: argparse.ArgumentParser, path=()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield path + (name,), sub
                yield from _subparsers(sub, path + (name,))


def test_every_command_with_json_has_output_choices():
    found = 0
    for path, sub in _subparsers(build_parser()):
        options = {o: a for a in sub._actions for o in a.option_strings}
        if "--json" in options:
            found += 1
            assert "-o" in options and options["-o"].choices == ("json", "yaml", "wide"), path
            assert options["--json"].dest == options["-o"].dest == "output", path
            assert "same as -o json" in options["--json"].help, path
    assert found >= 5


def test_table_prints_each_column_of_numbers_in_one_format():
    from gpufleet.commands._output import table
    text = table([["fifo", 1556.48, 0.9527, 3, -0.25, 60], ["srtf", 365265.0, 12.5, 1200, 1.5, 0.5791],
                  ["las", None, float("nan"), 7, 0.0, 5747.0]],
                 ["POLICY", "JCT", "RATIO", "JOBS", "DIFF", "VALUE"], signed=["DIFF"])
    header, *rows = text.splitlines()
    assert header.split() == ["POLICY", "JCT", "RATIO", "JOBS", "DIFF", "VALUE"]
    cells = [r.split() for r in rows]
    # thousands separated, the decimals the column's most demanding value needs, for every row
    assert [c[1] for c in cells] == ["1,556", "365,265", "-"]
    assert [c[2] for c in cells] == ["0.9527", "12.5000", "-"]
    assert [c[3] for c in cells] == ["3", "1,200", "7"]
    assert [c[4] for c in cells] == ["-0.25", "+1.50", "+0.00"]
    # a count keeps no decimals beside the floats of its column, which share theirs
    assert [c[5] for c in cells] == ["60", "0.5791", "5,747.0000"]
    # numbers right-aligned: every row of a column ends at the same place
    assert len({len(r) for r in rows}) == 1
