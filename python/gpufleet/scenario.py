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

import difflib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml

from gpufleet._core import Cluster, Pod


class ScenarioError(ValueError):
    """A scenario file that cannot be used; the message names file, object and problem."""


@dataclass
class Scenario:
    """A cluster with its bound pods applied, plus the pods still to place (in file order)."""

    cluster: Cluster
    pending: list[Pod] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict)
    path: str = "<scenario>"


# Deeper than any scenario or configuration needs (a pod's tolerations sit at depth 5).
MAX_DEPTH = 64
SCENARIO_KEYS = ("nodes", "pods", "queues", "jobs")
# Fields of a pod entry read here; the rest are the core's pod fields (checked there).
_BOUND_POD_KEYS = ("node", "annotations")


class _StrictYamlLoader(yaml.SafeLoader):
    """A safe YAML loader that refuses a key repeated in one mapping (PyYAML keeps the last)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, yaml.Node] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                repeated = key in seen
            except TypeError:  # an unhashable key: the base class reports it
                break
            if repeated:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark,
                    f"duplicate key {key!r} (first at line {seen[key].start_mark.line + 1})",
                    key_node.start_mark)
            seen[key] = key_node
        return super().construct_mapping(node, deep=deep)


def _json_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def _json_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _check_values(value: Any, where: str, depth: int = 0) -> None:
    """Nesting depth and finite numbers (YAML's .nan/.inf are floats too)."""
    if depth > MAX_DEPTH:
        raise ScenarioError(f"{where}: nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, float) and not math.isfinite(value):
        raise ScenarioError(f"{where}: {value!r} is not a finite number")
    if isinstance(value, dict):
        for k, v in value.items():
            _check_values(v, f"{where}.{k}", depth + 1)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _check_values(v, f"{where}[{i}]", depth + 1)


def read_document(path: str | Path) -> Any:
    """A YAML or JSON file (JSON for a .json suffix) read strictly; ScenarioError names the file and
    the problem on one line."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise ScenarioError(f"{path}: cannot read: {e.strerror}") from None
    kind = "JSON" if path.suffix == ".json" else "YAML"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ScenarioError(f"{path}: not UTF-8 text (byte 0x{raw[e.start]:02x} at offset {e.start})") from None
    try:
        if kind == "JSON":
            data = json.loads(text, object_pairs_hook=_json_object, parse_constant=_json_constant)
        else:
            data = yaml.load(text, Loader=_StrictYamlLoader)  # noqa: S506 - a SafeLoader subclass
    except RecursionError:
        raise ScenarioError(f"{path}: not valid {kind}: nested deeper than {MAX_DEPTH} levels") from None
    except (ValueError, yaml.YAMLError) as e:  # JSONDecodeError is a ValueError
        raise ScenarioError(f"{path}: not valid {kind}: {_one_line(str(e))}") from None
    try:
        _check_values(data, str(path))
    except RecursionError:
        raise ScenarioError(f"{path}: nested deeper than {MAX_DEPTH} levels") from None
    return data


def did_you_mean(word: str, known: Sequence[str]) -> str:
    """`; did you mean "requests"?` for a near miss, else `; known: a, b`."""
    close = difflib.get_close_matches(word, list(known), n=1, cutoff=0.6)
    return f'; did you mean "{close[0]}"?' if close else f"; known: {', '.join(known)}"


def check_keys(data: Mapping[str, Any], known: Sequence[str], where: str) -> None:
    """Every key of ``data`` must be one of ``known`` (ScenarioError with a did-you-mean)."""
    for key in data:
        if key not in known:
            raise ScenarioError(f'{where}: unknown field "{key}"{did_you_mean(str(key), known)}')


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
    """Build a Scenario from an already-parsed mapping (used by the CLI, tests and notebooks)."""
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
    """Load a YAML or JSON scenario file."""
    p = Path(path)
    return build_scenario(_read(p), str(p))


def _msg(e: Exception) -> str:
    # KeyError wraps its message in quotes; show the core's text as it is.
    return str(e.args[0]) if e.args else str(e)
