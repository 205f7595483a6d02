"""Shared pieces of the Python fuzz campaign (tests/python/test_fuzz_*.py, tests/fuzz/README.md):
hypothesis settings that give the same examples on every CI run and more on request, a time limit
that turns a hang into a failure naming what hung, and mutations of valid documents."""
from __future__ import annotations

import contextlib
import copy
import json
import os
import signal
from typing import Any, Iterator

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

# GPUFLEET_FUZZ_EXAMPLES=N: N examples per campaign test, drawn at random (a longer local run).
EXAMPLES = int(os.environ.get("GPUFLEET_FUZZ_EXAMPLES") or 0)


def campaign(examples: int) -> settings:
    """``examples`` examples, derandomized and without a database (CI: the same inputs every
    run); with GPUFLEET_FUZZ_EXAMPLES set, that many random ones, failures printed with the
    blob that reproduces them (``@reproduce_failure``)."""
    return settings(max_examples=EXAMPLES or examples, derandomize=not EXAMPLES, database=None,
                    deadline=None, print_blob=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


class Hang(BaseException):
    """Raised by time_limit; a BaseException so that no ``except Exception`` swallows it."""


@contextlib.contextmanager
def time_limit(seconds: float, what: str) -> Iterator[None]:
    """Fails with Hang when the block runs longer than ``seconds`` (SIGALRM: the main thread,
    Python code; a native hang needs a subprocess with a timeout instead)."""
    def expired(signum: int, frame: object) -> None:
        raise Hang(f"{what}: still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


ODD_VALUES = st.sampled_from([
    -1, 0, 2**31, 2**63, 2**64, 10**30, -10**30, 1.5, -0.5, 1e308, "", "abc", "-1", "1e400",
    "99999999999999999999Gi", "0.0001", None, True, [], {}, [1], {"a": 1}, "\x00", "2024-01-01",
    "n1", "nvidia.com/gpu", "x" * 300]).map(copy.deepcopy)   # fresh lists and maps each draw


@st.composite
def mutated_document(draw, doc: Any) -> Any:
    """``doc`` with one to three changes at random places: a value replaced, a key dropped or
    added, a list entry repeated."""
    doc = json.loads(json.dumps(doc))
    for _ in range(draw(st.integers(1, 3))):
        parent, key = None, None
        node = doc
        while isinstance(node, (dict, list)) and node and draw(st.booleans()):
            keys = list(node) if isinstance(node, dict) else list(range(len(node)))
            parent, key = node, draw(st.sampled_from(keys))
            node = node[key]
        op = draw(st.sampled_from(["replace", "drop", "add", "repeat"]))
        if parent is None:
            if op == "replace":
                doc = draw(ODD_VALUES)
            continue
        if op == "replace":
            parent[key] = draw(ODD_VALUES)
        elif op == "drop":
            del parent[key]
        elif op == "add" and isinstance(parent, dict):
            parent[draw(st.sampled_from(["extra", "name", "node", "requests", "minor", "replicas"]))] = \
                draw(ODD_VALUES)
        elif op == "repeat" and isinstance(parent, list):
            parent.extend([parent[key]] * draw(st.integers(1, 3)))
    return doc
