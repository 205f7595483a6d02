"""The kube-scheduler extender: protocol shapes, conversion, bind transactions, restart, preempt."""
from __future__ import annotations

import argparse
import json
import sys
import time
import types
import warnings
from typing import Any, Optional

import pytest

import gpufleet

API = gpufleet

with warnings.catch_warnings():  # starlette >= 1.x nudges towards httpx2; httpx works
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient  # noqa: E402

from gpufleet.k8s.extender import convert, protocol  # noqa: E402
from gpufleet.k8s.extender.app import UNKNOWN_NODE, create_app  # noqa: E402
from gpufleet.k8s.extender.binder import KubeBinder, MemoryBinder  # noqa: E402
from gpufleet.k8s.extender.kube import load_kube, reconcile  # noqa: E402
from gpufleet.k8s.extender.state import (ANN_DEVICE_ALLOCATED, load_scenario,  # noqa: E402
                                         state_from_scenario)

GiB = 1 << 30
MiB = 1 << 20
P = "/gpufleet"


# ---- builders ----------------------------------------------------------------------------------
def gpu(minor: int, mem_gib: int = 16, model: str = "V100M16") -> dict[str, Any]:
    return {"type": "gpu", "minor": minor, "id": f"GPU-{minor}", "model": model, "health": True,
            "resources": {"koordinator.sh/gpu-core": "100",
                          "koordinator.sh/gpu-memory": f"{mem_gib}Gi",
                          "koordinator.sh/gpu-memory-ratio": "100"},
            "topology": {"socketID": 0, "nodeID": 0, "pcieID": f"pci{minor // 2}",
                         "busID": f"0000:00:0{minor}.0"}}


def node(name: str, gpus: int = 2, mem_gib: int = 16, labels: Optional[dict] = None,
         taints: Optional[list] = None) -> dict[str, Any]:
    return {"name": name, "cpu": "64", "memory": "256Gi", "pods": 110, "labels": labels or {},
            "taints": taints or [], "devices": [gpu(i, mem_gib) for i in range(gpus)]}


def kpod(name: str, requests: dict[str, str], ns: str = "default", uid: Optional[str] = None,
         limits: Optional[dict] = None, annotations: Optional[dict] = None,
         node_selector: Optional[dict] = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "uid": uid or f"uid-{name}",
                         "annotations": annotations or {}},
            "spec": {"schedulerName": "default-scheduler", "nodeSelector": node_selector or {},
                     "containers": [{"name": "main", "image": "busybox", "resources": {
                         "requests": requests, "limits": limits or {}}}]}}


def knode(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {}},
            "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110"}}}


def make(scenario: dict[str, Any], strategy: str = "binpack", **kw: Any):
    binder = kw.pop("binder", None) or MemoryBinder()
    st = state_from_scenario(scenario, api=API, strategy=strategy, binder=binder, **kw)
    return st, TestClient(create_app(st, P)), binder


def filter_args(pod: dict, names: list[str]) -> dict[str, Any]:
    return {"Pod": pod, "Nodes": None, "NodeNames": names}


def gshare_pod(name: str, mib: int, **kw: Any) -> dict[str, Any]:
    return kpod(name, {"aliyun.com/gpu-mem": str(mib)}, **kw)


def bound_gshare(name: str, node_name: str, idx: int, mib: int) -> dict[str, Any]:
    return {"name": name, "requests": {"aliyun.com/gpu-mem": str(mib)}, "node": node_name,
            "annotations": {"ALIYUN_COM_GPU_MEM_IDX": str(idx), "ALIYUN_COM_GPU_MEM_POD": str(mib),
                            "ALIYUN_COM_GPU_MEM_ASSIGNED": "true"}}


def gpushare_scenario() -> dict[str, Any]:
    """gpushare's worked example: n1, n2, n3 each have at least 8 GiB free in total, but only n3
    has 8 GiB free on a single card."""
    return {"nodes": [node("n1"), node("n2"), node("n3")],
            "pods": [bound_gshare("a1", "n1", 0, 12 * 1024), bound_gshare("a2", "n1", 1, 12 * 1024),
                     bound_gshare("b1", "n2", 0, 10 * 1024), bound_gshare("b2", "n2", 1, 10 * 1024),
                     bound_gshare("c1", "n3", 0, 14 * 1024), bound_gshare("c2", "n3", 1, 2 * 1024)]}


def used(st, node_name: str) -> dict[int, tuple[int, int]]:
    out = {}
    for d in st.usage()["nodes"][node_name]["devices"]:
        out[d["minor"]] = (d["core_used"], d["memory_used"])
    return out


