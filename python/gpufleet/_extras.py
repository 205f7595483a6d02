"""Optional dependencies, imported through one helper so that a missing one says which extra of
gpufleet installs it, instead of ending in a bare ``No module named ...``.

The extras are those of pyproject.toml's ``[project.optional-dependencies]``. No package index
serves gpufleet, so the message names the installs that work: the source tree with the extra,
or the wheel scripts/release.sh writes to dist/ with the extra.
"""
from __future__ import annotations

import importlib
from types import ModuleType

EXTRAS = ("plot", "k8s", "node", "dra", "ray")

# Import names whose distribution on PyPI is spelt otherwise (the message names what pip installs).
DISTRIBUTIONS = {"google.protobuf": "protobuf", "grpc": "grpcio", "pynvml": "nvidia-ml-py",
                 "cel_expr_python": "cel-expr-python"}


class MissingExtra(ImportError):
    """An optional dependency is not installed; ``extra`` is the gpufleet extra that brings it."""

    def __init__(self, needed_by: str, module: str, extra: str, cause: BaseException) -> None:
        self.needed_by = needed_by
        self.extra = extra
        reason = " ".join(str(cause).split()) or type(cause).__name__
        top = "google.protobuf" if module.startswith("google.protobuf") else module.partition(".")[0]
        super().__init__(
            f"{needed_by} needs {DISTRIBUTIONS.get(top, top)}, from the optional extra gpufleet[{extra}], "
            f"which is not installed here ({reason}): install it with `pip install '.[{extra}]'` in "
            f"the gpufleet source tree, or, with the wheel scripts/release.sh builds, "
            f"`pip install \"$(ls dist/gpufleet-*.whl)[{extra}]\"`", name=module)


def require(module: str, extra: str, needed_by: str) -> ModuleType:
    """Imports ``module`` and returns it; MissingExtra naming ``extra`` when it cannot be imported.
    ``needed_by`` is what the user called (a command or a function), for the message."""
    if extra not in EXTRAS:
        raise ValueError(f"unknown extra {extra!r}; known: {', '.join(EXTRAS)}")
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise MissingExtra(needed_by, module, extra, e) from e
