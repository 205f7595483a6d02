"""YAML and JSON files read strictly: the one reader for scenarios, engine configurations, device
lists and recorded NVML answers. A repeated key, NaN or infinity, binary junk, a YAML value JSON
has no form for (a date, bytes, a set), nesting deeper than MAX_DEPTH and a document bigger than
the size limits are errors that name the file and the problem on one line. No native code: node
tools use it too.

Sizes are bounded while the document is read, before anything walks it: a file of at most
MAX_FILE_BYTES, and at most MAX_NODES nodes (mappings, lists, keys and values) and MAX_TEXT_BYTES
of text counted as the document will be once its YAML aliases are expanded. An alias costs what
it refers to, so ten lines of anchors referring to anchors ("billion laughs") are refused while
they are composed instead of expanding into hundreds of millions of entries.
"""
from __future__ import annotations

import difflib
import json
import math
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml


class ScenarioError(ValueError):
    """A scenario file that cannot be used; the message names file, object and problem."""


# Deeper than any scenario or configuration needs (a pod's tolerations sit at depth 5).
MAX_DEPTH = 64
# Far above a real cluster's scenario (5,000 nodes and 50,000 pods are about 500,000 nodes) and
# small enough to be refused in a second or two. GPUFLEET_MAX_DOCUMENT_NODES raises the node limit.
MAX_NODES = 1_000_000
MAX_FILE_BYTES = 64 << 20
MAX_TEXT_BYTES = 64 << 20   # an alias may not make the text bigger than a file may be
NODES_VARIABLE = "GPUFLEET_MAX_DOCUMENT_NODES"
# Tags whose values have no JSON form: refused where they appear (a date stays text, see below).
_NOT_JSON_TAGS = ("binary", "timestamp", "omap", "pairs", "set")


class DocumentTooLarge(yaml.YAMLError):
    """Raised while a document is composed; turned into a ScenarioError naming the file."""


def max_nodes() -> int:
    """The node limit: GPUFLEET_MAX_DOCUMENT_NODES when it is a positive integer, else MAX_NODES."""
    text = os.environ.get(NODES_VARIABLE, "")
    return int(text) if text.isdigit() and int(text) > 0 else MAX_NODES


def _too_large(nodes: int, text: int, limit: int, aliases: bool = True) -> str | None:
    if nodes > limit:
        return (f"more than {limit:,} nodes{' once YAML aliases are expanded' if aliases else ''} "
                f"(the limit; {NODES_VARIABLE} raises it)")
    if text > MAX_TEXT_BYTES:
        return f"more than {MAX_TEXT_BYTES >> 20} MiB of text once YAML aliases are expanded"
    return None


class _StrictYamlLoader(yaml.SafeLoader):
    """A safe YAML loader that refuses a key repeated in one mapping (PyYAML keeps the last), an
    alias that contains itself, and a document whose expanded size passes the limits. Every node
    composed gets its expanded size (nodes, characters): a scalar is one node, a list or mapping
    one plus its children, an alias the size of its anchor, so the check costs one addition per
    node written in the file, whatever the aliases expand to."""

    limit = MAX_NODES
    _stream = (0, 0)   # the sizes of the stream's earlier documents: they count together

    def compose_document(self) -> yaml.Node:
        self._sizes: dict[int, tuple[int, int]] = {}
        node = super().compose_document()
        nodes, text = self._sizes[id(node)]
        self._stream = (self._stream[0] + nodes, self._stream[1] + text)
        problem = _too_large(*self._stream, self.limit)
        if problem:
            raise DocumentTooLarge(problem)
        return node

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        event = self.peek_event()
        node = super().compose_node(parent, index)
        if isinstance(event, yaml.AliasEvent):
            if id(node) not in self._sizes:
                raise yaml.composer.ComposerError(
                    None, None, f"alias *{event.anchor} refers to a node that contains it",
                    event.start_mark)
            return node
        if isinstance(node, yaml.ScalarNode):
            size = (1, len(node.value))
        else:
            children = node.value if isinstance(node, yaml.SequenceNode) else \
                [n for pair in node.value for n in pair]
            sizes = [self._sizes[id(c)] for c in children]
            size = (1 + sum(n for n, _ in sizes), sum(t for _, t in sizes))
        problem = _too_large(*size, self.limit)
        if problem:
            raise DocumentTooLarge(f"line {event.start_mark.line + 1}: {problem}")
        self._sizes[id(node)] = size
        return node

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

    def construct_not_json(self, node: yaml.Node) -> Any:
        raise yaml.constructor.ConstructorError(
            None, None, f"{node.tag.replace('tag:yaml.org,2002:', '!!')} has no JSON form; write the "
            "value as text, a number, a list or a mapping", node.start_mark)