# ---- convert -----------------------------------------------------------------------------------
def test_pod_requests_sum_containers_limits_and_init_max():
    pod = kpod("p", {"cpu": "500m", "memory": "1Gi"}, limits={"nvidia.com/gpu": "1"})
    pod["spec"]["containers"].append({"name": "side", "resources": {
        "requests": {"cpu": "1500m", "koordinator.sh/gpu-memory": "2Gi"}}})
    pod["spec"]["initContainers"] = [{"name": "init", "resources": {"requests": {"cpu": "4"}}}]
    pod["metadata"]["annotations"] = {convert.ANN_SCOPE: "PCIe"}
    args = convert.pod_args(pod)
    assert args.name == "default/p" and args.uid == "uid-p" and args.scope == "pcie"
    assert args.requests == {"cpu": "4", "memory": str(GiB), "nvidia.com/gpu": "1",
                             "koordinator.sh/gpu-memory": str(2 * GiB)}


def test_quantities_are_exact_and_round_up():
    from decimal import Decimal

    from gpufleet.k8s.extender import quantity

    assert quantity.parse("1.5Gi") == Decimal(3 * (1 << 29)) and quantity.parse("1e3") == 1000
    assert quantity.to_int("0.5") == 1
    # Container requests are added exactly by the core (250m + 0.75 is one whole CPU).
    pod = kpod("p", {"cpu": "250m", "memory": "100n"})
    pod["spec"]["containers"].append({"name": "b", "resources": {"requests": {"cpu": "0.75"}}})
    assert convert.effective_requests(pod) == {"cpu": "1", "memory": "0.0000001"}
    for bad in ("", "-1", "1Qi", "abc", True, None, [1]):
        with pytest.raises(ValueError):
            quantity.parse(bad)


def test_pod_conversion_errors_name_object_and_field():
    bad = kpod("p", {"cpu": "lots"})
    with pytest.raises(convert.ConvertError, match=r"pod default/p.*containers\[0\].*cpu"):
        convert.pod_args(bad)
    with pytest.raises(convert.ConvertError, match="metadata.name"):
        convert.pod_args({"metadata": {}})
    p = kpod("q", {})
    p["metadata"]["annotations"] = {convert.ANN_SCOPE: "rack"}
    with pytest.raises(convert.ConvertError, match="default/q.*topology-scope"):
        convert.pod_args(p)


def test_node_from_devices_annotation_gfd_label_and_gpushare():
    n = knode("a")
    n["metadata"]["annotations"] = {convert.ANN_DEVICES: json.dumps([gpu(0), gpu(1)])}
    assert [d["minor"] for d in convert.node_spec(n)["devices"]] == [0, 1]

    n = knode("b")
    n["status"]["allocatable"]["nvidia.com/gpu"] = "4"
    n["metadata"]["labels"] = {"nvidia.com/gpu.memory": "81920", "nvidia.com/gpu.product": "H100"}
    n["spec"] = {"taints": [{"key": "gpu", "value": "yes", "effect": "NoSchedule"}]}
    spec = convert.node_spec(n)
    assert spec["cpu"] == "64" and spec["pods"] == 110 and spec["taints"][0]["key"] == "gpu"
    assert len(spec["devices"]) == 4 and spec["devices"][3]["model"] == "H100"
    assert spec["devices"][0]["resources"]["koordinator.sh/gpu-memory"] == str(81920 * MiB)

    n = knode("c")
    n["status"]["allocatable"].update({"aliyun.com/gpu-count": "2", "aliyun.com/gpu-mem": "32768"})
    devs = convert.node_spec(n)["devices"]
    assert [d["resources"]["koordinator.sh/gpu-memory"] for d in devs] == [str(16 * GiB)] * 2

    n = knode("d")
    n["status"]["allocatable"]["nvidia.com/gpu"] = "2"
    with pytest.raises(convert.ConvertError, match="node d.*nvidia.com/gpu.memory"):
        convert.node_spec(n)
    n = knode("e")
    n["metadata"]["annotations"] = {convert.ANN_DEVICES: "[not json"}
    with pytest.raises(convert.ConvertError, match="node e.*gpufleet.io/devices"):
        convert.node_spec(n)


def test_node_mig_strategy_label_decides_what_nvidia_gpu_means():
    """GPU feature discovery's nvidia.com/mig.strategy label reaches the node spec."""
    split = {"type": "gpu", "minor": 0, "id": "GPU-0", "model": "A100-80GB",
             "mig": [{"profile": "1g.10gb", "start": s, "id": f"MIG-{s}"} for s in range(7)]}

    def spec(label: Optional[str]) -> dict[str, Any]:
        n = knode("m")
        n["metadata"]["annotations"] = {convert.ANN_DEVICES: json.dumps([split])}
        if label is not None:
            n["metadata"]["labels"]["nvidia.com/mig.strategy"] = label
        return convert.node_spec(n)

    assert "mig_strategy" not in spec(None) and "mig_strategy" not in spec("none")
    single = spec("single")
    assert single["mig_strategy"] == "single"
    c = gpufleet.Cluster()
    c.add_node(single)
    alloc, reason = c.place({"name": "two", "requests": {"nvidia.com/gpu": "2"}})
    assert alloc is not None, reason
    assert [d["minor"] for d in alloc.device_allocated()["gpu"]] == [0, 1]  # instances 0 and 1 of GPU 0
    mixed = gpufleet.Cluster()
    mixed.add_node(spec("mixed"))
    alloc, reason = mixed.place({"name": "whole", "requests": {"nvidia.com/gpu": "1"}})
    assert alloc is None and reason
    alloc, reason = mixed.place({"name": "slice", "requests": {"nvidia.com/mig-1g.10gb": "1"}})
    assert alloc is not None, reason
    with pytest.raises(convert.ConvertError, match="node m: label nvidia.com/mig.strategy='half'"):
        spec("half")


