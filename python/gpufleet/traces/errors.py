"""The one exception the trace loaders raise for bad input."""
from __future__ import annotations

__all__ = ["TraceError"]


class TraceError(ValueError):
    """A trace file (or frame) does not match its documented format.

    The message always names the file, the 1-based line and the field, e.g.
    ``openb_pod_list_default.csv line 17, field gpu_milli: 'abc' is not an integer``,
    so that a user can open the file at that line. The parts are also kept as
    attributes for programmatic use.
    """

    def __init__(self, source: str, line: int | None, field: str | None, problem: str) -> None:
        where = source if line is None else f"{source} line {line}"
        if field is not None:
            where = f"{where}, field {field}"
        super().__init__(f"{where}: {problem}")
        self.source = source
        self.line = line
        self.field = field
        self.problem = problem
