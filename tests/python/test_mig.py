"""NVIDIA MIG end to end: scenario files through `gpufleet place`, the node inventory from recorded
NVML answers, and the device plugin serving MIG instances by their MIG UUIDs."""
from __future__ import annotations

import json
from pathlib import Path

import grpc
import pytest

import gpufleet
from gpufleet import _core
from gpufleet.cli import main
from gpufleet.k8s.deviceplugin import api_pb2 as pb
from gpufleet.k8s.deviceplugin import api_pb2_grpc as pb_grpc
from gpufleet.k8s.deviceplugin.mig import mig_resources
from gpufleet.k8s.deviceplugin.server import DevicePluginServer
from gpufleet.node.inventory import mig_model, read_inventory
from gpufleet.node.nvml_replay import ReplayNvml
from gpufleet.scenario import ScenarioError, load_scenario

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).parent / "data"
SCENARIO = ROOT / "examples" / "scenarios" / "mig.yaml"
T = 5.0


@pytest.fixture
def inv(tmp_path):
    return read_inventory(ReplayNvml.from_json(str(DATA / "nvml_a100_mig.json")),
                          sysfs=str(tmp_path / "nosys"))


def test_place_mig_scenario(capsys):
    assert main(["place", str(SCENARIO), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    by_pod = {p["pod"]: p for p in out["placements"]}
    assert by_pod["llm-serving"]["node"] == "a100-mixed"
    assert [d["minor"] for d in by_pod["llm-serving"]["device_allocated"]["mig-3g.40gb"]] == [0]
    emb = by_pod["embedder"]["device_allocated"]
    assert sorted(emb) == ["mig-1g.10gb", "mig-2g.20gb"]
    assert emb["mig-2g.20gb"][0]["minor"] == 4 and emb["mig-1g.10gb"][0]["minor"] == 6
    # Shared GPU requests land on the whole A100, never on an instance.
    assert by_pod["notebook"]["node"] == "a100-mixed"
    assert [d["minor"] for d in by_pod["notebook"]["device_allocated"]["gpu"]] == [1]
    # nvidia.com/gpu on the single-strategy node takes four 1g.10gb instances.
    assert by_pod["ci-runners"]["node"] == "h100-single"
    assert len(by_pod["ci-runners"]["device_allocated"]["gpu"]) == 4
    assert by_pod["second-llm"]["node"] is None
    assert "mig-3g.40gb" in by_pod["second-llm"]["reason"]


@pytest.mark.parametrize("instances, message", [
    ("[{profile: 3g.40gb, start: 2}]", "gpu 0 (A100-80GB) mig[0] 3g.40gb at slot 2: 3g.40gb may start at slots 0, 4 only"),
    ("[{profile: 3g.20gb, start: 0}]", "profile not offered by A100-80GB"),
    ("[{profile: 4g.40gb, start: 0}, {profile: 2g.20gb, start: 2}]", "mig[1] 2g.20gb at slot 2: overlaps mig[0]"),
])
def test_bad_mig_geometry_names_file_node_gpu_and_instance(tmp_path, instances, message):
    path = tmp_path / "bad.yaml"
    path.write_text("nodes: [{name: n1, cpu: '8', memory: 16Gi, devices: [{type: gpu, minor: 0, "
                    f"model: A100-80GB, mig: {instances}}}]}}]\n")
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    assert str(path) in str(err.value) and "nodes[0] (n1): node n1" in str(err.value)
    assert message in str(err.value)


def test_mig_request_errors_name_the_pod(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("nodes: [{name: n1, cpu: '8'}]\n"
                    "pods: [{name: p, requests: {nvidia.com/mig-3g.41gb: 1}}]\n")
    with pytest.raises(ScenarioError, match="pod p: request nvidia.com/mig-3g.41gb"):
        load_scenario(path)


def test_geometry_table_is_exposed_and_names_match_the_inventory():
    geometry = {m["model"]: m for m in _core.mig_geometry()}
    assert set(geometry) == {"A100-40GB", "A100-80GB", "H100-80GB", "H200-141GB"}
    a100 = {p["name"]: p for p in geometry["A100-80GB"]["profiles"]}
    assert a100["3g.40gb"]["start_slots"] == [0, 4] and a100["1g.10gb"]["max_instances"] == 7
    for name, memory, model in [("NVIDIA A100-SXM4-80GB", 80 << 30, "A100-80GB"),
                                ("NVIDIA A100-PCIE-40GB", 40 << 30, "A100-40GB"),
                                ("NVIDIA H100 80GB HBM3", 81559 << 20, "H100-80GB"),
                                ("NVIDIA H200", 143771 << 20, "H200-141GB")]:
        assert mig_model(name, memory) == model
        assert model in geometry


def test_inventory_reads_mig_instances_from_nvml(inv):
    gpu0, gpu1 = inv.devices
    assert gpu0["model"] == "A100-80GB"
    assert [(m["profile"], m["start"]) for m in gpu0["mig"]] == [
        ("2g.20gb", 0), ("1g.10gb", 2), ("1g.10gb", 3), ("3g.40gb", 4)]
    assert gpu0["mig"][3]["id"] == "MIG-1c2d3e4f-0000-5a00-8000-000000000001"
    assert "mig" not in gpu1 and gpu1["model"] == "A100"
    # The inventory is a valid node for the core: MIG instances become devices of their profile.
    cluster = gpufleet.Cluster()
    cluster.add_node({"name": "n1", "cpu": "8", "memory": "64Gi", "devices": inv.devices})
    node = cluster.node("n1")
    assert [d["mig"][1]["profile"] for d in node["devices"] if d.get("mig")] == ["1g.10gb"]


def test_inventory_with_mig_disabled_everywhere_has_no_mig(tmp_path):
    data = json.loads((DATA / "nvml_a100_mig.json").read_text())
    data["devices"][0]["mig_mode"] = 0
    inv = read_inventory(ReplayNvml(data), sysfs=str(tmp_path))
    assert all("mig" not in d for d in inv.devices)


def test_mig_resources_by_strategy(inv):
    mixed = mig_resources(inv.devices, "mixed")
    assert sorted(mixed) == ["nvidia.com/gpu", "nvidia.com/mig-1g.10gb", "nvidia.com/mig-2g.20gb",
                             "nvidia.com/mig-3g.40gb"]
    assert [d["minor"] for d in mixed["nvidia.com/mig-1g.10gb"]] == [2, 3]
    assert [d["id"] for d in mixed["nvidia.com/gpu"]] == [inv.devices[1]["id"]]
    with pytest.raises(ValueError, match="single: GPU minor 1 is not in MIG mode"):
        mig_resources(inv.devices, "single")
    with pytest.raises(ValueError, match="GPU minor 0 is in MIG mode"):
        mig_resources(inv.devices, "none")
    with pytest.raises(ValueError, match="all instances must have one profile"):
        mig_resources(inv.devices[:1], "single")


def test_device_plugin_exposes_mig_uuids(inv, tmp_path):
    devs = mig_resources(inv.devices, "mixed")["nvidia.com/mig-1g.10gb"]
    srv = DevicePluginServer("nvidia.com/mig-1g.10gb", devs, "whole", None, str(tmp_path)).start()
    try:
        with grpc.insecure_channel(f"unix://{srv.socket_path}") as ch:
            grpc.channel_ready_future(ch).result(timeout=T)
            plugin = pb_grpc.DevicePluginStub(ch)  # the gRPC client
            listed = next(iter(plugin.ListAndWatch(pb.Empty(), timeout=T)))
            ids = [d.ID for d in listed.devices]
            assert ids == ["MIG-1c2d3e4f-0000-5a00-8000-000000000003",
                           "MIG-1c2d3e4f-0000-5a00-8000-000000000004"]
            req = pb.AllocateRequest(container_requests=[pb.ContainerAllocateRequest(devices_ids=ids)])
            (resp,) = plugin.Allocate(req, timeout=T).container_responses
            assert resp.envs["NVIDIA_VISIBLE_DEVICES"] == ",".join(ids)
            assert resp.envs["CUDA_VISIBLE_DEVICES"] == ",".join(ids)
            assert not any(k.startswith("CUDA_MPS_") for k in resp.envs)
    finally:
        srv.stop()


def test_planner_proposes_valid_layouts_for_idle_gpus_only():
    from gpufleet.mig import plan_repartition

    cluster = gpufleet.Cluster()
    cluster.add_node({"name": "a", "cpu": "64", "memory": "256Gi",
                      "gpus": {"count": 3, "model": "A100-80GB", "memory": "80Gi"}})
    cluster.add_node({"name": "h", "cpu": "64", "memory": "256Gi", "mig_strategy": "single",
                      "gpus": {"count": 1, "model": "H100-80GB", "mig": [{"profile": "7g.80gb", "start": 0}]}})
    busy, _ = cluster.place({"name": "busy", "requests": {"nvidia.com/gpu": 1}}, nodes=["a"])
    busy_minor = busy.devices[0].minor
    queue = [{"name": "p1", "requests": {"nvidia.com/mig-3g.40gb": 1}},
             {"name": "p2", "requests": {"nvidia.com/mig-3g.40gb": 1, "nvidia.com/mig-2g.20gb": 1}},
             {"name": "p3", "requests": {"nvidia.com/mig-1g.10gb": 2}},
             {"name": "p4", "requests": {"nvidia.com/mig-7g.80gb": 1}},   # no idle GPU left
             {"name": "p5", "requests": {"nvidia.com/mig-3g.20gb": 1}}]   # no A100-80GB profile
    plan = plan_repartition(cluster, queue)
    assert {g.minor for g in plan} <= {0, 1, 2} - {busy_minor}
    assert all(g.node == "a" for g in plan)
    # p1's 3g.40gb and p2's fill one GPU (3g + 3g leave no compute for p2's 2g.20gb, which goes
    # to the second), p3's two 1g.10gb join the 2g.20gb; p4 and p5 are not served.
    served = {p for g in plan for p in g.pods}
    assert served == {"p1", "p2", "p3"}
    # The proposal is valid geometry: the core accepts it, and the served pods then fit.
    fresh = gpufleet.Cluster()
    devices = [{"type": "gpu", "minor": g.minor, "model": g.model, "memory": "80Gi", "mig": g.instances}
               for g in plan]
    fresh.add_node({"name": "a", "cpu": "64", "memory": "256Gi", "devices": devices})
    for pod in queue[:3]:
        allocation, reason = fresh.place(dict(pod))
        assert allocation is not None and allocation.node == "a", reason


def test_node_inventory_wide_lists_instances(capsys):
    assert main(["node", "inventory", "--replay", str(DATA / "nvml_a100_mig.json"), "-o", "wide"]) == 0
    out = capsys.readouterr().out
    assert "mig 3g.40gb" in out and "0/4" in out and "MIG-1c2d3e4f-0000-5a00-8000-000000000001" in out


def test_container_env_exposes_granted_mig_instances_by_uuid(inv):
    from gpufleet.k8s.annotations import DeviceGrant
    from gpufleet.node.env import container_env
    gpu0 = inv.devices[0]
    by_start = {m["start"]: m["id"] for m in gpu0["mig"]}
    # Mixed strategy (GPU 1 is whole): instances are mig-<profile> at minor 8 x gpu + start.
    env = container_env([DeviceGrant("mig-3g.40gb", 4), DeviceGrant("mig-1g.10gb", 2)], inv.devices)
    assert env["NVIDIA_VISIBLE_DEVICES"] == f"{by_start[4]},{by_start[2]}"
    assert not any(k.startswith("CUDA_MPS") for k in env)
    both = container_env([DeviceGrant("gpu", 1), DeviceGrant("mig-2g.20gb", 0)], inv.devices)
    assert both["NVIDIA_VISIBLE_DEVICES"] == f"{inv.devices[1]['id']},{by_start[0]}"
    # A GPU in MIG mode is never visible whole, and a grant must match the instance's profile.
    with pytest.raises(ValueError, match="GPU minor 0, which this node does not have"):
        container_env([DeviceGrant("gpu", 0)], inv.devices)
    with pytest.raises(ValueError, match="mig-1g.10gb minor 4, which this node does not have"):
        container_env([DeviceGrant("mig-1g.10gb", 4)], inv.devices)
    with pytest.raises(ValueError, match="cannot be shared"):
        container_env([DeviceGrant("mig-3g.40gb", 4, core_percent=50)], inv.devices)
    # Single strategy (every GPU split): the instances are the node's "gpu" devices.
    single = [gpu0]
    env = container_env([DeviceGrant("gpu", 3)], single)
    assert env["NVIDIA_VISIBLE_DEVICES"] == by_start[3]
    stated = container_env([DeviceGrant("mig-1g.10gb", 3)], {"devices": single, "mig_strategy": "mixed"})
    assert stated["NVIDIA_VISIBLE_DEVICES"] == by_start[3]


def test_container_env_follows_the_placement_of_a_mig_pod(capsys):
    """What `gpufleet place` grants on the scenario's mixed node is what the container sees."""
    import yaml
    from gpufleet.k8s.annotations import parse_device_allocated
    from gpufleet.node.env import container_env
    assert main(["place", str(SCENARIO), "--json"]) == 0
    placed = {p["pod"]: p for p in json.loads(capsys.readouterr().out)["placements"]}
    nodes = {n["name"]: n for n in yaml.safe_load(SCENARIO.read_text())["nodes"]}
    emb = placed["embedder"]
    alloc = parse_device_allocated(json.dumps(emb["device_allocated"]))
    env = container_env(alloc, nodes[emb["node"]])  # the node spec states no strategy: mixed
    ids = {m["profile"]: m["id"] for m in nodes["a100-mixed"]["devices"][0]["mig"]}
    assert sorted(env["NVIDIA_VISIBLE_DEVICES"].split(",")) == sorted([ids["1g.10gb"], ids["2g.20gb"]])