def test_normalise_is_case_insensitive_for_protocol_keys_only():
    body = {"pod": {"metadata": {"name": "x"}, "spec": {"nodeSelector": {"A": "b"}}},
            "NODENAMES": ["n1"], "extra": 1}
    out = protocol.normalise(body, protocol.FILTER_ARGS)
    assert out == {"Pod": {"metadata": {"name": "x"}, "spec": {"nodeSelector": {"A": "b"}}},
                   "NodeNames": ["n1"]}
    pre = {"nodenametometavictims": {"Node-A": {"pods": [{"uid": "u1"}], "numpdbviolations": 2}}}
    out = protocol.normalise(pre, protocol.PREEMPT_ARGS)
    assert out["NodeNameToMetaVictims"] == {"Node-A": {"Pods": [{"UID": "u1"}],
                                                       "NumPDBViolations": 2}}
    with pytest.raises(protocol.ProtocolError, match="Pods"):
        protocol.normalise({"NodeNameToMetaVictims": {"n": {"Pods": 3}}}, protocol.PREEMPT_ARGS)


# ---- filter --------------------------------------------------------------------------------------
def test_filter_gpushare_worked_example_only_one_card_fits():
    st, client, _ = make(gpushare_scenario())
    r = client.post(f"{P}/filter", json=filter_args(gshare_pod("new", 8 * 1024), ["n1", "n2", "n3"]))
    assert r.status_code == 200
    out = r.json()
    assert out["Error"] == "" and out["NodeNames"] == ["n3"] and out["Nodes"] is None
    assert set(out["FailedNodes"]) == {"n1", "n2"}
    assert set(out["FailedNodes"].values()) == {"Insufficient GPU memory in one device"}
    assert out["FailedAndUnresolvableNodes"] == {}


def test_filter_nodes_mode_returns_node_objects():
    st, client, _ = make(gpushare_scenario())
    node_list = {"apiVersion": "v1", "kind": "NodeList", "metadata": {},
                 "items": [knode("n1"), knode("n2"), knode("n3")]}
    r = client.post(f"{P}/filter", json={"Pod": gshare_pod("new", 8 * 1024), "Nodes": node_list})
    out = r.json()
    assert out["NodeNames"] is None and out["Error"] == ""
    assert [n["metadata"]["name"] for n in out["Nodes"]["items"]] == ["n3"]
    assert out["Nodes"]["kind"] == "NodeList"
    assert set(out["FailedNodes"]) == {"n1", "n2"}


def test_filter_unknown_nodes_and_unresolvable():
    st, client, _ = make({"nodes": [node("n1", labels={"zone": "a"}), node("n2")]})
    pod = kpod("p", {"nvidia.com/gpu": "1"}, node_selector={"zone": "a"})
    out = client.post(f"{P}/filter", json=filter_args(pod, ["n1", "n2", "ghost"])).json()
    assert out["NodeNames"] == ["n1"]
    assert out["FailedNodes"] == {"ghost": UNKNOWN_NODE}
    assert list(out["FailedAndUnresolvableNodes"]) == ["n2"]
    every = set(out["NodeNames"]) | set(out["FailedNodes"]) | set(out["FailedAndUnresolvableNodes"])
    assert every == {"n1", "n2", "ghost"}


def test_filter_invalid_request_is_unresolvable_with_the_rule():
    st, client, _ = make({"nodes": [node("n1")]})
    pod = kpod("p", {"koordinator.sh/gpu-core": "50"})
    out = client.post(f"{P}/filter", json=filter_args(pod, ["n1"])).json()
    assert out["NodeNames"] == [] and "gpu-core alone is invalid" in \
        out["FailedAndUnresolvableNodes"]["n1"]


@pytest.mark.parametrize("case", ["lower", "upper", "mixed"])
def test_any_letter_case_of_keys(case: str):
    conv = {"lower": str.lower, "upper": str.upper, "mixed": lambda k: k[:1].lower() + k[1:].upper()}[case]
    st, client, binder = make(gpushare_scenario())
    body = {conv("Pod"): gshare_pod("new", 8 * 1024), conv("NodeNames"): ["n1", "n2", "n3"]}
    out = client.post(f"{P}/filter", json=body).json()
    assert out["NodeNames"] == ["n3"]
    bind = {conv("PodName"): "new", conv("PodNamespace"): "default", conv("PodUID"): "uid-new",
            conv("Node"): "n3"}
    assert client.post(f"{P}/bind", json=bind).json() == {"Error": ""}
    assert binder.records["default/new"].node == "n3"


