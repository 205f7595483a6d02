"""Microsoft Philly job log (``cluster_job_log``).

Source: https://github.com/msr-fiddle/philly-traces; cite Jeon et al., "Analysis of
Large-Scale Multi-Tenant GPU Clusters for DNN Training Workloads", USENIX ATC 2019.
The log is not shipped (it is large); point :func:`load_philly_jobs` at a download.

The log is a JSON list of jobs: ``jobid``, ``user``, ``vc``, ``submitted_time``
(``"YYYY-MM-DD HH:MM:SS"``), ``status``, ``attempts``: a list of ``{start_time, end_time,
detail: [{ip, gpus: [gpu ids]}]}`` where times may be null (or ``"None"``) for attempts
that never started or finished.
"""
from __future__ import annotations

from array import array
from datetime import datetime
from pathlib import Path
from typing import Any

from gpufleet._lazy import lazy

from ._fields import FirstSeen, JsonDoc, PathLike, Row, make_frame, show
from .errors import TraceError
from .limits import MAX_GPUS, MAX_SECONDS
from .registry import TraceFormat, register
from .schema import finish_jobs

np = lazy("numpy")  # the command line's summary path reads traces without NumPy or pandas
pd = lazy("pandas")  # imported by the first frame built: the command line's readers need none

__all__ = ["PHILLY_COLUMNS", "load_philly_jobs", "philly_as_jobs", "philly_job_columns"]

PHILLY_COLUMNS: dict[str, str] = {
    "job_id": "object", "user": "object", "vc": "object", "submit_time": "float64",
    "num_gpu": "int64", "duration": "float64", "status": "object",
}
_TIME_FORMAT = "%Y-%m-%d %H:%M:%S"


def load_philly_jobs(path: PathLike) -> pd.DataFrame:
    """Load a Philly ``cluster_job_log`` into :data:`PHILLY_COLUMNS`, sorted by submit_time.

    * submit_time: seconds from the first submission among the kept jobs;
    * num_gpu: GPUs of the first attempt (summed over its machines);
    * duration: end_time - start_time of the last attempt (seconds).

    Jobs are **dropped** (not errors) when they have no attempt, when the last attempt
    has no start or end time (never ran, or still running when the log was cut), or when
    the first attempt lists no GPUs; ``df.attrs["dropped"]`` counts them. Malformed
    records (missing fields, bad time strings, end before start, a ``jobid`` seen before,
    a duration or a span of submissions over 10**10 s) raise :class:`TraceError` with the
    line where the job's object starts.
    """
    columns, dropped = _read_log(path)
    df = make_frame(columns, PHILLY_COLUMNS)
    df = df.sort_values("submit_time", kind="stable").reset_index(drop=True)
    df.attrs["dropped"] = dropped
    return df


def _read_log(path: PathLike) -> tuple[dict[str, list[Any]], int]:
    """The kept jobs' columns in log order, submit times from the first submission, and how many
    jobs were dropped."""
    doc = JsonDoc(path)
    columns: dict[str, list[object]] = {c: [] for c in PHILLY_COLUMNS}
    lines: list[int] = []
    ids = FirstSeen("jobid")
    dropped = 0
    for line, job in doc.array(0):
        if not isinstance(job, dict):
            raise TraceError(doc.source, line, None, f"expected a job object, got {type(job).__name__}")
        row = Row(doc.source, line, job)
        ids.add(row, "jobid", row.text("jobid"))
        record = _job(row)
        if record is None:
            dropped += 1
            continue
        lines.append(line)
        for column, value in zip(PHILLY_COLUMNS, record):
            columns[column].append(value)
    submits: list[float] = columns["submit_time"]   # type: ignore[assignment]
    if submits:
        first = min(submits)
        submits[:] = [t - first for t in submits]
        latest = max(submits)
        if latest > MAX_SECONDS:
            raise TraceError(doc.source, lines[submits.index(latest)], "submitted_time",
                             f"{latest:g} s after the first submission (at most {MAX_SECONDS:g})")
    return columns, dropped


