"""Job-time simulation: run a registered policy over a job trace on a GPU cluster.

The event loop and every policy are native (``gpufleet._core``, ``cpp/gpufleet/sim`` and
``cpp/gpufleet/policies``); this module converts the unified job schema of
:mod:`gpufleet.traces` to arrays, calls the simulator once with the GIL released, and turns the
result into pandas frames, a summary dict with stable snake_case keys (docs/simulator.md) and
plots.

>>> import gpufleet.traces as T
>>> from gpufleet.sim import simulate
>>> r = simulate(T.synthetic_jobs(200, seed=1), {"v100": 8, "k80": 8}, "hetero-las")
>>> r.summary["avg_jct"]  # doctest: +SKIP
"""
from __future__ import annotations

import bisect
import json
import math
import re
import sys
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from gpufleet import _core, _numpy_sums, registries
from gpufleet._lazy import lazy
from gpufleet.errors import InvalidInputError, NotFoundError

# Imported by the first call that needs them: `import gpufleet` stays fast.
np = lazy("numpy")
pd = lazy("pandas")

THROUGHPUT_PREFIX = "throughput_"
_PROGRESS_AUTO_JOBS = 20_000  # show a tqdm bar from this many jobs on

ClusterLike = Any  # int | str | Mapping | Sequence[Mapping] | ClusterSpec


def policy_names() -> list[str]:
    """Names of the registered job-time policies."""
    return registries.names("policies")


def policy_description(name: str) -> str:
    """The one-line description a job-time policy registers (``gpufleet simulate
    --list-policies`` prints it); an empty string for a name that is not registered."""
    return registries.description("policies", name)


def policy_spec(policy: str | Mapping[str, Any], **params: Any) -> str:
    """A spec string from ``"name"``, ``"name(k=v)"``, ``{"name": ..., k: v}`` or name plus
    keyword parameters; validated by the native registry (KeyError for an unknown name,
    ValueError for bad parameters)."""
    if isinstance(policy, Mapping):
        params = {**{k: v for k, v in policy.items() if k != "name"}, **params}
        if "name" not in policy:
            raise ValueError("policy dict needs a 'name'")
        policy = str(policy["name"])
    spec = str(policy)
    if params:
        if "(" in spec:
            raise ValueError(f"policy {spec!r}: give parameters in the spec or as keywords, not both")
        spec = f"{spec}({', '.join(f'{k}={json.dumps(v)}' for k, v in params.items())})"
    _core.sim_check_policy(spec)
    return spec


def cluster_spec(cluster: ClusterLike) -> list[dict[str, Any]]:
    """Normalises a cluster description to the native list of ``{"name", "count", ...}``.

    Accepted: an int (that many identical GPUs, model ``"gpu"``); a string ``"8"`` or
    ``"v100:4,k80:4"``; a mapping ``{"v100": 4}`` or ``{"v100": {"count": 4, "memory_gib": 16}}``
    (insertion order is kept, and only numbers the models: no policy prefers a model for being
    listed first); a list of such dicts with a ``name``; or any object with ``num_gpus`` (a
    Tiresias ``ClusterSpec``).
    """
    if hasattr(cluster, "num_gpus") and not isinstance(cluster, Mapping):
        spec = {"name": "gpu", "count": int(cluster.num_gpus)}
        if getattr(cluster, "gpus_per_node", None):
            spec["gpus_per_node"] = int(cluster.gpus_per_node)
        return [spec]
    if isinstance(cluster, (int, *_numpy_types("integer"))) and not isinstance(cluster, bool):
        return [{"name": "gpu", "count": int(cluster)}]
    if isinstance(cluster, str):
        text = cluster.strip()
        if re.fullmatch(r"\d+", text):
            return [{"name": "gpu", "count": int(text)}]
        out = []
        for part in text.split(","):
            name, sep, count = part.strip().partition(":")
            if not sep or not re.fullmatch(r"\d+", count.strip()) or not name.strip():
                raise ValueError(f"cluster {cluster!r}: expected 'N' or 'model:count,...', bad part {part!r}")
            out.append({"name": name.strip(), "count": int(count)})
        return out
    if isinstance(cluster, Mapping):
        out = []
        for name, v in cluster.items():
            out.append({"name": str(name), **(dict(v) if isinstance(v, Mapping) else {"count": v})})
        return out
    if isinstance(cluster, Sequence):
        return [dict(v) for v in cluster]
    raise ValueError(f"cluster: cannot read {type(cluster).__name__}; see gpufleet.sim.cluster_spec")


