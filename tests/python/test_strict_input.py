"""Strict input everywhere: one quantity parser behind every Python entry point, restores that must
match the pod's request, and scenario/config files whose mistakes are one-line errors naming the
file (and leave any cluster as it was)."""
from __future__ import annotations

import json
import math
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpufleet import _core
from gpufleet._core import Cluster, Pod
from gpufleet.cli import main
from gpufleet.engine import load_config
from gpufleet.k8s import annotations as ann
from gpufleet.k8s.extender import quantity as ext_quantity
from gpufleet.scenario import ScenarioError, load_scenario

GiB = 1 << 30

# --- one quantity parser ----------------------------------------------------------------------------
GOOD = ["64", "500m", "16Gi", "16276Mi", "1.5Gi", "1e3", "1E3", "0.5", "+7", "0", "-0", "100n",
        "0.9n", "1u", "2k", "3M", "1E", "7Ei", "5.", ".5", "12e-1", "1e+2", "007",
        "9223372036854775807", "0.0000000005Ki", "1e-99999999", "1.0000000001", "0.000Gi",
        "18e17", "8191Pi"]
BAD = ["", " 1", "1 ", "1\n", "-5", "-1Gi", "1e100", "1e19", "9Ei", "9223372036854775808", "5Qi",
       "abc", "1.2.3", "0x10", "1e", "1e+", "+", ".", "Gi", "1ki", "16GB", "1_000", "1" * 200,
       "\x00", "١", "1e1.5", "1e++2", "1e99999999999", "10e18", "8Ei", "1.5e18Ki", "0.1.Gi"]


@pytest.mark.parametrize("text", GOOD)
def test_every_python_entry_point_agrees_with_the_core_on_good_quantities(text):
    value = _core.parse_quantity(text)
    assert ann.parse_quantity(text) == value
    assert ann._parse_quantity_without_core(text) == value  # nodes without the extension
    assert ext_quantity.to_int(text) == value
    exact = ext_quantity.parse(text)
    assert exact == Decimal(_core.parse_quantity_exact(text))
    assert math.ceil(exact) == value
    if exact * 1000 <= 2**63 - 1:
        assert _core.parse_milli(text) == math.ceil(exact * 1000)
    else:
        with pytest.raises(ValueError, match="too large"):
            _core.parse_milli(text)


@pytest.mark.parametrize("text", BAD)
def test_every_python_entry_point_refuses_what_the_core_refuses(text):
    with pytest.raises(ValueError) as core_error:
        _core.parse_quantity(text)
    assert "invalid quantity" in str(core_error.value) and "\n" not in str(core_error.value)
    for parse in (ann.parse_quantity, ann._parse_quantity_without_core, ext_quantity.parse,
                  ext_quantity.to_int, _core.parse_milli, _core.parse_quantity_exact):
        with pytest.raises(ValueError, match="invalid quantity"):
            parse(text)