# ---- prioritize ----------------------------------------------------------------------------------
def _half_used_scenario() -> dict[str, Any]:
    return {"nodes": [node("empty", gpus=2), node("busy", gpus=2)],
            "pods": [{"name": "x", "requests": {"nvidia.com/gpu": "1"}, "node": "busy"}]}


@pytest.mark.parametrize("strategy,best", [("binpack", "busy"), ("spread", "empty")])
def test_prioritize_scores_in_range_and_ordered_by_strategy(strategy: str, best: str):
    st, client, _ = make(_half_used_scenario(), strategy=strategy)
    pod = kpod("p", {"nvidia.com/gpu": "1"})
    r = client.post(f"{P}/prioritize", json=filter_args(pod, ["empty", "busy", "ghost"]))
    assert r.status_code == 200
    scores = {e["Host"]: e["Score"] for e in r.json()}
    assert list(scores) == ["empty", "busy", "ghost"]
    assert all(isinstance(s, int) and 0 <= s <= 10 for s in scores.values())
    other = "empty" if best == "busy" else "busy"
    assert scores[best] > scores[other] and scores["ghost"] == 0


# ---- bind ----------------------------------------------------------------------------------------
def test_bind_writes_koordinator_and_gpushare_annotations():
    st, client, binder = make(gpushare_scenario())
    pod = gshare_pod("new", 8 * 1024)
    client.post(f"{P}/filter", json=filter_args(pod, ["n1", "n2", "n3"]))
    r = client.post(f"{P}/bind", json={"PodName": "new", "PodNamespace": "default",
                                       "PodUID": "uid-new", "Node": "n3"})
    assert r.status_code == 200 and r.json() == {"Error": ""}
    rec = binder.records["default/new"]
    assert rec.node == "n3" and rec.uid == "uid-new"
    alloc = json.loads(rec.annotations[ANN_DEVICE_ALLOCATED])
    assert [g["minor"] for g in alloc["gpu"]] == [1]
    assert rec.annotations["ALIYUN_COM_GPU_MEM_IDX"] == "1"
    assert rec.annotations["ALIYUN_COM_GPU_MEM_POD"] == str(8 * 1024)
    assert rec.annotations["ALIYUN_COM_GPU_MEM_ASSIGNED"] == "false"
    assert int(rec.annotations["ALIYUN_COM_GPU_MEM_ASSUME_TIME"]) > 0
    a = st.cluster.allocation("default/new")
    assert a.state == "Bound" and a.node == "n3"
    assert used(st, "n3")[1][1] == 10 * GiB
    st.cluster.check_invariants()
    # A retried bind of the same pod to the same node is a no-op success.
    again = client.post(f"{P}/bind", json={"PodName": "new", "PodNamespace": "default",
                                           "PodUID": "uid-new", "Node": "n3"})
    assert again.json() == {"Error": ""} and len(st.cluster.allocations()) == 7


def test_bind_koordinator_pod_has_no_gpushare_keys():
    st, client, binder = make({"nodes": [node("n1")]})
    pod = kpod("k", {"koordinator.sh/gpu-core": "50", "koordinator.sh/gpu-memory-ratio": "50"})
    client.post(f"{P}/prioritize", json=filter_args(pod, ["n1"]))
    out = client.post(f"{P}/bind", json={"PodName": "k", "PodNamespace": "default",
                                         "PodUID": "uid-k", "Node": "n1"}).json()
    assert out == {"Error": ""}
    ann = binder.records["default/k"].annotations
    assert ANN_DEVICE_ALLOCATED in ann and "ALIYUN_COM_GPU_MEM_IDX" not in ann


def test_bind_failure_unreserves_and_state_is_unchanged():
    st, client, binder = make({"nodes": [node("n1", gpus=1)]})
    pod = kpod("p", {"nvidia.com/gpu": "1"})
    client.post(f"{P}/filter", json=filter_args(pod, ["n1"]))
    before = st.cluster.snapshot()
    binder.fail_next = 1
    bind = {"PodName": "p", "PodNamespace": "default", "PodUID": "uid-p", "Node": "n1"}
    out = client.post(f"{P}/bind", json=bind).json()
    assert "injected binder failure" in out["Error"]
    assert st.cluster.allocation("default/p") is None and st.cluster.snapshot() == before
    assert client.post(f"{P}/bind", json=bind).json() == {"Error": ""}   # the device is free again


class _BlockingFailingBinder(MemoryBinder):
    blocking = True   # runs in a worker thread, like the Kubernetes binder

    def bind(self, *args: Any, **kwargs: Any) -> None:
        raise ConnectionError("API server unreachable")


