"""Sweeps: a whole study (traces x policies x seeds x options) in one call, on one machine or many.

:func:`sweep` expands the grid into experiments, checks every trace, policy and option before
anything runs, runs the experiments in parallel (a local process pool, or a Ray cluster) and
returns one tidy DataFrame: a row per experiment and metric, columns ``kind``, ``trace``,
``policy``, ``seed``, one column per option, ``metric`` and ``value``.

Two kinds of experiment, both the package's own: ``"sim"``, a job-time simulation
(:func:`gpufleet.sim.simulate`) of a job trace (tiresias, gavel, philly, synthetic), and
``"openb"``, a GPU-sharing replay (:func:`gpufleet.replay.replay_openb`) of an openb pod list.
The metrics are the numeric entries of the run's summary (docs/simulator.md, docs/replay.md).

Resumable: with ``results_dir`` each finished experiment is written there as one small JSON file,
named by the hash of the experiment's full description (kind, the trace's contents, cluster or
node list, policy, seed, options, and the code that computes it), through a temporary file and a rename, so a kill at any moment
leaves either the whole result or none. A later call with the same directory reuses every result
it finds and runs only the rest; a changed option, seed or trace file is another experiment.
See docs/sweep.md.
"""
from __future__ import annotations

import functools
import hashlib
import itertools
import json
import math
import os
import socket
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpufleet._lazy import lazy

pd = lazy("pandas")

__all__ = ["EXECUTORS", "KINDS", "Experiment", "SweepError", "TraceSpec", "experiments",
           "load_published_alloc", "parse_trace", "read_results", "run_experiment", "split_spec",
           "split_top_level", "summarize", "sweep"]

#: Experiment kinds: job-time simulation and openb GPU-sharing replay.
KINDS: tuple[str, ...] = ("sim", "openb")
#: Where experiments run: ``"process"`` (a local pool; one worker runs in this process) or
#: ``"ray"`` (a Ray cluster, local or at ``ray_address``).
EXECUTORS: tuple[str, ...] = ("process", "ray")

# The cluster `gpufleet simulate --format synthetic` uses when none is given.
_SYNTHETIC_CLUSTER = {"v100": 16, "p100": 16, "k80": 16}
# Keyword arguments of simulate/replay_openb a sweep sets itself: not options.
_RESERVED = {"sim": ("jobs", "cluster", "policy", "seed", "progress", "memory_gib"),
             "openb": ("nodes", "pods", "policy", "seed")}
# A pod-list file name's prefix, dropped from the trace's label ("openb_pod_list_default" -> "default").
_OPENB_PREFIX = "openb_pod_list_"
_DEFAULT_OPENB_NODES = "openb_node_list_gpu_node.csv"
_RESULT_FORMAT = 1


class SweepError(ValueError):
    """A sweep that cannot start (bad trace, policy or option: nothing ran) or an experiment that
    failed while running (the results finished before it are kept in ``results_dir``)."""


# --- traces ----------------------------------------------------------------------------------------
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
        """``"openb"`` for openb pod lists (replayed), ``"sim"`` for job traces (simulated)."""
        return "openb" if self.format == "openb" else "sim"


def _formats() -> list[str]:
    from gpufleet.traces import trace_formats
    return trace_formats()


def _infer_format(path: Path) -> str | None:
    """The format of a trace file from its name or CSV header; ``None`` when it cannot tell."""
    if path.suffix == ".trace":
        return "gavel"
    if path.suffix == ".json":
        return "philly"
    if path.suffix != ".csv":
        return None
    if path.name.startswith(_OPENB_PREFIX):
        return "openb"
    with open(path, encoding="utf-8", errors="replace") as f:
        header = {c.strip() for c in f.readline().split(",")}
    if "gpu_milli" in header:
        return "openb"
    if {"job_id", "num_gpu", "submit_time"} <= header and ({"iterations", "interval"} & header):
        return "tiresias"
    if {"job_id", "num_gpu", "submit_time", "duration"} <= header:
        return "synthetic"
    return None


