"""The traces of a sweep: what each is (:class:`TraceSpec`), and what each experiment on it needs,
loaded once through :func:`gpufleet.traces.load` (the same function ``gpufleet simulate`` uses)
and shipped to every worker (:class:`Setup`)."""
from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import SweepError
from .experiment import canonical, digest

__all__ = ["Setup", "TraceSpec", "jobs_for", "load_setup", "parse_trace", "trace_list"]

# A pod-list file name's prefix, dropped from the trace's label ("openb_pod_list_default" -> "default").
_OPENB_PREFIX = "openb_pod_list_"


@dataclass(frozen=True)
class TraceSpec:
    """One trace of a sweep: its label (the DataFrame's ``trace``), format (a name of
    :func:`gpufleet.traces.trace_formats`), file (``None``: a synthetic trace generated per seed)
    and kind."""

    label: str
    format: str
    path: str | None

    @property
    def kind(self) -> str:
        """``"openb"`` for pod lists replayed on nodes, ``"sim"`` for job traces (simulated), or the
        simulator the format names (``"pai2020"``: the PAI-2020 simulator's own rules)."""
        from gpufleet.traces.registry import trace_format
        fmt = trace_format(self.format)
        return fmt.simulator or ("openb" if fmt.replayed else "sim")


def parse_trace(spec: Any, label: str | None = None, fmt: str | None = None) -> TraceSpec:
    """A :class:`TraceSpec` from ``"FORMAT:PATH"``, a path (format ``fmt``, else told from the
    file name or header: :func:`gpufleet.traces.detect_format`), ``"synthetic"`` (generated jobs)
    or a TraceSpec. ``label`` defaults to the file's stem (openb pod lists lose their
    ``openb_pod_list_`` prefix). SweepError names the trace when the file is missing or its
    format unknown."""
    from gpufleet.traces import detect_format, trace_format, trace_formats
    if isinstance(spec, TraceSpec):
        return spec if label is None else TraceSpec(label, spec.format, spec.path)
    text = str(spec)
    formats = trace_formats()
    head, sep, rest = text.partition(":")
    if sep and head in formats:
        fmt, text = head, rest
    if text in formats and fmt in (None, text) and trace_format(text).generate is not None:
        return TraceSpec(label or text, text, None)
    path = Path(text).expanduser()
    if not path.is_file():
        raise SweepError(f"trace {str(spec)!r}: no such file {str(path)!r} (give a trace file, "
                         f"FORMAT:PATH with FORMAT one of {', '.join(formats)}, or 'synthetic')")
    if fmt is None:
        try:
            fmt = detect_format(path)
        except (ValueError, OSError) as e:
            raise SweepError(f"trace {str(spec)!r}: {e}; or write FORMAT:PATH") from None
    elif fmt not in formats:
        raise SweepError(f"trace {str(spec)!r}: unknown format {fmt!r}; known formats: {', '.join(formats)}")
    stem = path.stem
    if fmt == "openb" and stem.startswith(_OPENB_PREFIX):
        stem = stem[len(_OPENB_PREFIX):]
    return TraceSpec(label or stem, fmt, str(path.resolve()))


def trace_list(traces: Any, fmt: str | None) -> list[TraceSpec]:
    """The sweep's traces: one, a list, or ``{label: trace}``; two traces of one label are an error."""
    if isinstance(traces, (str, os.PathLike, TraceSpec)):
        traces = [traces]
    if isinstance(traces, Mapping):
        out = [parse_trace(v, label=str(k), fmt=fmt) for k, v in traces.items()]
    else:
        out = [parse_trace(t, fmt=fmt) for t in traces]
    if not out:
        raise SweepError("no traces given")
    seen: dict[str, TraceSpec] = {}
    for t in out:
        if t.label in seen and seen[t.label] != t:
            raise SweepError(f"two traces are labelled {t.label!r} ({seen[t.label].path} and {t.path}); "
                             "give them distinct labels: traces={'label': path, ...}")
        seen[t.label] = t
    return list(seen.values())


@dataclass
class Setup:
    """A trace loaded for its experiments."""

    kind: str
    identity: dict[str, Any]      # what of the trace goes into every experiment's description
    data: dict[str, Any]          # frames and cluster for the worker


def load_setup(trace: TraceSpec, *, cluster: Any, side_inputs: Mapping[str, Any], missing: str,
               num_jobs: int) -> Setup:
    """Loads ``trace`` with the side inputs its format takes (others are for other traces of the
    sweep) and describes it by the contents of every file read."""
    from gpufleet import traces as T
    from gpufleet.sim import cluster_spec
    try:
        fmt = T.trace_format(trace.format)
        if fmt.simulator is not None:
            if cluster is not None:
                raise SweepError(f"trace {trace.label!r} ({trace.format}): its simulator builds its own "
                                 "cluster; give num_gpus or num_nodes as options, not cluster=")
            loaded = T.load(format=trace.format, trace=trace.path)
            identity = {"format": loaded.format, "trace_sha256": digest(loaded.files["trace"])}
            return Setup(fmt.simulator, identity, {"jobs": loaded.jobs})
        if not fmt.replayed and cluster is None and fmt.default_cluster is None:
            raise SweepError(f"trace {trace.label!r} ({trace.format}): job-time simulations need "
                             "cluster= (e.g. 8, 'v100:4,k80:4' or a Tiresias cluster CSV)")
        taken = {k: v for k, v in side_inputs.items() if fmt.side_input(k) is not None}
        loaded = T.load(format=trace.format, trace=trace.path, missing=missing, num_jobs=num_jobs,
                        cluster=None if fmt.replayed else cluster, **taken)
        identity: dict[str, Any] = {"format": loaded.format}
        identity.update({f"{role}_sha256": digest(p) for role, p in loaded.files.items() if role != "cluster"})
        if fmt.takes_missing:
            identity["missing"] = missing
        if loaded.replayed:
            return Setup("openb", identity, {"nodes": loaded.nodes, "pods": loaded.pods})
        models = canonical(cluster_spec(loaded.cluster), "cluster")
        identity["cluster"] = models
        data: dict[str, Any] = {"cluster": models}
        if trace.path is None:
            identity["generated_jobs"] = int(num_jobs)
            data["generate"] = {"format": trace.format, "num_jobs": int(num_jobs)}
        else:
            data["jobs"] = loaded.jobs
        return Setup("sim", identity, data)
    except SweepError:
        raise
    except (KeyError, ValueError, OSError) as e:
        raise SweepError(f"trace {trace.label!r}: {e}") from e


def jobs_for(data: Mapping[str, Any], seed: int) -> Any:
    """The jobs of one experiment: the trace's, or a trace generated from the experiment's seed."""
    if "jobs" in data:
        return data["jobs"]
    from gpufleet.traces import load
    generate = data["generate"]
    return load(format=generate["format"], num_jobs=generate["num_jobs"], seed=seed).jobs
