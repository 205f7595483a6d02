"""The device plugin speaks the upstream kubelet API: api.proto is the recorded upstream file,
the committed generated modules match it, every RPC of the protocol has the upstream types, and
bytes encoded by hand with upstream field numbers work over real gRPC."""
from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from pathlib import Path

import grpc
import pytest

from gpufleet.k8s.deviceplugin import api_pb2 as pb
from gpufleet.k8s.deviceplugin import api_pb2_grpc as pb_grpc
from gpufleet.k8s.deviceplugin.server import DevicePluginServer
from test_deviceplugin import inventory, start_kubelet, stub_for, uuids

T = 5.0
PKG = Path(pb.__file__).parent
# k8s.io/kubelet pkg/apis/deviceplugin/v1beta1/api.proto at tag v0.36.3
UPSTREAM_SHA256 = "b780bfeac99c93c231dc165ce417f4da88481eececa0c65eeb90f5f2e9b5b65b"
UPSTREAM_COMMIT = "bbb4f8f0907ace5f317f33e06413a55a5f4636f6"

# The protocol's RPCs (Register is served by the kubelet, the rest by the plugin) with the upstream
# request/response types and streaming.
RPCS = {
    ("Registration", "Register"): ("RegisterRequest", "Empty", False),
    ("DevicePlugin", "GetDevicePluginOptions"): ("Empty", "DevicePluginOptions", False),
    ("DevicePlugin", "ListAndWatch"): ("Empty", "ListAndWatchResponse", True),
    ("DevicePlugin", "GetPreferredAllocation"): ("PreferredAllocationRequest", "PreferredAllocationResponse", False),
    ("DevicePlugin", "Allocate"): ("AllocateRequest", "AllocateResponse", False),
    ("DevicePlugin", "PreStartContainer"): ("PreStartContainerRequest", "PreStartContainerResponse", False),
}

# Field numbers the kubelet's Go code encodes (message -> name -> number).
FIELDS = {
    "RegisterRequest": {"version": 1, "endpoint": 2, "resource_name": 3, "options": 4},
    "DevicePluginOptions": {"pre_start_required": 1, "get_preferred_allocation_available": 2},
    "ListAndWatchResponse": {"devices": 1},
    "Device": {"ID": 1, "health": 2, "topology": 3},
    "TopologyInfo": {"nodes": 1},
    "NUMANode": {"ID": 1},
    "PreferredAllocationRequest": {"container_requests": 1},
    "ContainerPreferredAllocationRequest": {"available_deviceIDs": 1, "must_include_deviceIDs": 2,
                                            "allocation_size": 3},
    "PreferredAllocationResponse": {"container_responses": 1},
    "ContainerPreferredAllocationResponse": {"deviceIDs": 1},
    "AllocateRequest": {"container_requests": 1},
    "ContainerAllocateRequest": {"devices_ids": 1},
    "AllocateResponse": {"container_responses": 1},
    "ContainerAllocateResponse": {"envs": 1, "mounts": 2, "devices": 3, "annotations": 4, "cdi_devices": 5},
    "Mount": {"container_path": 1, "host_path": 2, "read_only": 3},
    "DeviceSpec": {"container_path": 1, "host_path": 2, "permissions": 3},
    "CDIDevice": {"name": 1},
    "PreStartContainerRequest": {"devices_ids": 1},
    "PreStartContainerResponse": {},
    "Empty": {},
}


def test_api_proto_is_the_recorded_upstream_file():
    data = (PKG / "api.proto").read_bytes()
    assert hashlib.sha256(data).hexdigest() == UPSTREAM_SHA256, "api.proto must stay the upstream file"
    readme = (PKG / "README.md").read_text()
    assert f"- sha256: `{UPSTREAM_SHA256}`" in readme and UPSTREAM_COMMIT in readme
    assert "pkg/apis/deviceplugin/v1beta1/api.proto" in readme
    # It imports nothing, so the descriptors load without any other .proto's module.
    assert not re.search(rb"^\s*import\s", data, re.M)
    assert list(pb.DESCRIPTOR.dependencies) == []


def test_generated_module_matches_api_proto(tmp_path):
    """The committed api_pb2.py holds exactly what protoc makes of api.proto today."""
    pytest.importorskip("grpc_tools")
    from google.protobuf import descriptor_pb2

    root = PKG.parents[2]  # python/
    out = tmp_path / "api.desc"
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"-I{root}", f"--descriptor_set_out={out}",
                    "gpufleet/k8s/deviceplugin/api.proto"], check=True)
    (fresh,) = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes()).file
    stack = list(fresh.message_type)  # Python gencode leaves out json_name, which protoc adds here
    while stack:
        message = stack.pop()
        stack.extend(message.nested_type)
        for f in message.field:
            f.ClearField("json_name")
    committed = descriptor_pb2.FileDescriptorProto.FromString(pb.DESCRIPTOR.serialized_pb)
    assert committed == fresh, "run python/gpufleet/k8s/deviceplugin/regenerate.sh"


def test_every_kubelet_rpc_has_the_upstream_types():
    assert pb.DESCRIPTOR.package == "v1beta1"
    services = pb.DESCRIPTOR.services_by_name
    assert set(services) == {"Registration", "DevicePlugin"}
    served = {(s, m.name) for s in services for m in services[s].methods}
    assert served == set(RPCS)
    for (service, method), (request, response, streams) in RPCS.items():
        m = services[service].methods_by_name[method]
        assert m.full_name == f"v1beta1.{service}.{method}"
        assert (m.input_type.full_name, m.output_type.full_name) == (f"v1beta1.{request}", f"v1beta1.{response}")
        assert (m.client_streaming, m.server_streaming) == (False, streams)
        # The servicer the plugin subclasses has a handler for it.
        assert callable(getattr(getattr(pb_grpc, f"{service}Servicer"), method))
    for name in ("Registration", "DevicePlugin"):
        assert hasattr(pb_grpc, f"{name}Stub") and hasattr(pb_grpc, f"add_{name}Servicer_to_server")


