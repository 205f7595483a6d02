"""Gavel heterogeneity data: measured throughputs, job traces, cluster specs.

Source: https://github.com/stanford-futuredata/gavel, folder ``scheduler/`` (MIT licence);
cite Narayanan et al., "Heterogeneity-Aware Cluster Scheduling Policies for Deep Learning
Workloads", OSDI 2020.

* ``simulation_throughputs.json`` -> :data:`THROUGHPUT_COLUMNS` (one row per job type,
  scale factor and GPU model; the "null" entry, i.e. steps/s of the job running alone); the
  co-located pairs (steps/s of each of two jobs sharing GPUs, Gavel's packing) of the same
  scale factor in ``df.attrs["colocated"]`` (:data:`ColocatedTable`).
* ``*.trace`` (tab-separated, no header) -> :data:`TRACE_COLUMNS`. Two layouts, told
  apart by the field count: ``physical_cluster`` (10 fields: job_type, command,
  working_directory, num_steps_arg, needs_data_dir, total_steps, scale_factor,
  priority_weight, SLO, arrival_time) and the older ``msr`` one (7 fields: job_type,
  command, num_steps_arg, needs_data_dir, total_steps, arrival_time, scale_factor).
  The msr layout was checked against the files and Gavel's own parser: the 4th field is
  the 0/1 needs_data_dir flag and the scale factor is last; it has no priority weight
  (-> 1.0) and no SLO (-> NaN).
* Throughputs of a job: the table's entry at the job's (job type, scale factor); where the
  table lacks that pair (the msr traces give scale factors above 1 to job types Gavel only
  measured on one GPU), the job type's scale-factor-1 entry, which is what Gavel's simulator
  used for every job when it read the msr traces (see :func:`gavel_as_jobs`, docs/traces.md).
"""
from __future__ import annotations

import ast
import math
from pathlib import Path
from typing import Literal

from gpufleet._lazy import lazy

from ._fields import FirstSeen, JsonDoc, PathLike, Row, make_frame, read_text, show
from .errors import TraceError
from .limits import MAX_COUNT, MAX_GPUS, MAX_RATE, MAX_SECONDS
from .registry import ClusterFile, SideInput, TraceFormat, register
from .schema import THROUGHPUT_PREFIX, finish_jobs

np = lazy("numpy")  # the command line's summary path reads traces without NumPy or pandas
pd = lazy("pandas")  # imported by the first frame built: the command line's readers need none

__all__ = ["GPU_MODELS", "ColocatedTable", "THROUGHPUT_COLUMNS", "TRACE_COLUMNS", "gavel_as_jobs", "load_gavel_cluster_spec",
           "load_gavel_throughputs", "load_gavel_trace", "throughput_table"]

GPU_MODELS = ("k80", "p100", "v100")
THROUGHPUT_COLUMNS: dict[str, str] = {
    "job_type": "object", "scale_factor": "int64", "gpu_model": "object", "throughput": "float64",
}
TRACE_COLUMNS: dict[str, str] = {
    "job_type": "object", "scale_factor": "int64", "total_steps": "int64", "arrival_time": "float64",
    "priority_weight": "float64", "SLO": "float64",
}
_LAYOUTS: dict[int, tuple[str, tuple[str, ...]]] = {
    10: ("physical_cluster", ("job_type", "command", "working_directory", "num_steps_arg", "needs_data_dir",
                              "total_steps", "scale_factor", "priority_weight", "SLO", "arrival_time")),
    7: ("msr", ("job_type", "command", "num_steps_arg", "needs_data_dir", "total_steps", "arrival_time",
                "scale_factor")),
}
ThroughputTable = dict[tuple[str, int], dict[str, float]]
#: ``{(job_type, scale_factor, other_job_type): {gpu_model: steps/s}}``: the steps/s of a job of
#: ``job_type`` sharing its ``scale_factor`` GPUs with one of ``other_job_type`` (same scale factor).
ColocatedTable = dict[tuple[str, int, str], dict[str, float]]


