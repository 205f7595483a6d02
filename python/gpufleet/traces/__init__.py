"""Trace loaders and synthetic generators for the gpufleet simulator.

Formats: Alibaba openb (GPU sharing, FGD ATC'23), Tiresias (NSDI'19), Gavel (OSDI'20),
Philly (ATC'19) and seeded synthetic traces. Every loader validates its file row by row
and raises :class:`TraceError` naming file, line and field. ``*_as_jobs`` / :func:`to_jobs`
convert to the unified job schema of :mod:`gpufleet.traces.schema`. See docs/traces.md.
"""
from __future__ import annotations

from .errors import TraceError
from .gavel import (gavel_as_jobs, load_gavel_cluster_spec, load_gavel_throughputs, load_gavel_trace,
                    throughput_table)
from .openb import load_openb_nodes, load_openb_pods, openb_as_jobs
from .philly import load_philly_jobs, philly_as_jobs
from .registry import load_trace, to_jobs, trace_formats
from .schema import JOB_COLUMNS, load_jobs_csv
from .synthetic import synthetic_jobs, synthetic_openb
from .tiresias import (ClusterSpec, load_duration_distribution, load_tiresias_cluster, load_tiresias_jobs,
                       tiresias_as_jobs)

__all__ = [
    "JOB_COLUMNS", "ClusterSpec", "TraceError", "gavel_as_jobs", "load_duration_distribution",
    "load_gavel_cluster_spec", "load_gavel_throughputs", "load_gavel_trace", "load_jobs_csv",
    "load_openb_nodes", "load_openb_pods", "load_philly_jobs", "load_tiresias_cluster",
    "load_tiresias_jobs", "load_trace", "openb_as_jobs", "philly_as_jobs", "synthetic_jobs",
    "synthetic_openb", "throughput_table", "tiresias_as_jobs", "to_jobs", "trace_formats",
]
