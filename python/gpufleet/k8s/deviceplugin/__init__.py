"""Kubelet device plugin for GPUs (API v1beta1, gRPC over unix sockets).

`DevicePluginServer` and `register_with_kubelet` live in `server` (needs grpcio); `listing`
(needs protobuf) measures the ListAndWatch message; `ledger`, `pods`, `table` and `topology`
are pure Python. Names are resolved lazily so importing the pure parts
does not require grpc.
"""
from __future__ import annotations

from typing import Any

_EXPORTS = {
    "DevicePluginServer": "server", "register_with_kubelet": "server", "serve": "server",
    "API_VERSION": "server", "DEVICE_PLUGIN_DIR": "server",
    "PodInfo": "pods", "InMemoryPodSource": "pods", "KubernetesPodSource": "pods",
    "kubernetes_pod_source": "pods", "DeviceTable": "table", "Topology": "topology",
    "AllocationLedger": "ledger", "ListingTooLarge": "table", "build_table": "listing",
}
__all__ = ["API_VERSION", "DEVICE_PLUGIN_DIR", "AllocationLedger", "DevicePluginServer", "DeviceTable",
           "InMemoryPodSource", "KubernetesPodSource", "ListingTooLarge", "PodInfo", "Topology", "build_table",
           "kubernetes_pod_source", "register_with_kubelet", "serve"]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        import importlib
        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(name)
