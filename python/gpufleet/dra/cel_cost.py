"""A worst-case cost estimate for a compiled selector, so that an expression too expensive to run
on every device is refused before it runs (Kubernetes refuses a DRA selector whose estimated cost
passes 1,000,000, ``resourceapi.CELSelectorExpressionMaxCost``).

The estimate walks the checked expression (cel.expr.CheckedExpr, read from the program's
serialized form) under gpufleet's own cost model, not Kubernetes' estimator, so the two can
differ near the limit:

- every node of the expression costs 1;
- a comprehension (``all``, ``exists``, ``map``, ``filter``...) costs its range, plus the size of
  the range times its loop condition and step: a literal list has its length, anything taken from
  a device at most 64 entries (a list attribute holds at most 64, a device at most 32 attributes
  and capacities);
- a string function (``matches``, ``contains``, ``split``...) and ``in`` cost a tenth of what they
  read, where a literal has its length and a device's string at most 64 characters.
"""
from __future__ import annotations

import math
from typing import Any

MAX_COST = 1_000_000
DEVICE_BOUND = 64  # entries of a device's lists and maps, characters of its strings
_LINEAR = {"matches", "contains", "startsWith", "endsWith", "split", "replace", "lowerAscii",
           "upperAscii", "trim", "indexOf", "lastIndexOf", "join", "substring", "charAt", "includes",
           "@in", "size", "_+_"}


def _fields(data: bytes) -> dict[int, list[Any]]:
    """Protocol buffer wire format: field number -> values (ints, or bytes for length-delimited)."""
    out: dict[int, list[Any]] = {}
    i = 0

    def varint() -> int:
        nonlocal i
        shift = value = 0
        while True:
            b = data[i]
            i += 1
            value |= (b & 0x7F) << shift
            if b < 0x80:
                return value
            shift += 7

    while i < len(data):
        key = varint()
        number, wire = key >> 3, key & 7
        if wire == 0:
            value: Any = varint()
        elif wire == 1:
            value, i = data[i:i + 8], i + 8
        elif wire == 2:
            n = varint()
            value, i = data[i:i + n], i + n
        elif wire == 5:
            value, i = data[i:i + 4], i + 4
        else:
            raise ValueError(f"unexpected wire type {wire}")
        out.setdefault(number, []).append(value)
    return out


def _one(fields: dict[int, list[Any]], number: int) -> Any:
    values = fields.get(number)
    return values[-1] if values else None


class _Walk:
    def __init__(self) -> None:
        self.cost = 0

    def size(self, expr: dict[int, list[Any]]) -> int:
        """An upper bound on the entries (list) or characters (string) the expression gives."""
        if 7 in expr:  # a list literal
            return len(_fields(_one(expr, 7)).get(1, []))
        if 3 in expr:  # a constant
            const = _fields(_one(expr, 3))
            text = _one(const, 6) if 6 in const else _one(const, 7)
            return len(text) if text is not None else 1
        return DEVICE_BOUND

    def visit(self, raw: bytes | None) -> int:
        """The cost of one expression node and everything under it."""
        if raw is None:
            return 0
        expr = _fields(raw)
        cost = 1
        if 5 in expr:  # select
            cost += self.visit(_one(_fields(_one(expr, 5)), 1))
        elif 6 in expr:  # call
            call = _fields(_one(expr, 6))
            args = [_fields(a) for a in call.get(3, [])]
            target = _one(call, 1)
            cost += self.visit(target) + sum(self.visit(a) for a in call.get(3, []))
            name = (_one(call, 2) or b"").decode()
            if name in _LINEAR:
                read = sum(self.size(a) for a in args) + (self.size(_fields(target)) if target else 0)
                cost += math.ceil(read / 10)
        elif 7 in expr:  # list literal
            cost += sum(self.visit(e) for e in _fields(_one(expr, 7)).get(1, []))
        elif 8 in expr:  # map or message literal
            for entry in _fields(_one(expr, 8)).get(2, []):
                e = _fields(entry)
                cost += self.visit(_one(e, 3)) + self.visit(_one(e, 4))
        elif 9 in expr:  # comprehension
            comp = _fields(_one(expr, 9))
            rng = _one(comp, 2)
            n = self.size(_fields(rng)) if rng is not None else 0
            cost += self.visit(rng) + self.visit(_one(comp, 4)) + self.visit(_one(comp, 7))
            cost += n * (self.visit(_one(comp, 5)) + self.visit(_one(comp, 6)))
        return cost


def estimated_cost(serialized: bytes) -> int:
    """The estimate for a program's serialized form (a google.protobuf.Any of a CheckedExpr)."""
    checked = _fields(_one(_fields(serialized), 2))
    return _Walk().visit(_one(checked, 4))
