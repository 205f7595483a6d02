"""kube-scheduler extender (filter / prioritize / bind / preempt) backed by gpufleet.Cluster.

The app, the binder and the cluster watcher need the k8s extra (Starlette, anyio, the Kubernetes
client); `convert`, `quantity` and `protocol` are pure Python and used elsewhere (gpufleet.dra).
Names are resolved lazily so that importing the pure parts needs no extra.
"""
from __future__ import annotations

from typing import Any

_EXPORTS = {
    "create_app": "app", "KubeBinder": "binder", "MemoryBinder": "binder", "ConvertError": "convert",
    "node_spec": "convert", "pod_args": "convert", "KubeWatcher": "kube", "load_kube": "kube",
    "ExtenderState": "state", "load_scenario": "state", "state_from_scenario": "state",
}
__all__ = ["create_app", "ExtenderState", "MemoryBinder", "KubeBinder", "ConvertError",
           "node_spec", "pod_args", "load_scenario", "load_kube", "KubeWatcher",
           "state_from_scenario"]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        import importlib
        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
