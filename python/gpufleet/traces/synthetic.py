"""Seeded synthetic traces, so that examples and tests run without the shared data.

Same seed -> equal frames (everything is drawn from one ``numpy.random.Generator`` in a
fixed order). The defaults are loosely shaped after the public traces: Poisson arrivals
and mostly small gangs as in Philly (Jeon et al., ATC'19) and Tiresias (NSDI'19);
heterogeneous speed-ups that depend on the model, as measured by Gavel (OSDI'20:
a ResNet-50 runs ~4x faster on a V100 than on a K80, other models differ); a mix of
whole, shared and multi-GPU pods as in Alibaba's openb trace (FGD, ATC'23).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gpufleet._lazy import lazy

from ._fields import make_frame
from .openb import FULL_GPU_MILLI, NODE_COLUMNS, POD_COLUMNS
from .registry import TraceFormat, header_columns, register
from .schema import EXTRA_JOB_COLUMNS, JOB_COLUMNS, THROUGHPUT_PREFIX, finish_jobs, load_jobs_csv

np = lazy("numpy")  # the command line's summary path reads traces without NumPy or pandas
pd = lazy("pandas")  # imported by the first frame built: the command line's readers need none

__all__ = ["DEFAULT_SPEEDUPS", "synthetic_jobs", "synthetic_openb"]

if TYPE_CHECKING:   # a type only: naming it must not import NumPy
    import numpy

    Seed = int | numpy.random.Generator | None
# Mean speed relative to a V100, roughly the middle of Gavel's measurements.
DEFAULT_SPEEDUPS: dict[str, float] = {"k80": 0.25, "p100": 0.6, "v100": 1.0}
_MODEL_NAMES = ("resnet18", "resnet50", "vgg16", "transformer", "lm", "recommendation", "a3c", "cyclegan")


def synthetic_jobs(
    n: int,
    seed: Seed = 0,
    *,
    arrival_rate: float = 1 / 120,
    gpu_choices: Sequence[int] = (1, 2, 4, 8),
    gpu_probs: Sequence[float] | None = (0.6, 0.2, 0.12, 0.08),
    duration_median: float = 1800.0,
    duration_sigma: float = 1.2,
    durations: np.ndarray | Sequence[float] | None = None,
    gpu_models: Sequence[str] = ("k80", "p100", "v100"),
    speedups: Mapping[str, float] | None = None,
    speedup_sigma: float = 0.25,
    reference_model: str = "v100",
    model_names: Sequence[str] = _MODEL_NAMES,
    iteration_rate: tuple[float, float] = (1.0, 20.0),
) -> pd.DataFrame:
    """``n`` jobs in the unified job schema, with throughput columns.

    * submit_time: Poisson arrivals at ``arrival_rate`` jobs/s, the first at 0;
    * num_gpu: drawn from ``gpu_choices`` with ``gpu_probs`` (None = uniform);
    * duration (on ``reference_model``): lognormal with ``duration_median`` and
      ``duration_sigma``, or resampled from ``durations`` (e.g.
      :func:`~gpufleet.traces.load_duration_distribution`);
    * throughput_<model> for each of ``gpu_models``: the job's iterations/s on the
      reference (log-uniform in ``iteration_rate``) times a per-(model_name, GPU model)
      factor: ``speedups[gpu]`` (default :data:`DEFAULT_SPEEDUPS`) times lognormal noise
      of ``speedup_sigma``, 1 exactly on the reference;
    * total_iterations = ceil(duration x reference throughput); duration is then
      recomputed as total_iterations / reference throughput so the two agree exactly.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if arrival_rate <= 0:
        raise ValueError(f"arrival_rate must be positive, got {arrival_rate}")
    speedups = dict(DEFAULT_SPEEDUPS if speedups is None else speedups)
    if reference_model not in gpu_models:
        raise ValueError(f"reference_model {reference_model!r} is not in gpu_models {list(gpu_models)}")
    missing = [m for m in gpu_models if m not in speedups and m != reference_model]
    if missing:
        raise ValueError(f"no speed-up given for {missing}")
    rng = np.random.default_rng(seed)

    gaps = rng.exponential(1.0 / arrival_rate, size=n)
    submit = np.concatenate([[0.0], np.cumsum(gaps[1:])]) if n else np.zeros(0)
    num_gpu = rng.choice(np.asarray(gpu_choices, dtype=np.int64), size=n, p=gpu_probs)
    if durations is not None:
        pool = np.asarray(durations, dtype=np.float64)
        if pool.size == 0 or not np.all(pool > 0):
            raise ValueError("durations must be a non-empty array of positive seconds")
        duration = rng.choice(pool, size=n)
    else:
        duration = rng.lognormal(np.log(duration_median), duration_sigma, size=n)
    kind = rng.integers(len(model_names), size=n)
    low, high = iteration_rate
    ref_rate = np.exp(rng.uniform(np.log(low), np.log(high), size=n))
    # One factor per (DL model, GPU model): heterogeneity follows the model, as in Gavel.
    factors = {
        gpu: np.ones(len(model_names)) if gpu == reference_model
        else speedups[gpu] * rng.lognormal(0.0, speedup_sigma, size=len(model_names))
        for gpu in gpu_models
    }
    total = np.maximum(1, np.ceil(duration * ref_rate)).astype(np.int64)
    jobs = pd.DataFrame({
        "job_id": np.arange(n, dtype=np.int64),
        "submit_time": submit,
        "num_gpu": num_gpu,
        "duration": total / ref_rate,
        "model_name": np.asarray(model_names, dtype=object)[kind],
        "total_iterations": total,
        **{f"{THROUGHPUT_PREFIX}{gpu}": ref_rate * factors[gpu][kind] for gpu in gpu_models},
    })
    return finish_jobs(jobs, "synthetic jobs", reference_model=reference_model)