def test_field_numbers_are_upstream():
    messages = pb.DESCRIPTOR.message_types_by_name
    assert set(messages) == set(FIELDS)
    for name, fields in FIELDS.items():
        assert {f.name: f.number for f in messages[name].fields} == fields, name
    assert messages["NUMANode"].fields_by_name["ID"].type == messages["NUMANode"].fields[0].TYPE_INT64
    for field in ("envs", "annotations"):
        assert messages["ContainerAllocateResponse"].fields_by_name[field].message_type.GetOptions().map_entry


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, payload: bytes | str) -> bytes:
    """A length-delimited field (strings, messages, packed data)."""
    payload = payload.encode() if isinstance(payload, str) else payload
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _raw(ch: grpc.Channel, method: str, request: bytes, response):
    """Calls by the method path the kubelet uses, with hand-encoded request bytes."""
    return ch.unary_unary(method, request_serializer=lambda b: b,
                          response_deserializer=response.FromString)(request, timeout=T)


def test_kubelet_round_trip_over_unix_socket(tmp_path):
    sockdir = tmp_path / "dp"
    sockdir.mkdir()
    gpus = inventory("h100_pcie4_bridged", tmp_path)
    u = uuids(gpus)
    kubelet, ksrv = start_kubelet(sockdir / "kubelet.sock")
    try:
        with DevicePluginServer("nvidia.com/gpu", gpus.devices, "whole", None, str(sockdir),
                                nvlink_groups=gpus.nvlink_groups, pre_start_required=True) as srv:
            srv.register_with_kubelet(timeout=T)
            reg = kubelet.requests.get(timeout=T)
            assert (reg.version, reg.endpoint, reg.resource_name) == ("v1beta1", srv.socket_name, "nvidia.com/gpu")
            assert reg.options.pre_start_required and reg.options.get_preferred_allocation_available

            ch, stub = stub_for(srv)
            try:
                opts = _raw(ch, "/v1beta1.DevicePlugin/GetDevicePluginOptions", b"", pb.DevicePluginOptions)
                assert opts == reg.options
                first = next(stub.ListAndWatch(pb.Empty(), timeout=T))
                assert [(d.ID, d.health, [n.ID for n in d.topology.nodes]) for d in first.devices] == \
                    [(u[0], "Healthy", [0]), (u[1], "Healthy", [0]), (u[2], "Healthy", [1]), (u[3], "Healthy", [1])]

                # ContainerPreferredAllocationRequest: available 1, must_include 2, size 3 (varint).
                container = b"".join(_field(1, i) for i in (u[0], u[2], u[3])) + _field(2, u[3]) + b"\x18\x02"
                preferred = _raw(ch, "/v1beta1.DevicePlugin/GetPreferredAllocation", _field(1, container),
                                 pb.PreferredAllocationResponse)
                assert [list(r.deviceIDs) for r in preferred.container_responses] == [[u[2], u[3]]]

                # Two containers, devices_ids = 1.
                request = _field(1, _field(1, u[2]) + _field(1, u[3])) + _field(1, _field(1, u[0]))
                allocated = _raw(ch, "/v1beta1.DevicePlugin/Allocate", request, pb.AllocateResponse)
                envs = [dict(r.envs) for r in allocated.container_responses]
                assert [e["NVIDIA_VISIBLE_DEVICES"] for e in envs] == [f"{u[2]},{u[3]}", u[0]]
                assert all(not (r.mounts or r.devices or r.annotations or r.cdi_devices)
                           for r in allocated.container_responses)

                started = _raw(ch, "/v1beta1.DevicePlugin/PreStartContainer", _field(1, u[0]),
                               pb.PreStartContainerResponse)
                assert started.ByteSize() == 0
                srv.set_health(0, False)
                with pytest.raises(grpc.RpcError) as e:
                    stub.PreStartContainer(pb.PreStartContainerRequest(devices_ids=[u[0]]), timeout=T)
                assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION
            finally:
                ch.close()
    finally:
        ksrv.stop(0).wait()


def test_every_container_allocate_response_field_survives_the_wire():
    """Fields the plugin leaves empty today still encode with upstream numbers for the kubelet."""
    resp = pb.ContainerAllocateResponse(
        envs={"A": "1"}, mounts=[pb.Mount(container_path="/c", host_path="/h", read_only=True)],
        devices=[pb.DeviceSpec(container_path="/dev/x", host_path="/dev/y", permissions="rw")],
        annotations={"k": "v"}, cdi_devices=[pb.CDIDevice(name="nvidia.com/gpu=0")])
    wire = resp.SerializeToString(deterministic=True)
    assert wire == (_field(1, _field(1, "A") + _field(2, "1"))
                    + _field(2, _field(1, "/c") + _field(2, "/h") + b"\x18\x01")
                    + _field(3, _field(1, "/dev/x") + _field(2, "/dev/y") + _field(3, "rw"))
                    + _field(4, _field(1, "k") + _field(2, "v"))
                    + _field(5, _field(1, "nvidia.com/gpu=0")))
    assert pb.ContainerAllocateResponse.FromString(wire) == resp
