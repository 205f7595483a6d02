"""Trace formats by name. Each format module declares itself with :func:`register`: its loader,
its converter to the unified job schema, the side inputs it needs (a throughput table, a node
list), how its files are recognised, and the cluster files it can read. Nothing here names a
format: the registry imports every module of :mod:`gpufleet.traces` on first use, so a new format
is one new module (docs/traces.md, "Adding a trace format").

:func:`gpufleet.traces.load` (module :mod:`~gpufleet.traces.loading`) reads these declarations;
``load_trace`` and ``to_jobs`` remain the two halves of it for one format.
"""
from __future__ import annotations

import importlib
import os
import pkgutil
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import TraceError

__all__ = ["MISSING_RULES", "ClusterFile", "SideInput", "TraceFormat", "detect_format", "describe_formats",
           "header_columns", "load_trace", "read_head", "register", "to_jobs", "trace_format", "trace_formats"]

#: What to do with a job that a format's side inputs cannot describe (Gavel: a (job type, scale
#: factor) pair the throughput table lacks). ``"single_worker"``, the default everywhere, keeps it
#: with its type's one-GPU figures, as Gavel's simulator did; ``"error"`` refuses it; ``"drop"``
#: skips it. Formats without such jobs ignore the rule.
MISSING_RULES: tuple[str, ...] = ("single_worker", "error", "drop")

# Sniffers see at most this much of a file's first line: enough for any header, and a device or
# a file without newlines is not read whole.
_HEAD_BYTES = 1 << 16

Sniff = Callable[[Path, str], bool]


@dataclass(frozen=True)
class SideInput:
    """A file a format needs besides the trace itself, passed to :func:`gpufleet.traces.load` as
    the keyword ``name`` (``--name FILE`` or ``--input name=FILE`` on the command line).

    ``load`` reads the file (a value that is not a path, e.g. a frame already loaded, is passed on
    as it is). ``beside``: a file of that name next to the trace is used when none is given.
    """

    name: str
    help: str
    load: Callable[[Path], Any]
    beside: str | None = None


@dataclass(frozen=True)
class ClusterFile:
    """A cluster description file a format's authors published (a Tiresias cluster CSV, a Gavel
    cluster-spec JSON). Any job trace may be simulated on it: ``cluster=PATH``."""

    suffix: str
    help: str
    load: Callable[[Path], Any]
    sniff: Sniff | None = None  # None: every file with ``suffix``


@dataclass(frozen=True)
class TraceFormat:
    """How to read one trace format.

    * ``load(path)``: the format's own frame; ``as_jobs(frame, **side_inputs[, missing=])``: the
      unified job schema (:mod:`gpufleet.traces.schema`).
    * ``replayed``: the trace is pods replayed on the node list of the side input ``nodes`` (openb)
      rather than jobs simulated on a cluster.
    * ``side_inputs``: the files it needs besides the trace; ``takes_missing``: ``as_jobs``
      takes ``missing=`` (:data:`MISSING_RULES`).
    * ``sniff(path, first_line)`` recognises its files (``recognised`` says how, for people);
      two formats must never both claim one file.
    * ``job_columns(path)``: optional, ``as_jobs(load(path))`` as plain columns read without
      pandas or NumPy (``array.array`` of int64 "q" or float64 "d", a list of text), for formats
      without side inputs (:func:`~gpufleet.traces.load` with ``columns=True``).
    * ``generate(num_jobs, seed=)``: jobs without a trace file (synthetic); ``default_cluster``:
      the cluster such a trace is simulated on when none is given.
    * ``simulator``: the name of the simulator that runs this format's traces as their authors'
      own simulator did (``"pai2020"``: :mod:`gpufleet.pai2020`), which is also the sweep's kind
      of experiment for them; None: the job-time simulator (or the replay, when ``replayed``).
    """

    name: str
    summary: str
    load: Callable[..., Any]
    as_jobs: Callable[..., Any]
    job_columns: Callable[..., Any] | None = None
    replayed: bool = False
    side_inputs: tuple[SideInput, ...] = ()
    takes_missing: bool = False
    sniff: Sniff | None = None
    recognised: str = ""
    cluster_files: tuple[ClusterFile, ...] = ()
    generate: Callable[..., Any] | None = None
    default_cluster: Any = None
    simulator: str | None = None

    def side_input(self, name: str) -> SideInput | None:
        return next((s for s in self.side_inputs if s.name == name), None)


