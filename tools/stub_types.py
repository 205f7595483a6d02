"""Gives the generated stubs (python/gpufleet/_core/*.pyi) the types that the extension's
signatures cannot state: the engine's results read their properties through one table of
getters (cpp/bindings/py_fields.h), so pybind11-stubgen sees ``typing.Any`` for every property.
tools/make_stubs.sh runs this after each regeneration:

    python tools/stub_types.py python/gpufleet/_core

Each entry names a class member and the type to write; a member missing from the stub, or typed
other than ``typing.Any``/``dict``, stops the script with its name, so a regeneration never
silently loses a type and a changed binding shows here.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

_RES = "Resources"
_REC = "gpufleet.engine_records"

# stub file -> class -> member -> return type.
TYPES: dict[str, dict[str, dict[str, str]]] = {
    "engine.pyi": {
        "Resources": {"cpu": "float", "memory": "float", "gpu": "float",
                      "to_dict": f"{_REC}.ResourcesRecord"},
        "BindDecision": {"node": "str", "cpu_milli": "int", "memory_bytes": "int",
                         "devices": "list[gpufleet._core.cluster.DeviceGrant]", "job": "str",
                         "task": "str", "gpus": "list[int]", "gpu_core": "int",
                         "to_dict": f"{_REC}.BindRecord"},
        "EvictDecision": {"job": "str", "task": "str", "node": "str", "reason": "str",
                          "to_dict": f"{_REC}.EvictRecord"},
        "QueueShare": {"queue": "str", "weight": "float", "allocated": _RES,
                       "subtree_allocated": _RES, "request": _RES, "deserved": _RES, "held": _RES,
                       "share": "float", "to_dict": f"{_REC}.QueueShareRecord"},
        "HeldCapacity": {"cpu": "float", "memory": "float", "gpu": "float", "node": "str",
                         "job": "str", "resources": _RES, "to_dict": f"{_REC}.HeldRecord"},
        "CycleResult": {"cycle": "int", "binds": "list[BindDecision]",
                        "evictions": "list[EvictDecision]", "pending": "dict[str, str]",
                        "queues": "list[QueueShare]", "held": "list[HeldCapacity]",
                        "target": "str", "held_gpus": "float", "to_dict": f"{_REC}.CycleRecord"},
        "JobState": {"name": "str", "queue": "str", "priority": "int", "min_available": "int",
                     "tasks": "int", "running": "int", "admitted": "bool",
                     "waiting_cycles": "int"},
        "JobView": {"name": "str", "queue": "str", "priority": "int", "min_available": "int",
                    "tasks": "int", "occupied": "int", "waiting_cycles": "int", "allocated": _RES},
        "TaskView": {"name": "str", "job": "str", "priority": "int", "status": "str",
                     "node": "str | None", "request": _RES},
        "QueueView": {"name": "str", "weight": "float", "allocated": _RES, "request": _RES,
                      "deserved": _RES},
    },
    # The simulator's columns are built without NumPy's caster (the command line runs without
    # NumPy), so stubgen sees an object; they are NumPy arrays when read as properties.
    "sim.pyi": {
        "SimJobs": {name: "numpy.ndarray" for name in (
            "dropped", "end_time", "first_start", "gpu_time", "max_nodes", "migrations",
            "preemptions", "queueing_delay", "run_time", "service")},
        "SimTimeseries": {name: "numpy.ndarray" for name in (
            "busy_gpus", "pending_jobs", "running_jobs", "time")},
    },
}

# A bound class's `fields`/`derived` (tuples of names), written by stubgen as a bare `tuple`, and
# a one-name tuple without its comma (a string to a type checker).
_NAMES = re.compile(r"^(    (?:fields|derived): typing\.ClassVar\[)tuple(\] = )(.*)$", re.M)


# What stubgen writes for `__eq__` against one class and for an unhashable class, marked as
# typeshed marks them (a narrower `__eq__` than object's, `__hash__ = None`).
_NARROW_EQ = re.compile(r"^(    def __eq__\(self, \w+: \w+\) -> bool:)$", re.M)
_NO_HASH = re.compile(r"^(    __hash__: typing\.ClassVar\[None\]) = None$", re.M)


def _names_tuple(m: re.Match[str]) -> str:
    value = re.sub(r"^\(('[^']*')\)$", r"(\1,)", m.group(3))
    return f"{m.group(1)}tuple[str, ...]{m.group(2)}{value}"


def _class_body(text: str, cls: str, where: str) -> tuple[int, int]:
    m = re.search(rf"^class {cls}\b.*:$", text, flags=re.M)
    if m is None:
        raise SystemExit(f"{where}: no class {cls}")
    end = re.search(r"^\S", text[m.end():], flags=re.M)
    return m.end(), m.end() + end.start() if end else len(text)


def retype(text: str, types: dict[str, dict[str, str]], where: str) -> str:
    """``text`` with each named member's return type replaced (see the module's help)."""
    for cls, members in types.items():
        for member, new in members.items():
            start, end = _class_body(text, cls, where)
            body = text[start:end]
            pattern = re.compile(rf"^(    def {member}\(self\) -> )([^:]+):$", re.M)
            found = pattern.search(body)
            if found is None:
                raise SystemExit(f"{where}: {cls}.{member} is not in the stub")
            if found.group(2) not in ("typing.Any", "dict", new):
                raise SystemExit(f"{where}: {cls}.{member} is typed {found.group(2)} now; "
                                 f"update tools/stub_types.py (it writes {new})")
            body = body[:found.start(2)] + new + body[found.end(2):]
            text = text[:start] + body + text[end:]
    text = _NAMES.sub(_names_tuple, text)
    text = _NARROW_EQ.sub(r"\1  # type: ignore[override]", text)
    text = _NO_HASH.sub(r"\1  # type: ignore[assignment]", text)
    modules = sorted({m for t in re.findall(r"-> ([^:]+):", text)
                      for m in re.findall(r"\b(gpufleet(?:\.\w+)+)\.\w+\b", t)})
    for module in modules:
        if not re.search(rf"^import {re.escape(module)}$", text, flags=re.M):
            text = text.replace("\nimport typing\n", f"\nimport {module}\nimport typing\n", 1)
    return text


def main(stubs: Path) -> None:
    for path in sorted(stubs.glob("*.pyi")):
        path.write_text(retype(path.read_text(), TYPES.get(path.name, {}), str(path)))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
