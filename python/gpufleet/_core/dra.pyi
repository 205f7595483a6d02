"""
Kubernetes Dynamic Resource Allocation: the native search and its scores.
"""
from __future__ import annotations
import collections.abc
import gpufleet._core.engine
import typing
__all__: list[str] = ['DraAnswer', 'DraClaimRequests', 'DraHeld', 'DraNodeTable', 'dra_score', 'dra_solve', 'dra_solve_prepared', 'engine_dra_holdings', 'engine_dra_set']
class DraNodeTable:
    """
    What one node profile offers, by position: devices (multi, counters, unit, root), counter and capacity totals, packing units (gpufleet.dra.node_devices builds it).
    """
    def __init__(self, table: dict) -> None:
        ...
    @property
    def num_devices(self) -> int:
        ...
class DraClaimRequests:
    """
    What a set of claims asks of a node of one profile: requests with their candidates, constraints, twin signatures; checked against `table`.
    """
    def __init__(self, table: DraNodeTable, requests: dict) -> None:
        ...
class DraHeld:
    """
    What earlier claims hold on one node of `table`: devices held whole, devices whose capacity is consumed (once per result), capacity used per slot, counters used by devices published for other nodes.
    """
    def __init__(self, table: DraNodeTable, in_use: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = [], sharers: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = [], capacity_used: collections.abc.Sequence[tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex]] = [], counter_used: collections.abc.Sequence[tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex]] = []) -> None:
        ...
class DraAnswer:
    """
    One native answer (see dra_solve for its fields).
    """
    def to_dict(self) -> dict:
        ...
    @property
    def gave_up(self) -> bool:
        ...
    @property
    def ok(self) -> bool:
        ...
    @property
    def rank(self) -> tuple[int, int, int]:
        ...
    @property
    def reason(self) -> str:
        ...
    @property
    def steps(self) -> int:
        ...
    @property
    def verdict(self) -> str:
        ...
def dra_score(problem: dict, choices: collections.abc.Sequence[tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex]]) -> dict:
    """
    The score of an allocation given as (request, device, candidate) choices.
    """
def dra_solve(problem: dict) -> dict:
    """
    Solves one DRA allocation question (a dict of dra::Problem's fields; see gpufleet.dra.problem). Returns verdict, choices (request, device, candidate), score, reason, steps, gave_up, proved_best, error_request and error_device.
    """
def dra_solve_prepared(questions: collections.abc.Sequence[tuple[DraNodeTable, DraClaimRequests, DraHeld]], objective: str = 'pack', budget: typing.SupportsInt | typing.SupportsIndex = 200000) -> list[DraAnswer]:
    """
    Answers each (DraNodeTable, DraClaimRequests, DraHeld) question; a list of DraAnswer.
    """
def engine_dra_holdings(engine: gpufleet._core.engine.EngineScheduler) -> dict:
    """
    What each task's claims hold: {task: (node, [(request, device, candidate)])}.
    """
def engine_dra_set(engine: gpufleet._core.engine.EngineScheduler, tables: collections.abc.Sequence[DraNodeTable], nodes: collections.abc.Sequence[tuple[str, typing.SupportsInt | typing.SupportsIndex, DraHeld, collections.abc.Sequence[collections.abc.Sequence[tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex]]], collections.abc.Sequence[tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex]]]], tasks: list, resources: collections.abc.Mapping[str, typing.SupportsFloat | typing.SupportsIndex] = {}, queue_devices: collections.abc.Mapping[str, collections.abc.Mapping[str, typing.SupportsFloat | typing.SupportsIndex]] = {}, strategy: str = 'pack') -> None:
    """
    Sets the engine's DRA ledger (gpufleet.dra.engine builds the arguments): tables per node profile; nodes as (name, profile, DraHeld, counterparts, claims' usage); tasks as (name, DraClaimRequests or None per profile, refusal per profile); for queue trees, resources ({queue resource: devices the slices publish}) and queue_devices ({task: {queue resource: devices its claims take}}); the strategy that picks the claims' devices (pack or first). Raises ValueError for bad input, leaving the ledger as it was.
    """
