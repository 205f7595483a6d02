"""Node-side helpers: NVML inventory, container environment / MPS enforcement, step profiler.

Submodules are imported on use (`from gpufleet.node.env import container_env`); nothing here
touches NVML, torch or the native extension at import time.
"""
