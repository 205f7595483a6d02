"""Bounded input: YAML alias bombs, oversized documents and files are refused while they are read;
every count-like option of every command has a range; inputs that once ended in a traceback are
one-line errors; the extender's scenario reader is as strict as the scenario reader."""
from __future__ import annotations

import contextlib
import io
import subprocess
import sys
from pathlib import Path

import pytest

from fuzz_support import time_limit
from gpufleet import documents
from gpufleet.cli import build_parser, main
from gpufleet.documents import ScenarioError, read_document, read_documents, read_embedded_yaml
from gpufleet.engine import load_config
from gpufleet.k8s.extender import state as ext_state
from gpufleet.node.inventory import load_devices_file
from gpufleet.scenario import build_scenario, load_scenario

NODE = {"name": "n1", "cpu": "8", "memory": "16Gi", "gpus": {"count": 2, "memory": "16Gi"}}
SCENARIO = "nodes: [{name: n1, cpu: '8', memory: 16Gi, gpus: {count: 2, memory: 16Gi}}]\n"


def alias_bomb(key: str = "nodes") -> str:
    """Ten lines, nine levels of nine aliases: 9**9 (387 million) entries once expanded."""
    lines = ['l0: &l0 ["x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, 9)]
    return "\n".join(lines + [f"{key}: *l8"]) + "\n"


def run_cli(argv: list[str], seconds: float = 20) -> tuple[int, str]:
    """``gpufleet ARGV`` in this process: (exit status, stderr); a hang fails the test."""
    err = io.StringIO()
    with time_limit(seconds, f"gpufleet {' '.join(argv)}"), contextlib.redirect_stderr(err), \
            contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(argv)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 2
    return code, err.getvalue()


def one_line_error(code: int, err: str) -> str:
    assert code != 0, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err.strip()


# --- documents: bounded while composed -------------------------------------------------------------
@pytest.fixture
def bomb(tmp_path: Path) -> Path:
    path = tmp_path / "bomb.yaml"
    path.write_text(alias_bomb())
    return path


def test_alias_bomb_is_refused_by_every_reader_in_moments(bomb: Path, tmp_path: Path):
    conf = tmp_path / "conf.yaml"
    conf.write_text(alias_bomb("tiers"))
    readers = [read_document, read_documents, load_scenario, lambda p: load_config(conf),
               lambda p: ext_state.load_scenario(p), load_devices_file,
               lambda p: read_embedded_yaml(p.read_text(), f"{p}: data")]
    for read in readers:
        with time_limit(5, f"{read} on an alias bomb"), pytest.raises(ValueError) as err:
            read(bomb)
        text = str(err.value)
        assert "more than 1,000,000 nodes once YAML aliases are expanded" in text, text
        assert "\n" not in text and (str(bomb) in text or str(conf) in text), text


@pytest.mark.parametrize("command", [["place"], ["cycle"], ["node", "run", "--print-env",
                                                            "--allocation", "{}", "--devices"]])
def test_alias_bomb_is_one_line_from_the_commands(bomb: Path, command: list[str]):
    err = one_line_error(*run_cli(command + [str(bomb)], seconds=10))
    assert str(bomb) in err and "GPUFLEET_MAX_DOCUMENT_NODES" in err, err


def test_extender_refuses_an_alias_bomb_at_start(bomb: Path):
    r = subprocess.run([sys.executable, "-m", "gpufleet.cli", "extender", "--state", str(bomb),
                        "--listen", "127.0.0.1:0"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and one_line_error(r.returncode, r.stderr).startswith("gpufleet extender:")
    assert "more than 1,000,000 nodes" in r.stderr


def test_an_alias_is_counted_by_its_size_as_well(tmp_path: Path):
    text = tmp_path / "text.yaml"   # few nodes, but 100 MB of text once expanded
    text.write_text(f"s: &s {'x' * 100_000}\nnodes: [{', '.join(['*s'] * 1000)}]\n")
    with pytest.raises(ScenarioError, match=r"more than 64 MiB of text once YAML aliases are expanded"):
        read_document(text)
    looped = tmp_path / "loop.yaml"
    looped.write_text("a: &a [1, *a]\n")
    with pytest.raises(ScenarioError, match=r"alias \*a refers to a node that contains it"):
        read_document(looped)


def test_node_limit_applies_to_json_and_to_a_stream_as_a_whole(tmp_path: Path, monkeypatch):
    monkeypatch.setenv(documents.NODES_VARIABLE, "1000")
    big = tmp_path / "big.json"
    big.write_text("[" + ",".join(["1"] * 1500) + "]")
    with pytest.raises(ScenarioError, match=r"big.json\[\d+\]: more than 1,000 nodes"):
        read_document(big)
    stream = tmp_path / "stream.yaml"
    stream.write_text("---\n".join(["[" + ",".join(["1"] * 400) + "]\n"] * 3))
    with pytest.raises(ScenarioError, match="more than 1,000 nodes"):
        read_documents(stream)
    stream.write_text("---\n".join(["[" + ",".join(["1"] * 300) + "]\n"] * 3))
    assert len(read_documents(stream)) == 3
    assert read_document(big, limit=2000)[0] == 1   # the caller's own bound wins


def _limit_memory() -> None:
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))   # a reader without a bound fails


_RUN_EACH = """
import contextlib, io, json, sys
from gpufleet.cli import main
answers = []
for argv in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(argv)
        except SystemExit as e:
            code = e.code
    answers.append([code, err.getvalue()])
print(json.dumps(answers))
"""


def test_endless_files_and_huge_clusters_are_refused_before_they_take_memory():
    """/dev/zero as every kind of input, and clusters of 100 million GPUs, in a child with 4 GiB
    of address space and a timeout."""
    import json
    runs = {
        ("place", "/dev/zero"): "gpufleet place: /dev/zero: larger than 64 MiB, the limit for a file",
        ("node", "run", "--print-env", "--allocation", "@/dev/zero"):
            "gpufleet node run: /dev/zero: larger than 64 MiB, the limit for a file",
        ("simulate", "--format", "tiresias", "--policy", "fifo", "--trace", "/dev/zero", "--cluster", "4"):
            "gpufleet simulate: /dev/zero: a device, not a file",
        ("sweep", "--trace", "tiresias:/dev/zero", "--policy", "fifo"):
            "gpufleet sweep: /dev/zero: a device, not a file",
        ("simulate", "--format", "synthetic", "--policy", "fifo", "--num-jobs", "3", "--cluster", "100000000"):
            "gpufleet simulate: --cluster 100000000: 100,000,000 GPUs is more than the 1,048,576 a "
            "simulated cluster may have",
        ("sweep", "--trace", "synthetic", "--policy", "fifo", "--cluster", "v100:600000,k80:600000"):
            "gpufleet sweep: --cluster v100:600000,k80:600000: 1,200,000 GPUs is more than the "
            "1,048,576 a simulated cluster may have",
    }
    r = subprocess.run([sys.executable, "-c", _RUN_EACH, json.dumps([list(a) for a in runs])],
                       capture_output=True, text=True, timeout=120, preexec_fn=_limit_memory)
    assert r.returncode == 0, r.stderr[-2000:]
    for (code, err), expected in zip(json.loads(r.stdout), runs.values()):
        assert code in (1, 2) and one_line_error(code, err) == expected


def test_yaml_values_without_a_json_form(tmp_path: Path):
    path = tmp_path / "dates.yaml"
    path.write_text(SCENARIO + "pods: [{name: 2024-01-01, requests: {nvidia.com/gpu: 1}}]\n")
    assert [p.name for p in load_scenario(path).pending] == ["2024-01-01"]   # a date is text
    for tag in ("!!binary aGk=", "!!set {a, b}", "!!omap [{a: 1}]", "!!timestamp 2024-01-01"):
        path.write_text(f"nodes: []\npods:\n  - {tag}\n")
        with pytest.raises(ScenarioError) as err:
            load_scenario(path)
        assert f"{tag.split()[0]} has no JSON form" in str(err.value) and "line 3" in str(err.value)
        assert "\n" not in str(err.value)


# --- counts on the command line --------------------------------------------------------------------
COUNT_OPTIONS = [
    (["cycle", "s.yaml"], "--cycles", "1", "10000", ["0", "-1", "10001", "abc", "1.5", "9" * 5000]),
    (["simulate"], "--seed", "0", str(2**63 - 1), ["-1", str(2**63), str(2**70), "x"]),
    (["simulate"], "--num-jobs", "1", "1000000", ["0", "-5", "1000001"]),
    (["simulate"], "--restore-delay", "0", "1e9", ["-1", "nan", "inf", "1e10"]),
    (["sweep", "--trace", "t", "--policy", "p"], "--seeds", "1", "1000", ["0", "-3", "1001"]),
    (["sweep", "--trace", "t", "--policy", "p"], "--seed", "0", str(2**63 - 1), ["-1", str(2**64)]),
    (["sweep", "--trace", "t", "--policy", "p"], "--workers", "1", "1024", ["0", "1025"]),
    (["sweep", "--trace", "t", "--policy", "p"], "--num-jobs", "1", "1000000", ["0", "2000000"]),
    (["node", "profile", "s.py"], "--steps", "1", "1000000", ["0", "-1", "1000001"]),
    (["node", "profile", "s.py"], "--warmup", "0", "1000000", ["-1", "1000001"]),
    (["node", "profile", "s.py"], "--device", "0", "1023", ["-1", "1024"]),
    (["deviceplugin"], "--replicas", "1", "1000000", ["0", "-2", "1000001"]),
    (["deviceplugin"], "--health-interval", "0", "1e9", ["-1", "nan", "inf"]),
    (["extender", "--kube"], "--max-body-mib", "0.1", "1024", ["nan", "inf", "-1", "0", "1025", "x"]),
    (["extender", "--kube"], "--resync-s", "1", "86400", ["0", "-1", "nan", "86401"]),
    (["extender", "--kube"], "--hold-timeout-s", "1", "86400", ["0", "0.5", "inf", "1e9"]),
]


@pytest.mark.parametrize("prefix, option, low, high, bad", COUNT_OPTIONS,
                         ids=[f"{c[0][0]} {c[1]}" for c in COUNT_OPTIONS])
def test_count_options_have_a_range(prefix, option, low, high, bad):
    parser = build_parser()
    for good in (low, high):
        parser.parse_args(prefix + [option, good])
    for value in bad:
        code, err = run_cli(prefix + [f"{option}={value}"])
        line = one_line_error(code, err)
        assert code == 2 and f"argument {option}:" in line and "(see gpufleet" in line, line


def test_sweep_refuses_a_grid_larger_than_its_bound():
    code, err = run_cli(["sweep", "--trace", "synthetic", "--policy", "fifo", "las", "--seeds", "1000",
                         "--option", "restore_delay=" + ",".join(map(str, range(60)))])
    assert code == 2 and "120,000 experiments" in one_line_error(code, err)


@pytest.mark.parametrize("command", [["extender", "--state", "s.yaml"], ["place", "s.yaml"]])
@pytest.mark.parametrize("spec, message", [
    ("binpack(foo=1)", 'binpack: unknown parameter "foo"; known: none'),
    ("random(seed=-1)", 'parameter "seed" has the wrong type'),
    ("fgd(x", "missing closing parenthesis"),
    ("nope", 'unknown placement strategy "nope"'),
])
def test_a_strategy_spec_is_checked_whole_before_a_command_starts(command, spec, message):
    # s.yaml does not exist: the spec is refused before any file is read or port opened.
    code, err = run_cli(command + ["--strategy", spec])
    assert code == 2 and message in one_line_error(code, err) and "s.yaml" not in err, err


def test_the_extender_state_refuses_a_bad_strategy_or_hold_timeout():
    for kw, message in ((dict(strategy="binpack(foo=1)"), 'unknown parameter "foo"'),
                        (dict(hold_timeout_s=float("nan")), "hold_timeout_s: nan is out of range"),
                        (dict(hold_timeout_s=0), "hold_timeout_s: 0 is out of range"),
                        (dict(hold_timeout_s=10**6), "hold_timeout_s: 1000000 is out of range")):
        with pytest.raises(ValueError, match=message):
            ext_state.ExtenderState(**kw)


def test_the_extender_options_reach_the_state(tmp_path: Path, monkeypatch):
    from gpufleet.k8s.extender import server

    served = {}
    monkeypatch.setattr(server, "serve", lambda st, *a, **kw: served.update(st=st, **kw))
    (tmp_path / "s.yaml").write_text(SCENARIO)
    code, err = run_cli(["extender", "--state", str(tmp_path / "s.yaml"), "--hold-timeout-s", "5",
                         "--max-body-mib", "0.5", "--strategy", "random(seed=3)"])
    assert code == 0, err
    assert served["st"].hold_timeout_s == 5 and served["st"].strategy == "random(seed=3)"
    assert served["max_body_bytes"] == 1 << 19


# --- inputs that ended in a traceback ---------------------------------------------------------------
def _files(tmp: Path) -> dict[str, Path]:
    bodies = {
        "listname.yaml": SCENARIO + "pods: [{name: [a], requests: {nvidia.com/gpu: 1}}]\n",
        "dictname.yaml": SCENARIO + "pods: [{name: {a: 1}}, {name: {a: 1}}]\n",
        "binary.yaml": SCENARIO + "pods: [{name: p, requests: {cpu: !!binary aGk=}}]\n",
        "stamp.yaml": "actions: allocate\ntiers: [{plugins: [{name: 2024-01-01}]}]\n",
        "nvml.json": '{"devices": {}}', "nvml2.json": '{"devices": [{"index": 0}]}',
        "devices.yaml": "devices: [{minor: 0}]\nnvlink_groups: [1]\n",
        "devices2.yaml": "- 7\n", "raises.py": "def step():\n    return 1 / 0\n",
        "published.csv": "workload,sc_policy,100\na,b,c\n", "good.yaml": SCENARIO,
        "annotation.yaml": SCENARIO + "pods: [{name: p, node: n1, requests: {nvidia.com/gpu: 1}, "
                                      "annotations: {a: {b: 1}}}]\n",
    }
    for name, body in bodies.items():
        (tmp / name).write_text(body)
    return {name: tmp / name for name in bodies}


SIM = ["simulate", "--format", "synthetic", "--policy", "fifo", "--num-jobs", "3"]
SWEEP = ["sweep", "--trace", "synthetic", "--policy", "fifo", "--seeds", "1", "--num-jobs", "3",
         "--workers", "1", "--no-progress"]
TRACEBACKS = [   # (argv, text of the one-line error); {name} is a file from _files, {tmp} the folder
    (["place", "{listname.yaml}"], "pods[0]: name: expected a non-empty string, got ['a']"),
    (["cycle", "{dictname.yaml}"], "pods[0]: name: expected a non-empty string, got {'a': 1}"),
    (["place", "{binary.yaml}"], "!!binary has no JSON form"),
    (["cycle", "{good.yaml}", "--conf", "{stamp.yaml}"], "2024-01-01"),
    (["place", "{annotation.yaml}"], "annotations.a: expected text, got {'b': 1}"),
    (["place", "{good.yaml}", "--strategy", "binpack(foo=1)"], 'binpack: unknown parameter "foo"'),
    (["place", "{good.yaml}", "--strategy", "fgd(x"], "missing closing parenthesis"),
    (["node", "inventory", "--replay", "{nvml.json}"], "expected recorded NVML answers"),
    (["node", "inventory", "--replay", "{nvml2.json}"], "recorded NVML answers unusable: KeyError"),
    (["node", "inventory", "--replay", "{tmp}"], "cannot read: Is a directory"),
    (["node", "inventory", "--replay", "{tmp}/missing.json"], "cannot read: No such file"),
    (["deviceplugin", "--replay", "{nvml.json}", "--socket-dir", "{tmp}"], "expected recorded NVML"),
    (["deviceplugin", "--devices", "{devices.yaml}", "--socket-dir", "{tmp}"],
     "nvlink_groups: expected lists of GPU minors"),
    (["node", "run", "--allocation", "{}", "--print-env", "--devices", "{devices2.yaml}"],
     "devices[0]: expected a mapping"),
    (["node", "profile", "{raises.py}", "--steps", "1"], "raises.py, line 2: ZeroDivisionError"),
    (["node", "profile", "{tmp}"], "not a file"),
    (SIM + ["--seed", str(2**64)], "argument --seed: 18446744073709551616 is out of range"),
    (SIM + ["--jobs-csv", "{tmp}/missing/jobs.csv"], "--jobs-csv {tmp}/missing/jobs.csv: cannot write"),
    (SIM + ["--jobs-csv", "{tmp}"], "cannot write"),
    (SWEEP + ["--csv", "{tmp}/missing/out.csv"], "cannot write"),
    (SWEEP + ["--published", "{published.csv}"], "not the FGD study's results"),
    (SWEEP + ["--option", "tiresias_compat=[1]"], "tiresias_compat: expected true or false, got [1]"),
    (SWEEP + ["--option", "tick=1e-300"], "tick must be 0 (off) or at least 0.001 seconds"),
    (SIM + ["--cluster", "v100:1048576,k80:1"], "1,048,577 GPUs is more than the 1,048,576"),
]


@pytest.mark.parametrize("argv, message", TRACEBACKS, ids=[" ".join(a[:3]) for a, _ in TRACEBACKS])
def test_inputs_that_ended_in_a_traceback_are_one_line(tmp_path: Path, argv, message):
    names = {f"{{{name}}}": str(path) for name, path in _files(tmp_path).items()}
    names["{tmp}"] = str(tmp_path)

    def expand(text: str) -> str:
        for key, value in names.items():
            text = text.replace(key, value)
        return text

    line = one_line_error(*run_cli([expand(a) for a in argv], seconds=60))
    assert expand(message) in line, line


# --- the extender's --state reads scenarios as the scenario reader does -----------------------------
BAD_PODS = [   # (pod entry, what both readers say)
    ({"name": "p", "priority": "abc"}, 'priority: expected an integer, got "abc"'),
    ({"name": "p", "requets": {}}, 'unknown field "requets"; did you mean "requests"?'),
    ({"name": "p", "requests": {"nvidia.com/gpu": 1.5}}, "nvidia.com/gpu takes whole numbers only"),
    ({"name": "p", "requests": {"cpu": [1]}}, "requests.cpu: expected a quantity string or number"),
    ({"name": "p", "node_selector": [1]}, "node_selector: expected an object"),
    ({"name": "p", "tolerations": "abc"}, "tolerations: expected a list"),
    ({"name": "p", "gpu_models": "A100"}, 'gpu_models: wrong type: "A100"'),
    ({"name": "p", "scope": "rack"}, 'scope: "rack" is not one of none, pcie, numa'),
    ({"name": "p", "priority": 2**70}, "is out of the 64-bit range"),
    ({"name": "p", "node": ["n1"]}, "node: expected a node name, got ['n1']"),
    ({"name": "p", "node": "n1", "annotations": {"k": [1]}}, "annotations.k: expected text, got [1]"),
    ({"name": "p", "annotations": "x"}, "annotations: expected a mapping"),
    ({"name": 5}, "pods[0]: name: expected a non-empty string, got 5"),
    ({"name": ""}, "pods[0]: name: expected a non-empty string, got ''"),
]


@pytest.mark.parametrize("pod, message", BAD_PODS, ids=[m[:30] for _, m in BAD_PODS])
def test_extender_state_and_scenario_refuse_the_same_pod_entries(tmp_path: Path, pod, message):
    import yaml
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"nodes": [NODE], "pods": [pod]}))
    errors = []
    for read in (load_scenario, ext_state.load_scenario):
        with pytest.raises(ValueError) as err:
            read(path)
        errors.append(str(err.value))
    for text in errors:
        assert text.startswith(f"{path}: pods[0]") and message in text and "\n" not in text, errors


