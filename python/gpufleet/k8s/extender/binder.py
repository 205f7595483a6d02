"""Binders: what "bind" does outside gpufleet once devices are reserved.

In a cluster the annotations must reach the pod *before* the Binding is created, because the
kubelet (and the device plugin behind it) reads them as soon as the pod lands on the node.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Optional, Protocol


class Binder(Protocol):
    # True when bind() may block on I/O, so the app runs it off the event loop.
    blocking: bool

    def bind(self, namespace: str, name: str, uid: str, node: str,
             annotations: dict[str, str]) -> None:
        """Raise on failure; the caller then unreserves the devices."""


@dataclass
class BindRecord:
    namespace: str
    name: str
    uid: str
    node: str
    annotations: dict[str, str]


class MemoryBinder:
    """Records bindings (tests and scenario mode). `fail_next` makes the next n binds raise."""
    blocking = False

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.records: dict[str, BindRecord] = {}
        # The record each pod had before its latest bind, so a bind that fails after the binder
        # (a journal write) puts it back: a refused bind leaves the records as they were.
        self._before: dict[str, Optional[BindRecord]] = {}
        self.fail_next = 0

    def bind(self, namespace: str, name: str, uid: str, node: str,
             annotations: dict[str, str]) -> None:
        key = f"{namespace}/{name}"
        with self._lock:
            if self.fail_next > 0:
                self.fail_next -= 1
                raise RuntimeError("injected binder failure")
            self._before[key] = self.records.get(key)
            self.records[key] = BindRecord(namespace, name, uid, node, dict(annotations))

    def forget(self, namespace: str, name: str, uid: str) -> None:
        """Undo this pod's latest bind (it failed after the binder wrote it)."""
        key = f"{namespace}/{name}"
        with self._lock:
            rec = self.records.get(key)
            if rec is None or (uid and rec.uid != uid) or key not in self._before:
                return
            before = self._before.pop(key)
            if before is None:
                del self.records[key]
            else:
                self.records[key] = before


class KubeBinder:
    """Patches the pod's annotations, then creates the Binding, with the official client."""
    blocking = True

    def __init__(self, core_v1: Any) -> None:
        self.api = core_v1

    def bind(self, namespace: str, name: str, uid: str, node: str,
             annotations: dict[str, str]) -> None:
        from gpufleet._extras import require
        # Imported here: only a real cluster needs it.
        client = require("kubernetes.client", "k8s", "binding through the Kubernetes API")

        self.api.patch_namespaced_pod(name, namespace, {"metadata": {"annotations": annotations}})
        body = client.V1Binding(
            metadata=client.V1ObjectMeta(name=name, namespace=namespace, uid=uid or None),
            target=client.V1ObjectReference(api_version="v1", kind="Node", name=node))
        # _preload_content=False: the client cannot deserialise the Binding reply (a known bug
        # of the generated code) although the call succeeded.
        self.api.create_namespaced_binding(namespace, body, _preload_content=False)
