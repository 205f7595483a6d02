"""Row-level parsing shared by the loaders (private).

Every loader reads its file record by record through :class:`Row`, so that any bad
value becomes a :class:`TraceError` naming the file, the 1-based line and the field,
instead of a pandas dtype error (or, worse, a silently coerced NaN) far from its cause.
"""
from __future__ import annotations

import bisect
import csv
import json
import math
import re
from collections.abc import Generator, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

import pandas as pd

from .errors import TraceError

PathLike = str | Path

_INT = re.compile(r"[+-]?\d+")  # stricter than int(): no "1_000", no "1e3"


class Row:
    """One record of a trace: raw values by field name, plus where it came from."""

    __slots__ = ("source", "line", "values")

    def __init__(self, source: str, line: int, values: Mapping[str, Any]) -> None:
        self.source = source
        self.line = line
        self.values = values

    def fail(self, field: str, problem: str) -> NoReturn:
        raise TraceError(self.source, self.line, field, problem)

    def is_blank(self, field: str) -> bool:
        value = self.values.get(field)
        return value is None or (isinstance(value, str) and not value.strip())

    def _raw(self, field: str) -> Any:
        if self.is_blank(field):
            self.fail(field, "missing" if self.values.get(field) is None else "empty")
        return self.values[field]

    def text(self, field: str, *, allow_empty: bool = False) -> str:
        if allow_empty and self.is_blank(field):
            return ""
        value = self._raw(field)
        if not isinstance(value, str):
            self.fail(field, f"{value!r} is not a string")
        return value.strip()

    def integer(self, field: str, *, min_value: int | None = 0) -> int:
        value = self._raw(field)
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            self.fail(field, f"{value!r} is not an integer")
        if isinstance(value, str):
            if not _INT.fullmatch(value.strip()):
                self.fail(field, f"{value!r} is not an integer")
            value = int(value)
        self._check_min(field, value, min_value)
        return value

    def number(self, field: str, *, min_value: float | None = 0.0, optional: bool = False) -> float:
        if optional and self.is_blank(field):
            return math.nan
        value = self._raw(field)
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            self.fail(field, f"{value!r} is not a number")
        try:
            number = float(value)
        except ValueError:
            self.fail(field, f"{value!r} is not a number")
        if not math.isfinite(number):
            self.fail(field, f"{value!r} is not a finite number")
        self._check_min(field, number, min_value)
        return number

    def _check_min(self, field: str, value: float, min_value: float | None) -> None:
        if min_value is None or value >= min_value:
            return
        self.fail(field, f"{value!r} is negative" if min_value == 0 else f"{value!r} is below {min_value!r}")


def csv_rows(path: PathLike, required: Sequence[str], optional: Sequence[str] = ()) -> Iterator[Row]:
    """Yield the data rows of a headed CSV file; blank lines are skipped.

    Columns in ``required`` must be in the header; ``optional`` ones may be absent
    (the caller then sees them as missing values and applies its default).
    """
    path = Path(path)
    source = path.name
    with path.open(newline="", encoding="utf-8-sig") as handle:  # -sig: tolerate a BOM
        reader = csv.reader(handle)
        header = next(reader, None)
        if header is None:
            raise TraceError(source, 1, None, "empty file, expected a header line")
        header = [name.strip() for name in header]
        for name in required:
            if name not in header:
                raise TraceError(source, 1, name, f"column missing from the header {header}")
        wanted = set(required) | set(optional)
        for cells in reader:
            if not any(cell.strip() for cell in cells):
                continue
            line = reader.line_num  # physical line, correct even after quoted newlines
            if len(cells) > len(header):
                raise TraceError(source, line, f"column {len(header) + 1}",
                                 f"unexpected extra value {cells[len(header)]!r} "
                                 f"(the header has {len(header)} columns)")
            yield Row(source, line, {k: v for k, v in zip(header, cells) if k in wanted})


def make_frame(columns: Mapping[str, Any], dtypes: Mapping[str, str]) -> pd.DataFrame:
    """Build a frame with exactly the documented columns, in order, with fixed dtypes.

    Text columns use ``object`` on purpose: pandas 2 and 3 differ in their default string
    dtype, and the documented schema must not change with the pandas version.
    """
    return pd.DataFrame({name: pd.Series(columns[name], dtype=dtype) for name, dtype in dtypes.items()})


class JsonDoc:
    """A JSON file scanned member by member so that each record has a line number.

    ``json.load`` loses positions; here the top-level containers are walked by hand and
    only their members are handed to the standard decoder.
    """

    _WS = re.compile(r"[ \t\n\r]*")

    def __init__(self, path: PathLike) -> None:
        path = Path(path)
        self.source = path.name
        self.text = path.read_text(encoding="utf-8-sig")
        self._newlines = [m.start() for m in re.finditer("\n", self.text)]
        self._decoder = json.JSONDecoder()

    def line_of(self, offset: int) -> int:
        return bisect.bisect_left(self._newlines, offset) + 1

    def fail(self, offset: int, problem: str) -> NoReturn:
        raise TraceError(self.source, self.line_of(offset), None, f"invalid JSON: {problem}")

    def skip(self, pos: int) -> int:
        match = self._WS.match(self.text, pos)
        assert match is not None  # the pattern matches the empty string
        return match.end()

    def decode(self, pos: int) -> tuple[Any, int]:
        try:
            return self._decoder.raw_decode(self.text, pos)
        except json.JSONDecodeError as err:
            raise TraceError(self.source, err.lineno, None, f"invalid JSON: {err.msg}") from None

    def _members(self, pos: int, opening: str, closing: str) -> Generator[int, int, None]:
        """Yield the offset of each member of the container that starts at ``pos``."""
        pos = self.skip(pos)
        if self.text[pos:pos + 1] != opening:
            self.fail(pos, f"expected {opening!r}")
        pos = self.skip(pos + 1)
        if self.text[pos:pos + 1] == closing:
            return
        while True:
            pos = yield pos  # the consumer sends back where the member ended
            pos = self.skip(pos)
            char = self.text[pos:pos + 1]
            if char == closing:
                return
            if char != ",":
                self.fail(pos, f"expected ',' or {closing!r}")
            pos = self.skip(pos + 1)

    def array(self, pos: int = 0) -> Iterator[tuple[int, Any]]:
        """Yield ``(line, value)`` for each element of the array at ``pos``."""
        members = self._members(pos, "[", "]")
        start = next(members, None)
        while start is not None:
            value, end = self.decode(start)
            yield self.line_of(start), value
            start = _send(members, end)

    def object(self, pos: int = 0) -> Iterator[tuple[int, str, int, Any]]:
        """Yield ``(line, key, value_offset, value)`` for each member of the object at ``pos``."""
        members = self._members(pos, "{", "}")
        start = next(members, None)
        while start is not None:
            key, end = self.decode(start)
            if not isinstance(key, str):
                self.fail(start, "object key is not a string")
            end = self.skip(end)
            if self.text[end:end + 1] != ":":
                self.fail(end, "expected ':'")
            value_at = self.skip(end + 1)
            value, end = self.decode(value_at)
            yield self.line_of(start), key, value_at, value
            start = _send(members, end)


def _send(members: Generator[int, int, None], end: int) -> int | None:
    try:
        return members.send(end)
    except StopIteration:
        return None
