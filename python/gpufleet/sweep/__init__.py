"""Sweeps: a whole study (traces x policies x seeds x options) in one call, on one machine or many.

:func:`sweep` expands the grid into experiments, checks every trace, policy and option before
anything runs, runs the experiments in parallel (a local process pool, or a Ray cluster) and
returns one tidy DataFrame: a row per experiment and metric, columns ``kind``, ``trace``,
``policy``, ``seed``, one column per option, ``metric`` and ``value``.

Three kinds of experiment, all the package's own: ``"sim"``, a job-time simulation
(:func:`gpufleet.sim.simulate`) of a job trace (tiresias, gavel, philly, synthetic),
``"openb"``, a GPU-sharing replay (:func:`gpufleet.replay.replay_openb`) of an openb pod list, and
``"pai2020"``, the Alibaba PAI-2020 simulator's rules (:func:`gpufleet.pai2020.simulate_pai`) on a
trace of its format.
Traces are read by :func:`gpufleet.traces.load`, as ``gpufleet simulate`` reads them. The metrics
are the numeric entries of the run's summary (docs/simulator.md, docs/replay.md).

Resumable: with ``results_dir`` each finished experiment is written there as one small JSON file,
named by the hash of the experiment's full description (kind, the contents of every file the
trace was read from, cluster, policy, seed, options, and the code that computes it), through a
temporary file and a rename, so a kill at any moment leaves either the whole result or none. A
later call with the same directory reuses every result it finds and runs only the rest; a changed
option, seed or trace file is another experiment. See docs/sweep.md.

The modules, each using only those before it: ``errors``, ``specs`` (policy spec syntax),
``experiment`` (descriptions and keys), ``inputs`` (the traces), ``run`` (one experiment),
``results`` (files, frame, summary), ``executors`` (serial, pool, Ray), ``driver`` (the sweep).
"""
from __future__ import annotations

from .driver import experiments, sweep
from .errors import SweepError
from .executors import EXECUTORS
from .experiment import Experiment
from .inputs import TraceSpec, parse_trace
from .results import load_gavel_reference, load_published_alloc, read_results, summarize
from .run import run_experiment
from .specs import split_spec, split_top_level

__all__ = ["EXECUTORS", "KINDS", "Experiment", "SweepError", "TraceSpec", "experiments",
           "load_gavel_reference", "load_published_alloc", "parse_trace", "read_results", "run_experiment", "split_spec",
           "split_top_level", "summarize", "sweep"]

#: Experiment kinds: job-time simulation and openb GPU-sharing replay.
KINDS: tuple[str, ...] = ("sim", "openb")