def load_gavel_throughputs(path: PathLike, *, unconsolidated: bool = False) -> pd.DataFrame:
    """Load ``simulation_throughputs.json`` into a tidy :data:`THROUGHPUT_COLUMNS` frame.

    The rows hold the job-alone ("null") throughput. The co-located pairs (every other entry,
    ``[steps/s of this job, steps/s of the other]`` while two jobs share the GPUs) go to
    ``df.attrs["colocated"]`` (:data:`ColocatedTable`), for Gavel's packing policies; pairs
    of two scale factors, which Gavel never forms, are left out. The ``*_unconsolidated``
    models are skipped unless ``unconsolidated=True`` (they then appear under their own name,
    e.g. ``v100_unconsolidated``). A throughput of 0 in the file means the job cannot run
    there (e.g. ResNet-50 batch 128 on several K80s).
    """
    doc = JsonDoc(path)
    columns: dict[str, list[object]] = {c: [] for c in THROUGHPUT_COLUMNS}
    colocated: ColocatedTable = {}
    models = FirstSeen("GPU model")
    for line, model, model_at, entries in doc.object(0):
        models.add(Row(doc.source, line, {}), model, model)
        if model.endswith("_unconsolidated") and not unconsolidated:
            continue
        if not isinstance(entries, dict):
            raise TraceError(doc.source, line, model, "expected an object of job types")
        jobs = FirstSeen("(job type, scale factor)")
        for key_line, key, entry_at, entry in doc.object(model_at):
            job_type, scale_factor = _job_key(doc.source, key_line, f"{model}/{key}", key)
            jobs.add(Row(doc.source, key_line, {}), f"{model}/{key}", (job_type, scale_factor))
            field = f"{model}/{key}/null"
            if not isinstance(entry, dict) or "null" not in entry:
                raise TraceError(doc.source, key_line, field, "missing")
            members = list(doc.object(entry_at))
            null_line = next(n for n, k, _, _ in members if k == "null")
            throughput = Row(doc.source, null_line, {field: entry["null"]}).number(field, max_value=MAX_RATE)
            for pair_line, other, _, rates in members:
                if other == "null":
                    continue
                pair_field = f"{model}/{key}/{other}"
                other_type, other_scale = _job_key(doc.source, pair_line, pair_field, other)
                if not (isinstance(rates, list) and len(rates) == 2):
                    raise TraceError(doc.source, pair_line, pair_field, f"{show(str(rates))} is not a "
                                     "[steps/s of this job, steps/s of the other] pair")
                rate = Row(doc.source, pair_line, {pair_field: rates[0]}).number(pair_field, max_value=MAX_RATE)
                if other_scale == scale_factor:   # Gavel pairs equal scale factors only
                    colocated.setdefault((job_type, scale_factor, other_type), {})[model] = rate
            for column, value in zip(THROUGHPUT_COLUMNS, (job_type, scale_factor, model, throughput)):
                columns[column].append(value)
    df = make_frame(columns, THROUGHPUT_COLUMNS)
    df.attrs["colocated"] = colocated
    return df


def _job_key(source: str, line: int, field: str, key: str) -> tuple[str, int]:
    """Parse Gavel's ``"('ResNet-50 (batch size 64)', 1)"`` keys (a Python tuple literal)."""
    try:
        value = ast.literal_eval(key)
    except (ValueError, SyntaxError):
        value = None
    if not (isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str)
            and isinstance(value[1], int) and not isinstance(value[1], bool) and 1 <= value[1] <= MAX_GPUS):
        raise TraceError(source, line, field, f"{show(key)} is not a ('job type', scale_factor in "
                         f"1-{MAX_GPUS:,}) key")
    return value[0], value[1]


def throughput_table(df: pd.DataFrame) -> ThroughputTable:
    """``{(job_type, scale_factor): {gpu_model: steps/s}}`` from :func:`load_gavel_throughputs`."""
    table: ThroughputTable = {}
    for job_type, scale, model, tput in df[list(THROUGHPUT_COLUMNS)].itertuples(index=False):
        table.setdefault((job_type, int(scale)), {})[model] = float(tput)
    return table


def load_gavel_trace(path: PathLike) -> pd.DataFrame:
    """Load a Gavel ``.trace`` file (either layout) into :data:`TRACE_COLUMNS`.

    ``SLO`` is NaN where the layout has none or where the file says -1 (Gavel's "none").
    ``df.attrs["layout"]`` tells which layout was read; a file mixing layouts is an error.
    ``df.attrs["source"]`` and ``df.attrs["lines"]`` (the file line of each row) let
    :func:`gavel_as_jobs` name the line of a row it refuses.
    """
    source, content = read_text(path)
    columns: dict[str, list[object]] = {c: [] for c in TRACE_COLUMNS}
    layout: str | None = None
    lines: list[int] = []
    for line, text in enumerate(content.split("\n"), start=1):
        fields = text.rstrip("\r").split("\t")
        if not text.strip():
            continue
        if len(fields) not in _LAYOUTS:
            raise TraceError(source, line, None, f"{len(fields)} tab-separated fields; expected "
                             "10 (physical_cluster layout) or 7 (msr layout)")
        name, names = _LAYOUTS[len(fields)]
        if layout is not None and name != layout:
            raise TraceError(source, line, None, f"{name} layout after {layout} lines above")
        layout = name
        row = Row(source, line, dict(zip(names, fields)))
        has_weights = "priority_weight" in names
        slo = row.number("SLO", min_value=None, max_value=MAX_SECONDS) if has_weights else math.nan
        weight = row.number("priority_weight", max_value=MAX_RATE) if has_weights else 1.0
        if weight <= 0:
            row.fail("priority_weight", f"{weight!r} is not positive")
        record = (row.text("job_type"), row.integer("scale_factor", min_value=1, max_value=MAX_GPUS),
                  row.integer("total_steps", min_value=1, max_value=MAX_COUNT),
                  row.number("arrival_time", max_value=MAX_SECONDS), weight, slo if slo >= 0 else math.nan)
        for column, value in zip(TRACE_COLUMNS, record):
            columns[column].append(value)
        lines.append(line)
    df = make_frame(columns, TRACE_COLUMNS)
    df.attrs["layout"] = layout
    df.attrs["source"] = source
    df.attrs["lines"] = lines  # file line of each row, for errors raised by gavel_as_jobs
    return df


