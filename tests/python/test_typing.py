"""gpufleet's types as a user's type checker sees them. mypy, with the project's settings
([tool.mypy] in pyproject.toml), passes the examples and a typed user script
(typing_cases/user_script.py), and reports every mistake planted in typing_cases/planted_mistakes.py
on its line and with its code. The hand-written result types agree with what the extension
returns, and the user script runs."""
from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gpufleet import Cluster, Pod, _core
from gpufleet import cluster_results, engine_records
from gpufleet.traces import synthetic_jobs

ROOT = Path(__file__).resolve().parents[2]
CASES = Path(__file__).with_name("typing_cases")
CLEAN = [p.relative_to(ROOT) for p in [*sorted((ROOT / "examples").glob("*.py")),
                                       CASES / "user_script.py"]]
PLANTED = (CASES / "planted_mistakes.py").relative_to(ROOT)
MARK = re.compile(r"#\s*mistake\[([a-z-]+)\]")
ERROR = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+): error: (?P<message>.*?)(?:\s+\[(?P<code>[\w-]+)\])?$")


@pytest.fixture(scope="module")
def mypy_errors(tmp_path_factory) -> dict[Path, dict[int, list[str]]]:
    """One mypy run over every case, with a fresh cache: file -> line -> ["code: message"]."""
    cache = tmp_path_factory.mktemp("mypy-cache")
    files = [str(p) for p in [*CLEAN, PLANTED]]
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", "pyproject.toml", "--cache-dir", str(cache),
         "--show-error-codes", "--no-pretty", "--no-error-summary", *files],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    # 0: no errors, 1: errors reported; anything else is mypy failing to run (a config error).
    assert proc.returncode in (0, 1), f"mypy did not run:\n{proc.stdout}{proc.stderr}"
    errors: dict[Path, dict[int, list[str]]] = {}
    for line in proc.stdout.splitlines():
        m = ERROR.match(line)
        if m:
            errors.setdefault(Path(m["path"]), {}).setdefault(int(m["line"]), []).append(
                f"{m['code']}: {m['message']}")
    assert errors or proc.returncode == 0, f"unparsed mypy output:\n{proc.stdout}"
    return errors


@pytest.mark.parametrize("path", CLEAN, ids=str)
def test_examples_and_a_typed_user_script_pass_mypy(mypy_errors, path):
    assert mypy_errors.get(path, {}) == {}, f"mypy reports errors in {path}"


def test_mypy_reports_every_planted_mistake_and_nothing_else(mypy_errors):
    lines = (ROOT / PLANTED).read_text().splitlines()
    planted = {n: m[1] for n, text in enumerate(lines, 1) if (m := MARK.search(text))}
    assert len(planted) >= 6
    reported = mypy_errors.get(PLANTED, {})
    missed = {n: f"{code}: {lines[n - 1].strip()}" for n, code in planted.items()
              if not any(e.startswith(f"{code}:") for e in reported.get(n, []))}
    assert missed == {}, f"mypy let these through (line: expected code): {missed}"
    unplanted = {n: e for n, e in reported.items() if n not in planted}
    assert unplanted == {}, f"errors on lines with no planted mistake: {unplanted}"


@pytest.mark.parametrize("record, bound", [
    (engine_records.ResourcesRecord, _core.Resources),
    (engine_records.BindRecord, _core.BindDecision),
    (engine_records.EvictRecord, _core.EvictDecision),
    (engine_records.QueueShareRecord, _core.QueueShare),
    (engine_records.HeldRecord, _core.HeldCapacity),
    (engine_records.CycleRecord, _core.CycleResult),
], ids=lambda v: v.__name__)
def test_engine_records_name_the_fields_to_dict_holds(record, bound):
    assert list(record.__annotations__) == list(bound.fields)


def test_cluster_results_name_what_the_cluster_returns():
    c = Cluster()
    c.add_node({"name": "n0", "cpu": "8", "memory": "32Gi",
                "gpus": {"count": 2, "model": "V100", "memory": "16Gi"}})
    assert set(c.device_usage()) == set(cluster_results.DeviceUsage.__annotations__)
    spec = c.node("n0")
    assert set(cluster_results.NodeSpec.__required_keys__) <= set(spec) \
        <= set(cluster_results.NodeSpec.__annotations__)
    device = spec["devices"][0]
    assert set(cluster_results.DeviceSpec.__required_keys__) <= set(device) \
        <= set(cluster_results.DeviceSpec.__annotations__)
    result = c.place(Pod("p", {"nvidia.com/gpu": 1}))
    assert type(result) is cluster_results.PlaceResult


def test_the_typed_user_script_runs(tmp_path):
    spec = importlib.util.spec_from_file_location("user_script", CASES / "user_script.py")
    assert spec and spec.loader
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    trace = tmp_path / "jobs.csv"
    synthetic_jobs(12, seed=1).to_csv(trace, index=False)
    out = script.main(f"synthetic:{trace}")
    assert out["decisions"] == {"p0": "n0", "p1": "n0", "p2": "n1", "p3": "n1",
                                "p4": out["decisions"]["p4"]}
    assert out["decisions"]["p4"].startswith("pending: ")
    assert out["extra"] is None
    usage = out["usage"]
    assert list(usage["node_name"]) == ["n0", "n0", "n1", "n1"] and len(usage.columns) == 11
    assert out["busy"] == [("n0", 0), ("n0", 1), ("n1", 0), ("n1", 1)]
    assert out["models"] == ["V100", "V100"]
    assert sorted(b["task"] for b in out["binds"]) == ["train-0", "train-1"]
    assert set(out["jct"]) == {"fifo", "las"} and all(v > 0 for v in out["jct"].values())


def _stub_types():
    spec = importlib.util.spec_from_file_location("stub_types", ROOT / "tools" / "stub_types.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_stubs_carry_the_types_tools_stub_types_gives():
    """Regenerating the stubs without tools/stub_types.py would leave the engine's results Any;
    on the committed stubs the script changes nothing, and it stops, naming the member, when a
    binding no longer has one it types."""
    stub_types = _stub_types()
    stubs = ROOT / "python" / "gpufleet" / "_core"
    for path in sorted(stubs.glob("*.pyi")):
        text = path.read_text()
        assert stub_types.retype(text, stub_types.TYPES.get(path.name, {}), path.name) == text, \
            f"{path.name}: run tools/make_stubs.sh"
    engine = (stubs / "engine.pyi").read_text()
    renamed = engine.replace("def gpu_core(self)", "def gpu_share(self)")
    with pytest.raises(SystemExit, match=r"BindDecision\.gpu_core is not in the stub"):
        stub_types.retype(renamed, stub_types.TYPES["engine.pyi"], "engine.pyi")
    retyped = engine.replace("def gpu_core(self) -> int:", "def gpu_core(self) -> float:")
    with pytest.raises(SystemExit, match=r"BindDecision\.gpu_core is typed float now"):
        stub_types.retype(retyped, stub_types.TYPES["engine.pyi"], "engine.pyi")