def _job(row: Row) -> tuple[object, ...] | None:
    """Parse one job record; None when it is complete but unusable (see the loader)."""
    submitted = _time(row, "submitted_time", row.values.get("submitted_time"), required=True)
    attempts = row.values.get("attempts")
    if not isinstance(attempts, list):
        row.fail("attempts", "missing" if attempts is None else f"{attempts!r} is not a list")
    record = (row.text("jobid"), row.text("user"), row.text("vc"), submitted)
    status = row.text("status")
    if not attempts:
        return None
    for index, attempt in enumerate(attempts):
        if not isinstance(attempt, dict):
            row.fail(f"attempts[{index}]", f"{attempt!r} is not an object")
    first, last = attempts[0], attempts[-1]
    field = f"attempts[{len(attempts) - 1}]"
    start = _time(row, f"{field}.start_time", last.get("start_time"))
    end = _time(row, f"{field}.end_time", last.get("end_time"))
    num_gpu = _gpus(row, first.get("detail"))
    if start is None or end is None or num_gpu == 0:
        return None
    if end < start:
        row.fail(f"{field}.end_time", "is before start_time")
    if end - start > MAX_SECONDS:
        row.fail(f"{field}.end_time", f"{end - start:g} s after start_time (at most {MAX_SECONDS:g})")
    return (*record, num_gpu, end - start, status)


def _time(row: Row, field: str, value: Any, *, required: bool = False) -> float | None:
    """Seconds since the epoch (naive, as in the log); None for null/"None" if allowed."""
    if value is None or value == "None":
        if required:
            row.fail(field, "missing")
        return None
    if not isinstance(value, str):
        row.fail(field, f"{show(value)} is not a time string")
    try:
        return (datetime.strptime(value.strip(), _TIME_FORMAT) - datetime(1970, 1, 1)).total_seconds()
    except ValueError:
        row.fail(field, f"{show(value)} is not a 'YYYY-MM-DD HH:MM:SS' time")


def _gpus(row: Row, detail: Any) -> int:
    field = "attempts[0].detail"
    if detail is None:
        return 0
    if not isinstance(detail, list):
        row.fail(field, f"{detail!r} is not a list")
    total = 0
    for index, machine in enumerate(detail):
        gpus = machine.get("gpus") if isinstance(machine, dict) else None
        if not isinstance(gpus, list):
            row.fail(f"{field}[{index}].gpus", "missing" if gpus is None else f"{show(gpus)} is not a list")
        total += len(gpus)
    if total > MAX_GPUS:
        row.fail(field, f"{total:,} GPUs (at most {MAX_GPUS:,})")
    return total


def philly_job_columns(path: PathLike) -> dict[str, Any]:
    """``philly_as_jobs(load_philly_jobs(path))`` as plain columns, read without pandas or NumPy
    (the command line's summary path): job_id, num_gpu as ``array.array("q")``, submit_time,
    duration as ``array.array("d")``, model_name, user, vc as lists of str; the frame's values and
    row order. Every check the frame makes is made as the log is read."""
    raw, _ = _read_log(path)
    submits = raw["submit_time"]
    order = sorted(range(len(submits)), key=submits.__getitem__)   # stable, as the frame sorts
    kept = [k for k in order if raw["duration"][k] > 0]
    return {"job_id": array("q", (position for position, k in enumerate(order) if raw["duration"][k] > 0)),
            "submit_time": array("d", (submits[k] for k in kept)),
            "num_gpu": array("q", (raw["num_gpu"][k] for k in kept)),
            "duration": array("d", (raw["duration"][k] for k in kept)),
            "model_name": ["unknown"] * len(kept),
            "user": [raw["user"][k] for k in kept], "vc": [raw["vc"][k] for k in kept]}


def philly_as_jobs(jobs: pd.DataFrame) -> pd.DataFrame:
    """Unified job schema: job_id = position in submit order, model_name ``"unknown"``
    (the log has none); user and vc kept for fairness-aware policies. Jobs whose last
    attempt lasted 0 s are dropped (the schema needs a positive duration)."""
    out = pd.DataFrame({
        "job_id": np.arange(len(jobs), dtype=np.int64),
        "submit_time": jobs["submit_time"].to_numpy(),
        "num_gpu": jobs["num_gpu"].to_numpy(),
        "duration": jobs["duration"].to_numpy(),
        "model_name": "unknown",
        "user": jobs["user"].to_numpy(),
        "vc": jobs["vc"].to_numpy(),
    })
    return finish_jobs(out[out["duration"] > 0], "philly jobs")


register(TraceFormat(
    name="philly", summary="Philly cluster_job_log (JSON)", load=load_philly_jobs, as_jobs=philly_as_jobs,
    job_columns=philly_job_columns,
    sniff=lambda path, head: path.suffix == ".json" and head.lstrip("\ufeff \t\r\n").startswith("["),
    recognised="a .json file holding a list"))
