"""`gpufleet deviceplugin`: serve GPUs to the kubelet (device plugin API v1beta1)."""
from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from typing import Any

from gpufleet import logs
from gpufleet.commands._bounds import REPLICAS_MAX, count, seconds
from gpufleet.k8s.deviceplugin.metrics import DEFAULT_PORT
from gpufleet.node.keys import RES_NVIDIA_GPU

log = logging.getLogger("gpufleet.deviceplugin")

# Metrics are on unless asked otherwise: the chart scrapes this port (deploy/helm/gpufleet).
METRICS_LISTEN = f"0.0.0.0:{DEFAULT_PORT}"


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "deviceplugin", help="serve this node's GPUs to the kubelet (device plugin API v1beta1)",
        description="Kubelet device plugin. whole: one device per GPU (UUID). shared: each GPU as "
                    "--replicas IDs or as memory units; Allocate then applies the pod's "
                    "Koordinator or gpushare annotation (visible GPUs + MPS limits).")
    p.add_argument("--resource-name", default=RES_NVIDIA_GPU,
                   help="extended resource (default %(default)s; e.g. aliyun.com/gpu-mem for shared)")
    p.add_argument("--mode", choices=["whole", "shared"], default="whole")
    share = p.add_mutually_exclusive_group()
    share.add_argument("--replicas", type=count(1, REPLICAS_MAX), help="shared: IDs per GPU")
    share.add_argument("--memory-unit", help="shared: bytes per ID as a quantity (default 1Gi). The "
                       "kubelet reads at most 4 MiB of IDs per ListAndWatch message; a smaller unit "
                       "(or more --replicas) than fits is refused at start, naming what fits")
    p.add_argument("--socket-dir", default="/var/lib/kubelet/device-plugins")
    p.add_argument("--kubelet-socket", help="default: SOCKET_DIR/kubelet.sock")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--devices", metavar="FILE", help="device specs file instead of NVML")
    src.add_argument("--replay", metavar="NVML_JSON", help="recorded NVML answers instead of NVML")
    p.add_argument("--node-name", default=os.environ.get("NODE_NAME"),
                   help="shared mode: read pods bound to this node from the API server "
                        "(default $NODE_NAME); without it, IDs map straight to GPUs")
    p.add_argument("--mps-pipe-dir", default=None,
                   help="shared: mount this host MPS pipe directory into containers that get MPS "
                        "limits (e.g. /tmp/nvidia-mps; the MPS daemon must run on the node)")
    p.add_argument("--health-interval", type=seconds(), default=10.0,
                   help="seconds between NVML health probes (0: off)")
    p.add_argument("--mig-strategy", choices=["none", "mixed", "single"], default="mixed",
                   help="GPUs in MIG mode: mixed serves nvidia.com/mig-<profile> per profile (and "
                        "nvidia.com/gpu for the other GPUs), single serves the instances as "
                        "nvidia.com/gpu, none refuses them (default %(default)s)")
    p.add_argument("--metrics-listen", metavar="HOST:PORT", default=METRICS_LISTEN,
                   help="serve Prometheus metrics of every resource served at "
                        "http://HOST:PORT/metrics, or 'off' (default %(default)s)")
    logs.add_arguments(p)
    p.set_defaults(func=handler)


def _health_loop(servers: list[Any], nvml: Any, stop: threading.Event, interval: float) -> None:
    from gpufleet.node.inventory import probe_health
    handles = {}
    for i in range(nvml.nvmlDeviceGetCount()):
        h = nvml.nvmlDeviceGetHandleByIndex(i)
        try:
            handles[int(nvml.nvmlDeviceGetMinorNumber(h))] = h
        except Exception:
            handles[i] = h
    while not stop.wait(interval):
        health = {minor: probe_health(nvml, h) for minor, h in handles.items()}
        for server in servers:
            # A MIG instance follows its GPU ("parent_minor"); a whole GPU is its own.
            for minor, spec in server.table.specs.items():
                parent = int(spec.get("parent_minor", minor))
                if parent in health:
                    server.set_health(minor, health[parent])


def handler(args: argparse.Namespace) -> int:
    logs.configure(args.log_level, args.log_format)
    from gpufleet.node.annotations import GIB, parse_quantity
    from gpufleet.node.inventory import NvmlUnavailable, load_devices_file, load_nvml, read_inventory
    nvml = None
    try:
        if args.devices:
            inv = load_devices_file(args.devices)
        elif args.replay:
            from gpufleet.commands.node import read_replay
            nvml, inv = read_replay(args.replay)
        else:
            nvml = load_nvml()
            inv = read_inventory(nvml)
        from gpufleet.k8s.deviceplugin.pods import KubernetesPodSource
        from gpufleet.k8s.deviceplugin.server import DevicePluginServer, serve
        kw: dict[str, Any] = {}
        if args.mode == "shared":
            if args.replicas is not None:
                kw["replicas"] = args.replicas
            else:
                kw["memory_unit_bytes"] = parse_quantity(args.memory_unit) if args.memory_unit else GIB
        from gpufleet.k8s.deviceplugin.mig import has_mig, mig_resources
        if has_mig(inv.devices):
            # One server per resource; instances are handed out whole, by MIG UUID.
            if args.mode != "whole":
                raise ValueError("GPUs in MIG mode are served whole only (--mode whole)")
            servers = [DevicePluginServer(name, devs, "whole", None, args.socket_dir)
                       for name, devs in sorted(mig_resources(inv.devices, args.mig_strategy).items())]
        else:
            pods = KubernetesPodSource(args.node_name) if args.mode == "shared" and args.node_name else None
            servers = [DevicePluginServer(args.resource_name, inv.devices, args.mode, pods, args.socket_dir,
                                          nvlink_groups=inv.nvlink_groups, mps_pipe_dir=args.mps_pipe_dir,
                                          **kw)]
        server = servers[0]
    except (NvmlUnavailable, OSError, ValueError, ImportError) as e:
        print(f"gpufleet deviceplugin: {e}", file=sys.stderr)
        return 2
    if args.metrics_listen != "off":
        from gpufleet.k8s.listen import parse_listen
        try:
            host, port = parse_listen(args.metrics_listen, "--metrics-listen")
            metrics = server.enable_metrics()
            for other in servers[1:]:
                other.enable_metrics(metrics)
            http = metrics.serve(host, port)
        except ValueError as e:   # names the option itself
            print(f"gpufleet deviceplugin: {e}", file=sys.stderr)
            return 2
        except OSError as e:
            print(f"gpufleet deviceplugin: --metrics-listen {args.metrics_listen}: {e}",
                  file=sys.stderr)
            return 2
        log.info("metrics of %s at http://%s:%d/metrics", ", ".join(s.resource_name for s in servers),
                 host if ":" not in host else f"[{host}]", http.server_port)
    else:
        log.info("metrics off (--metrics-listen off)")
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    if nvml is not None and args.health_interval > 0:
        threading.Thread(target=_health_loop, args=(servers, nvml, stop, args.health_interval),
                         daemon=True).start()
    others = [threading.Thread(target=serve, args=(s, stop, args.kubelet_socket), daemon=True)
              for s in servers[1:]]
    for t in others:
        t.start()
    serve(server, stop, args.kubelet_socket)
    for t in others:
        t.join()
    return 0
