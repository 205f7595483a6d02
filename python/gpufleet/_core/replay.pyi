"""
The openb GPU-sharing replay.
"""
from __future__ import annotations
import numpy
import typing
__all__: list[str] = ['OpenbReplayRun', 'ReplayOptions']
class OpenbReplayRun:
    """
    What the native openb replay returns (gpufleet.replay.replay_openb shapes it into a ReplayResult): one NumPy column per series with a row per arrival (each access a fresh copy), the cluster's GPUs, the typical-pod workload and the final cluster. Immutable.
    """
    columns: typing.ClassVar[list] = ['pod', 'placed', 'node', 'arrived', 'allocated', 'fragmented', 'idle', 'failed', 'failed_gpu']
    def __len__(self) -> int:
        """
        Number of arrivals.
        """
    def __repr__(self) -> str:
        ...
    def to_dict(self) -> dict:
        """
        Plain data: every per-arrival column by name, gpu_capacity and workload (not the cluster; its snapshot() serialises it).
        """
    @property
    def allocated(self) -> numpy.ndarray:
        """
        Allocated GPU share / cluster GPUs.
        """
    @property
    def arrived(self) -> numpy.ndarray:
        """
        Arrived GPU requests / cluster GPUs.
        """
    @property
    def cluster(self) -> typing.Any:
        """
        The final state, a Cluster of its own.
        """
    @property
    def failed(self) -> numpy.ndarray:
        """
        Failed pods so far.
        """
    @property
    def failed_gpu(self) -> numpy.ndarray:
        """
        GPU requests of the failed pods so far / cluster GPUs.
        """
    @property
    def fragmented(self) -> numpy.ndarray:
        """
        Fragmented free GPU share / cluster GPUs (against the typical pods).
        """
    @property
    def gpu_capacity(self) -> int:
        """
        GPUs in the cluster.
        """
    @property
    def idle(self) -> numpy.ndarray:
        """
        Free GPU share / cluster GPUs.
        """
    @property
    def node(self) -> numpy.ndarray:
        """
        Row of the input nodes the pod went to, -1 when it failed.
        """
    @property
    def placed(self) -> numpy.ndarray:
        """
        1 placed, 0 failed.
        """
    @property
    def pod(self) -> numpy.ndarray:
        """
        Row of the input pods (resampled pods repeat a row).
        """
    @property
    def workload(self) -> typing.Any:
        """
        The typical pods fgd and the fragmentation measure used, as plain data.
        """
class ReplayOptions:
    """
    How the openb replay runs: the placement strategy and its parameters, the seed, when arrivals stop, the typical pods' coverage and the tie rule. Checked when made; immutable.
    """
    def __init__(self, *, policy: str = 'fgd', params: typing.Any = None, seed: typing.Any = 0, stop_at: typing.SupportsFloat | typing.SupportsIndex = 1.3, coverage: typing.SupportsFloat | typing.SupportsIndex = 0.95, ties: str = 'seeded') -> None:
        ...
    def __repr__(self) -> str:
        ...
    @property
    def coverage(self) -> float:
        """
        Share of the pods the typical-pod workload covers.
        """
    @property
    def params(self) -> typing.Any:
        """
        The strategy's parameters (a dict).
        """
    @property
    def policy(self) -> str:
        """
        A registered placement strategy's name.
        """
    @property
    def seed(self) -> int:
        """
        Seeds the arrival order, the resampling and the tie order.
        """
    @property
    def stop_at(self) -> float:
        """
        Arrived GPU requests / cluster GPUs at which arrivals stop.
        """
    @property
    def ties(self) -> str:
        """
        Which of equally scored nodes a pod takes: seeded, name or random.
        """
def _replay_openb(nodes: dict, pods: dict, options: ReplayOptions) -> OpenbReplayRun:
    """
    Native openb replay; use gpufleet.replay.replay_openb. `nodes` has the columns name, cpu_milli, memory_mib, num_gpu and model; `pods` name, cpu_milli, memory_mib, num_gpu, gpu_milli and gpu_spec (a list of GPU models per pod), each a list.
    """
