"""NumPy's float64 reductions in plain Python, equal to NumPy's to the last bit, so that a summary
computed without importing NumPy (the command line's short runs) prints exactly what the NumPy
path prints.

``numpy.sum`` of a float64 array is not a left-to-right sum: it adds in blocks of up to 128
values with eight running sums and splits longer runs in halves (pairwise summation);
:func:`nansum` follows the same order.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

_BLOCK = 128   # NumPy's pairwise block size
_LANES = 8     # running sums within a block


def _pairwise(values: Sequence[float], lo: int, n: int) -> float:
    if n < _LANES:
        total = -0.0
        for i in range(lo, lo + n):
            total += values[i]
        return total
    if n <= _BLOCK:
        r = list(values[lo:lo + _LANES])
        whole = n - n % _LANES
        for i in range(_LANES, whole, _LANES):
            for j in range(_LANES):
                r[j] += values[lo + i + j]
        total = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
        for i in range(lo + whole, lo + n):
            total += values[i]
        return total
    half = n // 2
    half -= half % _LANES
    return _pairwise(values, lo, half) + _pairwise(values, lo + half, n - half)


def nansum(values: Sequence[float]) -> float:
    """``numpy.nansum`` of float64 values (NaN counts as 0)."""
    clean = [0.0 if math.isnan(v) else v for v in values]
    return 0.0 + _pairwise(clean, 0, len(clean))


def nanmean(values: Sequence[float]) -> float:
    """``numpy.nanmean``: the sum of the values that are not NaN over their count (NaN if none)."""
    count = sum(1 for v in values if not math.isnan(v))
    return nansum(values) / count if count else math.nan


def nanmax(values: Sequence[float]) -> float:
    """``numpy.nanmax``: the largest value that is not NaN (NaN if none)."""
    return max((v for v in values if not math.isnan(v)), default=math.nan)
