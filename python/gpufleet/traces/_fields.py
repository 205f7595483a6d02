"""Row-level parsing shared by the loaders (private).

Every loader reads its file record by record through :class:`Row`, so that any bad
value becomes a :class:`TraceError` naming the file, the 1-based line and the field,
instead of a pandas dtype error (or, worse, a silently coerced NaN) far from its cause.
"""
from __future__ import annotations

import bisect
import csv
import io
import json
import math
import re
from collections.abc import Generator, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

from gpufleet._lazy import lazy

from . import limits
from .errors import TraceError
from .limits import INT64_MAX

pd = lazy("pandas")  # imported by the first frame built: the command line's readers need none

PathLike = str | Path

_INT = re.compile(r"[+-]?\d+")  # stricter than int(): no "1_000", no "1e3"
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")  # float() also takes "1_0", "nan"
_MAX_DIGITS = 40  # longer digit strings are out of every range; int() of huge ones is slow or fails
# Control characters never occur in a text trace (tab, LF and CR aside): they mean binary data.
# Lone surrogates can come from JSON escapes and cannot be encoded for the native core.
_BINARY = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_BAD_TEXT = re.compile(r"[\x00-\x1f\x7f\ud800-\udfff]")


def show(value: Any, limit: int = 40) -> str:
    """``repr`` of a bad value, cut short so that junk does not flood the message."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(str(value))} characters)"


def read_text(path: PathLike) -> tuple[str, str]:
    """``(file name, text)`` of a trace file: strict UTF-8 (a BOM is dropped), no binary data.

    Bytes that are not UTF-8 and control characters are reported with their line and column,
    before any parser sees them. A file over ``limits.MAX_TRACE_BYTES`` is refused, reading no
    further than one byte past the bound.
    """
    path = Path(path)
    bound = limits.MAX_TRACE_BYTES
    with path.open("rb") as f:
        data = f.read(bound + 1)
    if len(data) > bound:
        raise TraceError(path.name, None, None, f"larger than {bound:,} bytes, the limit for a "
                         "trace file (gpufleet.traces.limits.MAX_TRACE_BYTES)")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        column = err.start - (data.rfind(b"\n", 0, err.start) + 1) + 1
        raise TraceError(path.name, line, None, f"not UTF-8 text: byte 0x{data[err.start]:02x} at "
                         f"column {column} (binary data?)") from None
    if (bad := _BINARY.search(text)) is not None:
        line = text.count("\n", 0, bad.start()) + 1
        column = bad.start() - (text.rfind("\n", 0, bad.start()) + 1) + 1
        raise TraceError(path.name, line, None, f"control character U+{ord(bad.group()):04X} at "
                         f"column {column} (binary data?)")
    return path.name, text


class FirstSeen:
    """Remembers the line where each id first appeared, to report duplicates with both lines."""

    def __init__(self, what: str) -> None:
        self.what = what
        self._lines: dict[Any, int] = {}

    def add(self, row: "Row", field: str, key: Any) -> None:
        first = self._lines.setdefault(key, row.line)
        if first != row.line:
            row.fail(field, f"duplicate {self.what} {show(key)} (first on line {first})")


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
            self.fail(field, f"{show(value)} is not a string")
        if (bad := _BAD_TEXT.search(value)) is not None:
            self.fail(field, f"{show(value)} contains the control character U+{ord(bad.group()):04X}")
        return value.strip()

    def integer(self, field: str, *, min_value: int | None = 0, max_value: int = INT64_MAX) -> int:
        """An integer in ``[min_value, max_value]`` (the default bound is int64's)."""
        raw = self._raw(field)
        if isinstance(raw, bool) or not isinstance(raw, (int, str)):
            self.fail(field, f"{show(raw)} is not an integer")
        value = raw
        if isinstance(raw, str):
            digits = raw.strip()
            if not _INT.fullmatch(digits):
                self.fail(field, f"{show(raw)} is not an integer")
            if len(digits.lstrip("+-").lstrip("0")) > _MAX_DIGITS:
                self.fail(field, f"{show(raw)} is out of range (at most {max_value:,})")
            value = int(digits)
        self._check_range(field, value, raw, min_value, max_value)
        return value

    def number(self, field: str, *, min_value: float | None = 0.0, max_value: float,
               optional: bool = False) -> float:
        """A finite number in ``[min_value, max_value]``; NaN when ``optional`` and blank."""
        if optional and self.is_blank(field):
            return math.nan
        value = self._raw(field)
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            self.fail(field, f"{show(value)} is not a number")
        if isinstance(value, str) and not _NUMBER.fullmatch(value.strip()):
            word = value.strip().lower().lstrip("+-")
            problem = "is not a finite number" if word in ("nan", "inf", "infinity") else "is not a number"
            self.fail(field, f"{show(value)} {problem}")
        try:
            number = float(value)
        except OverflowError:  # a JSON integer too large for a float
            self.fail(field, f"{show(value)} is out of range (at most {max_value:g})")
        if not math.isfinite(number):
            self.fail(field, f"{show(value)} is not a finite number")
        self._check_range(field, number, value, min_value, max_value)
        return number

    def _check_range(self, field: str, value: float, raw: Any, min_value: float | None,
                     max_value: float) -> None:
        """``raw`` is the value as the file wrote it: the message quotes it as written."""
        text = str(raw).strip()
        text = text if len(text) <= 40 else f"{text[:40]}... ({len(text)} characters)"
        if min_value is not None and value < min_value:
            self.fail(field, f"{text} is negative" if min_value == 0 else f"{text} is below {min_value!r}")
        if value > max_value:
            bound = f"{max_value:,}" if isinstance(max_value, int) else f"{max_value:g}"
            self.fail(field, f"{text} is out of range (at most {bound})")


def csv_rows(path: PathLike, required: Sequence[str], optional: Sequence[str] = ()) -> Iterator[Row]:
    """Yield the data rows of a headed CSV file; blank lines are skipped.

    Columns in ``required`` must be in the header; ``optional`` ones may be absent
    (the caller then sees them as missing values and applies its default).
    """
    source, text = read_text(path)
    reader = csv.reader(io.StringIO(text, newline=""))
    cells_of = _checked(reader, source)
    header = next(cells_of, None)
    if header is None:
        raise TraceError(source, 1, None, "empty file, expected a header line")
    header = [name.strip() for name in header]
    for index, name in enumerate(header):
        if name in header[:index]:
            raise TraceError(source, 1, name, "column appears twice in the header")
    for name in required:
        if name not in header:
            raise TraceError(source, 1, name, f"column missing from the header {header}")
    wanted = set(required) | set(optional)
    for cells in cells_of:
        if not any(cell.strip() for cell in cells):
            continue
        line = reader.line_num  # physical line, correct even after quoted newlines
        if len(cells) > len(header):
            raise TraceError(source, line, f"column {len(header) + 1}",
                             f"unexpected extra value {show(cells[len(header)])} "
                             f"(the header has {len(header)} columns)")
        yield Row(source, line, {k: v for k, v in zip(header, cells) if k in wanted})


def csv_header(path: PathLike) -> list[str]:
    """The column names of a headed CSV file (empty for an empty file), checked like the rows."""
    source, text = read_text(path)
    reader = csv.reader(io.StringIO(text, newline=""))
    return [name.strip() for name in next(_checked(reader, source), [])]


def _checked(reader: Any, source: str) -> Iterator[list[str]]:
    """The reader's records, with the csv module's own errors (e.g. a field over its size
    limit, an unterminated quote) turned into :class:`TraceError` at their line."""
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as err:
            raise TraceError(source, max(reader.line_num, 1), None, f"malformed CSV: {err}") from None
        yield cells


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
        self.source, self.text = read_text(path)
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
        except ValueError as err:  # e.g. an integer literal longer than Python converts
            self.fail(pos, str(err))
        except RecursionError:
            self.fail(pos, "nested too deeply")

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
