"""Kubernetes quantity strings ("500m", "16Gi", "1e3") read for a node's allocatable counts.

Parsing is the native core's: one grammar and one set of bounds for every entry point
(``gpufleet._core.parse_quantity_exact``); a pod's requests are read and added there too
(``convert.effective_requests``). The core is imported inside the functions so that
convert/protocol stay importable without it.
"""
from __future__ import annotations

import math
from decimal import Decimal


def _text(value: object) -> str:
    # JSON numbers are accepted as Kubernetes' JSON decoding does; everything else must be text.
    if isinstance(value, bool) or value is None:
        raise ValueError(f"invalid quantity {value!r}: expected a string or a number")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"invalid quantity {value!r}: not a finite number")
        return repr(value)
    if isinstance(value, str):
        return value
    raise ValueError(f"invalid quantity {value!r}: expected a string or a number")


def parse(value: object, resource: str | None = None) -> Decimal:
    """A quantity as an exact Decimal. With ``resource``, that resource's rules apply too (whole
    numbers only for extended resources such as nvidia.com/gpu). ValueError otherwise."""
    from gpufleet import _core

    text = _text(value)
    if resource is not None:
        _core.parse_resource_quantity(resource, text)
    return Decimal(_core.parse_quantity_exact(text))


def to_int(value: object) -> int:
    """Whole units, rounding fractions up as Kubernetes does for byte-like quantities."""
    from gpufleet import _core

    return int(_core.parse_quantity(_text(value)))
