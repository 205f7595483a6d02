"""`gpufleet place` and scenario files: output, JSON shape, and errors naming file and object."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpufleet.cli import main
from gpufleet.scenario import ScenarioError, load_scenario

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "examples" / "scenarios" / "quickstart.yaml"


def test_place_json_lists_every_pending_pod(capsys):
    assert main(["place", str(QUICKSTART), "--strategy", "topology", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    by_pod = {p["pod"]: p for p in out["placements"]}
    assert by_pod["train-llm"]["node"] == "h100-a"
    assert [d["minor"] for d in by_pod["train-llm"]["device_allocated"]["gpu"]] == [0, 1, 2, 3]
    # The 2-GPU job takes a pair inside the quad the 4-GPU job left untouched.
    assert [d["minor"] for d in by_pod["train-resnet"]["device_allocated"]["gpu"]] == [4, 5]
    assert by_pod["inference-a"]["node"] == "t4-a"
    assert by_pod["too-big"]["node"] is None
    assert "not an NVLink partition size" in by_pod["too-big"]["reason"]
    # serving-0 was bound before: its memory is counted on t4-a gpu0.
    t4 = [d for d in out["devices"] if d["node"] == "t4-a" and d["minor"] == 0][0]
    assert t4["memory_used"] == (4096 + 8138) << 20


def test_place_text_output(capsys):
    assert main(["place", str(QUICKSTART)]) == 0
    text = capsys.readouterr().out
    assert "train-llm" in text and "h100-a" in text and "MEMORY" in text


@pytest.mark.parametrize("body, message", [
    ("nodes: [{name: n1, cpu: '8', memory: 16Gi, gpus: {count: 1, memory: 16Qi}}]",
     "nodes[0] (n1): node n1 gpus: memory: invalid quantity \"16Qi\""),
    ("nodes: [{name: n1, cpu: '8'}]\npods: [{name: p, requests: {koordinator.sh/gpu-core: 50}}]",
     "pods[0] (p): pod p: gpu-core alone is invalid"),
    ("nodes: [{name: n1, cpu: '8'}]\npods: [{name: p, node: n2, requests: {cpu: '1'}}]",
     "pods[0] (p): pod p: node n2 does not exist"),
    ("nodes: {name: n1}", "'nodes' must be a list"),
    ("nodes: [", "not valid YAML"),
])
def test_invalid_scenarios_name_file_object_and_problem(tmp_path, body, message):
    path = tmp_path / "bad.yaml"
    path.write_text(body)
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    assert str(path) in str(err.value)
    assert message in str(err.value)


def test_cli_exits_non_zero_on_invalid_scenario(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"nodes": [{"name": "n", "devices": [{"minor": 0}]}]}')
    proc = subprocess.run([sys.executable, "-m", "gpufleet", "place", str(path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "bad.json" in proc.stderr and "gpu 0: memory must be given" in proc.stderr


def test_help_lists_commands():
    proc = subprocess.run([sys.executable, "-m", "gpufleet", "--help"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0 and "place" in proc.stdout


def test_version_names_the_package_version():
    import gpufleet

    proc = subprocess.run([sys.executable, "-m", "gpufleet", "--version"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == f"gpufleet {gpufleet.__version__}"


def test_quickstart_example_runs():
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "quickstart.py")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "train-llm" in proc.stdout and "0/3 nodes are available" in proc.stdout
