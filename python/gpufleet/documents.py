"""YAML and JSON files read strictly: the one reader for scenarios, engine configurations and
device lists. A repeated key, NaN or infinity, binary junk and nesting deeper than MAX_DEPTH are
errors that name the file and the problem on one line. No native code: node tools use it too.
"""
from __future__ import annotations

import difflib
import json
import math
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml


class ScenarioError(ValueError):
    """A scenario file that cannot be used; the message names file, object and problem."""


# Deeper than any scenario or configuration needs (a pod's tolerations sit at depth 5).
MAX_DEPTH = 64

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
    return _read(Path(path), every=False)


def read_documents(path: str | Path) -> list[Any]:
    """Every document of a YAML stream (``---``-separated, as Kubernetes manifests ship) read with
    the same strict rules; a JSON file is one document."""
    return _read(Path(path), every=True)


def _read(path: Path, every: bool) -> Any:
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
            data = [data] if every else data
        elif every:
            data = list(yaml.load_all(text, Loader=_StrictYamlLoader))  # noqa: S506 - SafeLoader subclass
        else:
            data = yaml.load(text, Loader=_StrictYamlLoader)  # noqa: S506 - a SafeLoader subclass
    except RecursionError:
        raise ScenarioError(f"{path}: not valid {kind}: nested deeper than {MAX_DEPTH} levels") from None
    except (ValueError, yaml.YAMLError) as e:  # JSONDecodeError is a ValueError
        raise ScenarioError(f"{path}: not valid {kind}: {_one_line(str(e))}") from None
    try:
        if every:
            for i, doc in enumerate(data):
                _check_values(doc, f"{path}: document {i + 1}")
        else:
            _check_values(data, str(path))
    except RecursionError:
        raise ScenarioError(f"{path}: nested deeper than {MAX_DEPTH} levels") from None
    return data


def read_embedded_yaml(text: str, where: str) -> Any:
    """YAML text held inside another document (a ConfigMap's data value) read with the same
    strict rules; ScenarioError names ``where`` and the line within the text."""
    try:
        data = yaml.load(text, Loader=_StrictYamlLoader)  # noqa: S506 - a SafeLoader subclass
        _check_values(data, where)
    except RecursionError:
        raise ScenarioError(f"{where}: nested deeper than {MAX_DEPTH} levels") from None
    except yaml.YAMLError as e:
        raise ScenarioError(f"{where}: not valid YAML: {_one_line(str(e))}") from None
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


