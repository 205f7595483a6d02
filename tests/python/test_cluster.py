"""The Python API of the foundation: building clusters, filtering and placing pods, reading
usage as NumPy arrays, releasing, snapshot/restore, and errors with the core's message."""
from __future__ import annotations

import json

import numpy as np
import pytest

import gpufleet
from gpufleet import Cluster, Pod

from conftest import gpu_node

MiB = 1 << 20
GiB = 1 << 30


def gpushare_node(name: str, free_mib: list[int], card_mib: int = 16276) -> tuple[Cluster, list[str]]:
    """A node whose cards have the given free MiB, made by binding filler pods."""
    c = Cluster()
    c.add_node({"name": name, "cpu": "32", "memory": "64Gi",
                "devices": [{"minor": i, "resources": {"koordinator.sh/gpu-memory": f"{card_mib}Mi"}}
                            for i in range(len(free_mib))]})
    fillers = []
    for i, free in enumerate(free_mib):
        used = card_mib - free
        if used:
            ann = {"ALIYUN_COM_GPU_MEM_IDX": str(i), "ALIYUN_COM_GPU_MEM_POD": str(used)}
            c.restore_allocation(Pod(f"fill-{i}", {"aliyun.com/gpu-mem": str(used)}), name, ann)
            fillers.append(f"fill-{i}")
    return c, fillers


def test_quantities_parse_at_the_edge():
    assert gpufleet.parse_quantity("16Gi") == 16 * GiB
    assert gpufleet.parse_quantity("16276Mi") == 16276 * MiB
    assert gpufleet.parse_quantity("85198045184") == 85198045184
    assert gpufleet.parse_milli("500m") == 500
    assert gpufleet.parse_milli("64") == 64000
    with pytest.raises(ValueError, match="invalid quantity \"12Zi\""):
        gpufleet.parse_quantity("12Zi")


def test_request_vocabularies_normalise_to_one_device_request():
    whole = Pod("a", {"nvidia.com/gpu": "2"}).devices[0]
    assert (whole.type, whole.count, whole.core, whole.memory_ratio, whole.whole) == ("gpu", 2, 100, 100, True)
    half = Pod("b", {"koordinator.sh/gpu": "50"}).devices[0]
    assert (half.count, half.core, half.memory_ratio, half.whole) == (1, 50, 50, False)
    share = Pod("c", {"aliyun.com/gpu-mem": "8138"}).devices[0]
    assert (share.count, share.core, share.memory_bytes) == (1, 0, 8138 * MiB)
    shared2 = Pod("d", {"koordinator.sh/gpu.shared": "2", "koordinator.sh/gpu-core": "100",
                        "koordinator.sh/gpu-memory-ratio": "100"}).devices[0]
    assert (shared2.count, shared2.core, shared2.memory_ratio) == (2, 50, 50)


@pytest.mark.parametrize("requests, rule", [
    ({"koordinator.sh/gpu-core": "50"}, "gpu-core alone is invalid"),
    ({"koordinator.sh/gpu": "150"}, "must be a multiple of 100"),
    ({"nvidia.com/gpu": "1", "koordinator.sh/gpu-memory": "1Gi"}, "mixing nvidia.com/gpu"),
    ({"koordinator.sh/gpu.shared": "2", "koordinator.sh/gpu-core": "50",
      "koordinator.sh/gpu-memory-ratio": "250"}, "at most 200"),
    ({"koordinator.sh/gpu.shared": "4", "koordinator.sh/gpu-core": "50",
      "koordinator.sh/gpu-memory-ratio": "50"}, "multiples of 4"),
    ({"nvidia.com/gpu": "two"}, "invalid quantity"),
    ({"koordinator.sh/gpu-cores": "50"}, "unknown resource name \"koordinator.sh/gpu-cores\""),
    ({"example.com/widget": "1"}, None),  # other extended resources are ignored, like kube-scheduler
])
def test_invalid_requests_name_the_rule(requests, rule):
    if rule is None:
        assert Pod("p", requests).devices == []
        return
    with pytest.raises(ValueError, match=rule):
        Pod("p", requests)


