"""
The job-time simulator.
"""
from __future__ import annotations
import collections.abc
import numpy
import numpy.typing
import typing
__all__: list[str] = ['SimJobs', 'SimOptions', 'SimRun', 'SimSummary', 'SimTimeseries', 'maximize_lp', 'maximize_lp_centred', 'sim_check_policy', 'sim_run']
class SimJobs:
    """
    A simulator run's per-job columns, in input order, as NumPy arrays (one property per column, each a fresh copy). Immutable.
    """
    columns: typing.ClassVar[list] = ['first_start', 'end_time', 'queueing_delay', 'run_time', 'gpu_time', 'service', 'preemptions', 'migrations', 'max_nodes', 'dropped']
    def __len__(self) -> int:
        """
        Number of rows.
        """
    def __repr__(self) -> str:
        ...
    def to_dict(self) -> dict:
        """
        Every column by name, as NumPy arrays in a fixed order (a DataFrame's input).
        """
    def to_lists(self) -> dict:
        """
        Every column by name, as Python lists (float, int or bool values) in to_dict's order; needs no NumPy.
        """
    @property
    def dropped(self) -> numpy.ndarray:
        """
        Removed unfinished (Gavel-compatible mode: a stuck multi-GPU job); its end_time is its last try.
        """
    @property
    def end_time(self) -> numpy.ndarray:
        """
        Seconds at which the job finished (-1: never).
        """
    @property
    def first_start(self) -> numpy.ndarray:
        """
        Seconds at which the job first ran (-1: never).
        """
    @property
    def gpu_time(self) -> numpy.ndarray:
        """
        run_time x GPUs.
        """
    @property
    def max_nodes(self) -> numpy.ndarray:
        """
        Most nodes the job's GPUs spanned in one start (0 without device placement).
        """
    @property
    def migrations(self) -> numpy.ndarray:
        """
        Times the job moved to another GPU model.
        """
    @property
    def preemptions(self) -> numpy.ndarray:
        """
        Times the job was preempted.
        """
    @property
    def queueing_delay(self) -> numpy.ndarray:
        """
        Total seconds pending.
        """
    @property
    def run_time(self) -> numpy.ndarray:
        """
        Seconds holding GPUs (restore stalls included).
        """
    @property
    def service(self) -> numpy.ndarray:
        """
        Attained service: gpu_time x the model's performance factor.
        """
class SimTimeseries:
    """
    A simulator run's state after each scheduling point, as NumPy columns (empty unless the run recorded it). Immutable.
    """
    columns: typing.ClassVar[list] = ['time', 'running_jobs', 'pending_jobs', 'busy_gpus']
    def __len__(self) -> int:
        """
        Number of rows.
        """
    def __repr__(self) -> str:
        ...
    def to_dict(self) -> dict:
        """
        Every column by name, as NumPy arrays in a fixed order (a DataFrame's input).
        """
    def to_lists(self) -> dict:
        """
        Every column by name, as Python lists (float, int or bool values) in to_dict's order; needs no NumPy.
        """
    @property
    def busy_gpus(self) -> numpy.ndarray:
        """
        GPUs held after it.
        """
    @property
    def pending_jobs(self) -> numpy.ndarray:
        """
        Jobs submitted and waiting after it.
        """
    @property
    def running_jobs(self) -> numpy.ndarray:
        """
        Jobs running after it.
        """
    @property
    def time(self) -> numpy.ndarray:
        """
        Seconds of the scheduling point.
        """
class SimSummary:
    """
    A simulator run's totals (docs/simulator.md). Immutable.
    """
    def __repr__(self) -> str:
        ...
    def to_dict(self) -> dict:
        """
        Plain data with stable snake_case keys, in a fixed order (jobs_spanning_nodes only when devices were placed, dropped_jobs only in the Gavel-compatible mode).
        """
    @property
    def avg_jct(self) -> float:
        """
        Mean job completion time, seconds.
        """
    @property
    def avg_queueing_delay(self) -> float:
        """
        Mean seconds pending.
        """
    @property
    def dropped_jobs(self) -> int | None:
        """
        Jobs removed unfinished (not in the JCT figures); None outside the Gavel-compatible mode.
        """
    @property
    def gpu_utilization(self) -> float:
        """
        Busy GPU-seconds / (GPUs x makespan).
        """
    @property
    def jobs_spanning_nodes(self) -> int | None:
        """
        Jobs whose GPUs were ever on more than one node; None when no devices were placed.
        """
    @property
    def makespan(self) -> float:
        """
        Last completion minus first submission, seconds.
        """
    @property
    def migrations(self) -> int:
        """
        Migrations between GPU models over all jobs.
        """
    @property
    def num_jobs(self) -> int:
        """
        Jobs simulated.
        """
    @property
    def p50_jct(self) -> float:
        """
        Median JCT.
        """
    @property
    def p95_jct(self) -> float:
        """
        95th percentile JCT.
        """
    @property
    def p99_jct(self) -> float:
        """
        99th percentile JCT.
        """
    @property
    def preemptions(self) -> int:
        """
        Preemptions over all jobs.
        """
