"""Scenario files: a cluster and its pods in YAML or JSON.

```yaml
nodes:
  - name: n1
    cpu: "64"
    memory: 256Gi
    labels: {zone: a}
    gpus: {count: 4, model: V100M16, memory: 16Gi}     # shorthand for identical GPUs
  - name: n2
    devices:                                            # Koordinator Device spec entries
      - {type: gpu, minor: 0, model: H100, resources: {koordinator.sh/gpu-memory: 80Gi},
         topology: {socketID: 0, nodeID: 0, pcieID: pci0, busID: "0000:16:00.0"}}
pods:
  - name: train-0
    requests: {nvidia.com/gpu: 2}
  - name: notebook-1
    requests: {koordinator.sh/gpu-core: 50, koordinator.sh/gpu-memory-ratio: 50}
  - name: bound-0                                       # already running: rebuilt from annotations
    requests: {aliyun.com/gpu-mem: 4096}
    node: n1
    annotations: {ALIYUN_COM_GPU_MEM_IDX: "0", ALIYUN_COM_GPU_MEM_POD: "4096"}
```
Errors name the file, the object and the problem, and nothing is half-loaded. Reading is strict
(docs/scenario.md): unknown keys are errors with a did-you-mean, duplicate keys in YAML or JSON are
errors, NaN/Infinity, binary junk and nesting deeper than 64 levels are refused on one line.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpufleet._core import Cluster, Pod
from gpufleet.documents import (MAX_DEPTH, ScenarioError, check_keys,  # noqa: F401
                                did_you_mean, read_document)


@dataclass
class Scenario:
    """A cluster with its bound pods applied, plus the pods still to place (in file order)."""

    cluster: Cluster
    pending: list[Pod] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict)
    path: str = "<scenario>"


SCENARIO_KEYS = ("nodes", "pods", "queues", "jobs")
# Fields of a pod entry read here; the rest are the core's pod fields (checked there).
_BOUND_POD_KEYS = ("node", "annotations")


def _read(path: Path) -> dict[str, Any]:
    data = read_document(path)
    if not isinstance(data, dict):
        raise ScenarioError(f"{path}: expected a mapping with 'nodes' and 'pods'")
    return data


def _list(data: dict[str, Any], key: str, where: str) -> list[Any]:
    value = data.get(key) or []
    if not isinstance(value, list):
        raise ScenarioError(f"{where}: '{key}' must be a list")
    return value


def build_scenario(data: dict[str, Any], where: str = "<scenario>") -> Scenario:
    """Build a Scenario from an already-parsed mapping (used by the CLI, tests and notebooks):
    nodes are added, pods with a ``node`` are restored there with their annotations, the others
    are pending. ScenarioError (a ValueError) names ``where``, the entry and the problem."""
    check_keys(data, SCENARIO_KEYS, where)
    cluster = Cluster()
    for i, node in enumerate(_list(data, "nodes", where)):
        name = node.get("name", f"#{i}") if isinstance(node, dict) else f"#{i}"
        if not isinstance(node, dict):
            raise ScenarioError(f"{where}: nodes[{i}]: expected a mapping")
        try:
            cluster.add_node(node)
        except (ValueError, KeyError) as e:
            raise ScenarioError(f"{where}: nodes[{i}] ({name}): {_msg(e)}") from None
    pending: list[Pod] = []
    seen: set[str] = set()
    for i, spec in enumerate(_list(data, "pods", where)):
        if not isinstance(spec, dict):
            raise ScenarioError(f"{where}: pods[{i}]: expected a mapping")
        name = spec.get("name", f"#{i}")
        if name in seen:
            raise ScenarioError(f"{where}: pods[{i}] ({name}): duplicate pod name")
        seen.add(name)
        pod_fields = {k: v for k, v in spec.items() if k not in _BOUND_POD_KEYS}
        annotations = spec.get("annotations") or {}
        if not isinstance(annotations, dict):
            raise ScenarioError(f"{where}: pods[{i}] ({name}): annotations: expected a mapping")
        try:
            pod = Pod.from_dict(pod_fields)
            if spec.get("node"):
                annotations = {str(k): str(v) for k, v in annotations.items()}
                cluster.restore_allocation(pod, str(spec["node"]), annotations)
            else:
                pending.append(pod)
        except (ValueError, KeyError) as e:
            raise ScenarioError(f"{where}: pods[{i}] ({name}): {_msg(e)}") from None
    return Scenario(cluster=cluster, pending=pending, raw=data, path=where)


def load_scenario(path: str | Path) -> Scenario:
    """Load a YAML or JSON scenario file (JSON for a ``.json`` suffix; format in the module
    doc). ScenarioError names the file, the entry and the problem: unreadable or invalid
    YAML/JSON, an unknown field, a bad quantity, a pod bound to a missing node."""
    p = Path(path)
    return build_scenario(_read(p), str(p))


def _msg(e: Exception) -> str:
    # KeyError wraps its message in quotes; show the core's text as it is.
    return str(e.args[0]) if e.args else str(e)