@pytest.mark.parametrize("resource, text, expected", [
    ("nvidia.com/gpu", "2", 2), ("nvidia.com/gpu", "2000m", 2), ("nvidia.com/gpu", "1e1", 10),
    ("koordinator.sh/gpu-memory", "1.5Gi", 3 * GiB // 2), ("cpu", "0.5", 500), ("memory", "0.5", 1),
    ("nvidia.com/gpu", "1.5", None), ("nvidia.com/gpu", "500m", None), ("koordinator.sh/gpu", "50.5", None),
    ("koordinator.sh/gpu.shared", "1.5", None), ("aliyun.com/gpu-mem", "0.5", None), ("pods", "1.5", None),
    ("example.com/widget", "0.1", None),
])
def test_integer_only_resources_agree_everywhere(resource, text, expected):
    if expected is None:
        with pytest.raises(ValueError, match=f'{resource}: invalid quantity "{text}": .*whole numbers only'):
            _core.parse_resource_quantity(resource, text)
        with pytest.raises(ValueError, match="whole numbers only"):
            ext_quantity.parse(text, resource)
        with pytest.raises(ValueError, match=f'request {resource}: invalid quantity "{text}"'):
            Pod("p", {resource: text})
    else:
        assert _core.parse_resource_quantity(resource, text) == expected
        ext_quantity.parse(text, resource)


@settings(max_examples=2000, deadline=None)
@given(st.text(alphabet="0123456789.+-eEnumkKMGTPi \t", max_size=14))
def test_the_copy_for_nodes_without_the_extension_agrees_with_the_core(text):
    try:
        expected: int | None = _core.parse_quantity(text)
    except ValueError:
        expected = None
    if expected is None:
        with pytest.raises(ValueError, match="invalid quantity"):
            ann._parse_quantity_without_core(text)
    else:
        assert ann._parse_quantity_without_core(text) == expected


def test_python_values_that_are_not_quantity_text_are_refused():
    for value in (True, None, [1], 1.5e300, float("nan"), float("inf")):
        with pytest.raises(ValueError):
            ext_quantity.parse(value)
    for value in (True, None, 1.5, [1]):
        with pytest.raises(ValueError):
            ann.parse_quantity(value)  # type: ignore[arg-type]
    assert ann.parse_quantity(5) == 5
    with pytest.raises(ValueError, match="negative"):
        ann.parse_quantity(-5)


# --- restore must match the request -----------------------------------------------------------------
KOORD = "scheduling.koordinator.sh/device-allocated"


def _gpu(minor, core, memory, ratio=None):
    res = {"koordinator.sh/gpu-core": str(core), "koordinator.sh/gpu-memory": memory}
    if ratio is not None:
        res["koordinator.sh/gpu-memory-ratio"] = str(ratio)
    return {"minor": minor, "resources": res}


def _cluster():
    c = Cluster()
    c.add_node({"name": "n", "cpu": "32", "memory": "128Gi", "gpus": {"count": 4, "memory": "80Gi"}})
    c.restore_allocation(Pod("ns/b", {"nvidia.com/gpu": "1"}), "n",
                         {KOORD: json.dumps({"gpu": [_gpu(3, 100, "80Gi", 100)]})})
    return c


@pytest.mark.parametrize("requests, annotations, message", [
    ({"nvidia.com/gpu": "1"}, {KOORD: json.dumps({"gpu": [_gpu(0, 100, "80Gi"), _gpu(1, 100, "80Gi")]})},
     f"pod ns/a: annotation {KOORD} grants 2 gpu devices, the pod requests 1"),
    ({"nvidia.com/gpu": "1"}, {KOORD: "{}"}, f"pod ns/a: annotation {KOORD} grants 0 gpu devices, the pod requests 1"),
    ({"koordinator.sh/gpu": "50"}, {KOORD: json.dumps({"gpu": [_gpu(0, 100, "80Gi", 100)]})},
     "grants gpu 0 core 100%, the pod requests 50%"),
    ({"koordinator.sh/gpu": "50"}, {KOORD: json.dumps({"gpu": [_gpu(0, 10, "8Gi", 10)]})},
     "grants gpu 0 core 10%, the pod requests 50%"),
    ({"koordinator.sh/gpu": "50"}, {KOORD: json.dumps({"gpu": [_gpu(0, 50, "80Gi", 100)]})},
     "grants gpu 0 memory 80Gi, the pod requests 40Gi on that device"),
    ({"aliyun.com/gpu-mem": "8192"}, {"ALIYUN_COM_GPU_MEM_IDX": "0", "ALIYUN_COM_GPU_MEM_POD": "0"},
     "pod ns/a: annotation ALIYUN_COM_GPU_MEM_POD: a grant of 0 memory units is no grant"),
    ({"aliyun.com/gpu-mem": "8192"}, {"ALIYUN_COM_GPU_MEM_IDX": "0", "ALIYUN_COM_GPU_MEM_POD": "4096"},
     "grants gpu 0 memory 4Gi, the pod requests 8Gi"),
    ({"nvidia.com/gpu": "1"}, {KOORD: '{"gpu": [], "gpu": []}'}, 'duplicate key "gpu"'),
])
def test_restore_refuses_annotations_that_disagree_and_changes_nothing(requests, annotations, message):
    c = _cluster()
    before = c.copy()
    snapshot = c.snapshot()
    with pytest.raises(ValueError) as err:
        c.restore_allocation(Pod("ns/a", requests), "n", annotations)
    assert message in str(err.value)
    assert c == before and c.snapshot() == snapshot


def test_restore_accepts_what_placement_wrote():
    c = _cluster()
    pod = Pod("ns/a", {"koordinator.sh/gpu-core": "50", "koordinator.sh/gpu-memory-ratio": "25"})
    placed, _ = c.place(pod)
    fresh = _cluster()
    restored = fresh.restore_allocation(pod, "n", placed.annotations())
    assert [(g.minor, g.core, g.memory_bytes) for g in restored.devices] == \
        [(g.minor, g.core, g.memory_bytes) for g in placed.devices]


# --- scenario and configuration files ---------------------------------------------------------------
NODE = "{name: n1, cpu: '8', memory: 16Gi, gpus: {count: 2, memory: 16Gi}}"


def _deep(n: int) -> str:
    return "[" * n + "]" * n


@pytest.mark.parametrize("name, body, message", [
    ("top.yaml", f"nodes: [{NODE}]\npod: []", 'unknown field "pod"; did you mean "pods"?'),
    ("pod.yaml", f"nodes: [{NODE}]\npods: [{{name: p, requets: {{cpu: '1'}}}}]",
     'pods[0] (p): pod p: unknown field "requets"; did you mean "requests"?'),
    ("node.yaml", "nodes: [{name: n1, gpu: {count: 1, memory: 16Gi}}]",
     'nodes[0] (n1): node n1: unknown field "gpu"; did you mean "gpus"?'),
    ("dup.yaml", f"nodes: [{NODE}]\nnodes: []", "duplicate key 'nodes' (first at line 1)"),
    ("dupnested.yaml", "nodes: [{name: n1, cpu: '1', cpu: '2'}]", "duplicate key 'cpu'"),
    ("dup.json", '{"nodes": [], "nodes": []}', "duplicate key 'nodes'"),
    ("nan.json", '{"nodes": [{"name": "n1", "cpu": NaN}]}', "NaN is not a number JSON allows"),
    ("inf.json", '{"nodes": [{"name": "n1", "cpu": Infinity}]}', "Infinity is not a number JSON allows"),
    ("nan.yaml", "nodes: [{name: n1, cpu: .nan}]", "nodes[0].cpu: nan is not a finite number"),
    ("deep.json", '{"nodes": ' + _deep(10000) + "}", "nested deeper than 64 levels"),
    ("deep.yaml", "nodes: " + _deep(10000), "nested deeper than 64 levels"),
    ("deep70.json", '{"nodes": ' + _deep(70) + "}", "nested deeper than 64 levels"),
    ("huge.yaml", "nodes: [{name: n1, gpus: {count: 10000000, memory: 16Gi}}]",
     "10000000 GPUs (with 0 other devices) is more than the 1024 devices a node may have"),
    ("ids.yaml", "nodes: [{name: n1, devices: [{minor: 0, id: GPU-a, memory: 16Gi}, "
                 "{minor: 1, id: GPU-a, memory: 16Gi}]}]", 'device id "GPU-a" is used by another device'),
    ("nvlink.yaml", "nodes: [{name: n1, gpus: {count: 4, memory: 16Gi}, nvlink_groups: [[0, 1], [1, 2]]}]",
     "nvlink_groups[1] overlaps nvlink_groups[0]"),
    ("taint.yaml", "nodes: [{name: n1, taints: [{key: k, effect: NoSchedul}]}]",
     'effect "NoSchedul" is not one of NoSchedule, PreferNoSchedule, NoExecute'),
    ("frac.yaml", f"nodes: [{NODE}]\npods: [{{name: p, requests: {{nvidia.com/gpu: 1.5}}}}]",
     'request nvidia.com/gpu: invalid quantity "1.5": nvidia.com/gpu takes whole numbers only'),
    ("shared0.yaml", f"nodes: [{NODE}]\npods: [{{name: p, requests: {{koordinator.sh/gpu.shared: 0}}}}]",
     "koordinator.sh/gpu.shared=0"),
    ("space.yaml", "nodes: [{name: n1, memory: ' 16Gi'}]", 'invalid quantity " 16Gi": whitespace is not allowed'),
    ("annot.yaml", f"nodes: [{NODE}]\npods: [{{name: p, requests: {{nvidia.com/gpu: 1}}, node: n1, "
                   "annotations: {ALIYUN_COM_GPU_MEM_IDX: '0,1', ALIYUN_COM_GPU_MEM_POD: '100'}}]",
     "grants 2 gpu devices, the pod requests 1"),
])
def test_bad_scenario_files_are_one_line_errors_naming_the_file(tmp_path, name, body, message):
    path = tmp_path / name
    path.write_text(body)
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    text = str(err.value)
    assert text.startswith(str(path)) and message in text, text
    assert "\n" not in text


def test_binary_junk_is_a_one_line_error(tmp_path):
    for name, data in (("junk.yaml", b"\x7fELF\x02\x01\x01\x00\xff\xfe"), ("junk.json", b"\x00\x01{"),
                       ("nul.yaml", b"nodes: [\x00]")):
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(ScenarioError) as err:
            load_scenario(path)
        assert str(err.value).startswith(str(path)) and "\n" not in str(err.value)


def test_config_files_are_read_strictly(tmp_path):
    cases = {
        "dup.yaml": ("actions: allocate\nactions: backfill\ntiers: []", "duplicate key 'actions'"),
        "typo.yaml": ("actions: allocate\ntier: [{plugins: [predicates]}]",
                      'scheduler configuration: unknown field "tier"; did you mean "tiers"?'),
        "nan.json": ('{"actions": "allocate", "tiers": NaN}', "NaN is not a number JSON allows"),
        "deep.json": ('{"actions": ' + _deep(10000) + "}", "nested deeper than 64 levels"),
    }
    for name, (body, message) in cases.items():
        path = tmp_path / name
        path.write_text(body)
        with pytest.raises(ValueError) as err:
            load_config(path)
        assert str(err.value).startswith(str(path)) and message in str(err.value), str(err.value)
        assert "\n" not in str(err.value)


def test_api_errors_leave_the_cluster_unchanged():
    c = _cluster()
    before = c.copy()
    bad_nodes = [
        {"name": "m", "gpus": {"count": 10_000_000, "memory": "16Gi"}},
        {"name": "m", "cpus": "8"},
        {"name": "m", "taints": [{"key": "k", "effect": "Sometimes"}]},
        {"name": "m", "gpus": {"count": 4, "memory": "16Gi"}, "nvlink_groups": [[0, 1], [0, 1]]},
        {"name": "m", "memory": "-1Gi"},
    ]
    for spec in bad_nodes:
        with pytest.raises(ValueError, match="node m"):
            c.add_node(spec)
        assert c == before
    # Python floats with no JSON form are a ValueError, not a parse failure inside the core.
    for bad in (float("nan"), float("inf")):
        with pytest.raises(ValueError, match="NaN and infinity"):
            c.add_node({"name": "m", "cpu": bad})
        with pytest.raises(ValueError, match="NaN and infinity"):
            Pod.from_dict({"name": "p", "requests": {"cpu": bad}})
        assert c == before


# --- the command line -------------------------------------------------------------------------------
def test_cli_place_and_cycle_print_one_line_and_exit_non_zero(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text(f"nodes: [{NODE}]\njbos: []")
    for argv in (["place", str(bad)], ["cycle", str(bad)]):
        assert main(argv) != 0
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and 'unknown field "jbos"; did you mean "jobs"?' in err, err
    conf = tmp_path / "conf.yaml"
    conf.write_text("actions: allocate\nactions: allocate\n")
    good = tmp_path / "good.yaml"
    good.write_text(f"nodes: [{NODE}]")
    assert main(["cycle", str(good), "--conf", str(conf)]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "duplicate key 'actions'" in err, err
    assert err.count(str(conf)) == 1, err


def test_cli_subprocess_has_no_traceback_on_deep_or_junk_files(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text('{"nodes": ' + _deep(100000) + "}")
    junk = tmp_path / "junk.yaml"
    junk.write_bytes(bytes(range(256)))
    for path in (deep, junk):
        r = subprocess.run([sys.executable, "-m", "gpufleet.cli", "place", str(path)],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode != 0
        assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert str(path) in r.stderr
