"""Heavy libraries imported on first use, so `import gpufleet` and `gpufleet --help` stay fast.

`pd = lazy("pandas")` reads like `import pandas as pd`; the import happens when an attribute is
first read (a call that builds a DataFrame), not when the module that names it is imported.
"""
from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


class _LazyModule:
    __slots__ = ("_name", "_module")

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attr: str) -> Any:
        module = self._module
        if module is None:
            module = self._module = importlib.import_module(self._name)
        return getattr(module, attr)

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}{' (loaded)' if self._module else ''}>"


def lazy(name: str) -> Any:
    """A stand-in for module `name` that imports it on first attribute access."""
    return _LazyModule(name)
