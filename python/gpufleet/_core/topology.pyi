"""
Gangs placed by network topology.
"""
from __future__ import annotations
import gpufleet._core.cluster
import typing
__all__: list[str] = ['place_gang', 'topology_domains']
def place_gang(cluster: gpufleet._core.cluster.Cluster, topology: typing.Any, gang: typing.Any, strategy: str = 'binpack', commit: bool = False) -> dict:
    """
    Where a gang goes across topology levels: {'placed', 'reason', 'level', 'domain', 'groups': [{'name', 'level', 'domain', 'nodes': [(node, pods)], 'pods' (with commit)}]}. With commit, every pod is planned on its node and bound, all or none.
    """
def topology_domains(cluster: gpufleet._core.cluster.Cluster, topology: typing.Any) -> dict:
    """
    Each node's domain on every level (columns level, domain, node) and the nodes outside.
    """