def parse_trace(spec: Any, label: str | None = None, fmt: str | None = None) -> TraceSpec:
    """A :class:`TraceSpec` from ``"FORMAT:PATH"``, a path (format ``fmt``, else told from the
    file name or CSV header), ``"synthetic"`` (generated jobs) or a TraceSpec. ``label`` defaults
    to the file's stem (openb pod lists lose their ``openb_pod_list_`` prefix). SweepError names
    the trace when the file is missing or its format unknown."""
    if isinstance(spec, TraceSpec):
        return spec if label is None else TraceSpec(label, spec.format, spec.path)
    text = str(spec)
    formats = _formats()
    head, sep, rest = text.partition(":")
    if sep and head in formats:
        fmt, text = head, rest
    if text == "synthetic" and fmt in (None, "synthetic"):
        return TraceSpec(label or "synthetic", "synthetic", None)
    path = Path(text).expanduser()
    if not path.is_file():
        raise SweepError(f"trace {str(spec)!r}: no such file {str(path)!r} (give a trace file, "
                         f"FORMAT:PATH with FORMAT one of {', '.join(formats)}, or 'synthetic')")
    if fmt is None:
        fmt = _infer_format(path)
        if fmt is None:
            raise SweepError(f"trace {str(spec)!r}: cannot tell its format from the name or header; "
                             f"write FORMAT:PATH with FORMAT one of {', '.join(formats)}")
    elif fmt not in formats:
        raise SweepError(f"trace {str(spec)!r}: unknown format {fmt!r}; known formats: {', '.join(formats)}")
    stem = path.stem
    if fmt == "openb" and stem.startswith(_OPENB_PREFIX):
        stem = stem[len(_OPENB_PREFIX):]
    return TraceSpec(label or stem, fmt, str(path.resolve()))


def _trace_list(traces: Any, fmt: str | None) -> list[TraceSpec]:
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


# --- experiments -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Experiment:
    """One run of a sweep. ``description`` is everything that determines its result (the trace's
    contents by hash, not its path or label); ``key`` is the hash of that description and names
    its result file."""

    kind: str
    trace: str
    policy: str
    seed: int
    options: tuple[tuple[str, Any], ...]
    description: Mapping[str, Any] = field(repr=False, compare=False)
    key: str = field(compare=False)

    def labels(self) -> dict[str, Any]:
        """The experiment's columns in the sweep's DataFrame (before ``metric`` and ``value``)."""
        return {"kind": self.kind, "trace": self.trace, "policy": self.policy, "seed": self.seed,
                **{k: _cell(v) for k, v in self.options}}


def _cell(v: Any) -> Any:
    """An option value as a DataFrame cell: scalars as they are, lists and dicts as JSON text."""
    return v if v is None or isinstance(v, (bool, int, float, str)) else json.dumps(v, sort_keys=True)


def _canonical(value: Any, where: str) -> Any:
    """``value`` as plain JSON data (NumPy scalars become Python numbers); SweepError otherwise."""
    if hasattr(value, "item") and not isinstance(value, (list, tuple, dict)):
        value = value.item()
    try:
        return json.loads(json.dumps(value, sort_keys=True, allow_nan=False))
    except (TypeError, ValueError) as e:
        raise SweepError(f"{where}: {value!r} cannot be recorded as JSON ({e}); options must be "
                         "numbers, strings, booleans, lists or dicts") from None


def _key(description: Mapping[str, Any]) -> str:
    text = json.dumps(description, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


@functools.lru_cache(maxsize=1)
def _code_identity() -> dict[str, str]:
    """What code computes the results: the package version and a hash of every Python and native
    file of the installed package, so a result is reused only by the same code (a rebuilt native
    module or an edited policy runs its experiments again)."""
    from gpufleet import __version__
    root = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.suffix in (".py", ".so") and p.is_file()):
        h.update(str(path.relative_to(root)).encode() + b"\0")
        h.update(path.read_bytes())
    return {"gpufleet": __version__, "files_sha256": h.hexdigest()[:16]}