def test_gpushare_filter_example_checks_one_card_not_node_totals():
    # Three nodes each with 8138 MiB free in total; only n2 has it on one card.
    c = Cluster()
    free = {"n1": [4069, 4069], "n2": [8138, 0], "n3": [2000, 6138]}
    for name, cards in free.items():
        c.add_node({"name": name, "cpu": "32", "memory": "64Gi",
                    "devices": [{"minor": i, "resources": {"koordinator.sh/gpu-memory": "16276Mi"}}
                                for i in range(2)]})
        for i, f in enumerate(cards):
            ann = {"ALIYUN_COM_GPU_MEM_IDX": str(i), "ALIYUN_COM_GPU_MEM_POD": str(16276 - f)}
            c.restore_allocation(Pod(f"{name}-{i}", {"aliyun.com/gpu-mem": str(16276 - f)}), name, ann)
    pod = Pod("want", {"aliyun.com/gpu-mem": "8138"})
    results = {n: c.filter(pod, n) for n in free}
    assert results["n2"].ok
    for n in ("n1", "n3"):
        assert results[n].code == "Unschedulable"
        assert results[n].reason == "Insufficient GPU memory in one device"


def test_gpushare_bind_example_picks_best_fit_card():
    c, _ = gpushare_node("n", [12207, 8138, 4069, 16276])
    allocation, reason = c.place(Pod("want", {"aliyun.com/gpu-mem": "8138"}), "binpack")
    assert reason == ""
    assert [(g.minor, g.memory_bytes) for g in allocation.devices] == [(1, 8138 * MiB)]
    ann = allocation.annotations(gpushare=True)
    assert ann["ALIYUN_COM_GPU_MEM_IDX"] == "1"
    assert ann["ALIYUN_COM_GPU_MEM_POD"] == "8138"
    assert ann["ALIYUN_COM_GPU_MEM_DEV"] == "16276"
    assert ann["ALIYUN_COM_GPU_MEM_ASSIGNED"] == "false"
    assert json.loads(ann["scheduling.koordinator.sh/device-allocated"]) == {
        "gpu": [{"minor": 1, "resources": {"koordinator.sh/gpu-core": "0",
                                           "koordinator.sh/gpu-memory": "8138Mi",
                                           "koordinator.sh/gpu-memory-ratio": "50"}}]}


def test_spread_and_binpack_choose_differently():
    c = Cluster()
    c.add_node(gpu_node("busy"))
    c.add_node(gpu_node("idle"))
    c.reserve(Pod("warm", {"nvidia.com/gpu": "1"}), "busy")
    pod = Pod("p", {"koordinator.sh/gpu": "50"})
    assert c.plan(pod, "busy", "binpack").node == "busy"
    assert c.place(pod, "spread", commit=False)[0].node == "idle"
    c.unreserve("p")
    assert c.place(pod, "binpack")[0].node == "busy"


def test_memory_ratio_means_different_bytes_on_different_cards():
    c = Cluster()
    c.add_node(gpu_node("big", count=1, memory="80Gi", model="A100"))
    c.add_node(gpu_node("small", count=1, memory="16Gi"))
    pod = Pod("p", {"koordinator.sh/gpu-core": "50", "koordinator.sh/gpu-memory-ratio": "50"})
    assert c.plan(pod, "big").devices[0].memory_bytes == 40 * GiB
    assert c.plan(pod, "small").devices[0].memory_bytes == 8 * GiB


def test_unresolvable_vs_unschedulable():
    c = Cluster()
    c.add_node({"name": "cpu-only", "cpu": "8", "memory": "16Gi"})
    c.add_node(gpu_node("g", count=1))
    pod = Pod("p", {"nvidia.com/gpu": "1"})
    assert c.filter(pod, "cpu-only").code == "UnschedulableAndUnresolvable"
    c.reserve(Pod("holder", {"nvidia.com/gpu": "1"}), "g")
    f = c.filter(pod, "g")
    assert (f.code, f.reason) == ("Unschedulable", "Insufficient gpu devices")
    with pytest.raises(KeyError, match="node nope does not exist"):
        c.filter(pod, "nope")


