"""The extender wire types (k8s.io/kube-scheduler/extender/v1) and case-insensitive key reading.

The Go types carry no JSON tags, so keys are Go field names, and Go's decoder matches them in any
letter case. We do the same, but only for the protocol's own keys: embedded Kubernetes objects
(Pod, NodeList) and map keys that are node names are passed through untouched.
"""
from __future__ import annotations

from typing import Any


class ProtocolError(ValueError):
    """A body that parses as JSON but does not have the protocol's shape."""


class Raw:
    """A value kept as is (a Kubernetes object, a string, a number)."""


class ListOf:
    def __init__(self, item: Any) -> None:
        self.item = item


class MapOf:
    """A JSON object keyed by data (node names): keys kept, values read with `value`."""
    def __init__(self, value: Any) -> None:
        self.value = value


RAW = Raw()
# A schema is a dict from the canonical Go field name to the schema of its value.
FILTER_ARGS = {"Pod": RAW, "Nodes": RAW, "NodeNames": RAW}
BIND_ARGS = {"PodName": RAW, "PodNamespace": RAW, "PodUID": RAW, "Node": RAW}
RELEASE_ARGS = {"PodName": RAW, "PodNamespace": RAW, "PodUID": RAW}   # gpufleet's own verb
VICTIMS = {"Pods": RAW, "NumPDBViolations": RAW}
META_VICTIMS = {"Pods": ListOf({"UID": RAW}), "NumPDBViolations": RAW}
PREEMPT_ARGS = {"Pod": RAW, "NodeNameToVictims": MapOf(VICTIMS),
                "NodeNameToMetaVictims": MapOf(META_VICTIMS)}


_JSON_TYPES = {type(None): "null", bool: "a boolean", int: "a number", float: "a number",
               str: "a string", list: "an array", dict: "an object"}


def json_type(value: Any) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)


def body_object(value: Any) -> dict[str, Any]:
    """Every verb's body is a JSON object; anything else (null, an array, ...) is refused here."""
    if not isinstance(value, dict):
        raise ProtocolError(f"body: expected a JSON object, got {json_type(value)}")
    return value


def normalise(value: Any, schema: Any, where: str = "body") -> Any:
    """Rename protocol keys to their canonical case, recursively along `schema`.

    Unknown keys are dropped (Go ignores them too); null stays null. A value of the wrong JSON
    type raises ProtocolError naming its path.
    """
    if value is None or isinstance(schema, Raw):
        return value
    if isinstance(schema, ListOf):
        if not isinstance(value, list):
            raise ProtocolError(f"{where}: expected a list, got {type(value).__name__}")
        return [normalise(v, schema.item, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(schema, MapOf):
        if not isinstance(value, dict):
            raise ProtocolError(f"{where}: expected an object, got {type(value).__name__}")
        return {k: normalise(v, schema.value, f"{where}.{k}") for k, v in value.items()}
    if not isinstance(value, dict):
        raise ProtocolError(f"{where}: expected an object, got {type(value).__name__}")
    by_lower = {k.lower(): k for k in schema}
    out: dict[str, Any] = {}
    for k, v in value.items():
        canon = by_lower.get(k.lower()) if isinstance(k, str) else None
        if canon is not None:
            out[canon] = normalise(v, schema[canon], f"{where}.{canon}")
    return out


def want_str(args: dict[str, Any], key: str, required: bool = True) -> str:
    v = args.get(key)
    if v is None or v == "":
        if required:
            raise ProtocolError(f"{key} is missing")
        return ""
    if not isinstance(v, str):
        raise ProtocolError(f"{key}: expected a string, got {type(v).__name__}")
    return v


def node_names_of(args: dict[str, Any]) -> tuple[list[str], list[dict[str, Any]] | None]:
    """The candidate names, and the Node objects when the scheduler sent them (cache off)."""
    names = args.get("NodeNames")
    if names is not None:
        # set(map(type, ...)) runs in C: a per-item isinstance costs ~0.4 ms for 1,000 names.
        if not isinstance(names, list) or not set(map(type, names)) <= {str}:
            raise ProtocolError("NodeNames: expected a list of strings")
        return names, None
    nodes = args.get("Nodes")
    if nodes is None:
        raise ProtocolError("neither Nodes nor NodeNames is set")
    if not isinstance(nodes, dict):
        raise ProtocolError(f"Nodes: expected a NodeList object, got {type(nodes).__name__}")
    items = nodes.get("items") or []
    if not isinstance(items, list):
        raise ProtocolError("Nodes.items: expected a list")
    out = []
    for i, n in enumerate(items):
        meta = n.get("metadata") if isinstance(n, dict) else None
        name = meta.get("name") if isinstance(meta, dict) else None
        if not isinstance(name, str) or not name:
            raise ProtocolError(f"Nodes.items[{i}].metadata.name: missing")
        out.append(name)
    return out, items
