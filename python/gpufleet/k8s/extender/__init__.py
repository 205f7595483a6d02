"""kube-scheduler extender (filter / prioritize / bind / preempt) backed by gpufleet.Cluster."""
from .app import create_app
from .binder import KubeBinder, MemoryBinder
from .convert import ConvertError, node_spec, pod_args
from .kube import KubeWatcher, load_kube
from .state import ExtenderState, load_scenario, state_from_scenario

__all__ = ["create_app", "ExtenderState", "MemoryBinder", "KubeBinder", "ConvertError",
           "node_spec", "pod_args", "load_scenario", "load_kube", "KubeWatcher",
           "state_from_scenario"]
