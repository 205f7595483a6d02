"""Alibaba PAI-2020 simulator traces (``pai_job_duration_estimate_100K.csv``,
``pai_job_no_estimate_100K.csv``).

Source: https://github.com/alibaba/clusterdata, folder ``cluster-trace-gpu-v2020/simulator/traces/pai``;
cite Weng et al., "MLaaS in the Wild: Workload Analysis and Scheduling in Large-Scale Heterogeneous
GPU Clusters", NSDI 2022. One row per job, columns found by name (the order does not matter):

============== =============================================================================
job_id         integer, unique (required)
duration       seconds of run time (required; the simulator truncates it and runs 0 as 1 s)
submit_time    seconds (blank or absent: 1, as the simulator reads it)
num_gpu        GPUs per instance, fractional (0.5: half a GPU; blank or absent: 0)
num_cpu        CPU cores per instance (blank or absent: 0)
num_inst       instances, gang-scheduled (blank or absent: 1)
user           user name (text; blank allowed)
gpu_type       requested GPU model (text; blank allowed)
user_dur, user_gpu_dur, group_dur, group_gpu_dur
               duration estimates (seconds; blank: unknown), read by the estimating policies
============== =============================================================================

:func:`load_pai2020_jobs` keeps the file order (``trace_row``), which the simulator's trace
preparation draws its jobs from; :func:`pai2020_as_jobs` converts to the unified job schema for the
other simulators. :mod:`gpufleet.pai2020` reproduces the simulator itself (docs/simulator.md).
"""
from __future__ import annotations

import math
from array import array
from pathlib import Path
from typing import Any

from gpufleet._lazy import lazy

from ._fields import FirstSeen, PathLike, Row, csv_header, csv_rows, make_frame
from .limits import MAX_GPUS, MAX_SECONDS
from .registry import TraceFormat, header_columns, register
from .schema import finish_jobs

pd = lazy("pandas")  # imported by the first frame built: the command line's readers need none

__all__ = ["ESTIMATE_COLUMNS", "PAI2020_COLUMNS", "load_pai2020_jobs", "pai2020_as_jobs", "pai2020_job_columns"]

#: The duration estimates of the PAI-2020 trace, in the order of its policies (SJU, SJG, SJGG).
ESTIMATE_COLUMNS: tuple[str, ...] = ("user_dur", "group_dur", "group_gpu_dur", "user_gpu_dur")

PAI2020_COLUMNS: dict[str, str] = {
    "job_id": "int64", "trace_row": "int64", "user": "object", "gpu_type": "object",
    "submit_time": "float64", "duration": "float64", "num_gpu": "float64", "num_cpu": "float64",
    "num_inst": "int64", **{c: "float64" for c in ESTIMATE_COLUMNS},
}

# CPU cores of one instance: 2**20, a million, is far past any machine.
_MAX_CORES = float(1 << 20)


def _optional(row: Row, field: str, default: float, max_value: float) -> float:
    return default if row.is_blank(field) else row.number(field, max_value=max_value)


def load_pai2020_jobs(path: PathLike) -> pd.DataFrame:
    """Load a PAI-2020 simulator trace into :data:`PAI2020_COLUMNS`, in file order, checking every
    row (TraceError naming file, line and field). Absent or blank values take the simulator's
    defaults (module docstring); an estimate left blank is NaN."""
    return make_frame(_read_job_file(path), PAI2020_COLUMNS)


def _read_job_file(path: PathLike) -> dict[str, list[object]]:
    path = Path(path)
    header = set(csv_header(path))
    optional = ["user", "gpu_type", "submit_time", "num_gpu", "num_cpu", "num_inst", *ESTIMATE_COLUMNS]
    columns: dict[str, list[object]] = {c: [] for c in PAI2020_COLUMNS}
    ids = FirstSeen("job_id")
    for index, row in enumerate(csv_rows(path, required=("job_id", "duration"), optional=optional)):
        job_id = row.integer("job_id")
        ids.add(row, "job_id", job_id)
        inst = _optional(row, "num_inst", 1.0, float(MAX_GPUS))   # a gang of at most a million
        if round(inst) < 1:
            row.fail("num_inst", f"{inst:g} instances: a job needs at least one")
        values = {
            "job_id": job_id, "trace_row": index,
            "user": row.text("user", allow_empty=True) if "user" in header else "",
            "gpu_type": row.text("gpu_type", allow_empty=True) if "gpu_type" in header else "",
            "submit_time": _optional(row, "submit_time", 1.0, MAX_SECONDS),
            "duration": row.number("duration", max_value=MAX_SECONDS),
            "num_gpu": _optional(row, "num_gpu", 0.0, float(MAX_GPUS)),
            "num_cpu": _optional(row, "num_cpu", 0.0, _MAX_CORES),
            "num_inst": int(round(inst)),
            **{c: row.number(c, max_value=MAX_SECONDS, optional=True) for c in ESTIMATE_COLUMNS},
        }
        for column, value in values.items():
            columns[column].append(value)
    return columns