def _digest(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _grid(options: Mapping[str, Any] | None) -> list[tuple[tuple[str, Any], ...]]:
    """Every combination of the options' alternatives: a list (or tuple, range) value is the
    alternatives of that option, anything else a single value."""
    if not options:
        return [()]
    names = sorted(options)
    axes = []
    for name in names:
        v = options[name]
        alternatives = list(v) if isinstance(v, (list, tuple, range)) else [v]
        if not alternatives:
            raise SweepError(f"option {name!r}: no values given")
        axes.append([_canonical(a, f"option {name!r}") for a in alternatives])
    return [tuple(zip(names, combo)) for combo in itertools.product(*axes)]


# --- what each trace needs loaded (the "setup"), built once and shipped to every worker ----------
@dataclass
class _Setup:
    kind: str
    identity: dict[str, Any]      # what of the trace goes into every experiment's description
    data: dict[str, Any]          # frames and cluster for the worker


def _cluster_value(cluster: Any) -> Any:
    """A cluster as :func:`gpufleet.sim.cluster_spec` reads it; a path to a Tiresias cluster CSV or
    a Gavel cluster-spec JSON is loaded first (as ``gpufleet simulate --cluster`` does)."""
    if isinstance(cluster, (str, os.PathLike)):
        path = Path(cluster)
        if path.suffix in (".csv", ".json"):
            if not path.is_file():
                raise SweepError(f"cluster: no such file {str(path)!r}")
            from gpufleet import traces as T
            return T.load_tiresias_cluster(path) if path.suffix == ".csv" else T.load_gavel_cluster_spec(path)[0]
    return cluster


def _load(trace: TraceSpec, *, cluster: Any, nodes: Any, throughputs: Any, num_jobs: int) -> _Setup:
    from gpufleet import traces as T
    try:
        if trace.kind == "openb":
            nodes_path = Path(nodes) if nodes is not None else Path(trace.path).parent / _DEFAULT_OPENB_NODES
            if not nodes_path.is_file():
                raise SweepError(f"trace {trace.label!r}: openb replays need a node list; "
                                 f"{'no such file ' + repr(str(nodes_path)) if nodes is not None else 'give nodes=NODES.csv'}")
            return _Setup("openb", {"format": "openb", "pods_sha256": _digest(trace.path),
                                    "nodes_sha256": _digest(nodes_path)},
                          {"nodes": T.load_openb_nodes(nodes_path), "pods": T.load_openb_pods(trace.path)})
        from gpufleet.sim import cluster_spec
        if cluster is None:
            if trace.format != "synthetic":
                raise SweepError(f"trace {trace.label!r} ({trace.format}): job-time simulations need "
                                 "cluster= (e.g. 8, 'v100:4,k80:4' or a Tiresias cluster CSV)")
            cluster = _SYNTHETIC_CLUSTER
        models = _canonical(cluster_spec(_cluster_value(cluster)), "cluster")
        identity: dict[str, Any] = {"format": trace.format, "cluster": models}
        data: dict[str, Any] = {"cluster": models}
        if trace.path is None:
            identity["generated_jobs"] = int(num_jobs)
            data["num_jobs"] = int(num_jobs)
        elif trace.format == "gavel":
            if throughputs is None:
                raise SweepError(f"trace {trace.label!r}: gavel traces need throughputs= "
                                 "(Gavel's simulation_throughputs.json)")
            identity.update(trace_sha256=_digest(trace.path), throughputs_sha256=_digest(throughputs))
            data["jobs"] = T.gavel_as_jobs(T.load_gavel_trace(trace.path), throughputs, missing="drop")
        else:
            identity["trace_sha256"] = _digest(trace.path)
            data["jobs"] = T.to_jobs(T.load_trace(trace.path, trace.format), trace.format)
        return _Setup("sim", identity, data)
    except SweepError:
        raise
    except (KeyError, ValueError, OSError) as e:
        raise SweepError(f"trace {trace.label!r}: {_message(e)}") from e


def _message(e: BaseException) -> str:
    return str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e)


# --- one experiment: the same function in this process, a pool worker or a Ray task ---------------
def _jobs_for(data: Mapping[str, Any], seed: int):
    if "jobs" in data:
        return data["jobs"]
    from gpufleet.traces import synthetic_jobs
    return synthetic_jobs(data["num_jobs"], seed=seed)


