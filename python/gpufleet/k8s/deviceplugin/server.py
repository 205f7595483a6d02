"""Kubelet device plugin (API v1beta1) served over a unix socket with grpcio."""
from __future__ import annotations

import logging
import math
import os
import threading
import time
from concurrent import futures
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from gpufleet._extras import require

for _name in ("grpc", "google.protobuf"):
    require(_name, "k8s", "the device plugin (gpufleet deviceplugin)")

import grpc

from gpufleet.errors import NotFoundError
from gpufleet.node.annotations import MIB, DeviceGrant
from gpufleet.k8s.deviceplugin import api_pb2 as pb
from gpufleet.k8s.deviceplugin import api_pb2_grpc as pb_grpc
from gpufleet.k8s.deviceplugin.ledger import AllocationLedger, Holder
from gpufleet.k8s.deviceplugin.listing import HEALTHY, UNHEALTHY, build_table, device_list
from gpufleet.k8s.deviceplugin.pods import (MarkAssigned, PodSource, UnitCounter, memory_units,
                                            replica_units, select_pod)
from gpufleet.k8s.deviceplugin.topology import Topology, choose
from gpufleet.node.env import container_env

log = logging.getLogger(__name__)

API_VERSION = "v1beta1"
DEVICE_PLUGIN_DIR = "/var/lib/kubelet/device-plugins"
KUBELET_SOCKET = "kubelet.sock"
__all__ = ["API_VERSION", "DEVICE_PLUGIN_DIR", "HEALTHY", "UNHEALTHY", "DevicePluginServer",
           "register_with_kubelet", "serve"]