def _speeds(jobs: Mapping[str, np.ndarray], attrs: Mapping[str, Any], models: list[str]) -> np.ndarray | None:
    """Per-job speed on each model relative to the reference, from throughput_<model> columns."""
    have = {c[len(THROUGHPUT_PREFIX):].lower(): c for c in jobs if c.startswith(THROUGHPUT_PREFIX)}
    wanted = [m.lower() for m in models]
    present = [m for m in wanted if m in have]
    if not present:
        return None
    missing = [m for m in wanted if m not in have]
    if missing:
        raise ValueError(f"jobs have throughput columns for {sorted(have)} but the cluster also has "
                         f"{missing}; give every GPU model a throughput_<model> column or none")
    ref = str(attrs.get("reference_model", "")).lower()
    tput = np.stack([np.asarray(jobs[have[m]], dtype=np.float64) for m in wanted], axis=1)
    if ref in have:
        ref_rate = np.asarray(jobs[have[ref]], dtype=np.float64)
    elif "total_iterations" in jobs:
        ref_rate = (np.asarray(jobs["total_iterations"], dtype=np.float64)
                    / np.asarray(jobs["duration"], dtype=np.float64))
    else:
        raise ValueError("jobs have throughput columns but no reference: set df.attrs['reference_model'] "
                         "or a total_iterations column")
    with np.errstate(divide="ignore", invalid="ignore"):
        speed = tput / ref_rate[:, None]
    return np.nan_to_num(speed, nan=0.0, posinf=0.0)


GAVEL_COMPAT_OPTIONS = ("drop_stuck_jobs", "charge_idle_gaps", "fifo_stale_type")


def _gavel_options(gavel_compat: bool | Mapping[str, bool]) -> dict[str, bool] | None:
    """``gavel_compat`` as the native options: None when off; True keeps every reproduced bug, a
    mapping sets some of them (:data:`GAVEL_COMPAT_OPTIONS`, docs/simulator.md)."""
    if isinstance(gavel_compat, Mapping):
        unknown = sorted(set(gavel_compat) - set(GAVEL_COMPAT_OPTIONS))
        if unknown:
            raise ValueError(f"gavel_compat: unknown option(s) {unknown} (known: {list(GAVEL_COMPAT_OPTIONS)})")
        return {k: _flag(f"gavel_compat.{k}", v) for k, v in gavel_compat.items()}
    return {} if _flag("gavel_compat", gavel_compat) else None


def _gavel_steps(jobs: Mapping[str, np.ndarray], attrs: Mapping[str, Any],
                 models: list[str]) -> tuple[np.ndarray, np.ndarray, str | None]:
    """Gavel counts work in steps: per job its total steps and steps/s on each model (the
    ``total_iterations`` and ``throughput_<model>`` columns of a Gavel trace, as
    :func:`gpufleet.traces.gavel_as_jobs` gives them), and the reference model when the cluster has it."""
    have = {c[len(THROUGHPUT_PREFIX):].lower(): c for c in jobs if c.startswith(THROUGHPUT_PREFIX)}
    missing = [m for m in models if m.lower() not in have]
    if "total_iterations" not in jobs or missing:
        raise ValueError("gavel_compat needs Gavel's steps: a total_iterations column and a throughput_<model> "
                         f"column for every GPU model (missing: {missing or ['total_iterations']}); load the trace "
                         "with gpufleet.traces.gavel_as_jobs")
    steps = np.asarray(jobs["total_iterations"], dtype=np.float64)
    rates = np.stack([np.asarray(jobs[have[m.lower()]], dtype=np.float64) for m in models], axis=1)
    ref = str(attrs.get("reference_model", "")).lower()
    reference = next((m for m in models if m.lower() == ref), None)
    return steps, rates, reference


def _gavel_colocation(jobs: Mapping[str, np.ndarray], attrs: Mapping[str, Any],
                      models: list[str]) -> dict[str, Any]:
    """Gavel's co-located throughputs (``attrs["colocated_throughputs"]``, as
    :func:`gpufleet.traces.gavel_as_jobs` gives them) as the native options: each job's type (its
    (model_name, num_gpu), -1 where the table has no pair for it) and a (types x types x models)
    array of the steps/s of a job of the first type sharing its GPUs with one of the second.
    Empty when the jobs have none (the packing policies then pack nothing)."""
    table = attrs.get("colocated_throughputs")
    if not table or "model_name" not in jobs:
        return {}
    if not isinstance(table, Mapping):
        raise ValueError("attrs['colocated_throughputs'] must map (job_type, scale_factor, other_job_type) "
                         f"to {{gpu_model: steps/s}}, got {type(table).__name__}")
    keys = sorted({(str(k[0]), int(k[1])) for k in table})
    index = {k: i for i, k in enumerate(keys)}
    names = [str(n) for n in np.asarray(jobs["model_name"])]
    gpus = np.asarray(jobs["num_gpu"], dtype=np.int64)
    job_type = [index.get((n, int(g)), -1) for n, g in zip(names, gpus)]
    rates = np.zeros((len(keys), len(keys), len(models)), dtype=np.float64)
    lower = [m.lower() for m in models]
    for (job, scale, other), per_model in table.items():
        b = index.get((str(other), int(scale)))
        if b is None:
            continue
        for model, rate in per_model.items():
            if str(model).lower() in lower:
                rates[index[(str(job), int(scale))], b, lower.index(str(model).lower())] = float(rate)
    return {"job_type": job_type, "pair_rate": rates}


