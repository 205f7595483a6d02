"""Python specs reach the core as values (no JSON text): what JSON cannot say is refused clearly."""
from __future__ import annotations

import numpy as np
import pytest

from gpufleet import Cluster, Pod


def _cluster() -> Cluster:
    c = Cluster()
    c.add_node({"name": "n0", "cpu": "8", "memory": "32Gi", "gpus": {"count": 2, "memory": "16Gi"}})
    return c


def _fields(pod: Pod) -> tuple:
    return (pod.name, pod.cpu_milli, pod.memory_bytes, pod.priority, pod.scope, pod.gpu_models,
            [(d.type, d.count, d.core, d.memory_bytes) for d in pod.devices])


def test_a_pod_from_a_dict_equals_one_from_keywords():
    requests = {"cpu": "1500m", "memory": "2Gi", "nvidia.com/gpu": 2}
    from_dict = Pod.from_dict({"name": "p", "requests": requests, "priority": 3,
                               "gpu_models": ["A100"], "scope": "numa"})
    from_keywords = Pod("p", requests, priority=3, gpu_models=["A100"], scope="numa")
    assert _fields(from_dict) == _fields(from_keywords)
    assert _fields(from_dict)[1:4] == (1500, 2 << 30, 3)
    allocation, reason = _cluster().place({"name": "q", "requests": requests})
    assert allocation is not None, reason


def test_numpy_integers_are_integers():
    c = _cluster()
    c.add_node({"name": "n1", "cpu": np.int64(4), "memory": "8Gi",
                "gpus": {"count": np.int32(1), "memory": "16Gi"}})
    spec = c.node("n1")
    assert spec["cpu"] == "4" and [d["minor"] for d in spec["devices"]] == [0]


def test_the_error_names_where_the_bad_value_is():
    c = _cluster()
    before = c.copy()
    with pytest.raises(ValueError, match=r"gpus\.memory.*NaN and infinity"):
        c.add_node({"name": "m", "gpus": {"count": 1, "memory": float("inf")}})
    with pytest.raises(ValueError, match=r"out of the 64-bit range"):
        c.add_node({"name": "m", "cpu": 10**30})
    with pytest.raises(TypeError, match="keys must be strings"):
        c.add_node({"name": "m", "labels": {("a", "b"): "c"}})
    with pytest.raises(TypeError, match=r"requests\.cpu: a set is not a JSON value"):
        Pod.from_dict({"name": "p", "requests": {"cpu": {1}}})
    assert c == before


def test_nesting_is_bounded():
    deep: dict = {}
    inner = deep
    for _ in range(200):
        inner["x"] = {}
        inner = inner["x"]
    with pytest.raises(ValueError, match="nested deeper than 64 levels"):
        Pod.from_dict({"name": "p", "requests": {}, "labels": deep})


def test_dicts_come_back_as_dicts():
    c = _cluster()
    allocation, reason = c.place({"name": "p", "requests": {"nvidia.com/gpu": 1}})
    assert allocation is not None, reason
    allocated = allocation.device_allocated()
    assert isinstance(allocated, dict) and isinstance(allocated["gpu"], list)
    assert allocated["gpu"][0]["minor"] in (0, 1)