_FORMATS: dict[str, TraceFormat] = {}
_lock = threading.Lock()
_discovered = False


def register(fmt: TraceFormat) -> TraceFormat:
    """Adds ``fmt`` to the registry (a format module calls this once, at import). A name
    registered twice is a ValueError."""
    with _lock:
        if fmt.name in _FORMATS:
            raise ValueError(f"trace format {fmt.name!r} is registered twice")
        _FORMATS[fmt.name] = fmt
    return fmt


def _discover() -> None:
    """Imports every public module of gpufleet.traces once; format modules register on import.
    The package's own imports come first, so the built-in formats keep their order."""
    global _discovered
    if _discovered:
        return
    package = importlib.import_module(__package__)
    for info in pkgutil.iter_modules(package.__path__):
        if not info.name.startswith("_"):
            importlib.import_module(f"{__package__}.{info.name}")
    _discovered = True


def _all() -> list[TraceFormat]:
    _discover()
    with _lock:
        return list(_FORMATS.values())


def trace_formats() -> list[str]:
    """Names accepted by :func:`gpufleet.traces.load`, :func:`load_trace` and :func:`to_jobs`."""
    return [f.name for f in _all()]


def trace_format(name: str) -> TraceFormat:
    """The declaration of format ``name``; ValueError listing the known ones otherwise."""
    formats = {f.name: f for f in _all()}
    try:
        return formats[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown trace format {name!r}; known formats: {', '.join(formats)}") from None


def header_columns(head: str) -> set[str]:
    """The column names of a CSV header line (for sniffers)."""
    return {c.strip().strip('"') for c in head.lstrip("\ufeff").split(",")}


def read_head(path: Path) -> str:
    """The first line of ``path`` (at most 64 KiB of it), for sniffers; OSError for a missing
    file or a folder."""
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.readline(_HEAD_BYTES)


def detect_format(path: str | os.PathLike) -> str:
    """The format of the trace file ``path``, from its name or first line (each format's
    ``sniff``). TraceError when no format, or more than one, claims the file."""
    path = Path(path)
    head = read_head(path)
    claims = [f.name for f in _all() if f.sniff is not None and f.sniff(path, head)]
    if len(claims) == 1:
        return claims[0]
    if not claims:
        raise TraceError(path.name, None, None, "cannot tell its format from the name or header; give the "
                         f"format (one of {', '.join(trace_formats())})")
    raise TraceError(path.name, None, None, f"looks like formats {' and '.join(claims)}; give the format")


def describe_formats() -> list[dict[str, Any]]:
    """Every format as plain data (``--list-formats``): name, summary, kind (``jobs`` simulated
    or ``pods`` replayed), how its files are recognised, its side inputs, its cluster files and
    whether it takes ``missing``."""
    return [{"name": f.name, "summary": f.summary, "kind": "pods" if f.replayed else "jobs",
             "recognised": f.recognised,
             "side_inputs": [{"name": s.name, "help": s.help, "beside": s.beside} for s in f.side_inputs],
             "cluster_files": [c.help for c in f.cluster_files], "takes_missing": f.takes_missing,
             "generates": f.generate is not None} for f in _all()]


def load_trace(path: str | os.PathLike | None, fmt: str, **kw: Any) -> Any:
    """Load ``path`` with the loader of format ``fmt`` (keyword arguments passed on).

    Returns the format's own frame (pods for openb, jobs for the others); use :func:`to_jobs`
    for the unified job schema, or :func:`gpufleet.traces.load` for both with the side inputs.
    ``path=None`` generates a trace for formats that can (``"synthetic"``: ``n``, ``seed``, ...).
    """
    spec = trace_format(fmt)
    if path is None:
        if spec.generate is None:
            raise ValueError(f"trace format {fmt!r} needs a trace file")
        return spec.generate(**kw)
    return spec.load(path, **kw)


def to_jobs(df: Any, fmt: str, **kw: Any) -> Any:
    """Convert a frame from ``load_trace(..., fmt)`` to the unified job schema.

    Keyword arguments go to the format's converter, e.g. ``throughputs=`` (required) and
    ``reference=`` for Gavel.
    """
    return trace_format(fmt).as_jobs(df, **kw)
