"""Prometheus metrics of the device plugin (`gpufleet deviceplugin` serves them by default on
`--metrics-listen`, 0.0.0.0:9409).

One registry for every resource the process serves (with MIG, one per profile), so one /metrics
answers for all of them. Exported (prefix gpufleet_deviceplugin_), each labelled by `resource`:
- rpcs_total{resource, rpc, outcome}: Allocate, PreStartContainer and GetPreferredAllocation
  answered (outcome ok) or refused (outcome refused: an unhealthy GPU, an ID named twice, an ID
  another live pod holds, ...);
- list_updates_total{resource}: device lists sent on ListAndWatch streams;
- registered{resource}: 1 once the kubelet accepted the registration, 0 while waiting for it;
- list_streams{resource}: ListAndWatch streams open now (the kubelet holds one per resource);
- gpus{resource, health}: the resource's GPUs (MIG instances for a MIG resource), healthy or
  unhealthy;
- allocations_held{resource}: device IDs the allocation ledger holds for live pods.
The last four are read at scrape time.
"""
from __future__ import annotations

import threading
from typing import Any, Iterator

DEFAULT_PORT = 9409


class DevicePluginMetrics:
    """The metrics of the servers `watch`ed, in a registry of their own."""

    def __init__(self) -> None:
        from gpufleet._extras import require
        require("prometheus_client", "k8s", "the device plugin's metrics")
        from prometheus_client import CollectorRegistry, Counter

        self.registry = CollectorRegistry(auto_describe=True)
        self.rpcs = Counter("gpufleet_deviceplugin_rpcs", "Device plugin RPCs by outcome.",
                            ["resource", "rpc", "outcome"], registry=self.registry)
        self.list_updates = Counter("gpufleet_deviceplugin_list_updates",
                                    "Device lists sent on ListAndWatch streams.",
                                    ["resource"], registry=self.registry)
        self._servers: list[Any] = []
        self._lock = threading.Lock()
        self.registry.register(_ServerCollector(self))

    def watch(self, server: Any) -> None:
        """Reports on `server` (a DevicePluginServer) from now on."""
        with self._lock:
            if server not in self._servers:
                self._servers.append(server)

    def servers(self) -> list[Any]:
        with self._lock:
            return list(self._servers)

    def rpc(self, resource: str, name: str, outcome: str) -> None:
        self.rpcs.labels(resource, name, outcome).inc()

    def list_update(self, resource: str) -> None:
        self.list_updates.labels(resource).inc()

    def serve(self, host: str, port: int) -> Any:
        """An HTTP server for /metrics in a daemon thread; returns it (its port is server_port)."""
        from prometheus_client import start_http_server

        server, _ = start_http_server(port, addr=host, registry=self.registry)
        return server


class _ServerCollector:
    def __init__(self, metrics: DevicePluginMetrics) -> None:
        self.metrics = metrics

    def describe(self) -> list[Any]:
        return []

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        registered = GaugeMetricFamily("gpufleet_deviceplugin_registered",
                                       "1 once the kubelet accepted the registration.",
                                       labels=["resource"])
        streams = GaugeMetricFamily("gpufleet_deviceplugin_list_streams",
                                    "ListAndWatch streams open now.", labels=["resource"])
        gpus = GaugeMetricFamily("gpufleet_deviceplugin_gpus",
                                 "GPUs (MIG instances for a MIG resource) by health.",
                                 labels=["resource", "health"])
        held = GaugeMetricFamily("gpufleet_deviceplugin_allocations_held",
                                 "Device IDs held for live pods.", labels=["resource"])
        for server in self.metrics.servers():
            name = server.resource_name
            registered.add_metric([name], 1 if server.registered else 0)
            streams.add_metric([name], server.open_streams)
            states = list(server.health().values())
            gpus.add_metric([name, "healthy"], sum(1 for ok in states if ok))
            gpus.add_metric([name, "unhealthy"], sum(1 for ok in states if not ok))
            held.add_metric([name], server.ledger.size())
        yield from (registered, streams, gpus, held)