def load_gavel_cluster_spec(path: PathLike, key: str | None = None) -> list[dict[str, int]]:
    """Load ``msr/cluster_specs*.json``: ``{"philly": ["V100:P100:K80", ...]}``.

    Returns one ``{"v100": n, "p100": n, "k80": n}`` dict per spec string, in file order,
    for the top-level ``key`` (all keys, concatenated, when ``key`` is None).
    """
    doc = JsonDoc(path)
    specs: list[dict[str, int]] = []
    found = []
    keys = FirstSeen("key")
    for line, name, value_at, value in doc.object(0):
        keys.add(Row(doc.source, line, {}), name, name)
        found.append(name)
        if key is not None and name != key:
            continue
        if not isinstance(value, list):
            raise TraceError(doc.source, line, name, "expected a list of 'V100:P100:K80' strings")
        for index, (spec_line, spec) in enumerate(doc.array(value_at)):
            field = f"{name}[{index}]"
            parts = spec.split(":") if isinstance(spec, str) else []
            if len(parts) != 3:
                raise TraceError(doc.source, spec_line, field, f"{spec!r} is not a 'V100:P100:K80' string")
            row = Row(doc.source, spec_line, {f"{field}.{m}": p for m, p in zip(("v100", "p100", "k80"), parts)})
            specs.append({m: row.integer(f"{field}.{m}", max_value=MAX_GPUS) for m in ("v100", "p100", "k80")})
    if key is not None and key not in found:
        raise TraceError(doc.source, None, key, f"no such key (the file has {found})")
    return specs


Missing = Literal["single_worker", "error", "drop"]