@dataclass
class SimResult:
    """Outcome of :func:`simulate`: ``jobs`` (one row per job: the input columns plus
    first_start, end_time, jct, queueing_delay, run_time, gpu_time, service, preemptions,
    migrations, ftf_rho), ``timeseries`` (one row per scheduling point: time, running_jobs,
    pending_jobs, busy_gpus, utilization) and ``summary`` (docs/simulator.md)."""

    jobs: pd.DataFrame
    timeseries: pd.DataFrame
    summary: dict[str, Any]
    policy: str
    cluster: list[dict[str, Any]] = field(default_factory=list)

    def shares(self, by: str = "user") -> pd.DataFrame:
        """Per group (a job column such as ``user`` or ``vc`` from the Philly loader, or
        ``model_name``): jobs, GPU-seconds received, its share of all GPU-seconds, and mean JCT."""
        if by not in self.jobs.columns:
            raise ValueError(f"jobs have no {by!r} column (have {sorted(self.jobs.columns)})")
        g = self.jobs.groupby(by)
        out = pd.DataFrame({"jobs": g.size(), "gpu_time": g["gpu_time"].sum(), "avg_jct": g["jct"].mean()})
        out["gpu_share"] = out["gpu_time"] / out["gpu_time"].sum()
        return out.sort_values("gpu_time", ascending=False)

    def plot_jct_cdf(self, ax=None, label: str | None = None):
        """The JCT CDF of this run on a log time axis (:func:`gpufleet.plots.jct_cdf`), labelled
        ``label`` or the policy; returns the axes. Needs matplotlib."""
        from gpufleet.plots import jct_cdf
        return jct_cdf({label or self.policy: self}, ax=ax)

    def plot_utilization(self, ax=None, label: str | None = None):
        """Busy GPU share over time in hours (:func:`gpufleet.plots.utilization`); returns the
        axes. Needs matplotlib."""
        from gpufleet.plots import utilization
        return utilization({label or self.policy: self}, ax=ax)


def _finish_time_fairness(jobs: Mapping[str, np.ndarray], ts: Mapping[str, np.ndarray],
                          total_gpus: int) -> np.ndarray:
    """Themis' finish-time fairness rho = T_shared / T_fair (Mahajan et al., NSDI 2020), with
    T_fair = duration x max(1, num_gpu x N / G): the time the job would take on an equal 1/N
    share of the G GPUs, N the mean number of active jobs while it was in the system."""
    t = np.asarray(ts["time"])
    active = (ts["running_jobs"] + ts["pending_jobs"]).astype(np.float64)
    cum = np.concatenate([[0.0], np.cumsum(active[:-1] * np.diff(t))])

    def integral(x: np.ndarray) -> np.ndarray:
        k = np.clip(np.searchsorted(t, x, side="right") - 1, 0, len(t) - 1)
        return cum[k] + active[k] * (x - t[k])

    start = np.asarray(jobs["submit_time"], dtype=np.float64)
    end = np.asarray(jobs["end_time"], dtype=np.float64)
    span = np.maximum(end - start, 1e-12)
    n_avg = np.maximum((integral(end) - integral(start)) / span, 1.0)
    fair = np.asarray(jobs["duration"]) * np.maximum(1.0, np.asarray(jobs["num_gpu"]) * n_avg / total_gpus)
    return (end - start) / fair


def _numpy_types(*names: str) -> tuple[type, ...]:
    """NumPy's scalar types by name, or none where NumPy was never imported (then no value is
    one), so that checking an option does not import it."""
    numpy = sys.modules.get("numpy")
    return tuple(getattr(numpy, n) for n in names) if numpy is not None else ()


def _is_array(value: Any) -> bool:
    """Whether ``value`` is a NumPy array (without importing NumPy to ask)."""
    numpy = sys.modules.get("numpy")
    return numpy is not None and isinstance(value, numpy.ndarray)


def _plain_finish_time_fairness(jobs: Mapping[str, Sequence[Any]], end_time: Sequence[float],
                                ts: Mapping[str, Sequence[Any]], total_gpus: int) -> list[float]:
    """:func:`_finish_time_fairness` in plain Python, operation for operation (the same float64
    results: each step is one IEEE operation in the same order)."""
    t = ts["time"]
    active = [float(r + p) for r, p in zip(ts["running_jobs"], ts["pending_jobs"])]
    cum = [0.0]
    for k in range(len(t) - 1):   # numpy.cumsum: a running sum from the first term
        term = active[k] * (t[k + 1] - t[k])
        cum.append(term if k == 0 else cum[-1] + term)
    last = len(t) - 1

    def integral(x: float) -> float:
        k = min(max(bisect.bisect_right(t, x) - 1, 0), last)
        return cum[k] + active[k] * (x - t[k])

    rho = []
    for start, end, duration, gpus in zip(jobs["submit_time"], end_time, jobs["duration"], jobs["num_gpu"]):
        start, end = float(start), float(end)
        span = _maximum(end - start, 1e-12)
        n_avg = _maximum(_divide(integral(end) - integral(start), span), 1.0)
        fair = float(duration) * _maximum(1.0, float(gpus) * n_avg / total_gpus)
        rho.append(_divide(end - start, fair))
    return rho


