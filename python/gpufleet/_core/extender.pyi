"""
The kube-scheduler extender protocol's filter and prioritize over a Cluster.
"""
from __future__ import annotations
import gpufleet._core.cluster
import typing
__all__: list[str] = ['host_priorities', 'partition_nodes']
def host_priorities(cluster: gpufleet._core.cluster.Cluster, pod: typing.Any, nodes: list, strategy: str = 'binpack', max_priority: typing.Any = 10) -> list:
    """
    The extender's prioritize in one native call: [{'Host': name, 'Score': s}] with s the node's score scaled from [0, 100] to [0, max_priority] (rounded half to even); 0 for a node the cluster does not have. Raises TypeError for an entry that is not a string, ValueError for an unknown strategy or a max_priority outside 1 to 2^31-1.
    """
def partition_nodes(cluster: gpufleet._core.cluster.Cluster, pod: typing.Any, nodes: list) -> tuple:
    """
    The extender's filter in one native call: (passed, failed, unresolvable, unknown).
    
    `nodes` is a list of node names, read once when the call starts (another thread may change the list meanwhile). `passed` lists the nodes that fit, in the given order; `failed` maps a node that does not fit now to the reason (preemption may help); `unresolvable` maps a node that can never fit to the reason; `unknown` lists names the cluster does not have. Raises TypeError naming the first entry that is not a string.
    """