def test_blocking_binder_failure_in_worker_thread_unreserves():
    st, client, _ = make({"nodes": [node("n1", gpus=1)]}, binder=_BlockingFailingBinder())
    pod = kpod("p", {"nvidia.com/gpu": "1"})
    client.post(f"{P}/filter", json=filter_args(pod, ["n1"]))
    before = st.cluster.snapshot()
    out = client.post(f"{P}/bind", json={"PodName": "p", "PodNamespace": "default",
                                         "PodUID": "uid-p", "Node": "n1"}).json()
    assert "API server unreachable" in out["Error"]
    assert st.cluster.snapshot() == before and st.cluster.allocations() == []
    assert st.usage()["requests"] == {"filter": 1, "bind": 1, "bind_errors": 1}
    assert set(st.usage()["latency"]) == {"filter", "bind"}


def test_bind_from_scenario_pod_source():
    st, client, binder = make({"nodes": [node("n1")],
                               "pods": [{"name": "team/queued", "requests": {"nvidia.com/gpu": "2"}}]})
    out = client.post(f"{P}/bind", json={"PodName": "queued", "PodNamespace": "team",
                                         "Node": "n1"}).json()
    assert out == {"Error": ""}
    assert sorted(g.minor for g in st.cluster.allocation("team/queued").devices) == [0, 1]


# ---- errors: never a crash, state unchanged ----------------------------------------------------
BAD_BODIES = [
    ("filter", b"{not json", 400),
    ("filter", b"", 400),
    ("filter", b"[1,2]", 200),
    ("filter", b'{"Pod": 5, "NodeNames": ["n1"]}', 200),
    ("filter", b'{"Pod": {"metadata": {"name": "x"}}}', 200),
    ("filter", b'{"Pod": {"metadata": {"name": "x"}}, "NodeNames": "n1"}', 200),
    ("filter", b'{"Pod": {"metadata": {"name": "x"}}, "Nodes": {"items": [{}]}}', 200),
    ("filter", b'{"Pod": {"metadata": {"name": "x"}, "spec": {"containers": 3}}, "NodeNames": []}', 200),
    ("bind", b"\xff\xfe", 400),
    ("bind", b"{}", 200),
    ("bind", b'{"PodName": "x", "PodNamespace": "default", "Node": 7}', 200),
    ("bind", b'{"PodName": "nobody", "PodNamespace": "default", "Node": "n1"}', 200),
    ("bind", b'{"PodName": "queued", "PodNamespace": "default", "Node": "ghost"}', 200),
    ("bind", b'{"PodName": "huge", "PodNamespace": "default", "Node": "n1"}', 200),
    ("prioritize", b"nope", 400),
    ("prioritize", b'{"Pod": null, "NodeNames": ["n1"]}', 400),
    ("preempt", b"{", 400),
    ("preempt", b'{"Pod": {"metadata": {"name": "x"}}, "NodeNameToMetaVictims": {"n1": {"Pods": [{"UID": 3}]}}}', 400),
]


@pytest.mark.parametrize("verb,body,status", BAD_BODIES)
def test_bad_input_answers_and_leaves_state_unchanged(verb: str, body: bytes, status: int):
    st, client, binder = make({"nodes": [node("n1")], "pods": [
        {"name": "queued", "requests": {"nvidia.com/gpu": "1"}},
        {"name": "huge", "requests": {"nvidia.com/gpu": "8"}},
        {"name": "held", "requests": {"nvidia.com/gpu": "1"}, "node": "n1"}]})
    before = st.cluster.snapshot()
    r = client.post(f"{P}/{verb}", content=body, headers={"Content-Type": "application/json"})
    assert r.status_code == status
    assert r.json()["Error"]
    assert st.cluster.snapshot() == before and binder.records == {}
    assert client.get("/healthz").text == "ok"


# ---- restart ---------------------------------------------------------------------------------
def test_restart_rebuilds_from_annotations_without_double_allocation():
    nodes = [node("n1", gpus=2)]
    st, client, binder = make({"nodes": nodes})
    for name in ("a", "b"):
        pod = kpod(name, {"koordinator.sh/gpu-core": "100", "koordinator.sh/gpu-memory-ratio": "100"})
        assert client.post(f"{P}/filter", json=filter_args(pod, ["n1"])).json()["NodeNames"] == ["n1"]
        assert client.post(f"{P}/bind", json={"PodName": name, "PodNamespace": "default",
                                              "PodUID": f"uid-{name}", "Node": "n1"}).json() == {"Error": ""}
    minors = {n: json.loads(r.annotations[ANN_DEVICE_ALLOCATED])["gpu"][0]["minor"]
              for n, r in binder.records.items()}
    assert sorted(minors.values()) == [0, 1]
    # Throw the app away; a new one learns only what the bound pods' annotations say. Pod "b" is
    # gone meanwhile, so exactly its device must be free afterwards.
    del st, client
    bound = [{"name": "a", "uid": "uid-a", "node": "n1", "annotations": binder.records["default/a"].annotations,
              "requests": {"koordinator.sh/gpu-core": "100", "koordinator.sh/gpu-memory-ratio": "100"}}]
    st2, client2, binder2 = make({"nodes": nodes, "pods": bound})
    assert st2.cluster.allocation("default/a").state == "Bound"
    pod = kpod("c", {"nvidia.com/gpu": "1"})
    assert client2.post(f"{P}/filter", json=filter_args(pod, ["n1"])).json()["NodeNames"] == ["n1"]
    assert client2.post(f"{P}/bind", json={"PodName": "c", "PodNamespace": "default",
                                           "PodUID": "uid-c", "Node": "n1"}).json() == {"Error": ""}
    got = json.loads(binder2.records["default/c"].annotations[ANN_DEVICE_ALLOCATED])["gpu"][0]["minor"]
    assert got == minors["default/b"] != minors["default/a"]
    # The node is now full: nothing more fits and nothing is over-committed.
    out = client2.post(f"{P}/filter", json=filter_args(kpod("d", {"nvidia.com/gpu": "1"}), ["n1"])).json()
    assert out["NodeNames"] == [] and "n1" in out["FailedNodes"]
    st2.cluster.check_invariants()


