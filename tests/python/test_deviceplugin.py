"""Device plugin over real gRPC on unix sockets (the test plays the kubelet), plus annotations."""
from __future__ import annotations

import json
import os
import queue
from concurrent import futures
from pathlib import Path

import grpc
import pytest

import gpufleet


from gpufleet.node import annotations as ann
from gpufleet.k8s.deviceplugin import api_pb2 as pb
from gpufleet.k8s.deviceplugin import api_pb2_grpc as pb_grpc
from gpufleet.k8s.deviceplugin.pods import InMemoryPodSource, PodInfo
from gpufleet.k8s.deviceplugin.server import DevicePluginServer
from gpufleet.k8s.deviceplugin.table import DeviceTable
from gpufleet.k8s.deviceplugin.topology import Topology, choose
from gpufleet.node.inventory import read_inventory
from gpufleet.node.nvml_replay import ReplayNvml

DATA = Path(__file__).parent / "data"
T = 5.0  # seconds; every RPC below carries a deadline


def inventory(name: str, tmp_path: Path):
    return read_inventory(ReplayNvml.from_json(str(DATA / f"nvml_{name}.json")), sysfs=str(tmp_path / "nosys"))


@pytest.fixture
def pcie4(tmp_path):
    return inventory("h100_pcie4_bridged", tmp_path)


@pytest.fixture
def sockdir(tmp_path):
    d = tmp_path / "dp"
    d.mkdir()
    return d


def uuids(inv):
    return [d["id"] for d in inv.devices]


def stub_for(server: DevicePluginServer):
    ch = grpc.insecure_channel(f"unix://{server.socket_path}")
    grpc.channel_ready_future(ch).result(timeout=T)
    return ch, pb_grpc.DevicePluginStub(ch)


@pytest.fixture
def plugin(pcie4, sockdir):
    srv = DevicePluginServer("nvidia.com/gpu", pcie4.devices, "whole", None, str(sockdir),
                             nvlink_groups=pcie4.nvlink_groups).start()
    ch, stub = stub_for(srv)
    yield srv, stub
    ch.close()
    srv.stop(0)


# --- registration ------------------------------------------------------------------------------
class FakeKubelet(pb_grpc.RegistrationServicer):
    def __init__(self) -> None:
        self.requests: queue.Queue = queue.Queue()

    def Register(self, request, context):
        self.requests.put(request)
        return pb.Empty()


def test_register_with_fake_kubelet(pcie4, sockdir):
    kubelet = FakeKubelet()
    ksrv = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    pb_grpc.add_RegistrationServicer_to_server(kubelet, ksrv)
    ksrv.add_insecure_port(f"unix://{sockdir / 'kubelet.sock'}")
    ksrv.start()
    try:
        with DevicePluginServer("nvidia.com/gpu", pcie4.devices, "whole", None, str(sockdir)) as srv:
            srv.register_with_kubelet(timeout=T)  # default: SOCKET_DIR/kubelet.sock
            req = kubelet.requests.get(timeout=T)
            assert req.version == "v1beta1"
            assert req.endpoint == srv.socket_name and "/" not in req.endpoint
            assert (sockdir / req.endpoint).exists()
            assert req.resource_name == "nvidia.com/gpu"
            assert req.options.get_preferred_allocation_available is True
            assert req.options.pre_start_required is False
    finally:
        ksrv.stop(0).wait()


def test_register_without_kubelet_fails_fast(pcie4, sockdir):
    with DevicePluginServer("nvidia.com/gpu", pcie4.devices, "whole", None, str(sockdir)) as srv:
        with pytest.raises(grpc.FutureTimeoutError):
            srv.register_with_kubelet(str(sockdir / "missing.sock"), timeout=0.3)


# --- options and ListAndWatch ---------------------------------------------------------------------
def test_get_device_plugin_options(plugin):
    _, stub = plugin
    opts = stub.GetDevicePluginOptions(pb.Empty(), timeout=T)
    assert opts.get_preferred_allocation_available and not opts.pre_start_required


def test_list_and_watch_streams_health_changes(plugin, pcie4):
    srv, stub = plugin
    stream = stub.ListAndWatch(pb.Empty(), timeout=10)
    first = next(stream)
    assert [d.ID for d in first.devices] == uuids(pcie4)
    assert {d.health for d in first.devices} == {"Healthy"}
    assert [d.topology.nodes[0].ID for d in first.devices] == [0, 0, 1, 1]
    srv.set_health(1, False)
    second = next(stream)
    assert {d.ID: d.health for d in second.devices}[uuids(pcie4)[1]] == "Unhealthy"
    assert sum(d.health == "Unhealthy" for d in second.devices) == 1
    srv.set_health(1, True)
    assert {d.health for d in next(stream).devices} == {"Healthy"}
    stream.cancel()


