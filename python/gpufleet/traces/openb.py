"""Alibaba GPU-sharing trace ("openb", cluster-trace-gpu-v2023).

Source: https://github.com/alibaba/clusterdata, folder ``cluster-trace-gpu-v2023/csv/``;
cite Weng et al., "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with
Fragmentation Gradient Descent", USENIX ATC 2023. The data carry no explicit licence,
so gpufleet ships only these loaders (and :func:`gpufleet.traces.synthetic_openb`).

Pod files (``openb_pod_list_*.csv``) -> :data:`POD_COLUMNS`:

================ ======= ========================================================
name             object  pod name
cpu_milli        int64   CPU request, thousandths of a core
memory_mib       int64   memory request, MiB
num_gpu          int64   GPUs requested (0 = CPU-only)
gpu_milli        int64   share of one GPU, 0-1000 (1000 = whole GPU)
gpu_spec         object  tuple of allowed GPU models, ``()`` = any model
qos              object  QoS class (LS, BE, Burstable, Guaranteed); ``""`` if absent
pod_phase        object  Running, Pending, Succeeded, Failed; ``""`` if absent
creation_time    float64 seconds; NaN if the file has no times
deletion_time    float64 seconds; NaN if absent
scheduled_time   float64 seconds; NaN if never scheduled or absent
================ ======= ========================================================

The ``multigpuNN`` variants carry only the first five columns; the others then get
the defaults above. Node files (``openb_node_list_*.csv``) -> :data:`NODE_COLUMNS`:
name (from ``sn``), cpu_milli, memory_mib, num_gpu (from ``gpu``), model (``""`` for
CPU-only nodes).
"""
from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from gpufleet._lazy import lazy

from ._fields import FirstSeen, PathLike, Row, csv_rows, make_frame
from .errors import TraceError
from .limits import MAX_CPU_MILLI, MAX_GPUS, MAX_MEMORY_MIB, MAX_SECONDS
from .registry import SideInput, TraceFormat, header_columns, register
from .schema import finish_jobs

np = lazy("numpy")  # the command line's summary path reads traces without NumPy or pandas
pd = lazy("pandas")  # imported by the first frame built: the command line's readers need none

__all__ = ["GPU_MODELS", "NODE_COLUMNS", "POD_COLUMNS", "load_openb_nodes", "load_openb_pods",
           "openb_as_jobs"]

# Models in the trace; G1/G2/G3 are codes the trace does not disclose.
GPU_MODELS: frozenset[str] = frozenset({"A10", "G1", "G2", "G3", "P100", "T4", "V100M16", "V100M32"})
FULL_GPU_MILLI = 1000

POD_COLUMNS: dict[str, str] = {
    "name": "object", "cpu_milli": "int64", "memory_mib": "int64", "num_gpu": "int64",
    "gpu_milli": "int64", "gpu_spec": "object", "qos": "object", "pod_phase": "object",
    "creation_time": "float64", "deletion_time": "float64", "scheduled_time": "float64",
}
NODE_COLUMNS: dict[str, str] = {
    "name": "object", "cpu_milli": "int64", "memory_mib": "int64", "num_gpu": "int64", "model": "object",
}
_POD_REQUIRED = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
_TIMES = ("creation_time", "deletion_time", "scheduled_time")


def _models(names: Iterable[str] | None) -> frozenset[str]:
    return GPU_MODELS if names is None else GPU_MODELS | frozenset(names)


def load_openb_pods(path: PathLike, *, known_models: Iterable[str] | None = None) -> pd.DataFrame:
    """Load an ``openb_pod_list_*.csv`` file into :data:`POD_COLUMNS`, checking every row.

    Checks: counts are non-negative integers within :mod:`~gpufleet.traces.limits`;
    ``gpu_milli`` is 0 for CPU-only pods, 1-1000 for one-GPU pods and exactly 1000 for
    multi-GPU pods; every model in ``gpu_spec`` (``|``-separated) is known
    (:data:`GPU_MODELS` plus ``known_models``); times are within 0-10**10 s and deletion and
    scheduling do not precede creation; pod names are unique.
    """
    models = _models(known_models)
    columns: dict[str, list[object]] = {c: [] for c in POD_COLUMNS}
    names = FirstSeen("pod name")
    for row in csv_rows(path, required=_POD_REQUIRED, optional=list(POD_COLUMNS)):
        record = _pod(row, models)
        names.add(row, "name", record[0])
        for column, value in zip(POD_COLUMNS, record):
            columns[column].append(value)
    return make_frame(columns, POD_COLUMNS)