def test_restart_from_kube_api_lists_nodes_and_bound_pods():
    nodes = {"items": [dict(knode("n1"), metadata={"name": "n1", "annotations": {
        convert.ANN_DEVICES: json.dumps([gpu(0), gpu(1)])}})]}
    holder = kpod("a", {"nvidia.com/gpu": "1"}, annotations={
        ANN_DEVICE_ALLOCATED: json.dumps({"gpu": [{"minor": 1, "resources": {
            "koordinator.sh/gpu-core": "100", "koordinator.sh/gpu-memory": "16Gi",
            "koordinator.sh/gpu-memory-ratio": "100"}}]})})
    holder["spec"]["nodeName"] = "n1"
    plain = kpod("web", {"cpu": "1"})
    plain["spec"]["nodeName"] = "n1"
    api = FakeCoreV1(nodes, {"items": [holder, plain]})
    st, report, _ = load_kube(api, api=API, binder=MemoryBinder())
    assert report.restored == ["default/a"] and [p for p, _ in report.skipped] == ["default/web"]
    assert [g.minor for g in st.cluster.allocation("default/a").devices] == [1]
    assert "spec.nodeName!=" in api.calls[-1]["field_selector"]


def test_kube_reconcile_releases_gone_pods_and_keeps_fresh_binds():
    nodes = {"items": [dict(knode("n1"), metadata={"name": "n1", "annotations": {
        convert.ANN_DEVICES: json.dumps([gpu(0), gpu(1)])}})]}
    holder = kpod("a", {"nvidia.com/gpu": "1"}, annotations={
        ANN_DEVICE_ALLOCATED: json.dumps({"gpu": [{"minor": 0, "resources": {
            "koordinator.sh/gpu-core": "100", "koordinator.sh/gpu-memory": "16Gi",
            "koordinator.sh/gpu-memory-ratio": "100"}}]})})
    holder["spec"]["nodeName"] = "n1"
    api = FakeCoreV1(nodes, {"items": [holder]})
    st, _, watcher = load_kube(api, api=API, binder=MemoryBinder())
    client = TestClient(create_app(st, P))
    fresh = kpod("fresh", {"nvidia.com/gpu": "1"})
    client.post(f"{P}/filter", json=filter_args(fresh, ["n1"]))
    assert client.post(f"{P}/bind", json={"PodName": "fresh", "PodNamespace": "default",
                                          "PodUID": "uid-fresh", "Node": "n1"}).json() == {"Error": ""}
    # "a" was deleted; "fresh" is missing from this list only because the list predates its
    # Binding, so it must be kept.
    api.pods = {"items": []}
    api.nodes["items"].append(dict(knode("n2"), metadata={"name": "n2", "annotations": {
        convert.ANN_DEVICES: json.dumps([gpu(0)])}}))
    watcher.relist_nodes()
    assert watcher.relist_pods().restored == [] and st.cluster.allocation("default/a") is None
    assert st.cluster.allocation("default/fresh") is not None and st.cluster.has_node("n2")
    assert reconcile(st, [], time.time_ns() + 120 * 10**9)["released"] == ["default/fresh"]
    assert st.cluster.allocations() == []


# ---- preempt ---------------------------------------------------------------------------------
def test_preempt_keeps_only_nodes_where_evicting_victims_frees_a_device():
    st, client, binder = make({"nodes": [node("n1", gpus=1), node("n2", gpus=1), node("n3", gpus=1)]})
    for name, n in (("v1", "n1"), ("v2", "n2"), ("v3", "n3")):
        pod = kpod(name, {"nvidia.com/gpu": "1"})
        client.post(f"{P}/filter", json=filter_args(pod, [n]))
        assert client.post(f"{P}/bind", json={"PodName": name, "PodNamespace": "default",
                                              "PodUID": f"uid-{name}", "Node": n}).json() == {"Error": ""}
    before = st.cluster.snapshot()
    body = {"Pod": kpod("hi", {"nvidia.com/gpu": "1"}),
            "NodeNameToVictims": None,
            "NodeNameToMetaVictims": {
                "n1": {"Pods": [{"UID": "uid-v1"}], "NumPDBViolations": 0},   # frees the GPU
                "n2": {"Pods": [{"UID": "uid-unknown"}], "NumPDBViolations": 1},  # frees nothing
                "ghost": {"Pods": [{"UID": "uid-v3"}], "NumPDBViolations": 0}}}
    r = client.post(f"{P}/preempt", json=body)
    assert r.status_code == 200
    assert r.json() == {"NodeNameToMetaVictims": {
        "n1": {"Pods": [{"UID": "uid-v1"}], "NumPDBViolations": 0}}}
    assert st.cluster.snapshot() == before   # simulated on a copy
    # The full-pod form (nodeCacheCapable false) gives the same answer, in lower case keys.
    full = {"pod": kpod("hi", {"nvidia.com/gpu": "1"}),
            "nodenametovictims": {"n3": {"pods": [kpod("v3", {"nvidia.com/gpu": "1"})],
                                         "numpdbviolations": 2}}}
    assert client.post(f"{P}/preempt", json=full).json() == {"NodeNameToMetaVictims": {
        "n3": {"Pods": [{"UID": "uid-v3"}], "NumPDBViolations": 2}}}