# Summary entries that echo an input (a column or an option of the sweep), not a result.
_NOT_METRICS = ("seed", "stop_at")


def _metrics(summary: Mapping[str, Any]) -> dict[str, float | None]:
    """The numeric entries of a run's summary (not the seed, which is a column)."""
    out: dict[str, float | None] = {}
    for k, v in summary.items():
        if hasattr(v, "item"):
            v = v.item()
        if k in _NOT_METRICS or isinstance(v, bool) or not isinstance(v, (int, float)):
            continue
        out[k] = float(v) if math.isfinite(v) else None
    return out


def split_top_level(text: str) -> list[str]:
    """Splits at commas outside brackets and quotes: ``"0,30"`` -> two parts, ``"[[1,2],[3,4]]"``
    one; parts are stripped."""
    parts, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts]


def _spec_value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        lowered = text.lower()
        return {"true": True, "false": False}.get(lowered, text.strip("\"'"))


def split_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``"fgd(integer_scores=false)"`` -> ``("fgd", {"integer_scores": False})``: the registry's
    spec syntax, for the openb replay, which takes a strategy's parameters as keywords. Values are
    JSON (numbers, lists, strings) or true/false; ValueError for a malformed spec."""
    text = spec.strip()
    name, paren, rest = text.partition("(")
    if not paren:
        return text, {}
    if not rest.endswith(")") or not name.strip():
        raise ValueError(f"policy {spec!r}: expected NAME or NAME(key=value, ...)")
    params: dict[str, Any] = {}
    body = rest[:-1].strip()
    for part in split_top_level(body) if body else []:
        key, eq, value = part.partition("=")
        if not eq or not key.strip():
            raise ValueError(f"policy {spec!r}: expected key=value, got {part!r}")
        params[key.strip()] = _spec_value(value.strip())
    return name.strip(), params


def run_experiment(kind: str, data: Mapping[str, Any], policy: str, seed: int,
                   options: Mapping[str, Any]) -> dict[str, float | None]:
    """Runs one experiment on loaded trace ``data`` and returns its metrics (the numeric summary
    entries; ``None`` for a value that is not finite)."""
    if kind == "openb":
        from gpufleet.replay import replay_openb
        name, params = split_spec(policy)
        clash = sorted(set(params) & set(options))
        if clash:
            raise ValueError(f"policy {policy!r}: {', '.join(clash)} given in the spec and as an option")
        result = replay_openb(data["nodes"], data["pods"], policy=name, seed=seed, **params, **options)
    else:
        from gpufleet.sim import simulate
        result = simulate(_jobs_for(data, seed), data["cluster"], policy, seed=seed, progress=False, **options)
    return _metrics(result.summary)


def _preflight(kind: str, data: Mapping[str, Any], policy: str, options: Mapping[str, Any]) -> None:
    """Runs ``policy`` with ``options`` on a sliver of the trace, so that a bad policy, parameter
    or option fails at once, with the core's own message, instead of in the middle of a sweep."""
    if kind == "openb":
        nodes, pods = data["nodes"], data["pods"]
        gpu_nodes = nodes[nodes["num_gpu"] > 0]
        gpu_pods = pods[pods["num_gpu"] > 0]
        if len(gpu_nodes) and len(gpu_pods):
            nodes = gpu_nodes.nlargest(1, "num_gpu")
            pods = gpu_pods.head(1)
        run_experiment(kind, {"nodes": nodes, "pods": pods}, policy, 0, options)
        return
    # The first job and the widest: a job no model can hold is bad input too.
    jobs = _jobs_for(data, 0)
    if len(jobs):
        jobs = jobs.iloc[sorted({0, int(jobs["num_gpu"].to_numpy().argmax())})]
    run_experiment(kind, {"jobs": jobs, "cluster": data["cluster"]}, policy, 0, options)


def _check_option_names(kind: str, options: Iterable[str]) -> None:
    for name in options:
        if name in _RESERVED[kind]:
            raise SweepError(f"option {name!r} is set by the sweep itself for {kind} experiments "
                             f"(reserved: {', '.join(_RESERVED[kind])})")


