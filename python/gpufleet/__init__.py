"""gpufleet: a native scheduling core for deep-learning GPU clusters.

The hot paths (filter/score/bind over thousands of nodes, the batch-scheduling cycle, the
simulator) live in the C++ extension ``gpufleet._core``; this package re-exports them and adds the
Python layers: scenario files, trace loaders, the Kubernetes adapters, node-side tools and plots.
"""
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
    strategies,
    strategy_description,
)
from gpufleet import replay
from gpufleet.engine import CycleResult, Engine, register_plugin
from gpufleet.replay import ReplayResult, replay_many, replay_openb
from gpufleet.scenario import Scenario, load_scenario
from gpufleet.sim import SimResult, simulate

__version__ = "0.1.0"

__all__ = [
    "Allocation",
    "Cluster",
    "CycleResult",
    "DeviceGrant",
    "DeviceRequest",
    "Engine",
    "FitResult",
    "Pod",
    "ReplayResult",
    "Scenario",
    "SimResult",
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
]
