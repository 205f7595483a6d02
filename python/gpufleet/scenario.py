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


@dataclass
class PodEntry:
    """A scenario's pod entry, checked: the core's Pod, and where and how it is bound."""

    pod: Pod
    node: str                     # "" for a pending pod
    annotations: dict[str, str]   # the allocation record of a bound pod


def read_scenario_file(path: str | Path) -> dict[str, Any]:
    """A scenario file's mapping (strict YAML or JSON, see :mod:`gpufleet.documents`), unchecked
    otherwise; ScenarioError when it is unreadable or not a mapping."""
    data = read_document(path)
    if not isinstance(data, dict):
        raise ScenarioError(f"{path}: expected a mapping with 'nodes' and 'pods'")
    return data


def scenario_list(data: dict[str, Any], key: str, where: str) -> list[Any]:
    """``data[key]`` as a list (absent or null: empty); ScenarioError when it is something else."""
    value = data.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise ScenarioError(f"{where}: '{key}' must be a list")
    return value


def scenario_sections(data: Any, where: str) -> tuple[list[Any], list[Any]]:
    """The ``nodes`` and ``pods`` lists of a scenario mapping, after its keys are checked (unknown
    ones with a did-you-mean) and each of nodes, pods, queues and jobs is a list when present."""
    if not isinstance(data, dict):
        raise ScenarioError(f"{where}: expected a mapping with 'nodes' and 'pods'")
    check_keys(data, SCENARIO_KEYS, where)
    nodes, pods, _, _ = (scenario_list(data, key, where) for key in SCENARIO_KEYS)
    return nodes, pods


def entry_name(spec: Any, where: str) -> str:
    """The ``name`` of a node or pod entry: a non-empty string, else ScenarioError naming
    ``where`` (``file: pods[3]``)."""
    if not isinstance(spec, dict):
        raise ScenarioError(f"{where}: expected a mapping")
    name = spec.get("name")
    if not isinstance(name, str) or not name:
        raise ScenarioError(f"{where}: name: expected a non-empty string, got {_shown(name)}")
    return name


def read_pod_entry(spec: dict[str, Any], where: str) -> PodEntry:
    """A pod entry checked by the same rules wherever a scenario is read (``gpufleet place`` and
    ``cycle``, the extender's ``--state``): the core's pod fields (unknown keys with a
    did-you-mean, types, quantities, request rules), ``node`` as a node name and ``annotations`` as
    a mapping of text (a number is taken as its text). ScenarioError names ``where``, the pod and
    the field."""
    name = entry_name(spec, where)
    where = f"{where} ({name})"
    node = spec.get("node") or ""
    if not isinstance(node, str):
        raise ScenarioError(f"{where}: node: expected a node name, got {_shown(node)}")
    annotations = spec.get("annotations") or {}
    if not isinstance(annotations, dict):
        raise ScenarioError(f"{where}: annotations: expected a mapping")
    text = {}
    for key, value in annotations.items():
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise ScenarioError(f"{where}: annotations.{key}: expected text, got {_shown(value)} "
                                "(quote a JSON annotation)")
        text[str(key)] = str(value)
    try:
        pod = Pod.from_dict({k: v for k, v in spec.items() if k not in _BOUND_POD_KEYS})
    except (ValueError, KeyError) as e:
        raise ScenarioError(f"{where}: {e}") from None
    return PodEntry(pod, node, text)


def build_scenario(data: dict[str, Any], where: str = "<scenario>") -> Scenario:
    """Build a Scenario from an already-parsed mapping (used by the CLI, tests and notebooks):
    nodes are added, pods with a ``node`` are restored there with their annotations, the others
    are pending. ScenarioError (a ValueError) names ``where``, the entry and the problem."""
    nodes, pods = scenario_sections(data, where)
    cluster = Cluster()
    for i, node in enumerate(nodes):
        name = entry_name(node, f"{where}: nodes[{i}]") if isinstance(node, dict) and "name" in node \
            else f"#{i}"
        if not isinstance(node, dict):
            raise ScenarioError(f"{where}: nodes[{i}]: expected a mapping")
        try:
            cluster.add_node(node)
        except (ValueError, KeyError) as e:
            raise ScenarioError(f"{where}: nodes[{i}] ({name}): {e}") from None
    pending: list[Pod] = []
    seen: set[str] = set()
    for i, spec in enumerate(pods):
        entry = read_pod_entry(spec, f"{where}: pods[{i}]")
        name = entry.pod.name
        if name in seen:
            raise ScenarioError(f"{where}: pods[{i}] ({name}): duplicate pod name")
        seen.add(name)
        if not entry.node:
            pending.append(entry.pod)
            continue
        try:
            cluster.restore_allocation(entry.pod, entry.node, entry.annotations)
        except (ValueError, KeyError) as e:
            raise ScenarioError(f"{where}: pods[{i}] ({name}): {e}") from None
    return Scenario(cluster=cluster, pending=pending, raw=data, path=where)


def load_scenario(path: str | Path) -> Scenario:
    """Load a YAML or JSON scenario file (JSON for a ``.json`` suffix; format in the module
    doc). ScenarioError names the file, the entry and the problem: unreadable or invalid
    YAML/JSON, an unknown field, a bad quantity, a pod bound to a missing node."""
    p = Path(path)
    return build_scenario(read_scenario_file(p), str(p))


def _shown(value: Any) -> str:
    """A wrong value in a message: short and on one line."""
    text = " ".join(repr(value).split())
    return text if len(text) <= 40 else text[:37] + "..."
