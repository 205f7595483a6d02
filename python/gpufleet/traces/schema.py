"""The unified job schema that every trace converts to for the job-time simulator.

Required columns (in this order):

============== ======= ==========================================================
job_id         int64   unique id, kept from the source trace where it has one
submit_time    float64 seconds from the start of the trace (>= 0)
num_gpu        int64   GPUs the job gangs on (>= 1)
duration       float64 seconds of exclusive run time on the reference GPU (> 0)
model_name     object  DL model / job type (``"unknown"`` where the trace lacks it)
============== ======= ==========================================================

Optional columns: ``total_iterations`` (int64) and ``throughput_<model>`` (float64,
iterations/s of the whole job on ``num_gpu`` GPUs of that model; 0 means it cannot run
there). Where both exist, ``duration == total_iterations / throughput_<reference>``; the
reference model is in ``df.attrs["reference_model"]``. A few format-specific extras are
kept when present (see :data:`EXTRA_JOB_COLUMNS`). Rows are sorted by
``(submit_time, job_id)`` with a fresh ``RangeIndex``.
"""
from __future__ import annotations

from pathlib import Path

from gpufleet._lazy import lazy

from ._fields import FirstSeen, PathLike, Row, csv_header, csv_rows, make_frame
from .errors import TraceError
from .limits import INT64_MAX, MAX_COUNT, MAX_GPUS, MAX_RATE, MAX_SECONDS

np = lazy("numpy")  # the command line's summary path reads traces without NumPy or pandas
pd = lazy("pandas")  # imported by the first frame built: the command line's readers need none

__all__ = ["JOB_COLUMNS", "EXTRA_JOB_COLUMNS", "THROUGHPUT_PREFIX", "finish_jobs", "load_jobs_csv",
           "throughput_columns"]

JOB_COLUMNS: dict[str, str] = {
    "job_id": "int64",
    "submit_time": "float64",
    "num_gpu": "int64",
    "duration": "float64",
    "model_name": "object",
}
THROUGHPUT_PREFIX = "throughput_"
# Extras some formats keep because policies use them (GPU share, Gavel's weights, Philly's
# users/VCs for fairness). Anything else a caller adds is left alone, after these.
EXTRA_JOB_COLUMNS: dict[str, str] = {
    "total_iterations": "int64",
    "gpu_milli": "int64",
    "priority_weight": "float64",
    "user": "object",
    "vc": "object",
}


# Bounds (min, max) per column, for the CSV reader and for frames built by the converters.
# Throughput columns are bounded like priority weights: (0, MAX_RATE).
COLUMN_BOUNDS: dict[str, tuple[float, float]] = {
    "job_id": (0, INT64_MAX),
    "submit_time": (0, MAX_SECONDS),
    "num_gpu": (1, MAX_GPUS),
    "duration": (0, MAX_SECONDS),
    "total_iterations": (0, MAX_COUNT),
    "gpu_milli": (0, 1000),
    "priority_weight": (0, MAX_RATE),
}
_RATE_BOUNDS = (0, MAX_RATE)


def throughput_columns(df: pd.DataFrame) -> list[str]:
    """The ``throughput_<model>`` columns of a job frame, in frame order."""
    return [c for c in df.columns if c.startswith(THROUGHPUT_PREFIX)]


def finish_jobs(df: pd.DataFrame, source: str, reference_model: str | None = None) -> pd.DataFrame:
    """Order, cast, sort and check a job frame built by a ``*_as_jobs`` function.

    Raises :class:`TraceError` (no line: frames have none; the row label is in the message).
    """
    missing = [c for c in JOB_COLUMNS if c not in df.columns]
    if missing:
        raise TraceError(source, None, missing[0], "required job column is missing")
    tput = throughput_columns(df)
    extras = [c for c in EXTRA_JOB_COLUMNS if c in df.columns]
    rest = [c for c in df.columns if c not in JOB_COLUMNS and c not in extras and c not in tput]
    out = df[list(JOB_COLUMNS) + extras + tput + rest].copy()
    dtypes = {**JOB_COLUMNS, **{c: EXTRA_JOB_COLUMNS[c] for c in extras}, **{c: "float64" for c in tput}}
    for column, dtype in dtypes.items():
        try:
            out[column] = out[column].astype(dtype)
        except (TypeError, ValueError) as err:
            raise TraceError(source, None, column, f"cannot be cast to {dtype}: {err}") from None
    _check(out, source, tput)
    out = out.sort_values(["submit_time", "job_id"], kind="stable").reset_index(drop=True)
    if reference_model is not None:
        out.attrs["reference_model"] = reference_model
    return out


def _check(df: pd.DataFrame, source: str, tput: list[str]) -> None:
    """Vectorised checks; report the first offending row by its label."""
    def first_bad(column: str, bad: pd.Series, problem: str) -> None:
        if bad.any():
            label = bad.index[np.argmax(bad.to_numpy())]
            value = df.at[label, column]
            value = value.item() if isinstance(value, np.generic) else value  # plain repr in messages
            raise TraceError(source, None, column, f"row {label}: {value!r} {problem}")

    first_bad("job_id", df["job_id"].duplicated(), "is a duplicate")
    for column in ("submit_time", "duration", *tput):
        first_bad(column, ~np.isfinite(df[column]), "is not a finite number")
    for column in [c for c in COLUMN_BOUNDS if c in df.columns] + tput:
        low, high = COLUMN_BOUNDS.get(column, _RATE_BOUNDS)
        values = df[column]
        first_bad(column, values < low, "is negative" if low == 0 else f"is below {low}")
        first_bad(column, values > high, f"is out of range (at most {high:g})")
    first_bad("duration", df["duration"] <= 0, "is not positive")
    first_bad("model_name", ~df["model_name"].map(lambda v: isinstance(v, str) and v != ""), "is not a name")


def load_jobs_csv(path: PathLike) -> pd.DataFrame:
    """Load a CSV in the unified job schema (e.g. written by ``synthetic_jobs(...).to_csv``).

    Required columns are :data:`JOB_COLUMNS`; ``total_iterations``, the extras in
    :data:`EXTRA_JOB_COLUMNS` and any ``throughput_<model>`` columns are kept when the
    header has them; other columns are ignored.
    """
    path = Path(path)
    header = csv_header(path)
    tput = [h for h in header if h.startswith(THROUGHPUT_PREFIX) and len(h) > len(THROUGHPUT_PREFIX)]
    extras = {c: t for c, t in EXTRA_JOB_COLUMNS.items() if c in header}
    dtypes = {**JOB_COLUMNS, **extras, **{c: "float64" for c in tput}}
    columns: dict[str, list[object]] = {c: [] for c in dtypes}
    ids = FirstSeen("job_id")
    for row in csv_rows(path, required=list(JOB_COLUMNS), optional=[*extras, *tput]):
        for column, dtype in dtypes.items():
            columns[column].append(_parse(row, column, dtype))
        ids.add(row, "job_id", columns["job_id"][-1])
        if columns["duration"][-1] == 0:
            row.fail("duration", "0 is not positive")
    return finish_jobs(make_frame(columns, dtypes), path.name)


def _parse(row: Row, column: str, dtype: str) -> object:
    if dtype == "object":
        return row.text(column)
    low, high = COLUMN_BOUNDS.get(column, _RATE_BOUNDS)
    if dtype == "int64":
        return row.integer(column, min_value=int(low), max_value=int(high))
    return row.number(column, min_value=low, max_value=high)
