"""The one exception a sweep raises, and how it words the errors it wraps."""
from __future__ import annotations

__all__ = ["SweepError", "message"]


class SweepError(ValueError):
    """A sweep that cannot start (bad trace, policy or option: nothing ran) or an experiment that
    failed while running (the results finished before it are kept in ``results_dir``)."""


def message(e: BaseException) -> str:
    """``e``'s message; a KeyError's without the quotes its ``str`` adds."""
    return str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e)
