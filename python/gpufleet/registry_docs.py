"""The docs' registry tables, generated from the registrations: ``docs/registries.md`` whole, and
the callback-point and Volcano-switch tables of ``docs/engine.md`` between their markers.
``tools/make_registry_docs.py`` writes them; a test checks that the committed files are current."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from gpufleet import _core, registries

TITLES = {"strategies": "Placement strategies", "plugins": "Engine plugins",
          "actions": "Engine actions", "policies": "Job-time policies"}
_HEADER = ("<!-- Generated from the registrations by tools/make_registry_docs.py; "
           "tests/python/test_registry_docs.py checks that it is current. Do not edit. -->")


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines


def _code(words: list[str] | None) -> str:
    return ", ".join(f"`{w}`" for w in words) if words else "-"


def _native(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # Plugins written in Python register at run time (open parameters): not part of the build.
    return [e for e in entries if not e["open_parameters"]]


def _kind_section(kind: str, entries: list[dict[str, Any]]) -> list[str]:
    lines = [f"## {TITLES[kind]}", ""]
    if kind == "plugins":
        rows = [[f"`{e['name']}`", e["description"], _code(e["answers"]),
                 _code(e["traits"]["needs"])] for e in entries]
        lines += _table(["Name", "Description", "Answers (observed)", "Needs"], rows)
    else:
        traits = [[f"`{e['name']}`", e["description"],
                   _code([w for w in e["capabilities"] if not w.startswith("needs:")]),
                   _code(e["traits"].get("needs"))] if kind == "actions" else
                  [f"`{e['name']}`", e["description"], _code(e["capabilities"])] for e in entries]
        header = ["Name", "Description", "Traits"] + (["Needs"] if kind == "actions" else [])
        lines += _table(header, traits)
    params = [[f"`{e['name']}`", f"`{p['name']}`", p["type"],
               "-" if p["default"] is None else f"`{json.dumps(p['default'])}`",
               p["range"] or "-", p["help"]] for e in entries for p in e["parameters"]]
    if params:
        lines += ["", *_table(["Name", "Parameter", "Type", "Default", "Range", "Help"], params)]
    return lines + [""]


def registries_page() -> str:
    """The whole of ``docs/registries.md``."""
    meta = registries.metadata()
    lines = ["# Registries", "", _HEADER, "",
             "What every registered strategy, plugin, action and policy declares about itself "
             "(`core/registry.h`; `docs/architecture.md`, \"Registries that describe themselves\"). "
             "Traits are typed fields of each registry's traits struct; a plugin's answers are the "
             "callback points it registers on a session built from its defaults. "
             "`gpufleet place --list-strategies`, `gpufleet cycle --list-plugins --list-actions` "
             "and `gpufleet simulate --list-policies` print the same.", ""]
    for kind in registries.KINDS:
        lines += _kind_section(kind, _native(meta[kind]))
    return "\n".join(lines).rstrip("\n") + "\n"


def callback_points_table() -> str:
    """The engine's callback points (``docs/engine.md``)."""
    rows = [[f"`{p['name']}`", p["signature"], p["combine"],
             f"`{p['python_method']}`" if p["python_method"] else "-",
             f"`{p['volcano_switch']}`" if p["volcano_switch"] else "-"]
            for p in registries.callback_points()]
    return "\n".join(_table(["Point", "Signature", "How answers combine", "Python method",
                             "Volcano switch"], rows)) + "\n"


def plugin_switches_table() -> str:
    """Volcano's per-plugin switches and what each gates (``docs/engine.md``)."""
    rows = []
    for s in _core.engine_plugin_switches():
        gates = f"`{s['point']}`" if s["point"] else "nothing (accepted)"
        if not s["supported_on"]:
            gates += "; `true` is refused"
        rows.append([f"`{s['key']}`", gates, "on" if s["on_when_absent"] else "off"])
    return "\n".join(_table(["Switch", "Gates", "When absent"], rows)) + "\n"


# docs/engine.md's generated sections: name -> renderer.
SECTIONS = {"callback-points": callback_points_table, "plugin-switches": plugin_switches_table}


def _marked(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- generated: {name} -->\n)(.*?)(<!-- end generated: {name} -->)",
                      re.S)


def render(root: Path) -> dict[Path, str]:
    """Every generated file under ``root`` (the repository) with the content it should have."""
    engine_md = root / "docs" / "engine.md"
    text = engine_md.read_text()
    for name, make in SECTIONS.items():
        pattern = _marked(name)
        if not pattern.search(text):
            raise ValueError(f"{engine_md}: no generated section {name!r}")
        text = pattern.sub(lambda m, body=make(): m.group(1) + body + m.group(3), text)
    return {root / "docs" / "registries.md": registries_page(), engine_md: text}


__all__ = ["SECTIONS", "callback_points_table", "plugin_switches_table", "registries_page",
           "render"]