# --- results on disk -------------------------------------------------------------------------------
def _result_path(results_dir: Path, key: str) -> Path:
    return results_dir / f"{key}.json"


def _read_result(path: Path, description: Mapping[str, Any]) -> dict[str, float | None] | None:
    """The metrics recorded in ``path`` for ``description``; ``None`` when absent, unreadable or
    recorded for another description (a hash collision, or a file from another format)."""
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("description") != description:
        return None
    metrics = record.get("metrics")
    return dict(metrics) if isinstance(metrics, dict) else None


def _write_result(results_dir: Path, exp: Experiment, metrics: Mapping[str, Any],
                  timing: tuple[float, float]) -> None:
    """Writes one result atomically: a temporary file in the same directory, flushed to disk, then
    renamed over the final name, so readers see the whole record or nothing."""
    from gpufleet import __version__
    record = {"format": _RESULT_FORMAT, "key": exp.key, "description": exp.description,
              "labels": exp.labels(), "metrics": dict(metrics), "elapsed_s": round(timing[0], 4),
              "cpu_s": round(timing[1], 4),
              "gpufleet": __version__, "host": socket.gethostname(),
              "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    final = _result_path(results_dir, exp.key)
    tmp = results_dir / f".{exp.key}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
    try:
        with open(tmp, "w") as f:
            json.dump(record, f, indent=1)  # metrics keep the summary's order
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, final)
    finally:
        if tmp.exists():
            tmp.unlink()