class SimRun:
    """
    What the job-time simulator returns (gpufleet.sim.simulate shapes it into DataFrames): per-job columns, the time series, the summary and the pool's models. Immutable.
    """
    def __repr__(self) -> str:
        ...
    def to_dict(self) -> dict:
        """
        Plain data: jobs and timeseries (column dicts), summary, models, total_gpus, scheduling_points.
        """
    @property
    def jobs(self) -> SimJobs:
        """
        Per-job columns (SimJobs), in input order.
        """
    @property
    def models(self) -> list[str]:
        """
        The pool's GPU model names, in its order.
        """
    @property
    def scheduling_points(self) -> int:
        """
        Times the policy was asked.
        """
    @property
    def summary(self) -> SimSummary:
        """
        The run's totals (SimSummary).
        """
    @property
    def timeseries(self) -> SimTimeseries:
        """
        State after each scheduling point (SimTimeseries).
        """
    @property
    def total_gpus(self) -> int:
        """
        GPUs in the pool.
        """
class SimOptions:
    """
    The settings of one simulator run (gpufleet.sim.simulate documents each), given by keyword and checked when made; immutable. sim_run takes it after the job columns.
    """
    def __init__(self, policy: str, *, tiresias_compat: bool = False, restore_delay: typing.SupportsFloat | typing.SupportsIndex = 0.0, tick: typing.SupportsFloat | typing.SupportsIndex = 0.0, scheduling_interval: typing.SupportsFloat | typing.SupportsIndex = 0.0, record_timeseries: bool = True, progress: typing.Any = None, placement: str = 'binpack', seed: typing.SupportsInt | typing.SupportsIndex = 0, nodes_per_rack: typing.SupportsInt | typing.SupportsIndex = 0, racks_per_block: typing.SupportsInt | typing.SupportsIndex = 0, gavel: typing.Any = None) -> None:
        ...
    def __repr__(self) -> str:
        ...
    @property
    def gavel_compat(self) -> bool:
        """
        Whether Gavel's simulator is reproduced (gavel= was given).
        """
    @property
    def placement(self) -> str:
        """
        The placement strategy giving starts real devices; "" counts GPUs only.
        """
    @property
    def policy(self) -> str:
        """
        The policy spec, e.g. "las" or "fifo(x=1)".
        """
    @property
    def seed(self) -> int:
        """
        Seeds the agnostic policies' model draw.
        """
def maximize_lp(a: collections.abc.Sequence[collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex]], b: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex], c: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex], max_iterations: typing.Any = 100000) -> tuple[float, numpy.typing.NDArray[numpy.float64]]:
    """
    Maximises c.x subject to a x <= b, x >= 0 with COIN-OR CLP (the solver behind gavel-lp); `a` is a list of rows (or a 2-D array). Returns (objective, x). ValueError for bad shapes, non-finite or too large entries, and infeasible or unbounded LPs; RuntimeError when max_iterations is reached.
    """
def maximize_lp_centred(a: collections.abc.Sequence[collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex]], b: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex], c: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex], row_weights: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex] = [], column_weights: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex] = []) -> tuple[float, numpy.typing.NDArray[numpy.float64]]:
    """
    Like maximize_lp, but returns the centre of the optimal face (the limit of the central path, where an interior-point solver ends; with c = 0 the analytic centre of the feasible set). Optional barrier weights per row (> 0) and per column (0: the column is free of x >= 0). ValueError also when the feasible set has no interior.
    """
def sim_check_policy(spec: str) -> None:
    """
    Raises KeyError/ValueError if the policy spec is not valid.
    """
def sim_run(cluster: typing.Any, job_id: typing.Any, submit_time: typing.Any, num_gpu: typing.Any, duration: typing.Any, speed: typing.Any, memory_gib: typing.Any, options: SimOptions) -> SimRun:
    """
    Runs the job-time simulator over the job columns with the run's SimOptions; see gpufleet.sim.simulate for the friendly wrapper.
    """