def test_shared_ids_follow_physical_health(pcie4, sockdir):
    srv = DevicePluginServer("gpufleet.io/gpu-shared", pcie4.devices, "shared", None, str(sockdir),
                             replicas=3)
    srv.set_health(2, False)
    health = {d.ID: d.health for d in srv.device_list().devices}
    assert len(health) == 12
    assert [i for i, h in health.items() if h == "Unhealthy"] == [f"{uuids(pcie4)[2]}-rep-{k}" for k in range(3)]


# --- GetPreferredAllocation --------------------------------------------------------------------
def prefer(stub, available, size, must=()):
    req = pb.PreferredAllocationRequest(container_requests=[pb.ContainerPreferredAllocationRequest(
        available_deviceIDs=available, must_include_deviceIDs=list(must), allocation_size=size)])
    return list(stub.GetPreferredAllocation(req, timeout=T).container_responses[0].deviceIDs)


def test_preferred_allocation_picks_nvlink_pair(plugin, pcie4):
    _, stub = plugin
    u = uuids(pcie4)
    assert prefer(stub, u, 2) == [u[0], u[1]]
    assert prefer(stub, [u[0], u[2], u[3]], 2) == [u[2], u[3]]  # not 0+2 (lowest minors)
    assert prefer(stub, u, 2, must=[u[3]]) == [u[2], u[3]]
    # One GPU: take the one whose NVLink partner is already used, keep the intact pair free.
    assert prefer(stub, [u[0], u[1], u[2]], 1) == [u[2]]


def test_preferred_allocation_errors(plugin, pcie4):
    _, stub = plugin
    u = uuids(pcie4)
    with pytest.raises(grpc.RpcError) as e:
        prefer(stub, [u[0], "GPU-nope"], 1)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "GPU-nope" in e.value.details()
    with pytest.raises(grpc.RpcError) as e:
        prefer(stub, [u[0]], 2)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_topology_choice_on_nvswitch_box(tmp_path):
    inv = inventory("h100_sxm8", tmp_path)
    topo = Topology(inv.devices, inv.nvlink_groups)
    assert choose(topo, range(8), [], 4) == [0, 1, 2, 3]       # one NVLink fabric: same NUMA wins
    assert choose(topo, [0, 1, 4, 5, 6, 7], [], 4) == [4, 5, 6, 7]
    assert choose(topo, range(8), [5], 2) == [4, 5]
    assert len(choose(topo, range(8), [], 8)) == 8


