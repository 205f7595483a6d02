"""What the native registries declare about every registered name: placement strategies, engine
plugins, engine actions and job-time policies, each with its description, parameters (name, type,
default, help) and capabilities. The CLI's ``--list-*`` options print these listings."""
from __future__ import annotations

import json
from typing import Any

from gpufleet import _core

KINDS = ("strategies", "plugins", "actions", "policies")


def metadata() -> dict[str, list[dict[str, Any]]]:
    """Per registry (``strategies``, ``plugins``, ``actions``, ``policies``), one dict per name:
    ``name``, ``description``, ``parameters`` (dicts with ``name``, ``type``, ``default``,
    ``help``, ``example``), ``capabilities`` and ``open_parameters``."""
    return dict(_core.registry_metadata())


def entries(kind: str) -> list[dict[str, Any]]:
    """The registrations of one registry; ``kind`` is one of :data:`KINDS`."""
    if kind not in KINDS:
        raise KeyError(f"unknown registry {kind!r}; known: {', '.join(KINDS)}")
    return list(metadata()[kind])


def check_strategy(spec: Any) -> None:
    """ValueError on one line when ``spec`` is not a placement strategy the registry builds: an
    unknown name, a parameter the strategy does not declare or of the wrong type, a malformed
    spec. The strategy is built once for an empty cluster, where it places nothing."""
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"strategy {spec!r}: expected a strategy spec such as 'binpack' or "
                         "'random(seed=1)'")
    try:
        _core.Cluster().place(_core.Pod("strategy-check", {}), spec)
    except (ValueError, KeyError) as e:
        raise ValueError(f"strategy {spec!r}: {e.args[0] if e.args else e}") from None


def _value(v: Any) -> str:
    return "(none)" if v is None else json.dumps(v)


def format_listing(kind: str, prefix: str = "") -> str:
    """A readable listing: each name with its description and capabilities, then one line per
    parameter with its type, default and help."""
    lines = []
    for e in entries(kind):
        caps = f"  [{', '.join(e['capabilities'])}]" if e["capabilities"] else ""
        lines.append(f"{prefix}{e['name']:<16} {e['description']}{caps}")
        if e["open_parameters"]:
            lines.append(f"{prefix}    (parameters checked by the plugin itself)")
        for p in e["parameters"]:
            default = _value(p["default"])
            if p["default"] is None and p["example"] is not None:
                default += f", e.g. {_value(p['example'])}"
            lines.append(f"{prefix}    {p['name']}: {p['type']} = {default}  {p['help']}")
    return "\n".join(lines)


__all__ = ["KINDS", "check_strategy", "entries", "format_listing", "metadata"]
