"""Kubernetes quantity strings ("500m", "16Gi", "1e3") <-> exact numbers, at the HTTP edge only.

The native core parses quantities itself; the extender needs them only to add container requests
together and to report usage, so an exact Decimal is enough and avoids float rounding.
"""
from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

_SUFFIX: dict[str, Decimal] = {
    "": Decimal(1), "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("0.001"),
    "k": Decimal(10) ** 3, "M": Decimal(10) ** 6, "G": Decimal(10) ** 9,
    "T": Decimal(10) ** 12, "P": Decimal(10) ** 15, "E": Decimal(10) ** 18,
    "Ki": Decimal(2) ** 10, "Mi": Decimal(2) ** 20, "Gi": Decimal(2) ** 30,
    "Ti": Decimal(2) ** 40, "Pi": Decimal(2) ** 50, "Ei": Decimal(2) ** 60,
}
_RE = re.compile(r"^\+?([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:([eE][+-]?[0-9]{1,2})|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]))?$")


def parse(value: object) -> Decimal:
    """A quantity as an exact Decimal; ints/floats from JSON are accepted. ValueError otherwise."""
    if isinstance(value, bool):
        raise ValueError(f"invalid quantity {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"invalid quantity {value!r}: negative")
        return Decimal(value)
    if isinstance(value, float):
        if value < 0 or value != value:
            raise ValueError(f"invalid quantity {value!r}")
        return Decimal(str(value))
    if not isinstance(value, str):
        raise ValueError(f"invalid quantity {value!r}: not a string")
    m = _RE.match(value.strip())
    if not m:
        raise ValueError(f"invalid quantity {value!r}")
    number, exp, suffix = m.groups()
    try:
        d = Decimal(number)
    except InvalidOperation as e:  # pragma: no cover - the regex already rules this out
        raise ValueError(f"invalid quantity {value!r}") from e
    if exp:
        return d * (Decimal(10) ** int(exp[1:]))
    return d * _SUFFIX[suffix or ""]


def format_quantity(d: Decimal) -> str:
    """Canonical text the core accepts: a plain integer, or milli units when fractional."""
    if d == d.to_integral_value():
        return str(int(d))
    milli = (d * 1000).to_integral_value(rounding="ROUND_CEILING")  # Kubernetes rounds up
    return f"{int(milli)}m"


def to_int(value: object) -> int:
    """Whole units, rounding fractions up as Kubernetes does for byte-like quantities."""
    return int(parse(value).to_integral_value(rounding="ROUND_CEILING"))