for _tag in _NOT_JSON_TAGS:
    _StrictYamlLoader.add_constructor(f"tag:yaml.org,2002:{_tag}", _StrictYamlLoader.construct_not_json)
# An unquoted 2024-01-01 is text, as Kubernetes reads it (YAML 1.1 would make it a date).
_StrictYamlLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}


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


class _Walk:
    """The checks made on a loaded document: nesting depth, finite numbers (YAML's .nan/.inf are
    floats too) and, for JSON, which has no aliases to bound while parsing, the node count."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.nodes = 0

    def check(self, value: Any, where: str, depth: int = 0) -> None:
        if depth > MAX_DEPTH:
            raise ScenarioError(f"{where}: nested deeper than {MAX_DEPTH} levels")
        self.nodes += 1
        if self.nodes > self.limit:
            raise ScenarioError(f"{where}: {_too_large(self.nodes, 0, self.limit, aliases=False)}")
        if isinstance(value, float) and not math.isfinite(value):
            raise ScenarioError(f"{where}: {value!r} is not a finite number")
        if isinstance(value, dict):
            self.nodes += len(value)   # the keys
            for k, v in value.items():
                self.check(v, f"{where}.{k}", depth + 1)
        elif isinstance(value, list):
            for i, v in enumerate(value):
                self.check(v, f"{where}[{i}]", depth + 1)


def _load_yaml(text: str, every: bool, limit: int) -> Any:
    loader = _StrictYamlLoader(text)
    loader.limit = limit
    try:
        if not every:
            return loader.get_single_data()
        docs = []
        while loader.check_data():
            docs.append(loader.get_data())
        return docs
    finally:
        loader.dispose()


def read_document(path: str | Path, limit: int | None = None) -> Any:
    """A YAML or JSON file (JSON for a .json suffix) read strictly; ScenarioError names the file and
    the problem on one line. ``limit``: the most nodes (default :func:`max_nodes`)."""
    return _read(Path(path), every=False, limit=limit or max_nodes())


def read_documents(path: str | Path, limit: int | None = None) -> list[Any]:
    """Every document of a YAML stream (``---``-separated, as Kubernetes manifests ship) read with
    the same strict rules, the documents counting together; a JSON file is one document."""
    return _read(Path(path), every=True, limit=limit or max_nodes())


def read_bytes(path: str | Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of ``path``, at most ``limit`` of them: a larger file, or an endless one such as
    /dev/zero, is a ScenarioError (a ValueError) on one line, as is a file that cannot be read."""
    try:
        with open(path, "rb") as f:
            raw = f.read(limit + 1)   # read no further than one byte past the limit
    except OSError as e:
        raise ScenarioError(f"{path}: cannot read: {e.strerror}") from None
    if len(raw) > limit:
        raise ScenarioError(f"{path}: larger than {limit >> 20} MiB, the limit for a file")
    return raw


def _read(path: Path, every: bool, limit: int) -> Any:
    raw = read_bytes(path)
    kind = "JSON" if path.suffix == ".json" else "YAML"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ScenarioError(f"{path}: not UTF-8 text (byte 0x{raw[e.start]:02x} at offset {e.start})") from None
    try:
        if kind == "JSON":
            data = json.loads(text, object_pairs_hook=_json_object, parse_constant=_json_constant)
            data = [data] if every else data
        else:
            data = _load_yaml(text, every, limit)
    except RecursionError:
        raise ScenarioError(f"{path}: not valid {kind}: nested deeper than {MAX_DEPTH} levels") from None
    except DocumentTooLarge as e:
        raise ScenarioError(f"{path}: {e}") from None
    except (ValueError, yaml.YAMLError) as e:  # JSONDecodeError is a ValueError
        raise ScenarioError(f"{path}: not valid {kind}: {_one_line(str(e))}") from None
    walk = _Walk(limit)   # one count for the whole file
    try:
        if every:
            for i, doc in enumerate(data):
                walk.check(doc, f"{path}: document {i + 1}")
        else:
            walk.check(data, str(path))
    except RecursionError:
        raise ScenarioError(f"{path}: nested deeper than {MAX_DEPTH} levels") from None
    return data


def read_embedded_yaml(text: str, where: str, limit: int | None = None) -> Any:
    """YAML text held inside another document (a ConfigMap's data value) read with the same
    strict rules; ScenarioError names ``where`` and the line within the text."""
    limit = limit or max_nodes()
    try:
        data = _load_yaml(text, False, limit)
        _Walk(limit).check(data, where)
    except RecursionError:
        raise ScenarioError(f"{where}: nested deeper than {MAX_DEPTH} levels") from None
    except DocumentTooLarge as e:
        raise ScenarioError(f"{where}: {e}") from None
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


