"""Where shared-mode Allocate finds the pod a container belongs to.

The kubelet's Allocate names device IDs but not the pod, so (like gpushare) we match the oldest
bound, not-yet-assigned pod whose requested units equal the number of requested IDs, and read
the real GPU choice from its annotations. A pod source is a callable returning the pods bound to
this node; `mark_assigned(pod)` records that the allocation was consumed.
"""
from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field
from typing import AbstractSet, Any, Callable, Iterable

from gpufleet.node.annotations import PodAllocation, allocation_from_annotations, parse_gpushare
from gpufleet.node.keys import (GPUFLEET_ASSIGNED, GPUSHARE_ASSIGN_TIME, GPUSHARE_ASSIGNED,
                               GPUSHARE_IDX, KOORD_DEVICE_ALLOCATED)


@dataclass
class PodInfo:
    namespace: str
    name: str
    uid: str
    annotations: dict[str, str] = field(default_factory=dict)
    created_ns: int = 0  # creation time; the ordering key when there is no assume time

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def assigned(self) -> bool:
        a = self.annotations
        if a.get(GPUFLEET_ASSIGNED, "").lower() == "true":
            return True
        if GPUSHARE_IDX in a and KOORD_DEVICE_ALLOCATED not in a:
            return a.get(GPUSHARE_ASSIGNED, "false").lower() == "true"
        return False

    def order_key(self) -> tuple[int, str]:
        share = parse_gpushare(self.annotations) if GPUSHARE_IDX in self.annotations else None
        t = share.assume_time_ns if share and share.assume_time_ns is not None else self.created_ns
        return (t, self.uid)


PodSource = Callable[[], Iterable[PodInfo]]
MarkAssigned = Callable[[PodInfo], None]
UnitCounter = Callable[[PodAllocation], int]


def replica_units(replicas: int) -> UnitCounter:
    """Units of a pod when each GPU is split into `replicas` equal shares."""
    def count(alloc: PodAllocation) -> int:
        if alloc.gpushare is not None and not alloc.grants:
            return alloc.gpushare.pod_units
        return sum(math.ceil((g.core_percent if g.core_percent is not None else 100) * replicas / 100)
                   for g in alloc.grants if g.type == "gpu")
    return count


def memory_units(unit_bytes: int) -> UnitCounter:
    """Units of a pod when each GPU is advertised as memory units of `unit_bytes`."""
    def count(alloc: PodAllocation) -> int:
        if alloc.gpushare is not None:
            return alloc.gpushare.pod_units
        return sum(math.ceil((g.memory_bytes or 0) / unit_bytes) for g in alloc.grants if g.type == "gpu")
    return count


def select_pod(pods: Iterable[PodInfo], units: int, count: UnitCounter, *,
               consumed: AbstractSet[str] = frozenset(), unit_bytes: int) -> tuple[PodInfo, PodAllocation] | None:
    """The oldest unassigned pod with an allocation annotation whose units equal `units`.
    Pods with malformed annotations are skipped (they must not block everybody else)."""
    best: tuple[PodInfo, PodAllocation] | None = None
    for pod in pods:
        if pod.uid in consumed or pod.assigned():
            continue
        try:
            alloc = allocation_from_annotations(pod.annotations, unit_bytes=unit_bytes)
        except ValueError:
            continue
        if alloc is None or not any(g.type == "gpu" for g in alloc.grants):
            continue
        if count(alloc) != units:
            continue
        if best is None or pod.order_key() < best[0].order_key():
            best = (pod, alloc)
    return best


def assigned_patch(pod: PodInfo, now_ns: int | None = None) -> dict[str, str]:
    """Annotations that mark `pod`'s allocation as consumed, in the style it was written in."""
    now = str(now_ns if now_ns is not None else time.time_ns())
    out: dict[str, str] = {}
    if KOORD_DEVICE_ALLOCATED in pod.annotations:
        out[GPUFLEET_ASSIGNED] = "true"
    if GPUSHARE_IDX in pod.annotations:  # gpushare's own tooling reads these two
        out.update({GPUSHARE_ASSIGNED: "true", GPUSHARE_ASSIGN_TIME: now})
    return out


class InMemoryPodSource:
    """Pod source for tests and single-node experiments; thread-safe. Listed pods are live
    until `remove(uid)` (the pod ended or was deleted)."""

    def __init__(self, pods: Iterable[PodInfo] = ()) -> None:
        self._lock = threading.Lock()
        self._pods: list[PodInfo] = list(pods)

    def add(self, pod: PodInfo) -> None:
        with self._lock:
            self._pods.append(pod)

    def __call__(self) -> list[PodInfo]:
        with self._lock:
            return [PodInfo(p.namespace, p.name, p.uid, dict(p.annotations), p.created_ns)
                    for p in self._pods]

    def remove(self, uid: str) -> None:
        with self._lock:
            self._pods = [p for p in self._pods if p.uid != uid]

    def live_uids(self) -> set[str]:
        with self._lock:
            return {p.uid for p in self._pods}

    def mark_assigned(self, pod: PodInfo) -> None:
        with self._lock:
            for p in self._pods:
                if p.uid == pod.uid:
                    p.annotations.update(assigned_patch(p))


class KubernetesPodSource:
    """Pods bound to `node_name` from the API server, via the official `kubernetes` client.

    The client is imported on first use (it is an optional dependency). In-cluster config is
    tried first, then ~/.kube/config. Only Pending pods are listed: the kubelet allocates devices
    before containers start. The DaemonSet needs RBAC `get,list,patch` on pods."""

    def __init__(self, node_name: str, api: Any = None) -> None:
        self.node_name = node_name
        self._api = api

    def _core(self) -> Any:
        if self._api is None:
            from gpufleet._extras import require
            require("kubernetes", "k8s", "the device plugin's API-server pod source")
            from kubernetes import client, config  # type: ignore[import-not-found]
            try:
                config.load_incluster_config()
            except config.ConfigException:
                config.load_kube_config()
            self._api = client.CoreV1Api()
        return self._api

    def __call__(self) -> list[PodInfo]:
        res = self._core().list_pod_for_all_namespaces(
            field_selector=f"spec.nodeName={self.node_name},status.phase=Pending")
        out = []
        for p in res.items:
            md = p.metadata
            created = md.creation_timestamp
            out.append(PodInfo(md.namespace, md.name, md.uid, dict(md.annotations or {}),
                               int(created.timestamp() * 1e9) if created else 0))
        return out

    def live_uids(self) -> set[str]:
        """Pods on the node that have not ended (any phase but Succeeded and Failed): the ones
        that may still hold devices."""
        res = self._core().list_pod_for_all_namespaces(
            field_selector=f"spec.nodeName={self.node_name},status.phase!=Succeeded,status.phase!=Failed")
        return {p.metadata.uid for p in res.items}

    def mark_assigned(self, pod: PodInfo) -> None:
        self._core().patch_namespaced_pod(pod.name, pod.namespace,
                                          {"metadata": {"annotations": assigned_patch(pod)}})


def kubernetes_pod_source(node_name: str) -> KubernetesPodSource:
    return KubernetesPodSource(node_name)