def _maximum(a: float, b: float) -> float:
    """``numpy.maximum`` of two floats: NaN if either is."""
    return a if a >= b or math.isnan(a) else b


def _divide(a: float, b: float) -> float:
    """A float64 division as NumPy does it: by zero gives an infinity or NaN, not an error."""
    if b != 0.0:
        return a / b
    if math.isnan(a) or a == 0.0:
        return math.nan
    return math.copysign(math.inf, a) * math.copysign(1.0, b)


def _flag(name: str, value: Any) -> bool:
    """A true/false option; TypeError naming it for anything else (a list is not "true")."""
    if isinstance(value, (bool, *_numpy_types("bool_"))):
        return bool(value)
    raise TypeError(f"{name}: expected true or false, got {value!r:.60}")


def _seconds(name: str, value: Any) -> float:
    """A number of seconds (the core checks the range); TypeError naming it for a non-number."""
    if (isinstance(value, (int, float, *_numpy_types("integer", "floating")))
            and not isinstance(value, (bool, *_numpy_types("bool_")))):
        return float(value)
    raise TypeError(f"{name}: expected a number of seconds, got {value!r:.60}")


def _seed(value: Any) -> int:
    """A seed from 0 to 2**63 - 1 (the core's seeds are signed 64-bit)."""
    if not isinstance(value, (int, *_numpy_types("integer"))) or isinstance(value, (bool, *_numpy_types("bool_"))):
        raise TypeError(f"seed: expected a whole number, got {value!r:.60}")
    if not 0 <= value <= 2**63 - 1:
        raise ValueError(f"seed: {value} is out of range: 0 to 2**63 - 1")
    return int(value)


def simulate(jobs: pd.DataFrame, cluster: ClusterLike, policy: str | Mapping[str, Any] = "fifo",
             seed: int = 0, *, tiresias_compat: bool = False,
             gavel_compat: bool | Mapping[str, bool] = False, restore_delay: float = 0.0,
             tick: float = 0.0, scheduling_interval: float = 0.0, record_timeseries: bool = True, progress: bool | None = None,
             memory_gib: np.ndarray | Sequence[float] | None = None, placement: str | None = "binpack",
             racks: tuple[int, int] | None = None, params: Mapping[str, Any] | None = None,
             **policy_params: Any) -> SimResult:
    """Simulate ``policy`` on ``jobs`` (unified job schema, :mod:`gpufleet.traces`) over
    ``cluster`` (see :func:`cluster_spec`).

    * ``policy``: a registered name (:func:`policy_names`), a spec such as
      ``"dlas-gpu(queue_limits=[3250,7200])"``, a dict with ``name``, or a name plus its
      parameters in ``params`` (``simulate(jobs, 8, "las", params={"service": "time"})``).
      Parameters given as further keywords (``service="time"``) still work; a keyword that is
      neither an option nor a parameter of the policy is an error that suggests the nearest of
      both (``restore_dealy=30``: did you mean "restore_delay"?).
    * Speeds: if the jobs carry ``throughput_<model>`` columns for the cluster's models, a job
      runs at throughput_model / throughput_reference work-seconds per second; otherwise
      every model runs every job at its trace duration.
    * ``tiresias_compat``: reproduce Tiresias' simulator (whole-second finish times, its
      stable-sort ties and queue-jump arithmetic); ``restore_delay``: seconds without
      progress after each resume or migration (checkpoint/restore); ``tick``: also
      schedule every ``tick`` seconds; ``scheduling_interval``: schedule only on multiples
      of this many seconds instead of on every arrival/completion (big traces: far fewer
      scheduling points, at most that much added latency).
    * ``gavel_compat``: reproduce Gavel's simulator (its rounds of micro-tasks counted in steps,
      for the ``gavel-*`` policies; docs/simulator.md, "Gavel-compatible mode"). The jobs need
      Gavel's steps (:func:`gpufleet.traces.gavel_as_jobs`); the summary gains ``dropped_jobs``
      and the jobs' ``dropped`` column may hold True (Gavel drops stuck multi-GPU jobs; they are
      left out of the JCT figures, their ``jct`` is NaN). ``True`` reproduces every bug the docs list; a mapping such as
      ``{"drop_stuck_jobs": False}`` corrects some (:data:`GAVEL_COMPAT_OPTIONS`). No devices
      are placed, the seed keeps equal submit times in trace order, and restore_delay, tick and
      scheduling_interval must stay 0.
    * ``seed``: the run is deterministic given the seed, which is recorded in the summary. It
      seeds the model draw of the heterogeneity-agnostic policies (a job lands on a model with
      room at random, in proportion to its free GPUs, whatever order the cluster lists the
      models in; docs/simulator.md) and breaks exact ties between jobs with equal submit times
      (admitted in a seeded order; seed=0 keeps the trace order). On one GPU model nothing is
      drawn. Compare policies over several seeds: :func:`compare` with ``seeds=range(5)``.
    * ``progress``: tqdm bar (default: on from 20,000 jobs).
    * ``placement``: a placement strategy (:func:`gpufleet.strategies`) that gives every start
      real devices in the core's accounting, on nodes of ``gpus_per_node`` GPUs per model
      (default 8; set it in the cluster spec). The jobs frame then has ``max_nodes`` (most nodes
      a job's GPUs spanned) and the summary ``jobs_spanning_nodes``. ``None`` counts GPUs per
      model only: the same times, less bookkeeping (the largest runs).
    * ``racks``: ``(nodes_per_rack, racks_per_block)`` cuts each model's nodes into racks and
      blocks (0 racks per block: no block level); a job spanning nodes then prefers one rack,
      then one block (docs/topology.md). Where jobs run changes, never when.
    """
    if not hasattr(jobs, "columns"):
        raise TypeError(f"jobs: expected a DataFrame in the unified job schema, got {type(jobs).__name__}")
    frame = jobs.reset_index(drop=True)
    run = _run({c: frame[c].to_numpy() for c in frame.columns}, dict(jobs.attrs), cluster, policy, seed,
               tiresias_compat=tiresias_compat, gavel_compat=gavel_compat, restore_delay=restore_delay,
               tick=tick, scheduling_interval=scheduling_interval, record_timeseries=record_timeseries,
               progress=progress, memory_gib=memory_gib, placement=placement, racks=racks,
               policy_params=_policy_params(policy, params, policy_params, "simulate"))
    out = frame if run.order is None else frame.iloc[run.order].reset_index(drop=True)
    out = out.copy()
    for k, v in run.outputs.items():
        out[k] = v
    ts = pd.DataFrame(run.timeseries)
    return SimResult(jobs=out, timeseries=ts, summary=run.summary, policy=run.spec, cluster=run.models)


