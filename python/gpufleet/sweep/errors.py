"""The one exception a sweep raises."""
from __future__ import annotations

__all__ = ["SweepError"]


class SweepError(ValueError):
    """A sweep that cannot start (bad trace, policy or option: nothing ran) or an experiment that
    failed while running (the results finished before it are kept in ``results_dir``)."""
