"""DRA scenario files: one node's ResourceSlices, DeviceClasses and ResourceClaims in YAML or JSON
(the shape of examples/dra/*.yaml and of shared/reference/dra's cases):

```yaml
node: {metadata: {name: node-1, labels: {...}}}   # a v1 Node (a name alone is enough)
classes: [DeviceClass, ...]
slices: [ResourceSlice, ...]
claims: [ResourceClaim, ...]                       # allocated together, for one pod
allocated: [ResourceClaim with status.allocation]  # optional: what earlier claims hold
features: {PrioritizedList: true, ...}             # optional: Kubernetes' DRA feature gates
```
Every object is checked as it is read; errors name the file, the object and the field.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpufleet.documents import ScenarioError, check_keys, read_document
from gpufleet.dra.allocator import AllocationOutcome, allocate
from gpufleet.dra.objects import DraError, check_claim, check_class, check_slice

KEYS = ("node", "classes", "slices", "claims", "allocated", "features")


@dataclass
class DraScenario:
    node: dict[str, Any]
    classes: list[dict[str, Any]]
    slices: list[dict[str, Any]]
    claims: list[dict[str, Any]]
    allocated: list[dict[str, Any]] = field(default_factory=list)
    features: dict[str, bool] | None = None

    def allocate(self, strategy: str = "pack") -> AllocationOutcome:
        return allocate(self.node, self.claims, self.classes, self.slices, allocated=self.allocated,
                        features=self.features, strategy=strategy, check=False)


def build_dra_scenario(data: Any, where: str = "<dra scenario>") -> DraScenario:
    if not isinstance(data, dict):
        raise ScenarioError(f"{where}: expected a mapping with node, classes, slices and claims")
    check_keys(data, KEYS, where)
    node = data.get("node") or {}
    if not isinstance(node, dict) or not isinstance((node.get("metadata") or {}).get("name"), str):
        raise ScenarioError(f"{where}: node: expected a Node with metadata.name")
    lists = {}
    for key, checker in (("classes", check_class), ("slices", check_slice), ("claims", check_claim),
                         ("allocated", check_claim)):
        items = data.get(key) or []
        if not isinstance(items, list):
            raise ScenarioError(f"{where}: {key}: expected a list")
        try:
            lists[key] = [checker(x) for x in items]
        except DraError as e:
            raise ScenarioError(f"{where}: {key}: {e}") from None
    features = data.get("features")
    if features is not None and not (isinstance(features, dict) and all(isinstance(v, bool) for v in features.values())):
        raise ScenarioError(f"{where}: features: expected a mapping of feature names to true/false")
    return DraScenario(node, lists["classes"], lists["slices"], lists["claims"], lists["allocated"], features)


def load_dra_scenario(path: str | Path) -> DraScenario:
    p = Path(path)
    return build_dra_scenario(read_document(p), str(p))