def simulate_summary(jobs: Mapping[str, Any], cluster: ClusterLike, policy: str | Mapping[str, Any] = "fifo",
                     seed: int = 0, *, attrs: Mapping[str, Any] | None = None, **options: Any) -> dict[str, Any]:
    """The ``summary`` of :func:`simulate` (same options, same values) for jobs given as columns
    (a mapping of column name to array, as :func:`gpufleet.traces.load` returns with
    ``columns=True``; ``attrs`` stands for a frame's ``attrs``) or as a DataFrame. It builds no
    frame, so a command that prints only the summary never imports pandas.

    Columns that are not NumPy arrays (``array.array`` or lists, as the command line's reader
    gives them) are run without importing NumPy either, where the options allow: seed 0, no
    ``throughput_<model>`` columns, no ``memory_gib``, not ``gavel_compat``. The summary is the
    same, bit for bit (:mod:`gpufleet._numpy_sums`)."""
    if hasattr(jobs, "columns"):   # a DataFrame
        attrs = dict(jobs.attrs) if attrs is None else attrs
        jobs = {c: jobs[c].to_numpy() for c in jobs.columns}
    params = options.pop("params", None)
    chosen = {k: options.pop(k) for k in SIM_OPTIONS if k in options}
    policy_params = _policy_params(policy, params, options, "simulate_summary")
    if not any(_is_array(v) for v in jobs.values()):
        checked = _check(dict(jobs), cluster, policy, seed, **chosen, policy_params=policy_params)
        if (checked.seed == 0 and checked.gavel is None and checked.memory_gib is None
                and not any(c.startswith(THROUGHPUT_PREFIX) for c in jobs)):
            return _plain_summary(jobs, checked)
    run = _run({c: np.asarray(v) for c, v in jobs.items()}, dict(attrs or {}), cluster, policy, seed,
               **chosen, policy_params=policy_params)
    return run.summary


# The keyword options of simulate besides seed and params; policy parameters live apart (params=).
SIM_OPTIONS = ("tiresias_compat", "gavel_compat", "restore_delay", "tick", "scheduling_interval",
               "record_timeseries", "progress", "memory_gib", "placement", "racks")