def pai2020_as_jobs(jobs: pd.DataFrame) -> pd.DataFrame:
    """Unified job schema: ``duration`` is the run time the PAI simulator gives the job (truncated to
    whole seconds, at least 1 s), ``num_gpu`` the whole GPUs its instances touch (at least 1), and
    ``model_name`` the requested GPU type (``"unknown"`` when blank). The PAI columns (fractional
    ``gpu_per_inst``, ``cpu_per_inst``, ``num_inst``, ``user``, the estimates and ``trace_row``) are
    kept, so :func:`gpufleet.pai2020.simulate_pai` can run on either frame."""
    gpus = (jobs["num_gpu"] * jobs["num_inst"]).map(math.ceil).clip(lower=1)
    out = pd.DataFrame({
        "job_id": jobs["job_id"], "submit_time": jobs["submit_time"], "num_gpu": gpus,
        "duration": jobs["duration"].map(lambda d: max(1, int(d))).astype("float64"),
        "model_name": jobs["gpu_type"].map(lambda t: t or "unknown"),
        "user": jobs["user"], "gpu_per_inst": jobs["num_gpu"], "cpu_per_inst": jobs["num_cpu"],
        "num_inst": jobs["num_inst"], "trace_duration": jobs["duration"],
        **{c: jobs[c] for c in ESTIMATE_COLUMNS}, "trace_row": jobs["trace_row"],
    })
    return finish_jobs(out, "pai2020 jobs")


def pai2020_job_columns(path: PathLike) -> dict[str, Any]:
    """``pai2020_as_jobs(load_pai2020_jobs(path))`` as plain columns, read without pandas or NumPy
    (the command line's summary path): integer columns as ``array.array("q")``, float columns as
    ``array.array("d")``, text as lists of str; the frame's columns, values and row order (by
    submit time, then job id). The reader checks every row as the frame's does, bar one: a gang
    of more GPUs than :data:`~gpufleet.traces.limits.MAX_GPUS`, which the frame's checks refuse,
    so such a trace is handed to them for their error."""
    raw = _read_job_file(path)
    gpus = [max(1, math.ceil(g * i)) for g, i in zip(raw["num_gpu"], raw["num_inst"])]   # type: ignore[operator]
    if any(g > MAX_GPUS for g in gpus):
        pai2020_as_jobs(load_pai2020_jobs(path))   # raises, naming the row
    columns: dict[str, tuple[str | None, list[Any]]] = {   # finish_jobs's order
        "job_id": ("q", raw["job_id"]), "submit_time": ("d", raw["submit_time"]), "num_gpu": ("q", gpus),
        "duration": ("d", [float(max(1, int(d))) for d in raw["duration"]]),   # type: ignore[call-overload]
        "model_name": (None, [t or "unknown" for t in raw["gpu_type"]]), "user": (None, raw["user"]),
        "gpu_per_inst": ("d", raw["num_gpu"]), "cpu_per_inst": ("d", raw["num_cpu"]),
        "num_inst": ("q", raw["num_inst"]), "trace_duration": ("d", raw["duration"]),
        **{c: ("d", raw[c]) for c in ESTIMATE_COLUMNS}, "trace_row": ("q", raw["trace_row"]),
    }
    ids, submits = raw["job_id"], raw["submit_time"]
    order = sorted(range(len(ids)), key=lambda k: (submits[k], ids[k]))   # ids are unique: no ties
    return {name: [values[k] for k in order] if code is None else array(code, (values[k] for k in order))
            for name, (code, values) in columns.items()}


def _is_pai_trace(path: Path, head: str) -> bool:
    columns = header_columns(head)
    named = path.name.startswith("pai_job_")
    return path.suffix == ".csv" and "gpu_milli" not in columns and (
        named or {"job_id", "duration", "num_cpu", "num_gpu"} <= columns)


register(TraceFormat(
    name="pai2020", summary="Alibaba PAI-2020 simulator jobs (pai_job_*_100K.csv)",
    load=load_pai2020_jobs, as_jobs=pai2020_as_jobs, job_columns=pai2020_job_columns, sniff=_is_pai_trace,
    default_cluster=6500, simulator="pai2020",
    recognised="a .csv named pai_job_*, or with the columns job_id,duration,num_cpu,num_gpu"))
