"""Kubernetes Pod / Node JSON (their ordinary camelCase form) -> gpufleet pod arguments / node specs.

Everything here is data shuffling: quantities are read by the native core (a pod's effective
request in one call, imported on first use so this module imports without the extension), and
the error messages name the object and the field that was wrong.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from . import quantity

from ..keys import (ANN_DEVICES, ANN_GPU_MODELS, ANN_GPU_SHARING, ANN_NVLINK, ANN_SCOPE,
                    LABEL_GPU_MEMORY, LABEL_GPU_PRODUCT, LABEL_MIG_STRATEGY)
from ..keys import RES_ALIYUN_GPU_COUNT as ALIYUN_GPU_COUNT
from ..keys import RES_ALIYUN_GPU_MEM as ALIYUN_GPU_MEM
from ..keys import RES_GPU_CORE as KOORD_CORE
from ..keys import RES_GPU_MEMORY as KOORD_MEMORY
from ..keys import RES_GPU_MEMORY_RATIO as KOORD_RATIO
from ..keys import RES_NVIDIA_GPU as NVIDIA_GPU

_MIB = 1 << 20


class ConvertError(ValueError):
    """A Kubernetes object that cannot be read; the message names the object and the field."""


@dataclass
class PodArgs:
    """Arguments for gpufleet.Pod plus the identity the extender keys its caches by."""
    name: str                      # "namespace/name", the key inside gpufleet
    namespace: str
    pod_name: str
    uid: str
    requests: dict[str, str]
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: list[dict[str, Any]] = field(default_factory=list)
    gpu_models: list[str] = field(default_factory=list)
    scope: str = "none"
    priority: int = 0
    node_name: str = ""
    annotations: dict[str, str] = field(default_factory=dict)

    def kwargs(self) -> dict[str, Any]:
        return dict(name=self.name, requests=self.requests, node_selector=self.node_selector,
                    tolerations=self.tolerations, gpu_models=self.gpu_models or None,
                    scope=self.scope, priority=self.priority)

    @property
    def uses_gpushare(self) -> bool:
        return ALIYUN_GPU_MEM in self.requests


def _obj(value: Any, what: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConvertError(f"{what}: expected an object, got {type(value).__name__}")
    return value


def _list(value: Any, what: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ConvertError(f"{what}: expected a list, got {type(value).__name__}")
    return value


def _str_map(value: Any, what: str) -> dict[str, str]:
    out = {}
    for k, v in _obj(value, what).items():
        if not isinstance(v, str):
            raise ConvertError(f"{what}.{k}: expected a string, got {type(v).__name__}")
        out[str(k)] = v
    return out


def _containers(spec: dict[str, Any], key: str, what: str) -> list[dict[str, Any]]:
    """A Kubernetes container list in the core's container form ({requests, limits} and, for an
    init container, its restart_policy): the quantities are passed on unread."""
    out = []
    for i, c in enumerate(_list(spec.get(key), f"{what}.spec.{key}")):
        cw = f"{what}.spec.{key}[{i}]"
        c = _obj(c, cw)
        res = _obj(c.get("resources"), f"{cw}.resources")
        entry = {"requests": _obj(res.get("requests"), f"{cw}.resources.requests"),
                 "limits": _obj(res.get("limits"), f"{cw}.resources.limits")}
        if key == "initContainers" and c.get("restartPolicy") is not None:
            entry["restart_policy"] = c["restartPolicy"]
        out.append(entry)
    return out


def effective_requests(pod: dict[str, Any], what: str = "pod") -> dict[str, str]:
    """The pod's effective request, {resource: exact quantity text}, as the core computes it from
    the containers, init containers (sidecars included) and overhead by Kubernetes' rule
    (gpufleet._core.cluster.effective_requests); every quantity is read there, once."""
    from gpufleet._core.cluster import effective_requests as core_effective_requests

    spec = _obj(pod.get("spec"), f"{what}.spec")
    containers = {"containers": _containers(spec, "containers", what),
                  "init_containers": _containers(spec, "initContainers", what),
                  "overhead": _obj(spec.get("overhead"), f"{what}.spec.overhead")}
    try:
        return core_effective_requests(containers, f"{what}: spec")
    except ValueError as e:
        raise ConvertError(str(e)) from None


def pod_args(pod: Any) -> PodArgs:
    """Read a Kubernetes Pod object. Raises ConvertError naming the pod and the field."""
    if not isinstance(pod, dict):
        raise ConvertError(f"Pod: expected an object, got {type(pod).__name__}")
    meta = _obj(pod.get("metadata"), "Pod.metadata")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise ConvertError("Pod.metadata.name: missing or not a string")
    ns = meta.get("namespace") or "default"
    if not isinstance(ns, str):
        raise ConvertError(f"pod {name}: metadata.namespace is not a string")
    what = f"pod {ns}/{name}"
    uid = meta.get("uid") or ""
    if not isinstance(uid, str):
        raise ConvertError(f"{what}: metadata.uid is not a string")
    annotations = _str_map(meta.get("annotations"), f"{what}: metadata.annotations")
    spec = _obj(pod.get("spec"), f"{what}: spec")
    tolerations = []
    for i, t in enumerate(_list(spec.get("tolerations"), f"{what}: spec.tolerations")):
        t = _obj(t, f"{what}: spec.tolerations[{i}]")
        tolerations.append({k: str(t[k]) for k in ("key", "operator", "value", "effect") if t.get(k)})
    priority = spec.get("priority") or 0
    if not isinstance(priority, int) or isinstance(priority, bool):
        raise ConvertError(f"{what}: spec.priority is not an integer")
    scope = annotations.get(ANN_SCOPE, "none").strip().lower() or "none"
    if scope not in ("none", "pcie", "numa"):
        raise ConvertError(f"{what}: annotation {ANN_SCOPE}={scope!r} is not none, pcie or numa")
    models = [m.strip() for m in annotations.get(ANN_GPU_MODELS, "").split(",") if m.strip()]
    node_name = spec.get("nodeName") or ""
    return PodArgs(
        name=f"{ns}/{name}", namespace=ns, pod_name=name, uid=uid,
        requests=effective_requests(pod, what),
        node_selector=_str_map(spec.get("nodeSelector"), f"{what}: spec.nodeSelector"),
        tolerations=tolerations, gpu_models=models, scope=scope, priority=priority,
        node_name=node_name if isinstance(node_name, str) else "", annotations=annotations)


def _gpu(minor: int, memory_bytes: int, model: str = "") -> dict[str, Any]:
    dev: dict[str, Any] = {
        "type": "gpu", "minor": minor, "health": True,
        "resources": {KOORD_CORE: "100", KOORD_MEMORY: str(memory_bytes), KOORD_RATIO: "100"},
    }
    if model:
        dev["model"] = model
    return dev


def _count(alloc: dict[str, Any], name: str, what: str) -> int:
    if name not in alloc:
        return 0
    try:
        return int(quantity.parse(alloc[name], name))
    except ValueError as e:
        raise ConvertError(f"{what}: status.allocatable.{name}: {e}") from None


def node_spec(node: Any, gpushare_unit_bytes: int = _MIB) -> dict[str, Any]:
    """Read a Kubernetes Node object into a gpufleet node spec (see Cluster.add_node)."""
    if not isinstance(node, dict):
        raise ConvertError(f"Node: expected an object, got {type(node).__name__}")
    meta = _obj(node.get("metadata"), "Node.metadata")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise ConvertError("Node.metadata.name: missing or not a string")
    what = f"node {name}"
    labels = _str_map(meta.get("labels"), f"{what}: metadata.labels")
    annotations = _str_map(meta.get("annotations"), f"{what}: metadata.annotations")
    status = _obj(node.get("status"), f"{what}: status")
    alloc = _obj(status.get("allocatable") or status.get("capacity"), f"{what}: status.allocatable")
    spec = _obj(node.get("spec"), f"{what}: spec")
    taints = []
    for i, t in enumerate(_list(spec.get("taints"), f"{what}: spec.taints")):
        t = _obj(t, f"{what}: spec.taints[{i}]")
        taints.append({"key": str(t.get("key", "")), "value": str(t.get("value", "")),
                       "effect": str(t.get("effect", ""))})
    out: dict[str, Any] = {
        "name": name, "labels": labels, "taints": taints,
        "cpu": str(alloc.get("cpu", "0")), "memory": str(alloc.get("memory", "0")),
        "pods": _count(alloc, "pods", what) or 110,
        "devices": _node_devices(what, alloc, labels, annotations, gpushare_unit_bytes),
    }
    # GPU feature discovery's label says how the NVIDIA device plugin advertises MIG instances,
    # which decides what nvidia.com/gpu means on the node (docs/scenario.md, MIG strategies).
    mig_strategy = labels.get(LABEL_MIG_STRATEGY, "none")
    if mig_strategy in ("single", "mixed"):
        out["mig_strategy"] = mig_strategy
    elif mig_strategy != "none":
        raise ConvertError(f"{what}: label {LABEL_MIG_STRATEGY}={mig_strategy!r} is not one of "
                           "none, single, mixed")
    if ANN_GPU_SHARING in annotations:
        out["gpu_sharing"] = annotations[ANN_GPU_SHARING]
    if ANN_NVLINK in annotations:
        try:
            out["nvlink_groups"] = json.loads(annotations[ANN_NVLINK])
        except ValueError as e:
            raise ConvertError(f"{what}: annotation {ANN_NVLINK}: invalid JSON: {e}") from None
    return out


def _node_devices(what: str, alloc: dict[str, Any], labels: dict[str, str],
                  annotations: dict[str, str], unit_bytes: int) -> list[dict[str, Any]]:
    # (a) an explicit inventory written by the gpufleet node agent wins.
    if ANN_DEVICES in annotations:
        try:
            devices = json.loads(annotations[ANN_DEVICES])
        except ValueError as e:
            raise ConvertError(f"{what}: annotation {ANN_DEVICES}: invalid JSON: {e}") from None
        if not isinstance(devices, list) or not all(isinstance(d, dict) for d in devices):
            raise ConvertError(f"{what}: annotation {ANN_DEVICES}: expected a list of objects")
        return devices
    model = labels.get(LABEL_GPU_PRODUCT, "")
    # (b) the NVIDIA device plugin's count with GPU feature discovery's per-GPU memory label.
    n = _count(alloc, NVIDIA_GPU, what)
    if n > 0:
        if LABEL_GPU_MEMORY not in labels:
            raise ConvertError(f"{what}: status.allocatable.{NVIDIA_GPU}={n} but label "
                               f"{LABEL_GPU_MEMORY} (MiB per GPU) is missing")
        try:
            mib = int(labels[LABEL_GPU_MEMORY])
        except ValueError:
            raise ConvertError(f"{what}: label {LABEL_GPU_MEMORY}={labels[LABEL_GPU_MEMORY]!r} "
                               "is not an integer number of MiB") from None
        if mib <= 0:
            raise ConvertError(f"{what}: label {LABEL_GPU_MEMORY} must be positive")
        return [_gpu(i, mib * _MIB, model) for i in range(n)]
    # (c) gpushare: a GPU count and the node's total memory units, split evenly.
    count = _count(alloc, ALIYUN_GPU_COUNT, what)
    units = _count(alloc, ALIYUN_GPU_MEM, what)
    if count > 0:
        if units <= 0:
            raise ConvertError(f"{what}: status.allocatable.{ALIYUN_GPU_COUNT}={count} but "
                               f"{ALIYUN_GPU_MEM} is missing or zero")
        return [_gpu(i, units // count * unit_bytes, model) for i in range(count)]
    return []
