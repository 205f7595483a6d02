"""Device plugin against a faulty kubelet and settings a real kubelet cannot read.

Allocate refuses duplicate, unhealthy and already-held IDs and leaves every record unchanged;
construction refuses a device list whose ListAndWatch message exceeds the kubelet's 4 MiB,
measured with the real protobuf encoding. Over real gRPC on unix sockets, as the kubelet talks.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import grpc
import pytest

from gpufleet.commands import deviceplugin as cli
from gpufleet.node import annotations as ann
from gpufleet.k8s.deviceplugin import api_pb2 as pb
from gpufleet.k8s.deviceplugin import api_pb2_grpc as pb_grpc
from gpufleet.k8s.deviceplugin.listing import (MAX_MESSAGE_BYTES, ListingTooLarge, build_table,
                                               device_list, largest_size)
from gpufleet.k8s.deviceplugin.pods import InMemoryPodSource, PodInfo
from gpufleet.k8s.deviceplugin.server import DevicePluginServer
from gpufleet.k8s.deviceplugin.table import DeviceTable
from gpufleet.k8s.deviceplugin.topology import Topology
from gpufleet.node.inventory import read_inventory
from gpufleet.node.nvml_replay import ReplayNvml

DATA = Path(__file__).parent / "data"
T = 5.0
MIB = 1 << 20


def inventory(name: str, tmp_path: Path):
    return read_inventory(ReplayNvml.from_json(str(DATA / f"nvml_{name}.json")), sysfs=str(tmp_path / "nosys"))


@pytest.fixture
def pcie4(tmp_path):  # four H100 PCIe cards of 81,559 MiB, NUMA nodes 0,0,1,1
    return inventory("h100_pcie4_bridged", tmp_path)


@pytest.fixture
def sockdir(tmp_path):
    d = tmp_path / "dp"
    d.mkdir()
    return d


def serving(srv: DevicePluginServer):
    srv.start()
    ch = grpc.insecure_channel(f"unix://{srv.socket_path}")
    grpc.channel_ready_future(ch).result(timeout=T)
    return ch, pb_grpc.DevicePluginStub(ch)


def allocate(stub, *containers):
    req = pb.AllocateRequest(container_requests=[pb.ContainerAllocateRequest(devices_ids=list(c))
                                                 for c in containers])
    return [dict(r.envs) for r in stub.Allocate(req, timeout=T).container_responses]


def refused(stub, code, *containers) -> str:
    with pytest.raises(grpc.RpcError) as e:
        allocate(stub, *containers)
    assert e.value.code() == code, e.value.details()
    return e.value.details()


def gpushare_pod(name, idx, units, assume):
    return PodInfo("default", name, f"uid-{name}", {
        ann.GPUSHARE_IDX: str(idx), ann.GPUSHARE_POD: str(units), ann.GPUSHARE_DEV: "79",
        ann.GPUSHARE_ASSIGNED: "false", ann.GPUSHARE_ASSUME_TIME: str(assume)})


def assigned(pods) -> dict[str, str]:
    return {p.name: p.annotations[ann.GPUSHARE_ASSIGNED] for p in pods()}


@pytest.fixture
def shared(pcie4, sockdir):
    """Shared mode in 1 GiB units with two gpushare pods of 4 units (a on GPU 0, b on GPU 1)."""
    pods = InMemoryPodSource([gpushare_pod("a", 0, 4, 100), gpushare_pod("b", 1, 4, 200)])
    srv = DevicePluginServer("aliyun.com/gpu-mem", pcie4.devices, "shared", pods, str(sockdir),
                             memory_unit_bytes=ann.GIB)
    ch, stub = serving(srv)
    ids = [d.ID for d in srv.device_list().devices]
    yield srv, stub, pods, ids
    ch.close()
    srv.stop(0)


# --- Allocate: what a buggy kubelet might send ---------------------------------------------------

def test_whole_mode_refuses_an_id_named_twice(pcie4, sockdir):
    srv = DevicePluginServer("nvidia.com/gpu", pcie4.devices, "whole", None, str(sockdir))
    ch, stub = serving(srv)
    try:
        u = [d["id"] for d in pcie4.devices]
        details = refused(stub, grpc.StatusCode.INVALID_ARGUMENT, [u[0], u[0]])
        assert details == f"nvidia.com/gpu: device id '{u[0]}' is named twice in one Allocate request (container 0)"
        details = refused(stub, grpc.StatusCode.INVALID_ARGUMENT, [u[1]], [u[2], u[1]])
        assert f"'{u[1]}' is named twice" in details and "(container 1)" in details
        assert allocate(stub, [u[0]])[0]["NVIDIA_VISIBLE_DEVICES"] == u[0]
    finally:
        ch.close()
        srv.stop(0)


def test_whole_mode_refuses_an_unhealthy_gpu(pcie4, sockdir):
    srv = DevicePluginServer("nvidia.com/gpu", pcie4.devices, "whole", None, str(sockdir))
    ch, stub = serving(srv)
    try:
        u = [d["id"] for d in pcie4.devices]
        srv.set_health(3, False)
        details = refused(stub, grpc.StatusCode.FAILED_PRECONDITION, [u[2], u[3]])
        assert details == f"nvidia.com/gpu: device id '{u[3]}' is on GPU minor 3, which is unhealthy"
        srv.set_health(3, True)
        assert allocate(stub, [u[2], u[3]])[0]["NVIDIA_VISIBLE_DEVICES"] == f"{u[2]},{u[3]}"
    finally:
        ch.close()
        srv.stop(0)


def test_shared_duplicate_leaves_the_pod_unassigned(shared):
    srv, stub, pods, ids = shared
    refused(stub, grpc.StatusCode.INVALID_ARGUMENT, ids[0:3], [ids[2]])
    assert assigned(pods) == {"a": "false", "b": "false"} and srv.ledger.held() == {}
    assert allocate(stub, ids[0:4])[0]["NVIDIA_VISIBLE_DEVICES"] == srv.devices[0]["id"]
    assert assigned(pods) == {"a": "true", "b": "false"}


def test_shared_unhealthy_id_leaves_the_pod_unassigned(shared):
    srv, stub, pods, ids = shared
    srv.set_health(3, False)
    details = refused(stub, grpc.StatusCode.FAILED_PRECONDITION, ids[-4:])
    assert "is on GPU minor 3, which is unhealthy" in details
    assert assigned(pods) == {"a": "false", "b": "false"} and srv.ledger.held() == {}


def test_shared_allocation_on_an_unhealthy_gpu_is_refused(shared):
    srv, stub, pods, ids = shared
    srv.set_health(0, False)  # pod a's annotation names GPU 0; the requested IDs are healthy
    details = refused(stub, grpc.StatusCode.FAILED_PRECONDITION, ids[-4:])
    assert details == "pod default/a: its allocation names GPU minor 0, which is unhealthy"
    assert assigned(pods) == {"a": "false", "b": "false"} and srv.ledger.held() == {}


def test_shared_id_held_by_a_live_pod_is_refused_until_that_pod_ends(shared):
    srv, stub, pods, ids = shared
    allocate(stub, ids[0:4])                                    # pod a holds ids 0-3
    assert {i: h.pod_key for i, h in srv.ledger.held().items()} == dict.fromkeys(ids[0:4], "default/a")
    details = refused(stub, grpc.StatusCode.FAILED_PRECONDITION, ids[2:6])
    assert details == (f"aliyun.com/gpu-mem: device id '{ids[2]}' is allocated to pod default/a, "
                       "which is still on this node")
    assert assigned(pods) == {"a": "true", "b": "false"}        # b untouched
    assert set(srv.ledger.held()) == set(ids[0:4])
    pods.remove("uid-a")                                        # a ended: its IDs are free again
    assert allocate(stub, ids[2:6])[0]["NVIDIA_VISIBLE_DEVICES"] == srv.devices[1]["id"]
    assert {i: h.pod_key for i, h in srv.ledger.held().items()} == dict.fromkeys(ids[2:6], "default/b")


def test_liveness_without_live_uids_is_the_listing(pcie4, sockdir):
    # A plain callable pod source: a pod holds its IDs while the source still lists it.
    listed = [gpushare_pod("a", 0, 2, 1), gpushare_pod("b", 0, 2, 2)]
    srv = DevicePluginServer("aliyun.com/gpu-mem", pcie4.devices, "shared", lambda: list(listed),
                             str(sockdir), memory_unit_bytes=ann.GIB, mark_assigned=lambda p: None)
    ch, stub = serving(srv)
    try:
        ids = [d.ID for d in srv.device_list().devices]
        allocate(stub, ids[0:2])
        assert "allocated to pod default/a" in refused(stub, grpc.StatusCode.FAILED_PRECONDITION, ids[1:3])
        del listed[0]
        allocate(stub, ids[1:3])
        assert {h.pod_key for h in srv.ledger.held().values()} == {"default/b"}
    finally:
        ch.close()
        srv.stop(0)


# --- ListAndWatch: never more than the kubelet reads -------------------------------------------

def full_size(table: DeviceTable, topology: Topology) -> int:
    """The real encoding of the whole message, every GPU unhealthy (the longest health string)."""
    return device_list(table, topology, lambda _: False).ByteSize()


def test_four_80gib_gpus_in_4mi_units_are_refused_with_the_unit_that_fits(pcie4):
    topo = Topology(pcie4.devices, pcie4.nvlink_groups)
    with pytest.raises(ListingTooLarge) as e:
        build_table(pcie4.devices, "shared", topo, memory_unit_bytes=4 * MIB)
    message = str(e.value)
    assert message.startswith("memory unit 4Mi gives 81,556 device IDs (up to 5.4 MiB encoded); "
                              "the kubelet reads at most 4 MiB per ListAndWatch message"), message
    assert message.endswith("use a memory unit of 8Mi or larger (--memory-unit 8Mi)"), message
    # The real encoding agrees: 4Mi is over the limit, 8Mi (the advice) under it.
    assert full_size(DeviceTable(pcie4.devices, "shared", memory_unit_bytes=4 * MIB), topo) > MAX_MESSAGE_BYTES
    fits = build_table(pcie4.devices, "shared", topo, memory_unit_bytes=8 * MIB)
    assert fits.count == 40_776 and full_size(fits, topo) <= MAX_MESSAGE_BYTES


def test_the_most_replicas_accepted_encode_under_4mib_and_one_more_over(pcie4):
    topo = Topology(pcie4.devices, pcie4.nvlink_groups)
    with pytest.raises(ListingTooLarge) as e:
        build_table(pcie4.devices, "shared", topo, replicas=50_000)
    most = int(str(e.value).rsplit("--replicas ", 1)[1].rstrip(")"))
    table = build_table(pcie4.devices, "shared", topo, replicas=most)
    assert full_size(table, topo) <= MAX_MESSAGE_BYTES
    with pytest.raises(ListingTooLarge):
        build_table(pcie4.devices, "shared", topo, replicas=most + 1)
    assert full_size(DeviceTable(pcie4.devices, "shared", replicas=most + 1), topo) > MAX_MESSAGE_BYTES


def test_size_shortcut_equals_the_full_encoding(pcie4):
    devices = [dict(d) for d in pcie4.devices]
    devices[1] = {**devices[1], "topology": {}}  # one GPU without a NUMA node
    topo = Topology(devices)
    for kw in ({"replicas": 1234}, {"memory_unit_bytes": 16 * MIB}):
        table = DeviceTable(devices, "shared", **kw)
        assert largest_size(table, topo) == full_size(table, topo)


def test_unit_count_too_large_to_build_is_refused_by_count(pcie4):
    topo = Topology(pcie4.devices)
    with pytest.raises(ListingTooLarge, match=r"^memory unit 1 gives 342,083,239,936 device IDs "
                                              r"\(at least 4,?\d*"):
        build_table(pcie4.devices, "shared", topo, memory_unit_bytes=1)


def test_largest_accepted_list_streams_to_a_default_grpc_client(pcie4, sockdir):
    # grpcio's default receive limit is 4 MiB, like the kubelet's grpc-go client.
    srv = DevicePluginServer("aliyun.com/gpu-mem", pcie4.devices, "shared", None, str(sockdir),
                             memory_unit_bytes=8 * MIB)
    for minor in range(4):
        srv.set_health(minor, False)
    ch, stub = serving(srv)
    try:
        first = next(stub.ListAndWatch(pb.Empty(), timeout=10))
        assert len(first.devices) == 40_776 and {d.health for d in first.devices} == {"Unhealthy"}
        assert first.ByteSize() <= MAX_MESSAGE_BYTES
    finally:
        ch.close()
        srv.stop(0)


def test_cli_refuses_the_setting_at_start(tmp_path, capsys):
    parser = argparse.ArgumentParser()
    cli.register(parser.add_subparsers())
    args = parser.parse_args(["deviceplugin", "--replay", str(DATA / "nvml_h100_pcie4_bridged.json"),
                              "--mode", "shared", "--memory-unit", "4Mi", "--socket-dir", str(tmp_path)])
    assert args.func(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpufleet deviceplugin: memory unit 4Mi gives 81,556 device IDs"), err
    assert "--memory-unit 8Mi" in err
    assert not list(tmp_path.iterdir())  # nothing was served


def test_whole_mode_list_is_one_id_per_gpu(pcie4):
    topo = Topology(pcie4.devices)
    table = build_table(pcie4.devices, "whole", topo)
    assert table.ids == [d["id"] for d in pcie4.devices]
    assert largest_size(table, topo) == full_size(table, topo) < 1024


def test_metrics_count_rpcs_by_outcome_and_gpus_by_health(pcie4, sockdir):
    import urllib.request

    srv = DevicePluginServer("nvidia.com/gpu", pcie4.devices, "whole", None, str(sockdir))
    metrics = srv.enable_metrics()
    http = metrics.serve("127.0.0.1", 0)
    ch, stub = serving(srv)
    try:
        u = [d["id"] for d in pcie4.devices]
        assert allocate(stub, [u[0]])[0]["NVIDIA_VISIBLE_DEVICES"] == u[0]
        refused(stub, grpc.StatusCode.INVALID_ARGUMENT, [u[1], u[1]])
        srv.set_health(3, False)
        url = f"http://127.0.0.1:{http.server_port}/metrics"
        text = urllib.request.urlopen(url, timeout=T).read().decode()
        samples = dict(line.rsplit(" ", 1) for line in text.splitlines()
                       if line and not line.startswith("#"))
        res = 'resource="nvidia.com/gpu"'
        assert float(samples[f'gpufleet_deviceplugin_rpcs_total{{outcome="ok",{res},rpc="Allocate"}}']) == 1
        assert float(samples[f'gpufleet_deviceplugin_rpcs_total{{outcome="refused",{res},rpc="Allocate"}}']) == 1
        assert float(samples[f'gpufleet_deviceplugin_gpus{{health="healthy",{res}}}']) == 3
        assert float(samples[f'gpufleet_deviceplugin_gpus{{health="unhealthy",{res}}}']) == 1
    finally:
        http.shutdown()
        ch.close()
        srv.stop(0)
