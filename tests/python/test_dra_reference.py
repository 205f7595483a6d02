"""Kubernetes' own allocator as the reference: on 600 recorded scenarios (shared/reference/dra,
answers from k8s.io/dynamic-resource-allocation's structured allocator) gpufleet gives the same
verdict (allocated / unallocatable / error) on every one, with a valid allocation each time it
allocates, for both strategies."""
from __future__ import annotations

import json
from collections import Counter

import pytest
from conftest import ROOT, missing_shared_data
from dra_validity import check_allocation

from gpufleet.dra import allocate

CASES = (ROOT / ".." / "shared" / "reference" / "dra" / "upstream-allocator-cases.jsonl").resolve()


def _cases() -> list[dict]:
    if not CASES.is_file():
        missing_shared_data(CASES)
    return [json.loads(line) for line in CASES.read_text().splitlines() if line.strip()]


def _verdict(answer: dict) -> str:
    if answer.get("error"):
        return "error"
    return "allocated" if answer.get("results") is not None else "unallocatable"


@pytest.mark.parametrize("strategy", ["pack", "first"])
def test_same_verdict_as_kubernetes_on_every_reference_case(strategy: str) -> None:
    cases = _cases()
    assert len(cases) == 600
    mismatches = []
    invalid = []
    tally: Counter[str] = Counter()
    for case in cases:
        s = case["scenario"]
        want = _verdict(case["answer"])
        tally[want] += 1
        out = allocate(s["node"], s["claims"], s["classes"], s["slices"], features=s["features"],
                       strategy=strategy)
        if out.verdict != want:
            mismatches.append((case["id"], want, out.verdict, out.reason))
            continue
        if out.ok:
            problems = check_allocation(s["claims"], s["classes"], s["slices"], out.results)
            if problems:
                invalid.append((case["id"], problems))
            assert all(r["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] == ["node-1"]
                       for r in out.results)
        if want == "error":
            assert out.reason == case["answer"]["error"] or strategy == "pack", (case["id"], out.reason)
    assert tally == Counter({"allocated": 239, "unallocatable": 328, "error": 33})
    assert not mismatches, mismatches[:5]
    assert not invalid, invalid[:5]


def test_first_strategy_picks_kubernetes_devices() -> None:
    """Kubernetes takes the first devices that fit; strategy "first" reproduces its choice."""
    for case in _cases():
        s = case["scenario"]
        if _verdict(case["answer"]) != "allocated":
            continue
        out = allocate(s["node"], s["claims"], s["classes"], s["slices"], features=s["features"],
                       strategy="first")
        got = [[(r["request"], r["device"]) for r in a["devices"]["results"]] for a in out.results]
        want = [[(r["request"], r["device"]) for r in a["devices"]["results"]]
                for a in case["answer"]["results"]]
        assert got == want, case["id"]