def test_topology_pcie_then_numa_without_nvlink():
    devs = [{"minor": m, "topology": {"nodeID": m // 4, "pcieID": f"sw{m // 2}"}} for m in range(8)]
    topo = Topology(devs)
    assert choose(topo, [1, 3, 4, 5], [], 2) == [4, 5]          # same switch
    assert choose(topo, [1, 3, 4, 6], [], 2) == [1, 3]          # same NUMA node
    with pytest.raises(ValueError, match="must_include"):
        choose(topo, [1, 2], [3], 1)


# --- Allocate ------------------------------------------------------------------------------------
def allocate(stub, *containers):
    req = pb.AllocateRequest(container_requests=[pb.ContainerAllocateRequest(devices_ids=list(c))
                                                 for c in containers])
    return [dict(r.envs) for r in stub.Allocate(req, timeout=T).container_responses]


def test_allocate_whole(plugin, pcie4):
    _, stub = plugin
    u = uuids(pcie4)
    (env,) = allocate(stub, [u[2], u[3]])
    assert env["NVIDIA_VISIBLE_DEVICES"] == f"{u[2]},{u[3]}"
    assert env["CUDA_VISIBLE_DEVICES"] == env["NVIDIA_VISIBLE_DEVICES"]
    assert not any(k.startswith("CUDA_MPS") for k in env)
    with pytest.raises(grpc.RpcError) as e:
        allocate(stub, [u[0], "GPU-unknown"])
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "unknown device id 'GPU-unknown'" in e.value.details()


def gpushare_pod(name, idx, units, assume, dev=15):
    return PodInfo("default", name, f"uid-{name}", {
        ann.GPUSHARE_IDX: str(idx), ann.GPUSHARE_POD: str(units), ann.GPUSHARE_DEV: str(dev),
        ann.GPUSHARE_ASSIGNED: "false", ann.GPUSHARE_ASSUME_TIME: str(assume)})


def test_allocate_shared_gpushare_memory_units(tmp_path, sockdir):
    inv = inventory("t4x2", tmp_path)
    u = uuids(inv)
    pods = InMemoryPodSource([gpushare_pod("late", 1, 4, 200), gpushare_pod("early", 0, 4, 100),
                              gpushare_pod("small", 1, 2, 50)])
    srv = DevicePluginServer("aliyun.com/gpu-mem", inv.devices, "shared", pods, str(sockdir),
                             memory_unit_bytes=ann.GIB).start()
    ch, stub = stub_for(srv)
    try:
        ids = [d.ID for d in next(stub.ListAndWatch(pb.Empty(), timeout=T)).devices]
        assert len(ids) == 30 and ids[0] == f"{u[0]}-mem-0"  # 15 GiB T4s in 1 GiB units
        # kubelet picks arbitrary IDs (here on GPU 1); the annotation decides the GPU.
        (env,) = allocate(stub, ids[15:19])
        assert env["NVIDIA_VISIBLE_DEVICES"] == u[0]                      # oldest pod: "early"
        assert env["ALIYUN_COM_GPU_MEM_IDX"] == "0" and env["ALIYUN_COM_GPU_MEM_POD"] == "4"
        assert env["ALIYUN_COM_GPU_MEM_CONTAINER"] == "4" and env["ALIYUN_COM_GPU_MEM_DEV"] == "15"
        assert env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] == "0=4096M"
        assert {p.name: p.annotations[ann.GPUSHARE_ASSIGNED] for p in pods()} == \
            {"late": "false", "early": "true", "small": "false"}
        (env,) = allocate(stub, ids[0:4])
        assert env["NVIDIA_VISIBLE_DEVICES"] == u[1]                      # then "late"
        (env,) = allocate(stub, ids[4:6])
        assert env["ALIYUN_COM_GPU_MEM_POD"] == "2"
        with pytest.raises(grpc.RpcError) as e:
            allocate(stub, ids[20:24])  # IDs nobody holds, but no pod left to match
        assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "no pending pod" in e.value.details() and "4 units" in e.value.details()
    finally:
        ch.close()
        srv.stop(0)


def test_allocate_shared_koordinator_replicas(pcie4, sockdir):
    u = uuids(pcie4)
    koord = json.dumps({"gpu": [{"minor": 2, "resources": {ann.RES_GPU_CORE: "50", ann.RES_GPU_MEMORY: "8Gi",
                                                           ann.RES_GPU_MEMORY_RATIO: "10"}}]})
    bad = json.dumps({"gpu": [{"minor": 7, "resources": {ann.RES_GPU_CORE: "25"}}]})
    pods = InMemoryPodSource([PodInfo("ml", "train", "uid-1", {ann.KOORD_DEVICE_ALLOCATED: koord}, 10),
                              PodInfo("ml", "ghost", "uid-2", {ann.KOORD_DEVICE_ALLOCATED: bad}, 20)])
    srv = DevicePluginServer("koordinator.sh/gpu-shared", pcie4.devices, "shared", pods, str(sockdir),
                             replicas=4, mps_pipe_dir="/run/nvidia-mps").start()
    ch, stub = stub_for(srv)
    try:
        req = pb.AllocateRequest(container_requests=[pb.ContainerAllocateRequest(
            devices_ids=[f"{u[0]}-rep-0", f"{u[0]}-rep-1"])])                # 50% of 4 replicas = 2
        (resp,) = stub.Allocate(req, timeout=T).container_responses
        env = dict(resp.envs)
        assert env["CUDA_MPS_PIPE_DIRECTORY"] == "/run/nvidia-mps"
        assert [(m.container_path, m.host_path) for m in resp.mounts] == [("/run/nvidia-mps",) * 2]
        assert env["NVIDIA_VISIBLE_DEVICES"] == u[2]
        assert env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] == "50"
        assert env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] == "0=8192M"
        assert "ALIYUN_COM_GPU_MEM_IDX" not in env
        assert pods()[0].annotations[ann.GPUFLEET_ASSIGNED] == "true"
        with pytest.raises(grpc.RpcError) as e:                            # names minor 7
            allocate(stub, [f"{u[1]}-rep-0"])
        assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "ml/ghost" in e.value.details() and "minor 7" in e.value.details()
        with pytest.raises(grpc.RpcError) as e:
            allocate(stub, ["GPU-x-rep-0"])
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    finally:
        ch.close()
        srv.stop(0)