def _policy_params(policy: str | Mapping[str, Any], params: Mapping[str, Any] | None,
                   keywords: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The policy's parameters from ``params`` and the leftover keywords of ``where``. A keyword
    the policy does not declare is taken for a misspelt option: the error suggests the nearest
    option or parameter (the native check would only list the policy's parameters)."""
    if params is not None and not isinstance(params, Mapping):
        raise TypeError(f"{where}: params must be a mapping of policy parameters, got {type(params).__name__}")
    both = sorted(set(params or {}) & set(keywords))
    if both:
        raise ValueError(f"{where}: policy parameter(s) {both} given both in params and as keywords")
    if keywords:
        name = str(policy.get("name", "")) if isinstance(policy, Mapping) else str(policy).split("(", 1)[0]
        entry = next((e for e in registries.entries("policies") if e["name"] == name.strip()), None)
        if entry is not None:   # an unknown name is left to policy_spec's error
            declared = [p["name"] for p in entry["parameters"]]
            for key in keywords:
                if key in declared:
                    continue
                if entry["open_parameters"]:   # a Python policy takes any name, bar a near option
                    import difflib   # here: only a misspelt option needs it
                    close = difflib.get_close_matches(key, SIM_OPTIONS, n=1, cutoff=0.8)
                    if not close:
                        continue
                known = ["seed", "params", *SIM_OPTIONS, *declared]
                raise InvalidInputError(f"{where}: unknown option {key!r}{_did_you_mean(key, known)}")
    return {**(params or {}), **keywords}


def _did_you_mean(word: str, known: Sequence[str]) -> str:
    import difflib   # here: only an error message needs it
    close = difflib.get_close_matches(word, list(known), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else f"; known: {', '.join(known)}"


@dataclass
class _Run:
    """One simulation as arrays: ``order`` (None: the trace order) re-sorts the input rows;
    ``outputs`` are the columns the run adds to them."""

    spec: str
    models: list[dict[str, Any]]
    order: Any
    outputs: dict[str, Any]
    timeseries: dict[str, Any]
    summary: dict[str, Any]


@dataclass
class _Checked:
    """A run's options, typed and checked (:func:`_check`), before any column is converted."""

    spec: str
    models: list[dict[str, Any]]
    seed: int
    tiresias_compat: bool
    record_timeseries: bool
    restore_delay: float
    tick: float
    scheduling_interval: float
    gavel: dict[str, Any] | None
    placement: str | None
    progress: bool | None
    memory_gib: Any
    racks: tuple[int, int] | None


def _check(cols: Mapping[str, Any], cluster: ClusterLike, policy: str | Mapping[str, Any],
           seed: Any, *, tiresias_compat: Any = False, gavel_compat: Any = False, restore_delay: Any = 0.0,
           tick: Any = 0.0, scheduling_interval: Any = 0.0, record_timeseries: Any = True,
           progress: bool | None = None, memory_gib: Any = None, placement: str | None = "binpack",
           racks: tuple[int, int] | None = None, policy_params: Mapping[str, Any]) -> _Checked:
    """The options of :func:`simulate`, checked in its order, each bad one a one-line error."""
    spec = policy_spec(policy, **policy_params)
    models = cluster_spec(cluster)
    # Options typed here, so a wrong one is a one-line error naming it rather than the
    # binding's list of accepted signatures; the core checks their ranges.
    seed = _seed(seed)
    tiresias_compat, record_timeseries = (_flag("tiresias_compat", tiresias_compat),
                                          _flag("record_timeseries", record_timeseries))
    restore_delay, tick, scheduling_interval = (_seconds("restore_delay", restore_delay),
                                                _seconds("tick", tick),
                                                _seconds("scheduling_interval", scheduling_interval))
    if placement is not None and not isinstance(placement, str):
        raise TypeError(f"placement: expected a strategy name or None, got {placement!r:.60}")
    required = {"job_id", "submit_time", "num_gpu", "duration"}
    if missing := required - set(cols):
        raise ValueError(f"jobs lack columns {sorted(missing)} (unified job schema, docs/traces.md)")
    return _Checked(spec, models, seed, tiresias_compat, record_timeseries, restore_delay, tick,
                    scheduling_interval, _gavel_options(gavel_compat), placement, progress, memory_gib, racks)


def _native_run(c: _Checked, n: int, job_id: Any, submit_time: Any, num_gpu: Any, duration: Any, speed: Any,
                memory_gib: Any, placement: str | None) -> Any:
    """One native run (``_core.sim_run``) with its progress bar."""
    bar = None
    callback = None
    if c.progress or (c.progress is None and n >= _PROGRESS_AUTO_JOBS):
        from tqdm.auto import tqdm
        bar = tqdm(total=n, desc=f"simulate {c.spec}", unit="job")

        def callback(done: int) -> None:
            bar.update(done - bar.n)
    try:
        nodes_per_rack, racks_per_block = (int(c.racks[0]), int(c.racks[1])) if c.racks else (0, 0)
        options = _core.SimOptions(c.spec, tiresias_compat=c.tiresias_compat, restore_delay=c.restore_delay,
                                   tick=c.tick, scheduling_interval=c.scheduling_interval,
                                   record_timeseries=c.record_timeseries, progress=callback,
                                   placement=placement or "", seed=c.seed, nodes_per_rack=nodes_per_rack,
                                   racks_per_block=racks_per_block, gavel=c.gavel)
        return _core.sim_run(c.models, job_id, submit_time, num_gpu, duration, speed, memory_gib, options)
    finally:
        if bar is not None:
            bar.close()


def _finish(summary: dict[str, Any], raw: Any, c: _Checked) -> dict[str, Any]:
    summary.update(policy=c.spec, num_gpus=int(raw.total_gpus), seed=int(c.seed),
                   scheduling_points=int(raw.scheduling_points))
    return summary


def _plain_summary(cols: Mapping[str, Any], c: _Checked) -> dict[str, Any]:
    """:func:`_run`'s summary for seed 0 without gavel_compat, throughputs or memory_gib, in plain
    Python: the columns go to the core as they are (buffers: no copy through NumPy) and the
    finish-time fairness is reduced as NumPy reduces it."""
    n = len(cols["job_id"])
    raw = _native_run(c, n, cols["job_id"], cols["submit_time"], cols["num_gpu"], cols["duration"], None, None,
                      c.placement)
    summary: dict[str, Any] = raw.summary.to_dict()
    if c.record_timeseries and n:
        ts = raw.timeseries.to_lists()
        if ts["time"]:
            rho = _plain_finish_time_fairness(cols, raw.jobs.to_lists()["end_time"], ts, int(raw.total_gpus))
            if not all(math.isnan(r) for r in rho):
                summary["finish_time_fairness"] = _numpy_sums.nanmax(rho)
                summary["avg_finish_time_fairness"] = _numpy_sums.nanmean(rho)
    return _finish(summary, raw, c)


def _run(cols: dict[str, Any], attrs: Mapping[str, Any], cluster: ClusterLike, policy: str | Mapping[str, Any],
         seed: Any, *, policy_params: Mapping[str, Any], **options: Any) -> _Run:
    """The body of :func:`simulate` on columns (the job frame's, in trace order)."""
    checked = _check(cols, cluster, policy, seed, policy_params=policy_params, **options)
    spec, models, seed, gavel, placement = (checked.spec, checked.models, checked.seed, checked.gavel,
                                            checked.placement)
    n = len(cols["job_id"])
    order = None
    if seed and gavel is None:
        # Seeded tie-break among equal submit times; the trace order is otherwise kept.
        rng = np.random.default_rng(seed)
        order = np.lexsort((rng.permutation(n), np.asarray(cols["submit_time"])))
        cols = {c: np.asarray(v)[order] for c, v in cols.items()}
    durations = np.asarray(cols["duration"], dtype=np.float64)
    if gavel is None:
        speed = _speeds(cols, attrs, [m["name"] for m in models])
    else:
        durations, speed, gavel["reference_model"] = _gavel_steps(cols, attrs, [m["name"] for m in models])
        gavel.update(_gavel_colocation(cols, attrs, [m["name"] for m in models]))
        placement = None
    mem = None if checked.memory_gib is None else np.asarray(checked.memory_gib, dtype=np.float64)[
        np.arange(n) if order is None else order]
    raw = _native_run(checked, n, np.asarray(cols["job_id"], dtype=np.int64),
                      np.asarray(cols["submit_time"], dtype=np.float64),
                      np.asarray(cols["num_gpu"], dtype=np.int64), durations, speed, mem, placement)
    out = {k: np.asarray(v) for k, v in raw.jobs.to_dict().items()}
    jct = out["end_time"] - np.asarray(cols["submit_time"])
    dropped = out["dropped"].astype(bool)
    if dropped.any():   # Gavel-compatible mode only: no completion
        jct = jct.astype(np.float64)
        jct[dropped] = np.nan
    out["jct"] = jct
    total = int(raw.total_gpus)
    ts = {k: np.asarray(v) for k, v in raw.timeseries.to_dict().items()}
    for c in ("running_jobs", "pending_jobs", "busy_gpus"):
        ts[c] = ts[c].astype(np.int64)
    ts["utilization"] = ts["busy_gpus"] / total
    summary: dict[str, Any] = raw.summary.to_dict()
    if checked.record_timeseries and len(ts["time"]) and n:
        rho = _finish_time_fairness({**cols, **out}, ts, total)
        if gavel is not None:
            rho[dropped] = np.nan  # no finish, no finish-time fairness
        out["ftf_rho"] = rho
        if not np.isnan(rho).all():
            summary["finish_time_fairness"] = float(np.nanmax(rho))
            summary["avg_finish_time_fairness"] = float(np.nanmean(rho))
    return _Run(spec, models, order, out, ts, _finish(summary, raw, checked))


def compare(jobs: pd.DataFrame, cluster: ClusterLike, policies: Sequence[str], seeds: Iterable[int] | None = None,
            *, per_seed: bool = False, workers: int = 1, results: dict[str, SimResult] | None = None,
            progress: bool = False, **options: Any) -> pd.DataFrame:
    """Summaries of ``policies`` on the same jobs, cluster and options (:func:`simulate`).

    * ``seeds=None``: one run per policy (``seed=`` may be among the options); one row per
      policy with the summary's keys as columns.
    * ``seeds=range(5)``: each policy runs once per seed; one row per policy with, for every
      numeric summary key, ``<key>_mean`` and ``<key>_std`` (sample standard deviation over the
      seeds, 0 for a single seed), ``<key>_min``, ``<key>_max``, and ``seeds`` (how many).
      The agnostic policies draw models at random (see :func:`simulate`), so a comparison
      reports means with their spread rather than one draw.
    * ``per_seed=True`` (with ``seeds``): the runs themselves, one row per (policy, seed); feed
      it to :func:`gain` for per-seed ratios between two policies.
    * ``workers``: runs at once, in threads of this process (the simulator releases the GIL,
      so they use that many cores); the numbers do not depend on it.
    * ``results``: a dict that receives each policy's :class:`SimResult` of the first seed (for
      plots of one draw without running it again).
    * ``progress``: a tqdm bar over the runs.
    """
    if workers < 1:
        raise ValueError(f"compare: workers must be >= 1, got {workers}")
    policies = list(policies)
    if seeds is None:
        if per_seed:
            raise ValueError("compare: per_seed=True needs seeds (e.g. seeds=range(5))")
        seed_list = [options.pop("seed", 0)]
    else:
        if "seed" in options:
            raise ValueError("compare: give either seed= or seeds=, not both")
        seed_list = [int(s) for s in seeds]
        if not seed_list or len(set(seed_list)) != len(seed_list):
            raise ValueError(f"compare: seeds must be distinct and at least one, got {seed_list}")
    tasks = [(p, s) for p in policies for s in seed_list]
    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=len(tasks), desc="compare", unit="run")
        options.setdefault("progress", False)

    def run(task: tuple[str, int]) -> SimResult:
        r = simulate(jobs, cluster, task[0], seed=task[1], **options)
        if bar is not None:
            bar.update(1)
        return r

    try:
        if workers == 1:
            done = [run(t) for t in tasks]
        else:
            from concurrent.futures import ThreadPoolExecutor
            with ThreadPoolExecutor(max_workers=workers) as pool:
                done = list(pool.map(run, tasks))
    finally:
        if bar is not None:
            bar.close()
    if results is not None:
        for (p, s), r in zip(tasks, done):
            if s == seed_list[0]:
                results[p] = r
    if seeds is None:
        return pd.DataFrame([r.summary for r in done]).set_index("policy")
    runs = pd.DataFrame([{**r.summary, "policy": p} for (p, _), r in zip(tasks, done)])
    if per_seed:
        return runs.set_index(["policy", "seed"])
    keys = [c for c in runs.columns if c not in ("policy", "seed") and pd.api.types.is_numeric_dtype(runs[c])]
    g = runs.groupby("policy", sort=False)[keys]
    stats = {"mean": g.mean(), "std": g.std(ddof=1).fillna(0.0), "min": g.min(), "max": g.max()}
    out = pd.DataFrame(index=pd.Index(policies, name="policy").drop_duplicates())
    for k in keys:
        for name, frame in stats.items():
            out[f"{k}_{name}"] = frame[k].astype(np.float64)
    out["seeds"] = len(seed_list)
    return out


def gain(runs: pd.DataFrame, baseline: str, policy: str, metric: str = "avg_jct") -> dict[str, float]:
    """How many times lower ``metric`` is under ``policy`` than under ``baseline``, seed by seed,
    from ``compare(..., seeds=..., per_seed=True)``: ``mean``, ``std`` (sample), ``min``, ``max``
    of baseline / policy over the seeds both ran with."""
    if not isinstance(runs.index, pd.MultiIndex) or list(runs.index.names) != ["policy", "seed"]:
        raise ValueError("gain: expected compare(..., seeds=..., per_seed=True) (rows by policy and seed)")
    have = list(runs.index.get_level_values("policy").unique())
    for p in (baseline, policy):
        if p not in have:
            raise NotFoundError(f"gain: policy {p!r} not among the runs {have}")
    if metric not in runs.columns:
        raise NotFoundError(f"gain: no metric {metric!r} (have {sorted(runs.columns)})")
    ratio = (runs.loc[baseline, metric] / runs.loc[policy, metric]).dropna()
    if ratio.empty:
        raise ValueError(f"gain: {baseline!r} and {policy!r} share no seed")
    return {"mean": float(ratio.mean()), "std": float(ratio.std(ddof=1)) if len(ratio) > 1 else 0.0,
            "min": float(ratio.min()), "max": float(ratio.max())}


__all__ = ["GAVEL_COMPAT_OPTIONS", "SIM_OPTIONS", "SimResult", "cluster_spec", "compare", "gain", "policy_description", "policy_names", "policy_spec",
           "simulate", "simulate_summary"]
