"""RDMA NICs with SR-IOV virtual functions through the public API: node specs with vfGroups, a joint
GPU+RDMA pod getting one VF on the NIC of each PCIe switch its GPUs span, exhaustion and release,
annotations, snapshot and restore, and the extender keeping a bound VF taken across a restart."""
from __future__ import annotations

import json
import warnings
from typing import Any

import pytest

import gpufleet
from gpufleet import Cluster, Pod

with warnings.catch_warnings():  # starlette >= 1.x nudges towards httpx2; httpx works
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient  # noqa: E402

from gpufleet.k8s.extender.app import create_app  # noqa: E402
from gpufleet.k8s.extender.binder import MemoryBinder  # noqa: E402
from gpufleet.k8s.extender.state import ANN_DEVICE_ALLOCATED, state_from_scenario  # noqa: E402

P = "/gpufleet"
JOINT = {"nvidia.com/gpu": "4", "koordinator.sh/rdma": "1"}


def rdma_node(name: str, vfs_per_nic: int = 2) -> dict[str, Any]:
    """8 GPUs on 4 PCIe switches across 2 NUMA nodes; one NIC per switch with its VFs."""
    def topo(sw: int) -> dict[str, Any]:
        return {"socketID": sw // 2, "nodeID": sw // 2, "pcieID": f"sw{sw}"}
    gpus = [{"type": "gpu", "minor": g, "model": "A100", "memory": "80Gi", "topology": topo(g // 2)}
            for g in range(8)]
    nics = [{"type": "rdma", "minor": k, "topology": topo(k),
             "vfGroups": [{"labels": {"type": "general"},
                           "vfs": [{"minor": j, "busID": f"0000:{k}{j}:00.{j}"} for j in range(vfs_per_nic)]}]}
            for k in range(4)]
    return {"name": name, "cpu": "64", "memory": "512Gi", "devices": gpus + nics}


def switches(c: Cluster, a: Any, kind: str) -> set[str]:
    by_minor = {d["minor"]: d["topology"]["pcieID"] for d in c.node(a.node)["devices"] if d["type"] == kind}
    return {by_minor[g.minor] for g in a.devices if g.type == kind}


def test_joint_pod_gets_one_vf_per_switch_and_round_trips():
    c = Cluster()
    c.add_node(rdma_node("n"))
    assert c.node("n")["devices"][8]["vfGroups"][0]["vfs"][1] == {"minor": 1, "busID": "0000:01:00.1"}
    a, reason = c.place(Pod("ns/p", JOINT))
    assert a is not None, reason
    nics = [g for g in a.devices if g.type == "rdma"]
    assert len(nics) == 2 and all(len(g.vfs) == 1 for g in nics)
    assert switches(c, a, "rdma") == switches(c, a, "gpu")
    record = a.device_allocated()
    assert [e["extension"]["vfs"] for e in record["rdma"]] == [
        [{"minor": g.vfs[0].minor, "busID": g.vfs[0].bus_id}] for g in nics]
    # Snapshot and restart from the annotation hold exactly the same VFs.
    assert Cluster.restore(c.snapshot()) == c
    fresh = Cluster()
    fresh.add_node(rdma_node("n"))
    restored = fresh.restore_allocation(Pod("ns/p", JOINT), "n", a.annotations())
    assert [g.vfs for g in restored.devices] == [g.vfs for g in a.devices]
    # The restored VFs are taken: the same record for another pod is refused, nothing changes.
    before = fresh.snapshot()
    with pytest.raises(ValueError, match="held by another pod"):
        fresh.restore_allocation(Pod("ns/q", JOINT), "n", a.annotations())
    assert fresh.snapshot() == before
    c.check_invariants()


def test_exhausted_vfs_are_a_reason_and_release_frees_them():
    c = Cluster()
    c.add_node(rdma_node("n", vfs_per_nic=1))
    placed = [c.place(Pod(f"p{i}", {"nvidia.com/gpu": "1", "koordinator.sh/rdma": "1"}))[0] for i in range(4)]
    assert all(a is not None for a in placed)
    fit = c.filter(Pod("x", {"nvidia.com/gpu": "1", "koordinator.sh/rdma": "1"}), "n")
    assert not fit and "Insufficient rdma virtual functions" in fit.reason
    c.release("p1")
    a, reason = c.place(Pod("x", {"nvidia.com/gpu": "1", "koordinator.sh/rdma": "1"}))
    assert a is not None, reason
    assert switches(c, a, "rdma") == switches(c, placed[1], "rdma")


def test_bad_vfs_are_value_errors_naming_node_device_and_field():
    c = Cluster()
    spec = rdma_node("n9")
    spec["devices"][9]["vfGroups"][0]["vfs"][1]["busID"] = "0000:10:00.0"
    with pytest.raises(ValueError, match=r"node n9: rdma 1: vfGroups\[0\]\.vfs\[1\]\.busID"):
        c.add_node(spec)
    spec = rdma_node("n9")
    spec["devices"][0]["vfGroups"] = [{"vfs": [{"minor": 0, "busID": "a"}]}]
    with pytest.raises(ValueError, match="node n9: gpu 0: vfGroups: only rdma devices"):
        c.add_node(spec)
    assert c.num_nodes == 0


def test_extender_bind_then_restart_keeps_the_vf_taken():
    binder = MemoryBinder()
    st = state_from_scenario({"nodes": [rdma_node("n1", vfs_per_nic=1)]}, api=gpufleet, binder=binder)
    client = TestClient(create_app(st, P))
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "a", "namespace": "default", "uid": "uid-a", "annotations": {}},
           "spec": {"containers": [{"name": "m", "resources": {"requests": JOINT}}]}}
    out = client.post(f"{P}/filter", json={"Pod": pod, "NodeNames": ["n1"]}).json()
    assert out["NodeNames"] == ["n1"]
    assert client.post(f"{P}/bind", json={"PodName": "a", "PodNamespace": "default",
                                          "PodUID": "uid-a", "Node": "n1"}).json() == {"Error": ""}
    annotations = binder.records["default/a"].annotations
    held = {(e["minor"], v["busID"]) for e in json.loads(annotations[ANN_DEVICE_ALLOCATED])["rdma"]
            for v in e["extension"]["vfs"]}
    assert len(held) == 2
    # A new extender learns the binding from the pod's annotations alone.
    del st, client
    bound = [{"name": "a", "uid": "uid-a", "node": "n1", "annotations": annotations, "requests": JOINT}]
    st2 = state_from_scenario({"nodes": [rdma_node("n1", vfs_per_nic=1)], "pods": bound},
                              api=gpufleet, binder=MemoryBinder())
    restored = st2.cluster.allocation("default/a")
    assert {(g.minor, v.bus_id) for g in restored.devices for v in g.vfs} == held
    # The two VFs it holds stay taken: two RDMA-only pods get the other two, a third gets none.
    for name in ("r1", "r2"):
        b, reason = st2.cluster.place(Pod(name, {"koordinator.sh/rdma": "1"}))
        assert b is not None, reason
        assert not {(g.minor, v.bus_id) for g in b.devices for v in g.vfs} & held
    b, reason = st2.cluster.place(Pod("r3", {"koordinator.sh/rdma": "1"}))
    assert b is None and "Insufficient rdma virtual functions" in reason
    st2.cluster.check_invariants()


def test_example_scenario_runs_with_gpufleet_place(capsys):
    from pathlib import Path

    from gpufleet.cli import main

    scenario = Path(__file__).resolve().parents[2] / "examples" / "scenarios" / "rdma_vfs.yaml"
    assert main(["place", str(scenario), "--json"]) == 0
    by_pod = {p["pod"]: p for p in json.loads(capsys.readouterr().out)["placements"]}

    def vfs(pod: str) -> dict[int, str]:
        return {e["minor"]: e["extension"]["vfs"][0]["busID"] for e in by_pod[pod]["device_allocated"]["rdma"]}

    assert sorted(e["minor"] for e in by_pod["trainer-a"]["device_allocated"]["gpu"]) == [0, 1, 2, 3]
    assert vfs("trainer-a") == {0: "0000:0f:00.2", 1: "0000:1f:00.2"}
    assert vfs("storage-a") == {0: "0000:0f:00.3"} and vfs("storage-b") == {1: "0000:1f:00.3"}
    assert vfs("storage-c") == {2: "0000:2f:00.2"}
    # GPUs 4 and 5 are free, but their switch's NIC has no VF left: trainer-b goes to sw3.
    assert sorted(e["minor"] for e in by_pod["trainer-b"]["device_allocated"]["gpu"]) == [6, 7]
    assert vfs("trainer-b") == {3: "0000:3f:00.2"}
    assert by_pod["trainer-c"]["node"] is None
    assert "Insufficient rdma virtual functions" in by_pod["trainer-c"]["reason"]


def test_engine_places_joint_gangs_through_the_same_rule():
    from gpufleet.engine import Engine

    e = Engine()
    e.add_node(rdma_node("n", vfs_per_nic=1))
    e.submit({"name": "train", "replicas": 2,
              "requests": {"cpu": "1", "nvidia.com/gpu": 2, "koordinator.sh/rdma": 1}})
    e.submit({"name": "late", "replicas": 1,
              "requests": {"cpu": "1", "nvidia.com/gpu": 1, "koordinator.sh/rdma": 1}})
    r = e.run_cycle()
    binds = {b.task: b for b in r.native.binds}
    c = e.cluster
    held = set()
    for b in binds.values():
        a = c.allocation(b.task)
        nics = [g for g in a.devices if g.type == "rdma"]
        assert nics and all(len(g.vfs) == 1 for g in nics)
        assert switches(c, a, "rdma") == switches(c, a, "gpu")
        for g in nics:
            assert (g.minor, g.vfs[0].bus_id) not in held
            held.add((g.minor, g.vfs[0].bus_id))
    c.check_invariants()


def test_place_table_names_each_virtual_function():
    from gpufleet.report import placement_table
    c = Cluster()
    c.add_node(rdma_node("n"))
    a, reason = c.place(Pod("ns/p", JOINT))
    assert a is not None, reason
    table = placement_table([{"pod": "ns/p", "node": a.node, "device_allocated": a.device_allocated(),
                              "reason": None}])
    for g in a.devices:
        if g.type == "rdma":
            assert f"rdma{g.minor} " in table and g.vfs[0].bus_id in table