def synthetic_openb(
    num_nodes: int,
    num_pods: int,
    seed: Seed = 0,
    *,
    gpu_models: Sequence[str] = ("G2", "T4", "P100", "V100M32"),
    share_frac: float = 0.4,
    multi_gpu_frac: float = 0.05,
    cpu_only_frac: float = 0.13,
    spec_frac: float = 0.1,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(nodes, pods)`` in the openb node and pod schemas, for GPU-sharing demos.

    Nodes carry 2, 4 or 8 GPUs of one model. Pods are CPU-only (``cpu_only_frac``),
    share one GPU (``share_frac``, gpu_milli 100-900), take several whole GPUs
    (``multi_gpu_frac``, at most what the largest node has) or one whole GPU (the rest);
    ``spec_frac`` of GPU pods pin a model present in the cluster. Times are whole seconds:
    Poisson creations (mean gap 60 s), a short scheduling delay, lognormal lifetimes.
    """
    if num_nodes < 1 or num_pods < 0:
        raise ValueError(f"need num_nodes >= 1 and num_pods >= 0, got {num_nodes}, {num_pods}")
    rest = 1.0 - share_frac - multi_gpu_frac - cpu_only_frac
    if min(share_frac, multi_gpu_frac, cpu_only_frac, rest) < 0:
        raise ValueError("share_frac + multi_gpu_frac + cpu_only_frac must be fractions summing to <= 1")
    rng = np.random.default_rng(seed)

    node_gpus = rng.choice([2, 4, 8], size=num_nodes, p=[0.2, 0.3, 0.5])
    node_models = rng.choice(np.asarray(gpu_models, dtype=object), size=num_nodes)
    node_cpu = rng.choice([32000, 64000, 96000, 128000], size=num_nodes)
    nodes = make_frame({
        "name": [f"synth-node-{i:04d}" for i in range(num_nodes)],
        "cpu_milli": node_cpu,
        "memory_mib": node_cpu // 1000 * 4096,  # 4 GiB per core
        "num_gpu": node_gpus,
        "model": node_models,
    }, NODE_COLUMNS)

    kind = rng.choice(4, size=num_pods, p=[cpu_only_frac, share_frac, multi_gpu_frac, rest])
    multi = [g for g in (2, 4, 8) if g <= node_gpus.max()]
    num_gpu = np.select([kind == 0, kind == 2], [0, rng.choice(multi, size=num_pods)], 1)
    gpu_milli = np.select([kind == 0, kind == 1], [0, rng.integers(2, 19, size=num_pods) * 50], FULL_GPU_MILLI)
    pinned = (rng.random(num_pods) < spec_frac) & (num_gpu > 0)
    pin_model = rng.choice(np.unique(node_models), size=num_pods)
    created = np.floor(np.cumsum(rng.exponential(60.0, size=num_pods)))
    scheduled = created + rng.integers(0, 10, size=num_pods)
    deleted = scheduled + np.ceil(rng.lognormal(np.log(900.0), 1.0, size=num_pods))
    pods = make_frame({
        "name": [f"synth-pod-{i:04d}" for i in range(num_pods)],
        "cpu_milli": rng.choice([1000, 2000, 4000, 8000, 16000], size=num_pods),
        "memory_mib": rng.choice([2048, 4096, 8192, 16384, 32768], size=num_pods),
        "num_gpu": num_gpu,
        "gpu_milli": gpu_milli,
        "gpu_spec": [(str(m),) if p else () for m, p in zip(pin_model, pinned)],
        "qos": rng.choice(np.asarray(["LS", "BE"], dtype=object), size=num_pods),
        "pod_phase": ["Running"] * num_pods,
        "creation_time": created,
        "deletion_time": deleted,
        "scheduled_time": scheduled,
    }, POD_COLUMNS)
    return nodes, pods


def _is_job_schema_csv(path: Path, head: str) -> bool:
    """A CSV whose columns are all the unified schema's, the required ones among them."""
    columns = header_columns(head)
    known = set(JOB_COLUMNS) | set(EXTRA_JOB_COLUMNS)
    return (path.suffix == ".csv" and set(JOB_COLUMNS) <= columns
            and all(c in known or c.startswith(THROUGHPUT_PREFIX) for c in columns))


def _as_jobs(df: pd.DataFrame) -> pd.DataFrame:
    return finish_jobs(df, "synthetic jobs", reference_model=df.attrs.get("reference_model"))


register(TraceFormat(
    name="synthetic", summary="unified job schema CSV (e.g. synthetic_jobs(...).to_csv); no file: generated",
    load=load_jobs_csv, as_jobs=_as_jobs, generate=synthetic_jobs,
    default_cluster={"v100": 16, "p100": 16, "k80": 16},
    sniff=_is_job_schema_csv, recognised="a .csv with only unified-schema columns (docs/traces.md)"))
