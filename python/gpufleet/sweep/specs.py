"""The registry's spec syntax, ``"name(key=value, ...)"``, split into a name and keyword values:
the openb replay takes a strategy's parameters as keywords, and ``--option`` values are lists."""
from __future__ import annotations

import json
from typing import Any

__all__ = ["split_spec", "split_top_level"]


def split_top_level(text: str) -> list[str]:
    """Splits at commas outside brackets and quotes: ``"0,30"`` -> two parts, ``"[[1,2],[3,4]]"``
    one; parts are stripped."""
    parts, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts]


def _spec_value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        lowered = text.lower()
        return {"true": True, "false": False}.get(lowered, text.strip("\"'"))


def split_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``"fgd(integer_scores=false)"`` -> ``("fgd", {"integer_scores": False})``. Values are
    JSON (numbers, lists, strings) or true/false; ValueError for a malformed spec."""
    text = spec.strip()
    name, paren, rest = text.partition("(")
    if not paren:
        return text, {}
    if not rest.endswith(")") or not name.strip():
        raise ValueError(f"policy {spec!r}: expected NAME or NAME(key=value, ...)")
    params: dict[str, Any] = {}
    body = rest[:-1].strip()
    for part in split_top_level(body) if body else []:
        key, eq, value = part.partition("=")
        if not eq or not key.strip():
            raise ValueError(f"policy {spec!r}: expected key=value, got {part!r}")
        params[key.strip()] = _spec_value(value.strip())
    return name.strip(), params
