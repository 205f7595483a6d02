"""The sweep itself: the grid expanded into experiments (every trace loaded and every
combination tried before anything runs), results reused from ``results_dir``, the rest run by an
executor, and the tidy frame."""
from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpufleet._lazy import lazy

from . import executors, experiment
from .errors import SweepError
from .experiment import Experiment, grid, key
from .inputs import Setup, load_setup, trace_list
from .results import frame, read_result, result_path, write_result
from .run import check_option_names, preflight

if TYPE_CHECKING:  # checkers see the frames' type
    import pandas as pd
else:
    pd = lazy("pandas")

__all__ = ["experiments", "sweep"]


def _seeds(seeds: Iterable[Any]) -> list[int]:
    out = []
    for s in seeds:
        if isinstance(s, bool) or not isinstance(s, int) and not (hasattr(s, "item") and float(s).is_integer()):
            raise SweepError(f"seed {s!r}: seeds are integers >= 0")
        if int(s) < 0:
            raise SweepError(f"seed {s!r}: seeds are integers >= 0")
        out.append(int(s))
    if not out:
        raise SweepError("no seeds given")
    return out


def _side_inputs(traces: list[Any], given: Mapping[str, Any]) -> dict[str, Any]:
    """The side inputs given (``None`` ones dropped); SweepError for one no trace's format takes."""
    from gpufleet.traces import trace_format
    formats = [trace_format(name) for name in {t.format for t in traces}]
    out = {k: v for k, v in given.items() if v is not None}
    for name in out:
        if not any(f.side_input(name) for f in formats):
            takes = sorted({s.name for f in formats for s in f.side_inputs})
            raise SweepError(f"{name}: no trace of this sweep takes it (their formats take "
                             f"{', '.join(takes) if takes else 'no side inputs'})")
    return out


def _plan(traces: Any, policies: Any, seeds: Iterable[int], options: Mapping[str, Any] | None, *,
          fmt: str | None, cluster: Any, side_inputs: Mapping[str, Any], missing: str,
          num_jobs: int, as_dra: Iterable[str] | str = ()) -> tuple[list[Experiment], dict[str, Setup], list[str]]:
    specs = trace_list(traces, fmt)
    policy_list = [policies] if isinstance(policies, str) else [str(p) for p in policies]
    policy_list += [f"dra:{s}" for s in ([as_dra] if isinstance(as_dra, str) else as_dra)]
    if not policy_list:
        raise SweepError("no policies given")
    seed_list = _seeds(seeds)
    combos = grid(options)
    option_names = sorted(options or {})
    given = _side_inputs(specs, side_inputs)
    setups = {t.label: load_setup(t, cluster=cluster, side_inputs=given, missing=missing, num_jobs=num_jobs)
              for t in specs}
    for kind in {s.kind for s in setups.values()}:
        check_option_names(kind, option_names)
    # Every (trace, policy, options) once on a sliver of its trace: bad input fails here.
    for t in specs:
        setup = setups[t.label]
        for policy in policy_list:
            for combo in combos:
                try:
                    preflight(setup.kind, setup.data, policy, dict(combo))
                except (KeyError, ValueError, TypeError) as e:
                    opts = ", ".join(f"{k}={v!r}" for k, v in combo)
                    raise SweepError(f"trace {t.label!r} ({t.format}), policy {policy!r}"
                                     f"{', options ' + opts if opts else ''}: {e}") from e
    code = experiment.code_identity()
    exps = []
    for t in specs:
        setup = setups[t.label]
        for policy in policy_list:
            for combo in combos:
                for seed in seed_list:
                    description = {"kind": setup.kind, "trace": setup.identity, "policy": policy,
                                   "seed": seed, "options": dict(combo), "code": code}
                    exps.append(Experiment(setup.kind, t.label, policy, seed, combo, description,
                                           key(description)))
    return exps, setups, option_names


def experiments(traces: Any, policies: Any, seeds: Iterable[int] = (0,),
                options: Mapping[str, Any] | None = None, *, format: str | None = None,
                cluster: Any = None, nodes: Any = None, throughputs: Any = None,
                inputs: Mapping[str, Any] | None = None, missing: str = "single_worker",
                num_jobs: int = 500, as_dra: Iterable[str] | str = ()) -> list[Experiment]:
    """The experiments :func:`sweep` would run for these arguments, checked (SweepError for a bad
    trace, policy or option) but not run."""
    side = {"nodes": nodes, "throughputs": throughputs, **(inputs or {})}
    return _plan(traces, policies, seeds, options, fmt=format, cluster=cluster, side_inputs=side,
                 missing=missing, num_jobs=num_jobs, as_dra=as_dra)[0]


