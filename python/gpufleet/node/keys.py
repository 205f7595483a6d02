"""Every Kubernetes name gpufleet reads or writes: resource names, pod and node annotations, labels.

This module is the one place they are spelled in Python; the native core spells its own copy
(core/request_parser.h, io/annotations.h) and `gpufleet._core.wire_keys()` hands that copy over so
a test holds the two equal. Plain constants, no imports: the node tools load it without the core.

Sources: Koordinator's device-share scheduling (koordinator.sh/* resources and the
scheduling.koordinator.sh/device-allocated annotation), Alibaba gpushare (aliyun.com/gpu-mem and
the ALIYUN_COM_GPU_MEM_* annotations), NVIDIA's device plugin and GPU feature discovery
(nvidia.com/gpu, nvidia.com/gpu.memory, nvidia.com/gpu.product).
"""
from __future__ import annotations

# --- Extended resources a container may request ------------------------------------------------
RES_NVIDIA_GPU = "nvidia.com/gpu"                       # whole GPUs
RES_GPU = "koordinator.sh/gpu"                          # whole GPUs, Koordinator's name
RES_GPU_CORE = "koordinator.sh/gpu-core"                # percent of one card's compute
RES_GPU_MEMORY = "koordinator.sh/gpu-memory"            # bytes of one card's memory
RES_GPU_MEMORY_RATIO = "koordinator.sh/gpu-memory-ratio"  # percent of one card's memory
RES_GPU_SHARED = "koordinator.sh/gpu.shared"            # how many cards a shared request spans
RES_RDMA = "koordinator.sh/rdma"
RES_FPGA = "koordinator.sh/fpga"
RES_ALIYUN_GPU_MEM = "aliyun.com/gpu-mem"               # gpushare: GPU memory in its unit
RES_ALIYUN_GPU_COUNT = "aliyun.com/gpu-count"           # gpushare: cards on a node (node side)
# NVIDIA device plugin, MIG "mixed" strategy: one resource per profile, nvidia.com/mig-3g.40gb.
RES_NVIDIA_MIG_PREFIX = "nvidia.com/mig-"

# --- Pod annotations recording an allocation ---------------------------------------------------
KOORD_DEVICE_ALLOCATED = "scheduling.koordinator.sh/device-allocated"
GPUSHARE_IDX = "ALIYUN_COM_GPU_MEM_IDX"
GPUSHARE_POD = "ALIYUN_COM_GPU_MEM_POD"
GPUSHARE_DEV = "ALIYUN_COM_GPU_MEM_DEV"
GPUSHARE_CONTAINER = "ALIYUN_COM_GPU_MEM_CONTAINER"
GPUSHARE_ASSIGNED = "ALIYUN_COM_GPU_MEM_ASSIGNED"
GPUSHARE_ASSUME_TIME = "ALIYUN_COM_GPU_MEM_ASSUME_TIME"  # written by the scheduler side
GPUSHARE_ASSIGN_TIME = "ALIYUN_COM_GPU_MEM_ASSIGN_TIME"  # written by the device plugin
# Koordinator pods carry no "assigned" flag of their own; the device plugin records consumption
# under this key so a restarted plugin does not hand the same grant out twice.
GPUFLEET_ASSIGNED = "gpufleet.io/device-assigned"

# --- Pod annotations gpufleet reads ------------------------------------------------------------
ANN_SCOPE = "gpufleet.io/topology-scope"        # none | pcie | numa
ANN_GPU_MODELS = "gpufleet.io/gpu-models"       # comma separated, e.g. "A100,H100"

# --- Pod annotations naming a gang (the extender holds its topology domain across its pods) -------
ANN_POD_GROUP = "scheduling.k8s.io/group-name"                 # Volcano / kube-batch PodGroup
ANN_POD_GROUP_TOTAL = "kueue.x-k8s.io/pod-group-total-count"  # Kueue: pods in the group

# --- Node annotations and labels gpufleet reads ------------------------------------------------
ANN_DEVICES = "gpufleet.io/devices"             # JSON list of device specs
ANN_GPU_SHARING = "gpufleet.io/gpu-sharing"     # mixed | whole | shared
ANN_NVLINK = "gpufleet.io/nvlink-groups"        # JSON list of lists of minors
LABEL_GPU_MEMORY = "nvidia.com/gpu.memory"      # GPU feature discovery, MiB per GPU
LABEL_GPU_PRODUCT = "nvidia.com/gpu.product"
LABEL_MIG_STRATEGY = "nvidia.com/mig.strategy"  # GPU feature discovery: none | single | mixed
# GPU feature discovery: one value, "<cluster UUID>.<clique id>", per multi-node NVLink fabric.
LABEL_NVLINK_CLIQUE = "nvidia.com/gpu.clique"
LABEL_HOSTNAME = "kubernetes.io/hostname"       # the usual lowest topology level

# The names the native core also knows, by the core's own name for each (see wire_keys()).
CORE_NAMES = {
    "nvidia_gpu": RES_NVIDIA_GPU,
    "koord_gpu": RES_GPU,
    "koord_gpu_core": RES_GPU_CORE,
    "koord_gpu_memory": RES_GPU_MEMORY,
    "koord_gpu_memory_ratio": RES_GPU_MEMORY_RATIO,
    "koord_gpu_shared": RES_GPU_SHARED,
    "koord_rdma": RES_RDMA,
    "koord_fpga": RES_FPGA,
    "aliyun_gpu_mem": RES_ALIYUN_GPU_MEM,
    "nvidia_mig_prefix": RES_NVIDIA_MIG_PREFIX,
    "device_allocated": KOORD_DEVICE_ALLOCATED,
    "gpushare_idx": GPUSHARE_IDX,
    "gpushare_pod": GPUSHARE_POD,
    "gpushare_dev": GPUSHARE_DEV,
    "gpushare_assigned": GPUSHARE_ASSIGNED,
    "gpushare_assume_time": GPUSHARE_ASSUME_TIME,
    "nvlink_clique": LABEL_NVLINK_CLIQUE,
    "hostname": LABEL_HOSTNAME,
}
