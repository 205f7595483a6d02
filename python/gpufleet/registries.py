"""What the native registries declare about every registered name: placement strategies, engine
plugins, engine actions and job-time policies, each with its description, parameters (name, type,
default, range, help) and typed traits; plugins also with the callback points they answer,
observed on a session. The CLI's ``--list-*`` options print these listings and
``tools/make_registry_docs.py`` writes them into ``docs/registries.md``."""
from __future__ import annotations

import json
from typing import Any

from gpufleet import _core
from gpufleet.errors import NotFoundError

KINDS = ("strategies", "plugins", "actions", "policies")


def _capabilities(entry: dict[str, Any]) -> list[str]:
    """Short words for display, derived from the typed traits: every trait that is true
    (``concurrent_safe`` -> ``concurrent-safe``), ``needs:X`` for each point it needs, and for a
    plugin the points it answers first."""
    traits = entry["traits"]
    words = list(entry.get("answers") or [])
    words += [k.replace("_", "-") for k, v in traits.items() if v is True]
    words += [f"needs:{point}" for point in traits.get("needs", [])]
    return words


def metadata(kinds: list[str] | tuple[str, ...] = KINDS) -> dict[str, list[dict[str, Any]]]:
    """Per registry (``strategies``, ``plugins``, ``actions``, ``policies``), one dict per name:
    ``name``, ``description``, ``parameters`` (dicts with ``name``, ``type``, ``default``,
    ``help``, ``example``, ``range``), ``traits`` (the registry's typed traits, e.g.
    ``{"deterministic": True, "concurrent_safe": True}`` for a strategy), ``open_parameters``,
    for plugins ``answers`` (the callback points it registers; None when it cannot be built
    without arguments), and ``capabilities``, display words derived from the traits and
    answers. ``kinds`` picks the registries (default: all)."""
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise NotFoundError(f"unknown registry {unknown[0]!r}; known: {', '.join(KINDS)}")
    meta = dict(_core.registry_metadata(list(kinds)))
    for kind in meta:
        for entry in meta[kind]:
            entry["capabilities"] = _capabilities(entry)
    return meta


def entries(kind: str) -> list[dict[str, Any]]:
    """The registrations of one registry; ``kind`` is one of :data:`KINDS`."""
    return list(metadata((kind,))[kind])


def names(kind: str) -> list[str]:
    """The registered names of one registry, sorted."""
    return [e["name"] for e in entries(kind)]


def description(kind: str, name: str) -> str:
    """The one-line description ``name`` registers in ``kind``; "" for a name not registered."""
    return next((e["description"] for e in entries(kind) if e["name"] == name), "")


def strategies() -> list[str]:
    """Names of the registered placement strategies (``gpufleet.strategies()``)."""
    return names("strategies")


def strategy_description(name: str) -> str:
    """One line describing a registered placement strategy ("" if unknown)."""
    return description("strategies", name)


def callback_points() -> list[dict[str, Any]]:
    """The engine's callback points, in order: ``name``, ``signature``, ``combine`` (how the
    answers of several plugins combine), ``python_method`` (what a Python plugin defines to answer
    it, or None) and ``volcano_switch`` (the per-plugin switch that turns it off, or None)."""
    return list(_core.engine_callback_points())


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
        raise ValueError(f"strategy {spec!r}: {e}") from None


def _value(v: Any) -> str:
    return "(none)" if v is None else json.dumps(v)


def format_listing(kind: str, prefix: str = "") -> str:
    """A readable listing: each name with its description and capabilities, then one line per
    parameter with its type, default, range and help."""
    return format_entries(entries(kind), prefix)


def listed(name: str, description: str) -> dict[str, Any]:
    """An entry in the shape :func:`entries` returns, for a name that no native registry holds
    (one without parameters or traits, such as a DRA strategy)."""
    return {"name": name, "description": description, "parameters": [], "traits": {},
            "open_parameters": False, "capabilities": []}


def format_entries(listing: list[dict[str, Any]], prefix: str = "") -> str:
    """:func:`format_listing` for entries already at hand (from :func:`entries` or :func:`listed`)."""
    lines = []
    for e in listing:
        caps = f"  [{', '.join(e['capabilities'])}]" if e["capabilities"] else ""
        lines.append(f"{prefix}{e['name']:<16} {e['description']}{caps}")
        if e["open_parameters"]:
            lines.append(f"{prefix}    (parameters checked by the plugin itself)")
        for p in e["parameters"]:
            default = _value(p["default"])
            if p["default"] is None and p["example"] is not None:
                default += f", e.g. {_value(p['example'])}"
            bounds = f" ({p['range']})" if p["range"] else ""
            lines.append(f"{prefix}    {p['name']}: {p['type']} = {default}{bounds}  {p['help']}")
    return "\n".join(lines)


__all__ = ["KINDS", "callback_points", "check_strategy", "description", "entries",
           "format_entries", "format_listing", "listed", "metadata", "names", "strategies",
           "strategy_description"]
