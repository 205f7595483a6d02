"""Allocation from many threads at once gives exactly what each question gives alone: the CEL
programs, the selector cache and the native search share nothing mutable between calls."""
from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

from conftest import ROOT

from gpufleet.dra.scenario import load_dra_scenario
from gpufleet.dra.problem import DeviceMatcher

EXAMPLES = sorted((ROOT / "examples" / "dra").glob("*.yaml"))


def _answer(scenario, strategy: str) -> str:
    out = scenario.allocate(strategy)
    results = [[{k: v for k, v in r.items() if k != "shareID"} for r in a["devices"]["results"]]
               for a in out.results or []]
    return json.dumps([out.verdict, results, out.score], sort_keys=True)


def test_parallel_allocations_equal_serial_ones() -> None:
    scenarios = [load_dra_scenario(p) for p in EXAMPLES]
    jobs = [(s, strategy) for s in scenarios for strategy in ("pack", "first")] * 6
    serial = [_answer(s, st) for s, st in jobs]
    with ThreadPoolExecutor(max_workers=8) as pool:
        parallel = list(pool.map(lambda job: _answer(*job), jobs))
    assert parallel == serial


def test_one_matcher_shared_by_threads() -> None:
    matcher = DeviceMatcher()
    device = {"name": "d", "attributes": {"numa": {"int": 3}}}
    exprs = [f'device.attributes["x.example.com"].numa == {i % 5}' for i in range(200)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        got = list(pool.map(lambda e: matcher.matches(e, "x.example.com", device, "k"), exprs))
    assert got == [i % 5 == 3 for i in range(200)]