# ---- misc endpoints, binder, CLI -----------------------------------------------------------
def test_healthz_and_state_view():
    st, client, _ = make(gpushare_scenario())
    assert client.get("/healthz").text == "ok" and client.get(f"{P}/healthz").status_code == 200
    view = client.get("/state").json()
    n3 = {d["minor"]: d for d in view["nodes"]["n3"]["devices"]}
    assert n3[0]["memory_used"] == 14 * GiB and n3[1]["memory_total"] == 16 * GiB
    assert view["allocations"] == 6 and view["strategy"] == "binpack"
    # The scenario format's `gpus:` shorthand shows up device by device too.
    st2, client2, _ = make({"nodes": [{"name": "t", "cpu": "8", "memory": "32Gi",
                                       "gpus": {"count": 2, "model": "T4", "memory": "16Gi"}}]})
    devs = client2.get(f"{P}/state").json()["nodes"]["t"]["devices"]
    assert [(d["minor"], d["model"], d["memory_total"], d["health"]) for d in devs] == \
        [(0, "T4", 16 * GiB, True), (1, "T4", 16 * GiB, True)]
    with pytest.raises(ValueError, match="already exists"):
        st2.add_node({"name": "t", "cpu": "1"})


class FakeCoreV1:
    """The slice of kubernetes.client.CoreV1Api the extender uses (raw responses)."""

    class _Resp:
        def __init__(self, obj: Any) -> None:
            self.data = json.dumps(obj).encode()

    def __init__(self, nodes: Any = None, pods: Any = None) -> None:
        self.nodes, self.pods, self.calls = nodes or {"items": []}, pods or {"items": []}, []

    def list_node(self, **kw: Any) -> Any:
        self.calls.append({"op": "list_node", **kw})
        return self._Resp(self.nodes)

    def list_pod_for_all_namespaces(self, **kw: Any) -> Any:
        self.calls.append({"op": "list_pods", **kw})
        return self._Resp(self.pods)

    def read_namespaced_pod(self, name: str, ns: str, **kw: Any) -> Any:
        for p in self.pods["items"]:
            if p["metadata"]["name"] == name and p["metadata"]["namespace"] == ns:
                return self._Resp(p)
        raise LookupError(name)

    def patch_namespaced_pod(self, name: str, ns: str, body: Any) -> None:
        self.calls.append({"op": "patch", "name": name, "body": body})

    def create_namespaced_binding(self, ns: str, body: Any, **kw: Any) -> None:
        self.calls.append({"op": "bind", "body": body})


def test_kube_binder_patches_annotations_before_binding(monkeypatch: pytest.MonkeyPatch):
    client_mod = types.SimpleNamespace(
        V1Binding=lambda **kw: {"kind": "Binding", **kw}, V1ObjectMeta=lambda **kw: kw,
        V1ObjectReference=lambda **kw: kw)
    monkeypatch.setitem(sys.modules, "kubernetes", types.SimpleNamespace(client=client_mod))
    monkeypatch.setitem(sys.modules, "kubernetes.client", client_mod)
    api = FakeCoreV1()
    KubeBinder(api).bind("ns", "p", "u1", "n1", {"k": "v"})
    assert [c["op"] for c in api.calls] == ["patch", "bind"]
    assert api.calls[0]["body"] == {"metadata": {"annotations": {"k": "v"}}}
    assert api.calls[1]["body"]["target"]["name"] == "n1"


def test_scheduler_config_example_has_the_extender_stanza():
    import yaml
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    cfg = yaml.safe_load((root / "examples/k8s/scheduler-config.yaml").read_text())
    assert cfg["kind"] == "KubeSchedulerConfiguration"
    (ext,) = cfg["extenders"]
    assert ext["urlPrefix"].endswith("/gpufleet") and ext["ignorable"] is False
    assert (ext["filterVerb"], ext["prioritizeVerb"], ext["bindVerb"], ext["preemptVerb"]) == \
        ("filter", "prioritize", "bind", "preempt")
    assert ext["nodeCacheCapable"] is True and 1 <= ext["weight"] <= 100
    assert {r["name"] for r in ext["managedResources"]} == {
        "nvidia.com/gpu", "koordinator.sh/gpu-core", "koordinator.sh/gpu-memory",
        "koordinator.sh/gpu-memory-ratio", "koordinator.sh/gpu", "aliyun.com/gpu-mem"}


