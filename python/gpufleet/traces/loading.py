"""One way in for every entry point: :func:`load` reads a trace with the side inputs its format
declares and returns the jobs (or pods) and the cluster (or node list) they run on.

``gpufleet simulate``, ``gpufleet sweep``, :func:`gpufleet.sweep.sweep`, ``python -m
gpufleet.replay`` and the notebooks all call it, so the same arguments give the same jobs
everywhere (tests/python/test_trace_entry_points.py holds them to it).
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .registry import MISSING_RULES, TraceFormat, detect_format, read_head, trace_format, trace_formats

__all__ = ["LoadedTrace", "MissingInput", "load", "load_cluster"]


class MissingInput(ValueError):
    """A trace, or a side input its format needs, was not given (the commands exit 2 for it, as
    for any usage error). ``input`` names the side input (None: the trace)."""

    def __init__(self, message: str, input: str | None = None) -> None:
        super().__init__(message)
        self.input = input


@dataclass(frozen=True)
class LoadedTrace:
    """What :func:`load` read.

    * Job formats: ``jobs`` (unified job schema) and ``cluster`` (the ``cluster=`` given, a
      cluster file read, or the format's default; ``None`` when none applies), as
      :func:`gpufleet.sim.simulate` takes them.
    * Replayed formats (openb): ``pods`` and ``nodes``, as :func:`gpufleet.replay.replay_openb`
      takes them.

    ``files`` names every file read by role (``trace``, each side input's name, ``cluster``).
    """

    format: str
    jobs: Any = None
    cluster: Any = None
    pods: Any = None
    nodes: Any = None
    files: Mapping[str, Path] = field(default_factory=dict)

    @property
    def replayed(self) -> bool:
        """Pods replayed on a node list (openb), rather than jobs simulated on a cluster."""
        return self.pods is not None


def _existing(value: str | os.PathLike, role: str) -> Path:
    path = Path(value).expanduser()
    if not path.exists():
        raise FileNotFoundError(f"{role}: no such file {str(path)!r}")
    return path


def load(format: str | None = None, trace: str | os.PathLike | None = None, *,
         missing: str = "single_worker", cluster: Any = None, num_jobs: int = 500, seed: int = 0,
         columns: bool = False, **side_inputs: Any) -> LoadedTrace:
    """Read ``trace`` as ``format`` with its side inputs.

    * ``format``: a name of :func:`~gpufleet.traces.trace_formats`; ``None`` tells it from the
      file's name or header (:func:`~gpufleet.traces.detect_format`).
    * ``trace``: the file; ``None`` generates ``num_jobs`` jobs from ``seed`` for formats that
      can (``"synthetic"``).
    * side inputs by name, as the format declares them (``throughputs=`` for gavel, ``nodes=``
      for openb, which defaults to ``openb_node_list_gpu_node.csv`` beside the pod list): a path,
      or a frame already loaded. Giving one the format does not take is an error.
    * ``missing``: what to do with a job the side inputs cannot describe (one of
      :data:`~gpufleet.traces.registry.MISSING_RULES`; default ``"single_worker"``, Gavel's own
      rule, which keeps every job: docs/traces.md, "Throughputs of Gavel jobs").
    * ``cluster``: for job formats, anything :func:`gpufleet.sim.cluster_spec` reads, or a
      cluster file a format declares (a Tiresias cluster CSV, a Gavel cluster-spec JSON).
    * ``columns``: where the format can (``job_columns``, e.g. tiresias), ``jobs`` is a dict of
      plain columns (``array.array``, lists) read without pandas or NumPy
      (:func:`gpufleet.sim.simulate_summary` takes it); else, and by default, a DataFrame.

    Bad input raises ValueError (:class:`~gpufleet.traces.TraceError` for a file's content,
    :class:`MissingInput` for an input not given) naming what is wrong; a file that is not there
    is a FileNotFoundError naming its role.
    """
    if missing not in MISSING_RULES:
        raise ValueError(f"missing must be one of {', '.join(MISSING_RULES)}, not {missing!r}")
    files: dict[str, Path] = {}
    if trace is None:
        if format is None:
            generating = ", ".join(n for n in trace_formats() if trace_format(n).generate)
            raise MissingInput(f"no trace file given (and no format: {generating} traces can be generated)")
        fmt = trace_format(format)
        if fmt.generate is None:
            raise MissingInput(f"{fmt.name} traces need a trace file")
        frame = fmt.generate(num_jobs, seed=seed)
        path = None
    else:
        path = files["trace"] = _existing(trace, "trace")
        fmt = trace_format(format if format is not None else detect_format(path))
        if columns and fmt.job_columns is not None and not fmt.side_inputs:
            jobs = fmt.job_columns(path)
            _side_inputs(fmt, path, side_inputs, files)   # refuses any given, as below
            return LoadedTrace(fmt.name, jobs=jobs, cluster=_cluster(fmt, cluster, files), files=files)
        frame = fmt.load(path)
    side = _side_inputs(fmt, path, side_inputs, files)
    if fmt.replayed:
        if cluster is not None:
            raise ValueError(f"{fmt.name} traces are replayed on their node list; cluster does not apply")
        return LoadedTrace(fmt.name, pods=frame, nodes=side.get("nodes"), files=files)
    rule = {"missing": missing} if fmt.takes_missing else {}
    jobs = fmt.as_jobs(frame, **side, **rule)
    return LoadedTrace(fmt.name, jobs=jobs, cluster=_cluster(fmt, cluster, files), files=files)


def _cluster(fmt: TraceFormat, cluster: Any, files: dict[str, Path]) -> Any:
    return fmt.default_cluster if cluster is None else load_cluster(cluster, files)


def _side_inputs(fmt: TraceFormat, trace: Path | None, given: Mapping[str, Any],
                 files: dict[str, Path]) -> dict[str, Any]:
    """The format's side inputs, read: each given one, else the file of its ``beside`` name next
    to the trace. ValueError for one it does not take or one that is missing."""
    names = [s.name for s in fmt.side_inputs]
    extra = sorted(k for k, v in given.items() if v is not None and k not in names)
    if extra:
        takes = ", ".join(names) if names else "no side inputs"
        raise ValueError(f"{fmt.name} traces take no {' or '.join(extra)} (they take {takes})")
    out: dict[str, Any] = {}
    for spec in fmt.side_inputs:
        value = given.get(spec.name)
        if value is None and spec.beside and trace is not None and (trace.parent / spec.beside).is_file():
            value = trace.parent / spec.beside
        if value is None:
            default = f", or a {spec.beside} beside the trace" if spec.beside else ""
            raise MissingInput(f"{fmt.name} traces need {spec.name} ({spec.help}{default})", spec.name)
        if isinstance(value, (str, os.PathLike)):
            path = files[spec.name] = _existing(value, spec.name)
            value = spec.load(path)
        out[spec.name] = value
    return out


def load_cluster(cluster: Any, files: dict[str, Path] | None = None) -> Any:
    """``cluster`` as :func:`gpufleet.sim.cluster_spec` reads it: a path whose suffix a format
    declares cluster files for (``.csv``: Tiresias, ``.json``: Gavel) is read with that format's
    reader; anything else (a count, ``"v100:4,k80:4"``, a dict) is returned as it is."""
    if not isinstance(cluster, (str, os.PathLike)):
        return cluster
    path = Path(cluster).expanduser()
    kinds = [c for name in trace_formats() for c in trace_format(name).cluster_files]
    by_suffix = [c for c in kinds if c.suffix == path.suffix]
    if not by_suffix:
        if isinstance(cluster, os.PathLike):
            known = ", ".join(f"{c.suffix} ({c.help})" for c in kinds)
            raise ValueError(f"cluster {str(path)!r}: not a cluster file (known: {known})")
        return cluster
    path = _existing(path, "cluster")
    head = read_head(path)
    claims = [c for c in by_suffix if c.sniff is None or c.sniff(path, head)]
    if len(claims) != 1:
        known = "; ".join(c.help for c in by_suffix)
        problem = "not a cluster file of any format" if not claims else "claimed by several formats"
        raise ValueError(f"cluster {str(path)!r}: {problem} ({known})")
    if files is not None:
        files["cluster"] = path
    return claims[0].load(path)
