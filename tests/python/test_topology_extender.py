"""The extender places a gang's pods by topology: the first pod's filter chooses the gang's
domain (the native gang placer), the domain is held for the pods after it, prioritize puts its
nodes first, every bind spends a slot, and a gang no domain takes fails filter with the reason."""
from __future__ import annotations

import warnings
from typing import Any

import pytest
import yaml
from gpufleet.k8s import keys
from gpufleet.k8s.extender.app import create_app
from gpufleet.k8s.extender.state import ExtenderState
from gpufleet.topology import RACK_LABEL, rack_cluster, rack_levels

with warnings.catch_warnings():  # starlette >= 1.x nudges towards httpx2; httpx works
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient  # noqa: E402

P = "/gpufleet"
NODES = ["b0-r0-n0", "b0-r0-n1", "b0-r1-n0", "b0-r1-n1"]


def kpod(name: str, gpus: int, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}",
                         "annotations": annotations or {}},
            "spec": {"containers": [{"name": "main", "image": "busybox", "resources": {
                "requests": {keys.RES_NVIDIA_GPU: str(gpus), "cpu": "1"}}}]}}


def gang_pod(name: str, group: str, total: int) -> dict[str, Any]:
    return kpod(name, 8, {keys.ANN_POD_GROUP: group, keys.ANN_POD_GROUP_TOTAL: str(total),
                          "kueue.x-k8s.io/podset-required-topology": RACK_LABEL})


def setup() -> tuple[ExtenderState, TestClient]:
    st = ExtenderState(rack_cluster(blocks=1, racks=2, nodes_per_rack=2), topology=rack_levels())
    return st, TestClient(create_app(st, P))


def filter_(client: TestClient, pod: dict[str, Any]) -> dict[str, Any]:
    return client.post(f"{P}/filter", json={"Pod": pod, "Nodes": None, "NodeNames": NODES}).json()


def bind(client: TestClient, name: str, node: str) -> None:
    r = client.post(f"{P}/bind", json={"PodName": name, "PodNamespace": "default",
                                       "PodUID": f"uid-{name}", "Node": node}).json()
    assert r == {"Error": ""}


def test_a_gangs_domain_is_held_between_its_pods():
    st, client = setup()
    small = kpod("small", 1)
    assert "b0-r0-n0" in filter_(client, small)["NodeNames"]
    bind(client, "small", "b0-r0-n0")  # rack r0 now takes one 8-GPU pod, not two
    out = filter_(client, gang_pod("train-0", "train", 2))
    assert sorted(out["NodeNames"]) == ["b0-r1-n0", "b0-r1-n1"]
    assert "outside its topology domain b0/b0-r1" in out["FailedNodes"]["b0-r0-n1"]
    prio = client.post(f"{P}/prioritize", json={"Pod": gang_pod("train-0", "train", 2),
                                                  "Nodes": None, "NodeNames": out["NodeNames"]}).json()
    assert {p["Score"] for p in prio} == {10}
    bind(client, "train-0", "b0-r1-n0")
    # The second pod sees the plan held for it: the one node left in the rack.
    out = filter_(client, gang_pod("train-1", "train", 2))
    assert out["NodeNames"] == ["b0-r1-n1"]
    bind(client, "train-1", "b0-r1-n1")
    assert st.gangs is not None and st.gangs.key(st.find_pod("default", "train-1", "uid-train-1")) == "default/train"
    # All bound: the plan is gone.
    assert st.gangs._plans == {}


def test_a_gang_no_rack_takes_fails_filter_with_the_reason():
    _, client = setup()
    out = filter_(client, gang_pod("big-0", "big", 3))
    assert out["NodeNames"] == []
    assert all("no rack domain takes the gang: 3 pods" in why for why in out["FailedNodes"].values())


def test_pods_outside_gangs_are_placed_as_before():
    st, client = setup()
    out = filter_(client, kpod("solo", 8))
    assert sorted(out["NodeNames"]) == NODES
    assert st.gangs is not None and st.gangs._plans == {}


def _scenario(tmp_path) -> str:
    cluster = rack_cluster(blocks=1, racks=2, nodes_per_rack=2)
    path = tmp_path / "racks.yaml"
    path.write_text(yaml.safe_dump({"nodes": [cluster.node(n) for n in NODES]}))
    return str(path)


