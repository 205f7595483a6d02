"""Shared pieces of the Python fuzz campaign (tests/python/test_fuzz_*.py, tests/fuzz/README.md):
hypothesis settings that give the same examples on every CI run and more on request, and a time
limit that turns a hang into a failure naming what hung."""
from __future__ import annotations

import contextlib
import os
import signal
from typing import Iterator

from hypothesis import HealthCheck, settings

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