def _pod(row: Row, models: frozenset[str]) -> tuple[object, ...]:
    num_gpu = row.integer("num_gpu", max_value=MAX_GPUS)
    gpu_milli = row.integer("gpu_milli")  # its range depends on num_gpu, checked below
    # The trace encodes a GPU share only for one-GPU pods; anything else is a broken row.
    if num_gpu == 0 and gpu_milli != 0:
        row.fail("gpu_milli", f"{gpu_milli} but num_gpu is 0 (CPU-only pods must have 0)")
    if num_gpu == 1 and not 1 <= gpu_milli <= FULL_GPU_MILLI:
        row.fail("gpu_milli", f"{gpu_milli} is outside 1-{FULL_GPU_MILLI} for a one-GPU pod")
    if num_gpu > 1 and gpu_milli != FULL_GPU_MILLI:
        row.fail("gpu_milli", f"{gpu_milli} but num_gpu is {num_gpu} (multi-GPU pods take whole GPUs: 1000)")
    spec = tuple(m.strip() for m in row.text("gpu_spec", allow_empty=True).split("|") if m.strip())
    unknown = [m for m in spec if m not in models]
    if unknown:
        row.fail("gpu_spec", f"unknown GPU model {unknown[0]!r} (known: {', '.join(sorted(models))})")
    created, deleted, scheduled = (row.number(t, max_value=MAX_SECONDS, optional=True) for t in _TIMES)
    if deleted < created:
        row.fail("deletion_time", f"{deleted:g} is before creation_time {created:g}")
    if scheduled < created:
        row.fail("scheduled_time", f"{scheduled:g} is before creation_time {created:g}")
    return (row.text("name"), row.integer("cpu_milli", max_value=MAX_CPU_MILLI),
            row.integer("memory_mib", max_value=MAX_MEMORY_MIB), num_gpu, gpu_milli,
            spec, row.text("qos", allow_empty=True), row.text("pod_phase", allow_empty=True),
            created, deleted, scheduled)


def load_openb_nodes(path: PathLike, *, known_models: Iterable[str] | None = None) -> pd.DataFrame:
    """Load an ``openb_node_list_*.csv`` file into :data:`NODE_COLUMNS`, checking every row.

    A node with GPUs must name a known model; a CPU-only node must not name one; node
    names (``sn``) are unique; counts are within :mod:`~gpufleet.traces.limits`.
    """
    models = _models(known_models)
    columns: dict[str, list[object]] = {c: [] for c in NODE_COLUMNS}
    names = FirstSeen("node name")
    for row in csv_rows(path, required=("sn", "cpu_milli", "memory_mib", "gpu", "model")):
        names.add(row, "sn", row.text("sn"))
        num_gpu = row.integer("gpu", max_value=MAX_GPUS)
        model = row.text("model", allow_empty=True)
        if num_gpu > 0 and model not in models:
            row.fail("model", f"unknown GPU model {model!r} (known: {', '.join(sorted(models))})")
        if num_gpu == 0 and model:
            row.fail("model", f"{model!r} on a node with gpu 0")
        record = (row.text("sn"), row.integer("cpu_milli", max_value=MAX_CPU_MILLI),
                  row.integer("memory_mib", max_value=MAX_MEMORY_MIB), num_gpu, model)
        for column, value in zip(NODE_COLUMNS, record):
            columns[column].append(value)
    return make_frame(columns, NODE_COLUMNS)


def openb_as_jobs(pods: pd.DataFrame) -> pd.DataFrame:
    """Convert openb pods to the unified job schema (:mod:`gpufleet.traces.schema`).

    Only GPU pods with a positive run time are kept (CPU-only pods are not jobs of a GPU
    simulator). job_id = row position in ``pods``; submit_time = creation_time minus the
    earliest kept creation_time; duration = deletion_time minus scheduled_time (minus
    creation_time for pods never scheduled); model_name = ``"unknown"`` (the trace has
    none); ``gpu_milli`` is kept as an extra column for GPU-sharing policies.
    """
    if pods[["creation_time", "deletion_time"]].isna().any().any():
        raise TraceError("openb pods", None, "creation_time",
                         "times are missing (the multigpuNN files have none); cannot build jobs")
    duration = pods["deletion_time"] - pods["scheduled_time"].fillna(pods["creation_time"])
    keep = ((pods["num_gpu"] > 0) & (duration > 0)).to_numpy()
    kept = pods[keep]
    jobs = pd.DataFrame({
        "job_id": np.flatnonzero(keep).astype(np.int64),
        "submit_time": (kept["creation_time"] - kept["creation_time"].min()).to_numpy(),
        "num_gpu": kept["num_gpu"].to_numpy(),
        "duration": duration[keep].to_numpy(),
        "model_name": "unknown",
        "gpu_milli": kept["gpu_milli"].to_numpy(),
    })
    return finish_jobs(jobs, "openb pods")


def _is_pod_list(path: Path, head: str) -> bool:
    named = path.name.startswith("openb_pod_list_")
    return path.suffix == ".csv" and (named or "gpu_milli" in header_columns(head))


register(TraceFormat(
    name="openb", summary="Alibaba GPU-sharing pods (openb_pod_list_*.csv), replayed on a node list",
    load=load_openb_pods, as_jobs=openb_as_jobs, replayed=True,
    side_inputs=(SideInput("nodes", "openb node list CSV, openb_node_list_*.csv", load_openb_nodes,
                           beside="openb_node_list_gpu_node.csv"),),
    sniff=_is_pod_list, recognised="a .csv named openb_pod_list_*, or with a gpu_milli column"))