def gavel_as_jobs(trace: pd.DataFrame, throughputs: pd.DataFrame | PathLike, *, reference: str = "v100",
                  missing: Missing = "single_worker") -> pd.DataFrame:
    """Convert a Gavel trace to the unified job schema with per-model throughput columns.

    ``throughputs`` is a :func:`load_gavel_throughputs` frame or the JSON path. Per job:
    num_gpu = scale_factor, model_name = job_type, total_iterations = total_steps,
    submit_time = arrival_time, duration = total_steps / throughput on ``reference``;
    ``throughput_<model>`` = steps/s of the whole job alone (0.0 where the table has no or a
    zero entry: it cannot run there); priority_weight is kept. job_id is the row position in
    ``trace``.

    The throughputs come from the table's (job_type, scale_factor) entry. ``missing`` says
    what to do with a job whose pair the table lacks (the msr traces give scale factors 2-8 to
    Recommendation, A3C and CycleGAN, which Gavel measured on one GPU only):

    * ``"single_worker"`` (default): take the job type's scale-factor-1 throughputs, as Gavel's
      simulator did for every job when it read the msr traces (it kept one throughput per job
      type, whatever the scale factor); ``df.attrs["single_worker_rows"]`` lists those rows.
    * ``"error"``: raise :class:`TraceError` naming the first such row.
    * ``"drop"``: skip those jobs; ``df.attrs["dropped"]`` counts them.

    A job with no positive ``reference`` throughput even so (a job type the table does not
    know) raises :class:`TraceError` naming its row (and file line, for a frame straight from
    :func:`load_gavel_trace`), unless ``missing="drop"``.

    The co-located throughputs of the trace's (job type, scale factor) pairs (the table's
    ``attrs["colocated"]``) go to ``df.attrs["colocated_throughputs"]``
    (:data:`ColocatedTable`), which the simulator's Gavel-compatible mode reads for the
    packing policies; a job whose pair the table lacks (``single_worker`` rows) is never packed.
    """
    if missing not in ("single_worker", "error", "drop"):
        raise ValueError(f"missing must be 'single_worker', 'error' or 'drop', not {missing!r}")
    if not isinstance(throughputs, pd.DataFrame):
        throughputs = load_gavel_throughputs(throughputs)
    table = throughput_table(throughputs)
    models = sorted(throughputs["gpu_model"].unique())
    if reference not in models:
        raise TraceError("gavel throughputs", None, "gpu_model", f"no {reference!r} entries (have {models})")
    keys = list(zip(trace["job_type"], trace["scale_factor"].astype(int)))
    absent = np.array([k not in table for k in keys], dtype=bool)
    if absent.any() and missing == "error":
        _refuse(trace, int(np.argmax(absent)), f"the table has no entry for this job type at scale factor "
                f"{keys[int(np.argmax(absent))][1]}; pass missing='single_worker' to use its 1-GPU "
                "throughputs as Gavel's simulator did, or missing='drop' to skip it")
    # Gavel's rule for the pairs it lacks: the job type's throughputs at scale factor 1.
    lookup = [table.get(k) if k in table else table.get((k[0], 1), {}) for k in keys]
    if missing == "drop":
        lookup = [{} if a else entry for entry, a in zip(lookup, absent)]
    rates = {m: np.array([entry.get(m, 0.0) for entry in lookup], dtype=np.float64) for m in models}
    usable = rates[reference] > 0
    if not usable.all() and missing != "drop":
        row = int(np.argmax(~usable))
        job_type, scale = keys[row]
        known = "the table has no entry for this job type" if not lookup[row] else \
            f"its {reference} throughput is {rates[reference][row]!r}"
        _refuse(trace, row, f"no {reference} throughput for {job_type!r} at scale factor {scale} ({known}); "
                "pass missing='drop' to skip such jobs")
    jobs = pd.DataFrame({
        "job_id": np.arange(len(trace), dtype=np.int64),
        "submit_time": trace["arrival_time"].to_numpy(),
        "num_gpu": trace["scale_factor"].to_numpy(),
        "duration": trace["total_steps"].to_numpy() / np.where(usable, rates[reference], 1.0),
        "model_name": trace["job_type"].to_numpy(),
        "total_iterations": trace["total_steps"].to_numpy(),
        "priority_weight": trace["priority_weight"].to_numpy(),
        **{f"{THROUGHPUT_PREFIX}{m}": rates[m] for m in models},
    })
    out = finish_jobs(jobs[usable], "gavel trace", reference_model=reference)
    present = set(keys)
    colocated = throughputs.attrs.get("colocated") or {}
    out.attrs["colocated_throughputs"] = {k: dict(v) for k, v in colocated.items()
                                          if (k[0], k[1]) in present and (k[2], k[1]) in present}
    if missing == "drop":
        out.attrs["dropped"] = int((~usable).sum())
    else:
        out.attrs["single_worker_rows"] = np.flatnonzero(absent).tolist()
    return out


def _refuse(trace: pd.DataFrame, row: int, problem: str) -> None:
    """Raise a TraceError for ``trace``'s row at position ``row``, with its file line when known."""
    job_type, scale = trace["job_type"].iloc[row], int(trace["scale_factor"].iloc[row])
    lines = trace.attrs.get("lines")
    # The file line is only trusted on a frame as load_gavel_trace returned it.
    same_frame = (isinstance(lines, list) and len(lines) == len(trace)
                  and isinstance(trace.index, pd.RangeIndex) and trace.index.equals(pd.RangeIndex(len(trace))))
    source = str(trace.attrs.get("source", "gavel trace")) if same_frame else "gavel trace"
    line = lines[row] if same_frame else None
    raise TraceError(source, line, "job_type",
                     f"row {row} ({job_type!r}, scale factor {scale}): {problem}")


def _first_cluster_spec(path: Path) -> dict[str, int]:
    """The first spec of a cluster-spec file: the cluster a simulation of a Gavel trace runs on."""
    specs = load_gavel_cluster_spec(path)
    if not specs:
        raise TraceError(Path(path).name, None, None, "holds no 'V100:P100:K80' spec")
    return specs[0]


register(TraceFormat(
    name="gavel", summary="Gavel .trace (physical_cluster or msr layout)", load=load_gavel_trace,
    as_jobs=gavel_as_jobs, takes_missing=True,
    side_inputs=(SideInput("throughputs", "Gavel's simulation_throughputs.json", load_gavel_throughputs),),
    sniff=lambda path, head: path.suffix == ".trace", recognised="a .trace file",
    cluster_files=(ClusterFile(".json", "Gavel cluster-spec JSON, e.g. msr/cluster_specs.json (its first "
                               "spec)", _first_cluster_spec),)))
