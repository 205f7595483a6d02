"""
Queue trees: objects, fair shares, the multi-tenant simulation.
"""
from __future__ import annotations
import collections.abc
import numpy
import numpy.typing
import typing
__all__: list[str] = ['queue_drs', 'queue_fair_shares', 'queue_objects', 'queue_tree_check', 'simulate_queues']
def queue_drs(specs: typing.Any, usage: dict) -> dict:
    """
    Kueue's Dominant Resource Share of every queue for leaf usage (a fraction; inf for weight 0).
    """
def queue_fair_shares(specs: typing.Any, capacity: dict, requests: dict, policy: str = 'kai', usage: typing.Any = None, k_value: typing.SupportsFloat | typing.SupportsIndex = 0.0) -> dict:
    """
    Fair shares of every queue ({queue: {resource: amount}}) for leaf requests.
    """
def queue_objects(objects: typing.Any) -> list:
    """
    KAI Queue, Kueue ClusterQueue/Cohort and Volcano Queue objects (dicts as their YAML reads) as gpufleet queue dicts; implicit Kueue cohorts are added.
    """
def queue_tree_check(specs: typing.Any) -> None:
    """
    Checks gpufleet queue dicts as a tree; ValueError names the first problem.
    """
def simulate_queues(specs: typing.Any, gpus: typing.SupportsInt | typing.SupportsIndex, id: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], submit_time: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], duration: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], num_gpu: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], queue: collections.abc.Sequence[str], priority: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], options: dict = {}) -> dict:
    """
    The multi-tenant simulation over a queue tree; columns of jobs and queue samples.
    """