def read_results(results_dir: str | os.PathLike) -> pd.DataFrame:
    """Every result recorded in ``results_dir`` as the tidy frame :func:`sweep` returns (columns
    from each file's labels); temporary and unreadable files are skipped."""
    rows = []
    for path in sorted(Path(results_dir).glob("*.json")):
        try:
            record = json.loads(path.read_text())
            labels, metrics = dict(record["labels"]), dict(record["metrics"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        rows += [{**labels, "metric": m, "value": v} for m, v in metrics.items()]
    return _frame(rows, [])


def _frame(rows: list[dict[str, Any]], option_names: Sequence[str]) -> pd.DataFrame:
    columns = ["kind", "trace", "policy", "seed", *option_names, "metric", "value"]
    df = pd.DataFrame(rows)
    for c in columns:
        if c not in df.columns:
            df[c] = None
    extra = [c for c in df.columns if c not in columns]
    df = df[columns[:-2] + extra + columns[-2:]]
    df["seed"] = df["seed"].astype("int64")
    df["value"] = df["value"].astype("float64")
    return df


# --- the sweep -------------------------------------------------------------------------------------
def _plan(traces: Any, policies: Any, seeds: Iterable[int], options: Mapping[str, Any] | None, *,
          fmt: str | None, cluster: Any, nodes: Any, throughputs: Any,
          num_jobs: int) -> tuple[list[Experiment], dict[str, _Setup], list[str]]:
    trace_list = _trace_list(traces, fmt)
    policy_list = [policies] if isinstance(policies, str) else [str(p) for p in policies]
    if not policy_list:
        raise SweepError("no policies given")
    seed_list = []
    for s in seeds:
        if isinstance(s, bool) or not isinstance(s, int) and not (hasattr(s, "item") and float(s).is_integer()):
            raise SweepError(f"seed {s!r}: seeds are integers >= 0")
        if int(s) < 0:
            raise SweepError(f"seed {s!r}: seeds are integers >= 0")
        seed_list.append(int(s))
    if not seed_list:
        raise SweepError("no seeds given")
    combos = _grid(options)
    option_names = sorted(options or {})
    setups = {t.label: _load(t, cluster=cluster, nodes=nodes, throughputs=throughputs, num_jobs=num_jobs)
              for t in trace_list}
    for kind in {s.kind for s in setups.values()}:
        _check_option_names(kind, option_names)
    # Every (trace, policy, options) once on a sliver of its trace: bad input fails here.
    for t in trace_list:
        setup = setups[t.label]
        for policy in policy_list:
            for combo in combos:
                try:
                    _preflight(setup.kind, setup.data, policy, dict(combo))
                except (KeyError, ValueError, TypeError) as e:
                    opts = ", ".join(f"{k}={v!r}" for k, v in combo)
                    raise SweepError(f"trace {t.label!r} ({t.format}), policy {policy!r}"
                                     f"{', options ' + opts if opts else ''}: {_message(e)}") from e
    exps = []
    for t in trace_list:
        setup = setups[t.label]
        for policy in policy_list:
            for combo in combos:
                for seed in seed_list:
                    description = {"kind": setup.kind, "trace": setup.identity, "policy": policy,
                                   "seed": seed, "options": dict(combo), "code": _code_identity()}
                    exps.append(Experiment(setup.kind, t.label, policy, seed, combo, description,
                                           _key(description)))
    return exps, setups, option_names


def experiments(traces: Any, policies: Any, seeds: Iterable[int] = (0,),
                options: Mapping[str, Any] | None = None, *, format: str | None = None,
                cluster: Any = None, nodes: Any = None, throughputs: Any = None,
                num_jobs: int = 500) -> list[Experiment]:
    """The experiments :func:`sweep` would run for these arguments, checked (SweepError for a bad
    trace, policy or option) but not run."""
    return _plan(traces, policies, seeds, options, fmt=format, cluster=cluster, nodes=nodes,
                 throughputs=throughputs, num_jobs=num_jobs)[0]


def sweep(traces: Any, policies: Any, seeds: Iterable[int] = range(3),
          options: Mapping[str, Any] | None = None, *, format: str | None = None, cluster: Any = None,
          nodes: Any = None, throughputs: Any = None, num_jobs: int = 500,
          results_dir: str | os.PathLike | None = None, workers: int | None = None,
          executor: str = "process", ray_address: str | None = None,
          progress: bool = True) -> pd.DataFrame:
    """Runs every combination of ``traces`` x ``policies`` x ``seeds`` x ``options`` and returns
    one row per experiment and metric (columns ``kind``, ``trace``, ``policy``, ``seed``, one per
    option, ``metric``, ``value``), in grid order.

    * ``traces``: trace files (format told from the name or header, or ``format=``),
      ``"FORMAT:PATH"`` strings (formats of :func:`gpufleet.traces.trace_formats`),
      ``"synthetic"`` (``num_jobs`` generated jobs, drawn anew per seed), or a dict
      ``{label: trace}``. openb pod lists are replayed on ``nodes`` (default: the
      ``openb_node_list_gpu_node.csv`` beside the pod list); job traces are simulated on
      ``cluster`` (anything :func:`gpufleet.sim.cluster_spec` reads, or a Tiresias cluster CSV or
      Gavel cluster-spec JSON); gavel traces need ``throughputs``.
    * ``policies``: job-time policy specs (``"dlas-gpu(queue_limits=[3250,7200])"``) for job
      traces, placement strategies (``"fgd"``) for openb.
    * ``options``: keyword arguments of :func:`gpufleet.sim.simulate` or
      :func:`gpufleet.replay.replay_openb` (``{"restore_delay": [0, 30]}``); a list holds the
      alternatives to sweep over, so a list-valued option is written ``[[...]]``.
    * ``results_dir``: one JSON file per finished experiment, written atomically; experiments
      already recorded there are read back, not run again.
    * ``executor``: ``"process"`` (``workers`` processes, default the CPU count; ``workers=1``
      runs here) or ``"ray"`` (a local Ray instance with ``workers`` CPUs, or the cluster at
      ``ray_address``; needs the ``ray`` extra). Both give the same numbers for the same seeds.

    Every trace is loaded and every (trace, policy, options) tried on a sliver of its trace before
    anything runs: bad input raises :class:`SweepError` naming what is wrong and nothing is written.
    """
    if executor not in EXECUTORS:
        raise SweepError(f"unknown executor {executor!r}; known: {', '.join(EXECUTORS)}")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise SweepError(f"workers must be a positive integer, got {workers!r}")
    from gpufleet import _sweep_exec as run
    if executor == "ray":
        run.import_ray()  # a missing Ray is bad input too: say so before loading anything
    exps, setups, option_names = _plan(traces, policies, seeds, options, fmt=format, cluster=cluster,
                                       nodes=nodes, throughputs=throughputs, num_jobs=num_jobs)
    results: dict[str, dict[str, float | None]] = {}
    out_dir = None if results_dir is None else Path(results_dir)
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        for exp in exps:
            found = _read_result(_result_path(out_dir, exp.key), exp.description)
            if found is not None:
                results[exp.key] = found
    todo, seen = [], set()
    for exp in exps:
        if exp.key not in results and exp.key not in seen:
            todo.append(exp)
            seen.add(exp.key)
    bar = None
    if progress and todo:
        from tqdm.auto import tqdm
        bar = tqdm(total=len(exps), initial=len(exps) - len(todo), desc="sweep", unit="exp")

    def done(exp: Experiment, metrics: dict[str, float | None], timing: tuple[float, float]) -> None:
        results[exp.key] = metrics
        if out_dir is not None:
            _write_result(out_dir, exp, metrics, timing)
        if bar is not None:
            bar.update(1)

    try:
        if todo:
            if executor == "ray":
                run.on_ray(todo, setups, workers, ray_address, done)
            else:
                n = min(workers or os.cpu_count() or 1, len(todo))
                if n == 1:
                    run.serial(todo, setups, done)
                else:
                    run.pool(todo, setups, n, done)
    finally:
        if bar is not None:
            bar.close()
    rows = []
    for exp in exps:
        labels = exp.labels()
        rows += [{**labels, "metric": m, "value": v} for m, v in results[exp.key].items()]
    df = _frame(rows, option_names)
    df.attrs.update(experiments=len(exps), ran=len(todo), reused=len(exps) - len(todo),
                    results_dir=None if out_dir is None else str(out_dir))
    return df


# --- reading a sweep -------------------------------------------------------------------------------
def summarize(df: pd.DataFrame, metrics: Sequence[str] | None = None) -> pd.DataFrame:
    """Mean, standard deviation (over seeds) and number of runs per kind, trace, policy, option
    values and metric of a sweep's frame, in the frame's order; ``metrics`` picks some."""
    if metrics is not None:
        unknown = sorted(set(metrics) - set(df["metric"]))
        if unknown:
            raise SweepError(f"no metric {', '.join(map(repr, unknown))} in this sweep; it has "
                             f"{', '.join(sorted(set(df['metric'])))}")
        df = df[df["metric"].isin(list(metrics))]
    keys = [c for c in df.columns if c not in ("seed", "value")]
    g = df.groupby(keys, sort=False, dropna=False)["value"]
    out = g.agg(mean="mean", std="std", runs="count").reset_index()
    return out


_POLICY_NAMES = {"01-Random": "random", "02-DotProd": "dotprod", "03-GpuClustering": "gpu-clustering",
                 "04-GpuPacking": "gpu-packing", "05-BestFit": "bestfit", "06-FGD": "fgd"}


def load_published_alloc(path: str | os.PathLike, at: str = "100") -> pd.DataFrame:
    """The FGD study's published per-seed results (``fgd_expected_alloc.csv``: columns
    ``workload, sc_policy, ..., 0..130``) as the mean GPU allocation ratio (%) at ``at`` percent
    arrived workload, one row per (trace, policy) with this package's labels: ``trace`` without
    the ``openb_pod_list_`` prefix, ``policy`` the registered strategy name."""
    raw = pd.read_csv(path)
    missing = [c for c in ("workload", "sc_policy", at) if c not in raw.columns]
    if missing:
        raise SweepError(f"{path}: lacks column(s) {', '.join(missing)} (expected the FGD study's "
                         "analysis_allo_discrete.csv layout)")
    raw = raw[["workload", "sc_policy", at]]
    raw = raw.assign(trace=raw["workload"].str.replace(_OPENB_PREFIX, "", regex=False),
                     policy=raw["sc_policy"].map(lambda p: _POLICY_NAMES.get(p, p)))
    out = raw.groupby(["trace", "policy"], sort=False)[at].agg(published="mean", published_runs="count")
    return out.reset_index()
