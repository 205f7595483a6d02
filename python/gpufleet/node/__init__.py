"""Node-side tools: NVML inventory, container environment / MPS enforcement, step profiler, and
the Kubernetes vocabulary they read (``keys``: resource and annotation names; ``annotations``:
the allocation annotations). Everything that runs on a GPU node lives here; the Kubernetes
adapters in ``gpufleet.k8s`` import it, and nothing here imports ``gpufleet.k8s``.

Submodules are imported on use (`from gpufleet.node.env import container_env`); nothing here
touches NVML, torch or the native extension at import time.
"""