def test_unhealthy_devices_are_never_chosen():
    c = Cluster()
    c.add_node(gpu_node("n", count=2))
    c.set_device_health("n", 0, False)
    a, _ = c.place(Pod("p", {"nvidia.com/gpu": "1"}))
    assert a.devices[0].minor == 1
    allocation, reason = c.place(Pod("q", {"nvidia.com/gpu": "1"}))
    assert allocation is None and "Insufficient gpu devices" in reason


def test_reserve_unreserve_commit_release_lifecycle():
    c = Cluster()
    c.add_node(gpu_node("n", count=1))
    before = c.snapshot()
    a = c.reserve(Pod("p", {"nvidia.com/gpu": "1"}), "n")
    assert a.state == "Reserved"
    c.unreserve("p")
    c.unreserve("p")  # idempotent
    assert c.snapshot() == before
    c.reserve(Pod("p", {"nvidia.com/gpu": "1"}), "n")
    c.commit("p")
    assert c.allocation("p").state == "Bound"
    with pytest.raises(ValueError, match="is bound"):
        c.unreserve("p")
    c.release("p")
    with pytest.raises(KeyError, match="holds no allocation"):
        c.release("p")
    c.check_invariants()


def test_failed_operations_leave_state_unchanged():
    c = Cluster()
    c.add_node(gpu_node("n", count=1))
    c.reserve(Pod("p", {"nvidia.com/gpu": "1"}), "n")
    before = c.snapshot()
    with pytest.raises(ValueError, match="does not fit"):
        c.reserve(Pod("q", {"koordinator.sh/gpu": "10"}), "n")
    with pytest.raises(ValueError, match="would over-commit"):
        c.restore_allocation(Pod("r", {"aliyun.com/gpu-mem": "10"}), "n",
                             {"ALIYUN_COM_GPU_MEM_IDX": "0", "ALIYUN_COM_GPU_MEM_POD": "10"})
    with pytest.raises(ValueError, match="already exists"):
        c.add_node(gpu_node("n"))
    with pytest.raises(ValueError, match="still holds pod p"):
        c.remove_node("n")
    assert c.snapshot() == before


def test_device_usage_arrays_are_zero_copy_views():
    c = Cluster()
    c.add_node(gpu_node("n", count=2))
    usage = c.device_usage()
    view = usage["memory_used"]
    assert not view.flags.writeable
    assert view.tolist() == [0, 0]
    c.place(Pod("p", {"koordinator.sh/gpu-memory": "4Gi", "koordinator.sh/gpu-core": "10"}))
    # The same array sees the placement: it is a view of the core's buffer, not a copy.
    assert int(view.sum()) == 4 * GiB
    assert np.array_equal(usage["core_capacity"], [100, 100])
    c.add_node(gpu_node("m", count=2))  # growing may move the buffer; the old view stays valid
    assert view.tolist() == [4 * GiB, 0]
    assert c.device_usage()["memory_used"].tolist() == [4 * GiB, 0, 0, 0]


def test_device_usage_is_one_row_per_device_for_a_data_frame():
    """Every column has one entry per device (a node's name repeated for each of its devices, a
    node without devices absent), so pandas takes the answer as it is."""
    import pandas as pd

    c = Cluster()
    c.add_node(gpu_node("a", count=2))
    c.add_node({"name": "cpu-only", "cpu": "8", "memory": "16Gi"})
    c.add_node(gpu_node("b", count=1, model="A100", memory="40Gi"))
    c.place(Pod("p", {"nvidia.com/gpu": 1}), nodes=["b"])
    for copy in (False, True):
        frame = pd.DataFrame(c.device_usage(copy=copy))
        assert len(frame) == c.num_devices == 3
        assert frame["node_name"].tolist() == ["a", "a", "b"]
        assert frame["node"].tolist() == [0, 0, 2]  # the index in node_names() order
        assert frame["minor"].tolist() == [0, 1, 0]
        assert frame["model"].tolist() == ["V100M16", "V100M16", "A100"]
        assert frame["core_used"].tolist() == [0, 0, 100]
        assert frame.groupby("node_name")["memory_capacity"].sum().to_dict() == \
            {"a": 32 * GiB, "b": 40 * GiB}


