"""gpufleet: a native scheduling core for deep-learning GPU clusters.

The hot paths (filter/score/bind over thousands of nodes, the batch-scheduling cycle, the
simulator) live in the C++ extension ``gpufleet._core``; this package re-exports them and adds the
Python layers: scenario files, trace loaders, the Kubernetes adapters, node-side tools and plots.
"""
# The node side (gpufleet.node, `gpufleet node ...`) is pure Python and
# must run on a GPU machine where the extension was never compiled; everything else needs it, and
# says so when touched (see __getattr__ below). The exception family is pure Python too.
from gpufleet.errors import (ConflictError, Error, FailedPreconditionError, InternalError,
                             InvalidInputError, NotFoundError)

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
    from gpufleet import replay
    from gpufleet.engine import CycleResult, Engine, register_plugin
    from gpufleet.replay import ReplayResult, replay_many, replay_openb
    from gpufleet.scenario import Scenario, load_scenario
    from gpufleet.sim import SimResult, simulate
    from gpufleet.sweep import SweepError, sweep
    from gpufleet.registries import strategies, strategy_description
except ModuleNotFoundError as e:
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


def __getattr__(name: str) -> object:
    # Only reached when a name is missing, i.e. when the extension could not be imported.
    if _core_error is not None and name in __all__:
        raise ImportError(
            f"gpufleet.{name} needs the native extension gpufleet._core, which is not built here "
            f"({_core_error}); build it with `bash scripts/setup.sh`. Without it only the node side "
            "works (gpufleet.node, `gpufleet node ...`)") from _core_error
    raise AttributeError(f"module 'gpufleet' has no attribute {name!r}")
