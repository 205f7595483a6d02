"""Bounded numeric options: argparse types that refuse zero, negative or absurd counts on one line
(``gpufleet cycle: error: argument --cycles: 0 is out of range: 1 to 10,000``), before a command
starts work it could never finish. The limits are documented in docs/cli.md ("Input limits")."""
from __future__ import annotations

import argparse
import math
from typing import Callable

SEED_MAX = 2**63 - 1          # the core's seeds are signed 64-bit
CYCLES_MAX = 10_000           # a scheduling cycle of a large cluster takes up to a second
JOBS_MAX = 1_000_000          # generated synthetic jobs: about a million-job trace
SEEDS_MAX = 1_000             # seeds of a sweep: each one is a full run per grid point
WORKERS_MAX = 1_024
EXPERIMENTS_MAX = 100_000     # one sweep's grid: traces x policies x seeds x option values
STEPS_MAX = 1_000_000         # profiler steps (timed or warm-up)
DEVICE_MAX = 1_023            # a GPU index: below the 1,024 devices a node may have
REPLICAS_MAX = 1_000_000      # IDs per GPU: the start-up check then names what the kubelet takes
SECONDS_MAX = 10**9           # about 31 years: any longer delay or interval is a typo


def cluster_too_large(spec: str) -> str | None:
    """Why ``--cluster`` given as text ('N' or 'model:count,...') is too large to simulate, or
    None: a cluster of more GPUs than the traces' bound (the simulator counts GPUs in int32 and
    allocates per GPU) would exhaust memory before a job runs. A malformed spec is left to the
    simulator, which names what is wrong."""
    from gpufleet.sim import cluster_spec
    from gpufleet.traces.limits import MAX_GPUS
    try:
        total = sum(int(model.get("count", 0)) for model in cluster_spec(spec))
    except (ValueError, TypeError):
        return None
    if total > MAX_GPUS:
        return f"--cluster {spec}: {total:,} GPUs is more than the {MAX_GPUS:,} a simulated cluster may have"
    return None


def count(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: a whole number from ``low`` to ``high``."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number from {low:,} to {high:,}, "
                                             f"got {_shown(text)}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{_brief(text)} is out of range: {low:,} to {high:,}")
        return value
    return parse


def seconds(low: float = 0.0, high: float = SECONDS_MAX) -> Callable[[str], float]:
    """An argparse type: a finite number of seconds from ``low`` to ``high``."""
    return amount(low, high, "seconds")


def amount(low: float, high: float, unit: str) -> Callable[[str], float]:
    """An argparse type: a finite number (of ``unit``: seconds, MiB) from ``low`` to ``high``."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {unit} from {_number(low)} to "
                                             f"{_number(high)}, got {_shown(text)}") from None
        if not math.isfinite(value) or not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{_brief(text)} is out of range: {_number(low)} to "
                                             f"{_number(high)} {unit}")
        return value
    return parse


def _number(x: float) -> str:
    return f"{x:,.0f}" if x == int(x) else f"{x:g}"


def _brief(text: str) -> str:
    text = text.strip()
    return text if len(text) <= 24 else text[:21] + "..."


def _shown(text: str) -> str:
    return repr(_brief(text))