def test_a_held_plan_survives_a_restart_from_the_journal(tmp_path):
    """Scenario mode journals a gang's held plan: the state rebuilt from the journal (as a start
    after a kill finds it) holds the plan again, less the slot its first pod's bind spent, so the
    second pod still goes to the node its gang kept (with no plan, no rack takes the 2 pods left);
    the last bind ends the plan, in the journal too."""
    from gpufleet.k8s.extender.state import load_scenario

    scenario, journal = _scenario(tmp_path), tmp_path / "binds.journal"

    def start() -> tuple[ExtenderState, TestClient]:
        st = load_scenario(scenario, journal=journal, topology=rack_levels())
        return st, TestClient(create_app(st, P))

    def held(st: ExtenderState) -> dict[str, Any]:
        assert st.gangs is not None
        return {k: (p.slots, p.domain, p.bound) for k, p in st.gangs._plans.items()}

    st, client = start()
    filter_(client, kpod("small", 1))
    bind(client, "small", "b0-r0-n0")  # rack r0 now takes one 8-GPU pod, not two
    assert sorted(filter_(client, gang_pod("train-0", "train", 2))["NodeNames"]) == ["b0-r1-n0", "b0-r1-n1"]
    bind(client, "train-0", "b0-r1-n0")
    before = held(st)
    assert before == {"default/train": ({"b0-r1-n0": 0, "b0-r1-n1": 1}, "b0/b0-r1", {"default/train-0"})}
    st.journal.close()

    st, client = start()
    assert held(st) == before
    assert st.gangs.clock() - st.gangs._plans["default/train"].made < 60   # its age, not a new plan
    out = filter_(client, gang_pod("train-1", "train", 2))
    assert out["NodeNames"] == ["b0-r1-n1"], out
    bind(client, "train-1", "b0-r1-n1")
    assert held(st) == {}
    assert st.journal.replay.plans == {}
    st.journal.close()

    st, _ = start()   # the plan's end was journalled: nothing is held again
    assert held(st) == {} and st.journal.replay.plans == {}
    assert sorted(a.pod for a in st.cluster.allocations()) == ["default/small", "default/train-0", "default/train-1"]
    st.journal.close()


def test_the_command_line_reads_a_topology_file_and_holds_gang_domains(tmp_path):
    from gpufleet.commands.extender import check_topology, read_topology
    from gpufleet.k8s.extender.state import load_scenario

    topo = tmp_path / "topology.yaml"
    topo.write_text(yaml.safe_dump(rack_levels()))
    st = load_scenario(_scenario(tmp_path), journal=None, topology=read_topology(str(topo)),
                       topology_fit="least-free-capacity")
    check_topology(st, str(topo))
    assert st.gangs is not None and st.gangs.fit == "least-free-capacity"
    client = TestClient(create_app(st, P))
    out = filter_(client, gang_pod("train-0", "train", 2))
    racks = {n.rsplit("-", 1)[0] for n in out["NodeNames"]}
    assert len(out["NodeNames"]) == 2 and len(racks) == 1


def test_several_documents_are_read_as_hypernodes(tmp_path):
    from gpufleet.commands.extender import read_topology

    docs = [{"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode",
             "metadata": {"name": f"rack{i}"},
             "spec": {"tier": 1, "members": [{"type": "Node", "selector": {
                 "exactMatch": {"name": NODES[2 * i + k]}}} for k in range(2)]}}
            for i in range(2)]
    path = tmp_path / "hypernodes.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    assert read_topology(str(path)) == {"hyper_nodes": docs}
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": docs}))
    assert read_topology(str(path)) == {"hyper_nodes": docs}
    path.write_text(yaml.safe_dump_all([rack_levels(), rack_levels()]))
    with pytest.raises(ValueError, match="must all be Volcano HyperNodes"):
        read_topology(str(path))


@pytest.mark.parametrize("text, what", [
    ("levels: 5\n", "levels"),
    ("", "empty"),
    ("levels: [\n", "not yaml"),
])
def test_a_bad_topology_file_stops_the_start_with_one_line(tmp_path, capsys, text: str, what: str):
    from gpufleet.cli import main

    scenario = _scenario(tmp_path)
    topo = tmp_path / "topology.yaml"
    topo.write_text(text)
    assert main(["extender", "--state", scenario, "--listen", "127.0.0.1:0",
                 "--topology", str(topo)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(topo) in err and what in err.lower(), err
    assert not (tmp_path / "racks.yaml.journal").exists()
