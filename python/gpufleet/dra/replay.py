"""A trace run "as DRA": the same pods placed through ResourceClaims on ResourceSlices, beside the
device-plugin vocabularies on a Cluster, to compare the two ways of asking for GPUs.

``compare_as_dra(nodes, pods)`` takes the openb tables (``gpufleet.traces.load_openb_nodes`` /
``load_openb_pods``, or ``synthetic_openb``) and places the pods in table order both ways, GPUs
only (CPU and memory are left out of both, since DRA does not carry them):

- **device plugin**: a Cluster whose nodes have the trace's GPUs; whole-GPU pods ask for whole
  GPUs, shares ask Koordinator's ``gpu-core`` and ``gpu-memory-ratio``;
- **DRA**: every node publishes its GPUs in a ResourceSlice as devices shared by capacity
  (``cores``, 100 per GPU, as HAMi maps gpucores); each pod's requests become a claim through
  ``legacy.claim_from_requests`` (a whole GPU takes all of a device's cores), placed with
  ``DraCluster.place``.

The result has one row per way: pods placed, GPUs allocated (shares summed) and the allocation
ratio over the cluster's GPUs.
"""
from __future__ import annotations

from typing import Any

import pandas as pd

from gpufleet.dra.cluster import DraCluster
from gpufleet.dra.legacy import RES_HAMI_GPU_CORES, claim_from_requests
from gpufleet.k8s.keys import RES_GPU_CORE, RES_GPU_MEMORY_RATIO, RES_NVIDIA_GPU

DRIVER = "gpu.gpufleet.io"


def _requests(pod: Any) -> dict[str, Any]:
    n, milli = int(pod.num_gpu), int(pod.gpu_milli)
    if n == 0:
        return {}
    if milli >= 1000 or n > 1:
        return {RES_NVIDIA_GPU: n}
    pct = max(1, milli // 10)
    return {RES_GPU_CORE: pct, RES_GPU_MEMORY_RATIO: pct}


def compare_as_dra(nodes: pd.DataFrame, pods: pd.DataFrame, strategy: str = "binpack") -> pd.DataFrame:
    """Places `pods` in order on `nodes` through both vocabularies; one row per way."""
    from gpufleet import Cluster, Pod
    gpus = int(nodes["num_gpu"].sum())
    legacy = Cluster()
    dra = DraCluster()
    dra.apply({"kind": "DeviceClass", "metadata": {"name": "gpu"},
               "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}],
                        "extendedResourceName": RES_NVIDIA_GPU}})
    for node in nodes.itertuples():
        count = int(node.num_gpu)
        legacy.add_node({"name": node.name, "cpu": "100000", "memory": "1Pi", "pods": 100000,
                         "gpus": {"count": count, "model": str(node.model or "gpu"), "memory": "80Gi"}}
                        if count else {"name": node.name, "cpu": "100000", "memory": "1Pi", "pods": 100000})
        dra.add_node(node.name)
        if count:
            dra.apply({"kind": "ResourceSlice", "metadata": {"name": f"{node.name}-gpus"}, "spec": {
                "driver": DRIVER, "nodeName": node.name,
                "pool": {"name": node.name, "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": f"gpu-{i}", "allowMultipleAllocations": True,
                             "attributes": {"model": {"string": str(node.model or "gpu")}},
                             "capacity": {"cores": {"value": "100"}}} for i in range(count)]}})
    rows = {"device plugin": [0, 0.0], "DRA": [0, 0.0]}
    classes = [{"metadata": {"name": "gpu"}, "spec": {"extendedResourceName": RES_NVIDIA_GPU}}]
    for pod in pods.itertuples():
        requests = _requests(pod)
        if not requests:
            continue
        share = int(pod.num_gpu) if RES_NVIDIA_GPU in requests else int(pod.gpu_milli) / 1000
        alloc, _ = legacy.place(Pod.from_dict({"name": pod.name, "requests": requests}), strategy)
        if alloc is not None:
            rows["device plugin"][0] += 1
            rows["device plugin"][1] += share
        # Shares ask for part of a GPU's cores; whole GPUs leave cores out and take all of them.
        claim = claim_from_requests(pod.name, "trace", {RES_NVIDIA_GPU: requests[RES_NVIDIA_GPU]}
                                    if RES_NVIDIA_GPU in requests else
                                    {RES_HAMI_GPU_CORES: requests[RES_GPU_CORE]},
                                    classes, shared_class="gpu")
        dra.apply(claim)
        node, _ = dra.place([f"trace/{claim['metadata']['name']}"], commit=True)
        if node is not None:
            rows["DRA"][0] += 1
            rows["DRA"][1] += share
    return pd.DataFrame([{"way": way, "pods placed": placed, "GPUs allocated": round(used, 3),
                          "allocation ratio": round(used / gpus, 4) if gpus else 0.0}
                         for way, (placed, used) in rows.items()])
