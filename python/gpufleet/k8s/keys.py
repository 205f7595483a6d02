"""The Kubernetes names, as the adapters import them: this name is :mod:`gpufleet.node.keys`
itself (the same module object), which lives on the node side so that the node tools need nothing
from ``gpufleet.k8s``."""
import sys

from gpufleet.node import keys

sys.modules[__name__] = keys
