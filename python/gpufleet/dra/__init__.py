"""Kubernetes Dynamic Resource Allocation (``resource.k8s.io/v1``) in gpufleet: ResourceSlices,
DeviceClasses, ResourceClaims and their templates read strictly (``objects``), CEL selectors as
Kubernetes evaluates them (``cel``), and claims allocated on a node with Kubernetes' verdicts and a
scored choice of devices (``allocate``). docs/dra.md walks through it."""
from gpufleet.dra.allocator import STRATEGIES, AllocationOutcome, allocate, ledger_from
from gpufleet.dra.cluster import DraCluster
from gpufleet.dra.objects import (DraError, check_claim, check_claim_template, check_class,
                                  check_slice, claim_from_template)
from gpufleet.dra.scenario import DraScenario, load_dra_scenario

__all__ = ["AllocationOutcome", "DraCluster", "DraError", "DraScenario", "STRATEGIES", "allocate",
           "check_claim", "check_claim_template", "check_class", "check_slice",
           "claim_from_template", "ledger_from", "load_dra_scenario"]