class _Abort(Exception):
    """Raised inside handlers; turned into a gRPC status at the servicer boundary."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code


def _socket_name(resource_name: str) -> str:
    return "gpufleet-" + "".join(c if c.isalnum() else "-" for c in resource_name) + ".sock"


class DevicePluginServer(pb_grpc.DevicePluginServicer):
    """Serves one extended resource to the kubelet.

    mode "whole": one ID per GPU (its UUID); Allocate exposes exactly the requested GPUs.
    mode "shared": GPUs as `replicas` or memory-unit IDs. With a `pod_source`, Allocate matches
    the oldest unassigned pod whose units equal the request and applies its annotation
    (Koordinator or gpushare) including MPS limits, then calls `mark_assigned(pod)`. Without one,
    the requested IDs map to their GPUs (time-slicing, no limits).

    Allocate refuses, leaving every record as it was: an ID named twice in one request, an ID
    of an unhealthy GPU, and an ID held by another live pod (see `ledger`). The construction
    refuses settings whose ListAndWatch list the kubelet could not read (see `listing`).
    """

    def __init__(self, resource_name: str, devices: Iterable[Mapping[str, Any]], mode: str = "whole",
                 pod_source: PodSource | None = None, socket_dir: str = DEVICE_PLUGIN_DIR, *,
                 nvlink_groups: Sequence[Sequence[int]] | None = None, replicas: int | None = None,
                 memory_unit_bytes: int | None = None, mark_assigned: MarkAssigned | None = None,
                 socket_name: str | None = None, pre_start_required: bool = False,
                 mps_pipe_dir: str | None = None, max_workers: int = 16) -> None:
        devices = list(devices)
        self.resource_name = resource_name
        self.mode = mode
        self.devices = devices
        self.topology = Topology(devices, nvlink_groups)
        self.table = build_table(devices, mode, self.topology, replicas=replicas,
                                 memory_unit_bytes=memory_unit_bytes)
        self.pod_source = pod_source
        self.mark_assigned = mark_assigned or getattr(pod_source, "mark_assigned", None)
        # gpushare annotation units: the advertised memory unit, else MiB.
        self.unit_bytes = memory_unit_bytes or MIB
        self._count: UnitCounter = (replica_units(replicas) if replicas is not None
                                    else memory_units(self.unit_bytes))
        self.socket_dir = socket_dir
        self.socket_name = socket_name or _socket_name(resource_name)
        self.pre_start_required = pre_start_required
        # MPS limits only bind for MPS clients: containers given limits also get the node's MPS
        # pipe directory (mounted at the same path) when this is set.
        self.mps_pipe_dir = mps_pipe_dir
        self._max_workers = max_workers
        self._health = {m: bool(s.get("health", True)) for m, s in self.table.specs.items()}
        self._cond = threading.Condition()
        self._version = 0
        self._stopping = False
        self._consumed: set[str] = set()  # pod UIDs; guards against a slow mark_assigned
        self.ledger = AllocationLedger()
        self._alloc_lock = threading.Lock()
        self._server: grpc.Server | None = None
        self.metrics: Any = None  # a DevicePluginMetrics once enable_metrics() is called
        self.registered = False   # the kubelet accepted our registration (serve() keeps it)
        self.open_streams = 0     # ListAndWatch streams open now

    # --- lifecycle -------------------------------------------------------------------------
    @property
    def socket_path(self) -> str:
        return os.path.join(self.socket_dir, self.socket_name)

    def start(self) -> "DevicePluginServer":
        os.makedirs(self.socket_dir, exist_ok=True)
        if os.path.exists(self.socket_path):
            os.unlink(self.socket_path)  # stale socket from a previous run
        with self._cond:
            self._stopping = False
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=self._max_workers))
        pb_grpc.add_DevicePluginServicer_to_server(self, server)
        if server.add_insecure_port(f"unix://{self.socket_path}") == 0:
            raise RuntimeError(f"cannot listen on {self.socket_path}")
        server.start()
        self._server = server
        return self

    def stop(self, grace: float | None = 0.5) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._server is not None:
            self._server.stop(grace).wait()
            self._server = None

    def __enter__(self) -> "DevicePluginServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def options(self) -> pb.DevicePluginOptions:
        return pb.DevicePluginOptions(pre_start_required=self.pre_start_required,
                                      get_preferred_allocation_available=True)

    def register_with_kubelet(self, kubelet_socket: str | None = None, timeout: float = 5.0) -> None:
        """Registration.Register with our endpoint (socket file name, relative to the kubelet's
        device-plugin directory), resource name and options."""
        path = kubelet_socket or os.path.join(self.socket_dir, KUBELET_SOCKET)
        with grpc.insecure_channel(f"unix://{path}") as ch:
            grpc.channel_ready_future(ch).result(timeout=timeout)
            pb_grpc.RegistrationStub(ch).Register(
                pb.RegisterRequest(version=API_VERSION, endpoint=self.socket_name,
                                   resource_name=self.resource_name, options=self.options()),
                timeout=timeout)

    # --- health ----------------------------------------------------------------------------
    def enable_metrics(self, metrics: Any = None) -> Any:
        """Counts RPCs and list updates from now on, in `metrics` (a DevicePluginMetrics shared
        by the servers of one process) or in a new one; returns it."""
        from .metrics import DevicePluginMetrics

        if self.metrics is None:
            self.metrics = metrics if metrics is not None else DevicePluginMetrics()
            self.metrics.watch(self)
        return self.metrics

    def health(self) -> dict[int, bool]:
        """GPU minor -> healthy, as the next device list will say."""
        with self._cond:
            return dict(self._health)

    def set_health(self, minor: int, healthy: bool) -> None:
        """Marks a GPU (and all its shared IDs) healthy or not; open ListAndWatch streams get the
        new list."""
        if minor not in self._health:
            raise NotFoundError(f"unknown GPU minor {minor}")
        with self._cond:
            if self._health[minor] == healthy:
                return
            self._health[minor] = healthy
            self._version += 1
            self._cond.notify_all()
            ok, streams = sum(self._health.values()), self.open_streams
        log.log(logging.INFO if healthy else logging.WARNING,
                "%s: GPU minor %d is now %s (%d of %d GPUs healthy); the new list goes to %d "
                "ListAndWatch stream(s)", self.resource_name, minor,
                "healthy" if healthy else "unhealthy", ok, len(self._health), streams)

    def device_list(self) -> pb.ListAndWatchResponse:
        return device_list(self.table, self.topology, self._health.__getitem__)

    # --- RPCs ------------------------------------------------------------------------------
    def GetDevicePluginOptions(self, request: pb.Empty, context: grpc.ServicerContext) -> pb.DevicePluginOptions:
        return self.options()

    def ListAndWatch(self, request: pb.Empty, context: grpc.ServicerContext) -> Iterator[pb.ListAndWatchResponse]:
        context.add_callback(self._wake)  # a cancelled stream stops waiting at once
        with self._cond:
            self.open_streams += 1
        try:
            yield from self._list_and_watch(context)
        finally:
            with self._cond:
                self.open_streams -= 1

    def _list_and_watch(self, context: grpc.ServicerContext) -> Iterator[pb.ListAndWatchResponse]:
        seen = -1
        while True:
            with self._cond:
                while self._version == seen and not self._stopping and context.is_active():
                    self._cond.wait(timeout=1.0)
                if self._stopping or not context.is_active():
                    return
                first, seen = seen < 0, self._version
                msg = self.device_list()
            if self.metrics is not None:
                self.metrics.list_update(self.resource_name)
            ok = sum(1 for d in msg.devices if d.health == HEALTHY)
            log.info("%s: ListAndWatch %s %d devices (%d healthy, %d unhealthy)", self.resource_name,
                     "opened by the kubelet: listed" if first else "update: listed",
                     len(msg.devices), ok, len(msg.devices) - ok)
            yield msg

    def _wake(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def GetPreferredAllocation(self, request: pb.PreferredAllocationRequest,
                               context: grpc.ServicerContext) -> pb.PreferredAllocationResponse:
        return self._guard(context, lambda: pb.PreferredAllocationResponse(
            container_responses=[pb.ContainerPreferredAllocationResponse(deviceIDs=self._prefer(
                list(r.available_deviceIDs), list(r.must_include_deviceIDs), r.allocation_size))
                for r in request.container_requests]), "GetPreferredAllocation")

    def Allocate(self, request: pb.AllocateRequest, context: grpc.ServicerContext) -> pb.AllocateResponse:
        return self._guard(context, lambda: self._allocate([list(r.devices_ids) for r in request.container_requests]),
                           "Allocate")

    def PreStartContainer(self, request: pb.PreStartContainerRequest,
                          context: grpc.ServicerContext) -> pb.PreStartContainerResponse:
        def check() -> pb.PreStartContainerResponse:
            for m in self._minors(list(request.devices_ids)):
                if not self._health[m]:
                    raise _Abort(grpc.StatusCode.FAILED_PRECONDITION, f"GPU minor {m} is unhealthy")
            return pb.PreStartContainerResponse()
        return self._guard(context, check, "PreStartContainer")

    # --- implementation --------------------------------------------------------------------
    def _guard(self, context: grpc.ServicerContext, fn: Callable[[], Any], rpc: str) -> Any:
        try:
            answer = fn()
        except _Abort as e:
            if self.metrics is not None:
                self.metrics.rpc(self.resource_name, rpc, "refused")
            context.abort(e.code, str(e))
        if self.metrics is not None:
            self.metrics.rpc(self.resource_name, rpc, "ok")
        return answer

    def _minors(self, ids: Sequence[str]) -> list[int]:
        try:
            return self.table.minors_of(ids)
        except KeyError as e:
            raise _Abort(grpc.StatusCode.INVALID_ARGUMENT, f"{self.resource_name}: {e}") from None

    def _prefer(self, available: list[str], must: list[str], size: int) -> list[str]:
        self._minors(available + must)  # validates every id
        try:
            if self.mode == "whole":
                picked = choose(self.topology, [self.table.minor_of(i) for i in available],
                                [self.table.minor_of(i) for i in must], size)
                return [self.table.ids_by_minor[m][0] for m in picked]
            return self._prefer_shared(available, must, size)
        except ValueError as e:
            raise _Abort(grpc.StatusCode.INVALID_ARGUMENT, str(e)) from None

    def _prefer_shared(self, available: list[str], must: list[str], size: int) -> list[str]:
        """Keeps a request on as few GPUs as possible: must_include first, then the GPUs already
        touched, then the fullest GPU that still fits the rest (binpack), else the emptiest."""
        if not set(must) <= set(available) or len(must) > size or len(set(available)) < size:
            raise ValueError(f"cannot pick {size} of {len(set(available))} available ids "
                             f"with {len(must)} required")
        chosen = list(dict.fromkeys(must))
        free: dict[int, list[str]] = {}
        for i in dict.fromkeys(available):
            if i not in chosen:
                free.setdefault(self.table.minor_of(i), []).append(i)
        while len(chosen) < size:
            need = size - len(chosen)
            touched = {self.table.minor_of(i) for i in chosen}
            cands = [m for m in free if free[m]]
            fits = [m for m in cands if len(free[m]) >= need]
            if touched & set(cands):
                m = min(touched & set(cands))
            elif fits:
                m = min(fits, key=lambda x: (len(free[x]), x))
            else:
                m = max(cands, key=lambda x: (len(free[x]), -x))
            take = free[m][:need]
            free[m] = free[m][need:]
            chosen.extend(take)
        return chosen

    def _check_request(self, requests: list[list[str]]) -> list[list[int]]:
        """Known IDs, each named once in the whole request, all on healthy GPUs; returns the
        GPUs of each container."""
        per_container = [self._minors(ids) for ids in requests]
        seen: set[str] = set()
        for index, ids in enumerate(requests):
            for i in ids:
                if i in seen:
                    raise _Abort(grpc.StatusCode.INVALID_ARGUMENT,
                                 f"{self.resource_name}: device id {i!r} is named twice in one Allocate "
                                 f"request (container {index})")
                seen.add(i)
        for ids in requests:
            for i in ids:
                minor = self.table.minor_of(i)
                if not self._health[minor]:
                    raise _Abort(grpc.StatusCode.FAILED_PRECONDITION,
                                 f"{self.resource_name}: device id {i!r} is on GPU minor {minor}, "
                                 "which is unhealthy")
        return per_container

    def _live_pods(self) -> set[str]:
        """UIDs of the pods that may still hold devices (see `ledger`)."""
        assert self.pod_source is not None
        live = getattr(self.pod_source, "live_uids", None)
        return set(live()) if live is not None else {p.uid for p in self.pod_source()}

    def _allocate(self, requests: list[list[str]]) -> pb.AllocateResponse:
        per_container = self._check_request(requests)
        if self.mode == "whole" or self.pod_source is None:
            return pb.AllocateResponse(container_responses=[
                pb.ContainerAllocateResponse(envs=self._env([DeviceGrant("gpu", m) for m in minors]))
                for minors in per_container])
        units = sum(len(ids) for ids in requests)
        all_ids = [i for c in requests for i in c]
        # One allocation at a time, so two concurrent calls never pick the same pod or IDs.
        with self._alloc_lock:
            try:
                pods = list(self.pod_source())
                live = self._live_pods()
            except Exception as e:  # the API server being unreachable is the kubelet's retry
                raise _Abort(grpc.StatusCode.UNAVAILABLE, f"cannot list pods: {e}") from None
            taken = self.ledger.conflicts(all_ids, live)
            if taken:
                i, holder = taken[0]
                raise _Abort(grpc.StatusCode.FAILED_PRECONDITION,
                             f"{self.resource_name}: device id {i!r} is allocated to pod {holder.pod_key}, "
                             "which is still on this node")
            match = select_pod(pods, units, self._count, consumed=self._consumed,
                               unit_bytes=self.unit_bytes)
            if match is None:
                raise _Abort(grpc.StatusCode.FAILED_PRECONDITION,
                             f"{self.resource_name}: no pending pod on this node with an unassigned "
                             f"allocation of {units} units")
            pod, alloc = match
            sick = sorted({g.minor for g in alloc.grants if g.type == "gpu" and not self._health.get(g.minor, True)})
            if sick:
                raise _Abort(grpc.StatusCode.FAILED_PRECONDITION,
                             f"pod {pod.key}: its allocation names GPU minor {sick[0]}, which is unhealthy")
            try:
                responses = [self._with_mps(container_env(
                    alloc, self.devices, container_units=len(ids), unit_bytes=self.unit_bytes))
                    for ids in requests]
            except ValueError as e:
                raise _Abort(grpc.StatusCode.FAILED_PRECONDITION, f"pod {pod.key}: {e}") from None
            self._consumed.add(pod.uid)
            self.ledger.hold(all_ids, Holder(pod.uid, pod.key), live | {pod.uid})
        if self.mark_assigned is not None:
            try:
                self.mark_assigned(pod)
            except Exception:  # recorded locally in _consumed; the next list will agree
                log.exception("marking pod %s assigned failed", pod.key)
        log.info("allocated %s units of %s to pod %s", units, self.resource_name, pod.key)
        return pb.AllocateResponse(container_responses=responses)

    def _with_mps(self, env: dict[str, str]) -> pb.ContainerAllocateResponse:
        if self.mps_pipe_dir and any(k.startswith("CUDA_MPS_") for k in env):
            env["CUDA_MPS_PIPE_DIRECTORY"] = self.mps_pipe_dir
            return pb.ContainerAllocateResponse(envs=env, mounts=[pb.Mount(
                container_path=self.mps_pipe_dir, host_path=self.mps_pipe_dir, read_only=False)])
        return pb.ContainerAllocateResponse(envs=env)

    def _env(self, grants: list[DeviceGrant]) -> dict[str, str]:
        try:
            return container_env(grants, self.devices)
        except ValueError as e:
            raise _Abort(grpc.StatusCode.FAILED_PRECONDITION, str(e)) from None


def register_with_kubelet(server: DevicePluginServer, kubelet_socket: str | None = None,
                          timeout: float = 5.0) -> None:
    server.register_with_kubelet(kubelet_socket, timeout)


def serve(server: DevicePluginServer, stop: threading.Event, kubelet_socket: str | None = None,
          poll_s: float = 1.0, note_s: float = 30.0) -> None:
    """Runs until `stop` is set. The kubelet deletes plugin sockets when it restarts and forgets
    registrations, so when our socket disappears we listen again and re-register.

    Says what it does: a line at start, one every `note_s` seconds while the kubelet's socket is
    missing or refuses the registration (a plugin that waits silently looks hung), and one at
    each registration."""
    kubelet = kubelet_socket or os.path.join(server.socket_dir, KUBELET_SOCKET)
    name = server.resource_name
    kubelet_id: tuple[int, int, int] | None = None
    server.registered = False
    last_note = -math.inf
    server.start()
    log.info("%s: serving %d devices (%s mode) on %s", name, len(server.table.ids), server.mode,
             server.socket_path)
    try:
        while not stop.is_set():
            if not os.path.exists(server.socket_path):
                log.warning("%s: plugin socket %s vanished (kubelet restart?); listening again",
                            name, server.socket_path)
                server.stop()
                server.start()
                server.registered = False
            try:
                st = os.stat(kubelet)
                # ctime too: a recreated socket may reuse the inode number.
                now_id: tuple[int, int, int] | None = (st.st_dev, st.st_ino, st.st_ctime_ns)
            except OSError:
                now_id = None
            if now_id != kubelet_id:  # a new kubelet socket means a new kubelet: register again
                kubelet_id, server.registered = now_id, False
                last_note = -math.inf
            if not server.registered:
                note = time.monotonic() - last_note >= note_s
                if now_id is None:   # no socket: the kubelet is not up yet, wait
                    if note:
                        log.info("%s: waiting for the kubelet: no socket at %s yet (checking every "
                                 "%gs)", name, kubelet, poll_s)
                        last_note = time.monotonic()
                else:
                    try:
                        server.register_with_kubelet(kubelet)
                        server.registered = True
                        log.info("%s: registered with the kubelet at %s (endpoint %s)", name,
                                 kubelet, server.socket_name)
                    except Exception as e:  # kubelet not ready yet: keep trying
                        if note:
                            log.warning("%s: registration with the kubelet at %s failed, retrying "
                                        "every %gs: %s", name, kubelet, poll_s, e)
                            last_note = time.monotonic()
            stop.wait(poll_s)
    finally:
        server.registered = False
        server.stop()