def sweep(traces: Any, policies: Any, seeds: Iterable[int] = range(3),
          options: Mapping[str, Any] | None = None, *, format: str | None = None, cluster: Any = None,
          nodes: Any = None, throughputs: Any = None, inputs: Mapping[str, Any] | None = None,
          missing: str = "single_worker", num_jobs: int = 500,
          results_dir: str | os.PathLike | None = None, workers: int | None = None,
          executor: str = "process", ray_address: str | None = None,
          progress: bool = True, as_dra: Iterable[str] | str = ()) -> pd.DataFrame:
    """Runs every combination of ``traces`` x ``policies`` x ``seeds`` x ``options`` and returns
    one row per experiment and metric (columns ``kind``, ``trace``, ``policy``, ``seed``, one per
    option, ``metric``, ``value``), in grid order.

    * ``traces``: trace files (format told from the name or header, or ``format=``),
      ``"FORMAT:PATH"`` strings (formats of :func:`gpufleet.traces.trace_formats`),
      ``"synthetic"`` (``num_jobs`` generated jobs, drawn anew per seed), or a dict
      ``{label: trace}``. Each is read by :func:`gpufleet.traces.load`, as ``gpufleet simulate``
      reads it: with the side inputs its format takes (``nodes``: the openb node list, default
      ``openb_node_list_gpu_node.csv`` beside the pod list; ``throughputs``: Gavel's table; any
      other in ``inputs``), ``missing`` (default ``"single_worker"``, which keeps every job: see
      :func:`gpufleet.traces.load`) and, for job traces, ``cluster`` (anything
      :func:`gpufleet.sim.cluster_spec` reads, a Tiresias cluster CSV or a Gavel cluster-spec
      JSON). openb pod lists are replayed, job traces simulated, PAI-2020 traces run under the
      PAI-2020 simulator's rules (which build their own cluster: no ``cluster``).
    * ``policies``: job-time policy specs (``"dlas-gpu(queue_limits=[3250,7200])"``) for job
      traces, placement strategies (``"fgd"``) for openb, ``sjf``, ``sju``, ``sjg``, ``sjgg`` or
      ``fifo`` for PAI-2020 traces. An openb policy written ``dra:<strategy>`` replays the trace
      as DRA (``replay_openb(..., as_dra=True)``, docs/dra.md).
    * ``as_dra``: DRA strategies (``["pack", "first"]``) added to ``policies`` as
      ``dra:<strategy>``, so one sweep compares the native policies and DRA on the same seeds
      (openb traces only).
    * ``options``: keyword arguments of :func:`gpufleet.sim.simulate`,
      :func:`gpufleet.replay.replay_openb` (``{"restore_delay": [0, 30]}``) or
      :func:`gpufleet.pai2020.simulate_pai` (``{"num_gpus": [6500, 3000]}``); a list holds the
      alternatives to sweep over, so a list-valued option is written ``[[...]]``.
    * ``results_dir``: one JSON file per finished experiment, written atomically; experiments
      already recorded there are read back, not run again.
    * ``executor``: ``"process"`` (``workers`` processes, default the CPU count; ``workers=1``
      runs here) or ``"ray"`` (a local Ray instance with ``workers`` CPUs, or the cluster at
      ``ray_address``; needs the ``ray`` extra). Both give the same numbers for the same seeds.

    Every trace is loaded and every (trace, policy, options) tried on a sliver of its trace before
    anything runs: bad input raises :class:`SweepError` naming what is wrong and nothing is written.
    """
    if executor not in executors.EXECUTORS:
        raise SweepError(f"unknown executor {executor!r}; known: {', '.join(executors.EXECUTORS)}")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise SweepError(f"workers must be a positive integer, got {workers!r}")
    if executor == "ray":
        executors.import_ray()  # a missing Ray is bad input too: say so before loading anything
    side = {"nodes": nodes, "throughputs": throughputs, **(inputs or {})}
    exps, setups, option_names = _plan(traces, policies, seeds, options, fmt=format, cluster=cluster,
                                       side_inputs=side, missing=missing, num_jobs=num_jobs, as_dra=as_dra)
    results: dict[str, dict[str, float | None]] = {}
    out_dir = None if results_dir is None else Path(results_dir)
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        for exp in exps:
            found = read_result(result_path(out_dir, exp.key), exp.description)
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
            write_result(out_dir, exp, metrics, timing)
        if bar is not None:
            bar.update(1)

    try:
        if todo:
            if executor == "ray":
                executors.on_ray(todo, setups, workers, ray_address, done)
            else:
                n = min(workers or os.cpu_count() or 1, len(todo))
                if n == 1:
                    executors.serial(todo, setups, done)
                else:
                    executors.pool(todo, setups, n, done)
    finally:
        if bar is not None:
            bar.close()
    rows = []
    for exp in exps:
        labels = exp.labels()
        rows += [{**labels, "metric": m, "value": v} for m, v in results[exp.key].items()]
    df = frame(rows, option_names)
    df.attrs.update(experiments=len(exps), ran=len(todo), reused=len(exps) - len(todo),
                    results_dir=None if out_dir is None else str(out_dir))
    return df