def test_scenario_files_yaml_and_json(tmp_path):
    import yaml

    data = gpushare_scenario()
    data["pods"].append({"name": "team/queued", "requests": {"nvidia.com/gpu": "1"}})
    for name, text in (("s.yaml", yaml.safe_dump(data)), ("s.json", json.dumps(data))):
        path = tmp_path / name
        path.write_text(text)
        st = load_scenario(path, binder=MemoryBinder())
        assert len(st.cluster.allocations()) == 6 and st.find_pod("team", "queued", "") is not None
    with pytest.raises(ValueError, match="strategy"):
        load_scenario(path, strategy="nope")
    data["pods"].append({"name": "bad", "node": "n1", "requests": {"aliyun.com/gpu-mem": "99999"},
                         "annotations": {"ALIYUN_COM_GPU_MEM_IDX": "0",
                                         "ALIYUN_COM_GPU_MEM_POD": "99999"}})
    with pytest.raises(ValueError, match="default/bad"):
        state_from_scenario(data)


def test_cli_registers_extender_subcommand(tmp_path):
    from gpufleet.cli import build_parser
    from gpufleet.commands import extender as cmd

    assert build_parser().parse_args(["extender", "--kube"]).func is cmd.handler

    parser = argparse.ArgumentParser(prog="gpufleet")
    cmd.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["extender", "--listen", "127.0.0.1:0", "--state", "s.yaml"])
    assert args.func is cmd.handler and args.prefix == "/gpufleet" and args.strategy == "binpack"
    with pytest.raises(SystemExit):
        parser.parse_args(["extender", "--state", "a", "--kube"])
    bad = tmp_path / "bad.yaml"
    bad.write_text("nodes: [{name: n1, cpu: '1', memory: 1Gi, devices: [{type: gpu, minor: 0, "
                   "resources: {koordinator.sh/gpu-memory: '0'}}]}]\n")
    args = parser.parse_args(["extender", "--listen", "127.0.0.1:0", "--state", str(bad)])
    assert args.func(args) == 2
    args = parser.parse_args(["extender", "--state", str(bad), "--strategy", "nope"])
    assert args.func(args) == 2


# ---- operations: /metrics and /readyz ----------------------------------------------------------
def _metric(text: str, name: str, **labels: str) -> float:
    """The value of one sample in Prometheus text format (0 when absent)."""
    want = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        key, _, value = line.rpartition(" ")
        sample, _, rest = key.partition("{")
        got = ",".join(sorted(rest.rstrip("}").split(","))) if rest else ""
        if sample == name and got == want:
            return float(value)
    return 0.0


def test_metrics_count_verbs_outcomes_binds_and_allocations():
    st, client, _ = make(gpushare_scenario())
    pod = gshare_pod("new", 8 * 1024)
    assert client.post(f"{P}/filter", json=filter_args(pod, ["n1", "n2", "n3"])).status_code == 200
    client.post(f"{P}/bind", json={"PodName": "new", "PodNamespace": "default",
                                   "PodUID": "uid-new", "Node": "n3"})
    client.post(f"{P}/filter", content=b"{not json")
    too_big = gshare_pod("huge", 64 * 1024)
    client.post(f"{P}/filter", json=filter_args(too_big, ["n1"]))
    for path in ("/metrics", f"{P}/metrics"):
        r = client.get(path)
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    text = client.get("/metrics").text
    assert _metric(text, "gpufleet_extender_requests_total", verb="filter", outcome="ok") == 2
    assert _metric(text, "gpufleet_extender_requests_total", verb="filter",
                   outcome="bad_request") == 1
    assert _metric(text, "gpufleet_extender_requests_total", verb="bind", outcome="ok") == 1
    assert _metric(text, "gpufleet_extender_binds_total") == 1
    assert _metric(text, "gpufleet_extender_request_seconds_count", verb="filter") == 2
    assert _metric(text, "gpufleet_extender_allocations", state="Bound") == 7
    assert _metric(text, "gpufleet_extender_allocations", state="Reserved") == 0
    assert _metric(text, "gpufleet_extender_rebuild_pods", result="restored") == 6
    assert _metric(text, "gpufleet_extender_rebuild_pods", result="refused") == 0


def test_readyz_reports_failing_checks():
    st, client, _ = make(gpushare_scenario())
    assert client.get("/readyz").status_code == 200
    assert client.get(f"{P}/readyz").text == "ok"
    st.ready_checks["kubernetes watches"] = lambda: False
    r = client.get("/readyz")
    assert r.status_code == 503 and "kubernetes watches" in r.text
    assert client.get("/healthz").status_code == 200  # alive, just not ready
