"""
Kubernetes quantities, the wire keys and the MIG geometry the core defines once.
"""
from __future__ import annotations
import typing
__all__: list[str] = ['format_bytes', 'mig_geometry', 'parse_milli', 'parse_quantity', 'parse_quantity_exact', 'parse_resource_quantity', 'wire_keys']
def format_bytes(bytes: typing.Any) -> str:
    """
    Bytes with the largest binary suffix that divides them exactly ("80Gi", "81559Mi").
    """
def mig_geometry() -> list:
    """
    NVIDIA MIG geometry per GPU model (from NVIDIA's MIG user guide): profiles with their compute and memory slices, instance limits and allowed start slots.
    """
def parse_milli(quantity: str) -> int:
    """
    Kubernetes quantity -> milli-units (cpu); ValueError if malformed.
    """
def parse_quantity(quantity: str) -> int:
    """
    Kubernetes quantity -> integer (bytes or count), rounded up like Kubernetes; ValueError names what is wrong.
    """
def parse_quantity_exact(quantity: str) -> str:
    """
    Kubernetes quantity -> its exact value as decimal text ("1.5", "0.000000001").
    """
def parse_resource_quantity(resource: str, quantity: str) -> int:
    """
    A resource's quantity in the core's unit: milli-cores for cpu, whole numbers only for pods and extended resources (nvidia.com/gpu, koordinator.sh/*, aliyun.com/gpu-mem), bytes rounded up otherwise.
    """
def wire_keys() -> dict[str, str]:
    """
    The Kubernetes resource and annotation names the core reads and writes, by short name (gpufleet.k8s.keys holds the same names for Python).
    """
