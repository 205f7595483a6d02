"""Trace loaders and synthetic generators for the gpufleet simulator.

Formats: Alibaba openb (GPU sharing, FGD ATC'23), Tiresias (NSDI'19), Gavel (OSDI'20),
Philly (ATC'19), Alibaba PAI-2020 (NSDI'22) and seeded synthetic traces, each a module that registers itself
(:mod:`~gpufleet.traces.registry`). :func:`load` reads any of them with its side inputs
(throughput tables, node lists, cluster files) and returns the jobs or pods with the cluster
they run on; every command and notebook goes through it. Every loader validates its file row
by row and raises :class:`TraceError` naming file, line and field. ``*_as_jobs`` /
:func:`to_jobs` convert to the unified job schema of :mod:`gpufleet.traces.schema`. See
docs/traces.md.
"""
from __future__ import annotations

from .errors import TraceError
# The built-in formats, in the order trace_formats() lists them (each registers on import).
from .openb import load_openb_nodes, load_openb_pods, openb_as_jobs
from .tiresias import (ClusterSpec, load_duration_distribution, load_tiresias_cluster, load_tiresias_jobs,
                       tiresias_as_jobs)
from .gavel import (gavel_as_jobs, load_gavel_cluster_spec, load_gavel_throughputs, load_gavel_trace,
                    throughput_table)
from .philly import load_philly_jobs, philly_as_jobs
from .pai2020 import load_pai2020_jobs, pai2020_as_jobs
from .synthetic import synthetic_jobs, synthetic_openb
from .loading import LoadedTrace, MissingInput, load, load_cluster
from .registry import (MISSING_RULES, describe_formats, detect_format, load_trace, to_jobs, trace_format,
                       trace_formats)
from .schema import JOB_COLUMNS, load_jobs_csv

__all__ = [
    "JOB_COLUMNS", "MISSING_RULES", "ClusterSpec", "LoadedTrace", "MissingInput", "TraceError",
    "describe_formats", "detect_format", "gavel_as_jobs", "load", "load_cluster", "load_duration_distribution",
    "load_gavel_cluster_spec", "load_gavel_throughputs", "load_gavel_trace", "load_jobs_csv",
    "load_openb_nodes", "load_openb_pods", "load_pai2020_jobs", "load_philly_jobs", "load_tiresias_cluster",
    "load_tiresias_jobs", "load_trace", "openb_as_jobs", "pai2020_as_jobs", "philly_as_jobs", "synthetic_jobs",
    "synthetic_openb", "throughput_table", "tiresias_as_jobs", "to_jobs", "trace_format", "trace_formats",
]