def test_allocate_shared_without_pod_source_maps_to_gpus(pcie4, sockdir):
    u = uuids(pcie4)
    with DevicePluginServer("gpufleet.io/gpu-shared", pcie4.devices, "shared", None, str(sockdir),
                            replicas=2) as srv:
        ch, stub = stub_for(srv)
        (env,) = allocate(stub, [f"{u[1]}-rep-0", f"{u[1]}-rep-1", f"{u[3]}-rep-0"])
        assert env["NVIDIA_VISIBLE_DEVICES"] == f"{u[1]},{u[3]}"  # deduplicated
        assert prefer(stub, [f"{u[0]}-rep-0", f"{u[1]}-rep-0", f"{u[1]}-rep-1"], 2) == \
            [f"{u[1]}-rep-0", f"{u[1]}-rep-1"]                      # stays on one GPU
        ch.close()


def test_pre_start_container(plugin, pcie4):
    srv, stub = plugin
    u = uuids(pcie4)
    stub.PreStartContainer(pb.PreStartContainerRequest(devices_ids=[u[0]]), timeout=T)
    srv.set_health(0, False)
    with pytest.raises(grpc.RpcError) as e:
        stub.PreStartContainer(pb.PreStartContainerRequest(devices_ids=[u[0]]), timeout=T)
    assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION


def test_device_table_rules(pcie4):
    with pytest.raises(ValueError, match="exactly one"):
        DeviceTable(pcie4.devices, "shared")
    with pytest.raises(ValueError, match="longer than 63"):
        DeviceTable([{"minor": 0, "id": "GPU-" + "x" * 60}], "shared", replicas=2)
    t = DeviceTable(pcie4.devices, "shared", memory_unit_bytes=ann.GIB)
    assert len(t.ids_by_minor[0]) == 79  # 81559 MiB card in whole GiB
    assert t.minors_of([t.ids_by_minor[3][5], t.ids_by_minor[3][0], t.ids_by_minor[1][0]]) == [3, 1]


# --- annotations ------------------------------------------------------------------------------------
def test_parse_quantity():
    assert ann.parse_quantity("8Gi") == 8 << 30
    assert ann.parse_quantity("50") == 50
    assert ann.parse_quantity("1.5Gi") == 3 << 29
    assert ann.parse_quantity("2k") == 2000 and ann.parse_quantity("1e3") == 1000
    assert ann.parse_quantity("500m") == 1  # rounds up, like Quantity.Value()
    for bad in ("", "8GB", "Gi", "1.2.3"):
        with pytest.raises(ValueError):
            ann.parse_quantity(bad)
    assert ann.format_bytes(80 << 30) == "80Gi" and ann.format_bytes(85520809984) == "81559Mi"


def test_koordinator_roundtrip_and_errors():
    text = ('{"gpu":[{"minor":0,"resources":{"koordinator.sh/gpu-core":"50","koordinator.sh/gpu-memory":"8Gi",'
            '"koordinator.sh/gpu-memory-ratio":"50"}}],"rdma":[{"minor":1,"resources":{"koordinator.sh/rdma":"1"}}]}')
    grants = ann.parse_device_allocated(text)
    assert grants[0] == ann.DeviceGrant("gpu", 0, 50, 8 << 30, 50)
    assert grants[1].type == "rdma" and grants[1].minor == 1
    assert ann.parse_device_allocated(ann.render_device_allocated(grants)) == grants
    assert json.loads(ann.render_device_allocated(grants[:1]))["gpu"][0]["resources"] == \
        {"koordinator.sh/gpu-core": "50", "koordinator.sh/gpu-memory": "8Gi", "koordinator.sh/gpu-memory-ratio": "50"}
    (g,) = ann.parse_device_allocated('{"gpu":[{"minor":3,"resources":{"nvidia.com/gpu":"1"}}]}')
    assert (g.core_percent, g.memory_ratio) == (100, 100)
    for bad in ("{not json", "[1]", '{"gpu":{"minor":0}}', '{"gpu":[{"resources":{}}]}',
                '{"gpu":[{"minor":0,"resources":{"koordinator.sh/gpu-memory":"lots"}}]}'):
        with pytest.raises(ValueError, match="scheduling.koordinator.sh/device-allocated"):
            ann.parse_device_allocated(bad)
    # An injected quantity parser is used for every quantity.
    (g,) = ann.parse_device_allocated('{"gpu":[{"minor":0,"resources":{"koordinator.sh/gpu-core":"x"}}]}',
                                      quantity_parser=lambda s: 42)
    assert g.core_percent == 42


