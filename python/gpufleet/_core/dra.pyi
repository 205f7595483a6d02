"""
Kubernetes Dynamic Resource Allocation: the native search and its scores.
"""
from __future__ import annotations
import collections.abc
import typing
__all__: list[str] = ['dra_score', 'dra_solve']
def dra_score(problem: dict, choices: collections.abc.Sequence[tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex]]) -> dict:
    """
    The score of an allocation given as (request, device, candidate) choices.
    """
def dra_solve(problem: dict) -> dict:
    """
    Solves one DRA allocation question (a dict of dra::Problem's fields; see gpufleet.dra.problem). Returns verdict, choices (request, device, candidate), score, reason, steps, gave_up, proved_best, error_request and error_device.
    """
