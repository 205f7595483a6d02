"""gpufleet: a native scheduling core for deep-learning GPU clusters.

The hot paths (filter/score/bind over thousands of nodes, the batch-scheduling cycle, the
simulator) live in the C++ extension ``gpufleet._core``; this package re-exports them and adds the
Python layers: scenario files, trace loaders, the Kubernetes adapters, node-side tools and plots.
"""
from typing import TYPE_CHECKING

# The node side (gpufleet.node, `gpufleet node ...`) is pure Python and
# must run on a GPU machine where the extension was never compiled; everything else needs it, and
# says so when touched (see __getattr__ below). The exception family is pure Python too.
import sys as _sys
import types as _types

from gpufleet.errors import (ConflictError, Error, FailedPreconditionError, InternalError,
                             InvalidInputError, NotFoundError)


def _hide_the_stub_package() -> None:
    # Where the extension was never built, the type stubs (python/gpufleet/_core/*.pyi) would
    # import as an empty namespace package named gpufleet._core; None in sys.modules makes every
    # import of it the ImportError that callers guard against instead.
    import importlib.util
    import sys

    try:
        spec = importlib.util.find_spec("gpufleet._core")
    except ImportError:
        return  # a finder refuses it: the import below fails the same way
    if spec is None or spec.origin is None:
        sys.modules["gpufleet._core"] = None  # type: ignore[assignment]


_hide_the_stub_package()
_core_error: ImportError | None = None
try:
    from gpufleet._core import (
        Allocation,
        Cluster,
        DeviceGrant,
        DeviceRequest,
        FitResult,
        Pod,
        format_bytes,
        parse_milli,
        parse_quantity,
    )
except ImportError as e:
    if e.name != "gpufleet._core":
        raise
    _core_error = e

__version__ = "0.1.0"

__all__ = [
    "Allocation",
    "Cluster",
    "ConflictError",
    "CycleResult",
    "DeviceGrant",
    "DeviceRequest",
    "Engine",
    "Error",
    "FailedPreconditionError",
    "FitResult",
    "InternalError",
    "InvalidInputError",
    "NotFoundError",
    "Pod",
    "ReplayResult",
    "Scenario",
    "SimResult",
    "SweepError",
    "format_bytes",
    "load_scenario",
    "parse_milli",
    "parse_quantity",
    "register_plugin",
    "replay",
    "replay_many",
    "replay_openb",
    "simulate",
    "strategies",
    "strategy_description",
    "sweep",
]


if TYPE_CHECKING:  # the names below load on first use; a type checker sees them here
    from gpufleet.engine import CycleResult, Engine, register_plugin
    from gpufleet.registries import strategies, strategy_description
    from gpufleet.replay import ReplayResult, replay, replay_many, replay_openb
    from gpufleet.scenario import Scenario, load_scenario
    from gpufleet.sim import SimResult, simulate
    from gpufleet.sweep import SweepError, sweep

# The other names load their module on first use, so that a command imports only what it runs.
_LAZY = {
    "replay": "replay", "ReplayResult": "replay", "replay_many": "replay", "replay_openb": "replay",
    "CycleResult": "engine", "Engine": "engine", "register_plugin": "engine",
    "Scenario": "scenario", "load_scenario": "scenario", "SimResult": "sim", "simulate": "sim",
    "strategies": "registries", "strategy_description": "registries",
    "sweep": "sweep", "SweepError": "sweep",
}
# Names whose value is the module's function of the same name, not the module itself.
_FUNCTIONS_OVER_MODULES = {"sweep"}


class _Package(_types.ModuleType):
    """This package's module type. Importing the subpackage gpufleet.sweep (by a command, a test
    or gpufleet.sweep.sweep) binds its name here; `gpufleet.sweep` is the function, so the
    binding is redirected to it, as the eager import used to arrange."""

    def __setattr__(self, name: str, value: object) -> None:
        if name in _FUNCTIONS_OVER_MODULES and isinstance(value, _types.ModuleType):
            value = getattr(value, name)
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Package


def __getattr__(name: str) -> object:
    # Reached for a name not yet bound: one of _LAZY, or any name when the extension is missing.
    if _core_error is None and name in _LAZY:
        import importlib
        module = importlib.import_module(f"gpufleet.{_LAZY[name]}")
        wants_module = name == _LAZY[name] and name not in _FUNCTIONS_OVER_MODULES
        value = module if wants_module else getattr(module, name)
        globals()[name] = value
        return value
    if _core_error is None and not name.startswith("_"):
        # A submodule read as an attribute (`gpufleet.sim.simulate` after `import gpufleet`), as
        # it was when this package imported its modules eagerly.
        import importlib
        import importlib.util
        if importlib.util.find_spec(f"gpufleet.{name}") is not None:
            return importlib.import_module(f"gpufleet.{name}")
    if _core_error is not None and name in __all__:
        raise ImportError(
            f"gpufleet.{name} needs the native extension gpufleet._core, which is not built here "
            f"({_core_error}); build it with `bash scripts/setup.sh`. Without it only the node side "
            "works (gpufleet.node, `gpufleet node ...`)") from _core_error
    raise AttributeError(f"module 'gpufleet' has no attribute {name!r}")