def test_place_returns_a_named_result_that_is_still_a_tuple():
    from gpufleet.cluster_results import PlaceResult

    c = Cluster()
    c.add_node(gpu_node("n", count=1))
    placed = c.place(Pod("p", {"nvidia.com/gpu": 1}))
    assert isinstance(placed, tuple) and type(placed) is PlaceResult
    assert placed.allocation is not None and placed.allocation.node == "n"
    assert placed.reason == "" and placed == (placed.allocation, "")
    alloc, reason = placed
    assert alloc is placed.allocation and reason == ""
    refused = c.place(Pod("q", {"nvidia.com/gpu": 1}))
    assert refused.allocation is None and "Insufficient" in refused.reason
    assert refused == (None, refused.reason) and refused._fields == ("allocation", "reason")
    assert c.allocation("q") is None and c.allocation("p").node == "n"


def test_snapshot_round_trip_and_restore_after_restart():
    c = Cluster()
    c.add_node(gpu_node("n", count=2))
    a, _ = c.place(Pod("p", {"koordinator.sh/gpu": "50"}))
    text = c.snapshot()
    again = Cluster.restore(text)
    assert again == c and again.snapshot() == text
    # A restart from annotations gives back the same device and refuses a double allocation.
    fresh = Cluster()
    fresh.add_node(gpu_node("n", count=2))
    pod = Pod("p", {"koordinator.sh/gpu": "50"})
    restored = fresh.restore_allocation(pod, "n", a.annotations())
    assert [(g.minor, g.core) for g in restored.devices] == [(a.devices[0].minor, 50)]
    with pytest.raises(ValueError, match="already holds"):
        fresh.restore_allocation(pod, "n", a.annotations())
    with pytest.raises(ValueError, match="not JSON"):
        Cluster.restore("{")


def test_place_many_returns_node_indices():
    c = Cluster()
    for i in range(3):
        c.add_node(gpu_node(f"n{i}", count=1))
    pods = [Pod(f"p{i}", {"nvidia.com/gpu": "1"}) for i in range(4)]
    idx = c.place_many(pods, "spread")
    assert sorted(idx[:3].tolist()) == [0, 1, 2] and idx[3] == -1
    c.check_invariants()


def test_strategies_are_registered():
    assert {"binpack", "spread", "topology"} <= set(gpufleet.strategies())
    assert gpufleet._core.registry_duplicates() == []
    with pytest.raises(KeyError, match="unknown placement strategy \"nope\""):
        Cluster().place(Pod("p"), "nope")


def test_batch_filter_and_score_match_single_calls():
    c = Cluster()
    c.add_node(gpu_node("a", count=1))
    c.add_node(gpu_node("b", count=2))
    c.add_node({"name": "cpu", "cpu": "8", "memory": "16Gi"})
    c.reserve(Pod("held", {"nvidia.com/gpu": "1"}), "a")
    pod = Pod("p", {"nvidia.com/gpu": "1"})
    names = ["a", "b", "cpu", "ghost"]
    codes, reasons = c.filter_nodes(pod, names)
    assert codes.tolist() == [1, 0, 2, -1]
    assert reasons[0] == c.filter(pod, "a").reason == "Insufficient gpu devices"
    assert reasons[2] == c.filter(pod, "cpu").reason
    scores = c.score_nodes(pod, names, "spread")
    assert scores[1] == pytest.approx(c.score(pod, "b", "spread"))
    assert np.isnan(scores[3])