def test_gpushare_annotations():
    a = {ann.GPUSHARE_IDX: "0,1", ann.GPUSHARE_POD: "8192", ann.GPUSHARE_DEV: "16384",
         ann.GPUSHARE_ASSIGNED: "false", ann.GPUSHARE_ASSUME_TIME: "1700000000000000000"}
    share = ann.parse_gpushare(a)
    assert share == ann.GpuShareAllocation((0, 1), 8192, 16384, False, 1700000000000000000)
    assert ann.render_gpushare(share) == a
    assert [(g.minor, g.memory_bytes) for g in share.to_grants()] == [(0, 4096 << 20), (1, 4096 << 20)]
    assert ann.parse_gpushare({}) is None
    with pytest.raises(ValueError, match="ALIYUN_COM_GPU_MEM_POD"):
        ann.parse_gpushare({ann.GPUSHARE_IDX: "0"})
    with pytest.raises(ValueError, match="ALIYUN_COM_GPU_MEM_IDX"):
        ann.parse_gpushare({ann.GPUSHARE_IDX: "zero", ann.GPUSHARE_POD: "1"})


# --- serving loop and CLI -----------------------------------------------------------------------------
def start_kubelet(path: Path) -> tuple[FakeKubelet, grpc.Server]:
    kubelet = FakeKubelet()
    ksrv = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    pb_grpc.add_RegistrationServicer_to_server(kubelet, ksrv)
    ksrv.add_insecure_port(f"unix://{path}")
    ksrv.start()
    return kubelet, ksrv


@pytest.fixture
def fake_kubelet(sockdir):
    kubelet, ksrv = start_kubelet(sockdir / "kubelet.sock")
    yield kubelet
    ksrv.stop(0).wait()


def test_serve_reregisters_after_kubelet_restart(pcie4, sockdir, fake_kubelet):
    import threading

    from gpufleet.k8s.deviceplugin.server import serve
    srv = DevicePluginServer("nvidia.com/gpu", pcie4.devices, "whole", None, str(sockdir))
    stop = threading.Event()
    t = threading.Thread(target=serve, args=(srv, stop), kwargs={"poll_s": 0.05}, daemon=True)
    t.start()
    try:
        assert fake_kubelet.requests.get(timeout=T).endpoint == srv.socket_name
        os.unlink(srv.socket_path)  # what the kubelet does to plugin sockets when it restarts
        assert fake_kubelet.requests.get(timeout=T).resource_name == "nvidia.com/gpu"
        ch, stub = stub_for(srv)    # serving again on a fresh socket
        assert stub.GetDevicePluginOptions(pb.Empty(), timeout=T).get_preferred_allocation_available
        ch.close()
        # A kubelet that restarts without touching our socket still gets a new registration.
        os.unlink(sockdir / "kubelet.sock")
        second, ksrv = start_kubelet(sockdir / "kubelet.sock")
        try:
            assert second.requests.get(timeout=T).endpoint == srv.socket_name
        finally:
            ksrv.stop(0).wait()
    finally:
        stop.set()
        t.join(timeout=T)
    assert not t.is_alive()


def test_cli_serves_and_stops_on_sigterm(sockdir, fake_kubelet):
    import signal
    import subprocess
    import sys
    root = Path(__file__).resolve().parents[2]
    code = ("import argparse, sys, gpufleet; gpufleet.__path__.insert(0, sys.argv[1]);"
            "from gpufleet.commands import deviceplugin as d; p = argparse.ArgumentParser();"
            "d.register(p.add_subparsers()); a = p.parse_args(sys.argv[2:]); sys.exit(a.func(a))")
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(root / "python" / "gpufleet"), "deviceplugin",
         "--replay", str(DATA / "nvml_t4x2.json"), "--socket-dir", str(sockdir), "--mode", "shared",
         "--replicas", "2", "--resource-name", "gpufleet.io/gpu-shared", "--log-level", "warning",
         "--metrics-listen", "127.0.0.1:0"],   # on by default on a fixed port: take a free one
        env={**os.environ, "PYTHONPATH": str(root / "python")}, stderr=subprocess.PIPE, text=True)
    try:
        req = fake_kubelet.requests.get(timeout=15)
        assert req.resource_name == "gpufleet.io/gpu-shared" and req.version == "v1beta1"
        ch = grpc.insecure_channel(f"unix://{sockdir / req.endpoint}")
        grpc.channel_ready_future(ch).result(timeout=T)
        first = next(pb_grpc.DevicePluginStub(ch).ListAndWatch(pb.Empty(), timeout=T))
        assert len(first.devices) == 4 and first.devices[1].ID.endswith("-rep-1")
        ch.close()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=T) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=T)