@pytest.mark.parametrize("data, message", [
    ({"nodes": [NODE], "podz": []}, 'unknown field "podz"; did you mean "pods"?'),
    ({"nodes": [NODE], "pods": "p"}, "'pods' must be a list"),
    ({"nodes": [NODE], "jobs": "j"}, "'jobs' must be a list"),
    ({"nodes": [NODE], "pods": [{"name": "p"}, {"name": "p"}]}, "pods[1]"),
    ({"nodes": [NODE], "pods": [7]}, "pods[0]: expected a mapping"),
    ([NODE], "expected a mapping with 'nodes' and 'pods'"),
])
def test_extender_state_and_scenario_refuse_the_same_scenarios(data, message):
    errors = []
    for read in (lambda d: build_scenario(d, "f.yaml"), lambda d: ext_state.state_from_scenario(d, where="f.yaml")):
        with pytest.raises(ValueError) as err:
            read(data)
        errors.append(str(err.value))
    assert all(e.startswith("f.yaml: ") and message in e for e in errors), errors


def test_extender_short_form_keeps_its_identity_fields():
    st = ext_state.state_from_scenario({"nodes": [NODE], "pods": [
        {"name": "p", "namespace": "team", "uid": "u1", "requests": {"nvidia.com/gpu": 1},
         "priority": 5, "scope": "pcie"}]})
    pod = st.find_pod("team", "p", "u1")
    assert (pod.name, pod.uid, pod.priority, pod.scope, pod.requests) == \
        ("team/p", "u1", 5, "pcie", {"nvidia.com/gpu": "1"})
    with pytest.raises(ValueError, match=r"pods\[0\] \(p\): uid: expected a non-empty string"):
        ext_state.state_from_scenario({"nodes": [NODE], "pods": [{"name": "p", "uid": 7}]})
