"""Prometheus metrics of the device plugin (served by `gpufleet deviceplugin --metrics-listen`).

Exported (prefix gpufleet_deviceplugin_):
- rpcs_total{rpc, outcome}: Allocate, PreStartContainer and GetPreferredAllocation answered
  (outcome ok) or refused (outcome refused: an unhealthy GPU, an ID named twice, an ID another
  live pod holds, ...);
- list_updates_total: device lists sent on ListAndWatch streams;
- gpus{health}: this node's GPUs, healthy or unhealthy, read at scrape time;
- allocations_held: device IDs the allocation ledger holds for live pods, read at scrape time.
"""
from __future__ import annotations

from typing import Any, Callable, Iterator


class DevicePluginMetrics:
    """One plugin's metrics, in a registry of its own."""

    def __init__(self, health: Callable[[], dict[int, bool]], held: Callable[[], int]) -> None:
        from prometheus_client import CollectorRegistry, Counter

        self.registry = CollectorRegistry(auto_describe=True)
        self.rpcs = Counter("gpufleet_deviceplugin_rpcs", "Device plugin RPCs by outcome.",
                            ["rpc", "outcome"], registry=self.registry)
        self.list_updates = Counter("gpufleet_deviceplugin_list_updates",
                                    "Device lists sent on ListAndWatch streams.",
                                    registry=self.registry)
        self.registry.register(_NodeCollector(health, held))

    def rpc(self, name: str, outcome: str) -> None:
        self.rpcs.labels(name, outcome).inc()

    def serve(self, host: str, port: int) -> Any:
        """An HTTP server for /metrics in a daemon thread; returns it (its port is server_port)."""
        from prometheus_client import start_http_server

        server, _ = start_http_server(port, addr=host, registry=self.registry)
        return server


class _NodeCollector:
    def __init__(self, health: Callable[[], dict[int, bool]], held: Callable[[], int]) -> None:
        self.health, self.held = health, held

    def describe(self) -> list[Any]:
        return []

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        gpus = GaugeMetricFamily("gpufleet_deviceplugin_gpus", "GPUs on this node by health.",
                                 labels=["health"])
        states = list(self.health().values())
        gpus.add_metric(["healthy"], sum(1 for ok in states if ok))
        gpus.add_metric(["unhealthy"], sum(1 for ok in states if not ok))
        yield gpus
        yield GaugeMetricFamily("gpufleet_deviceplugin_allocations_held",
                                "Device IDs held for live pods.", value=self.held())
