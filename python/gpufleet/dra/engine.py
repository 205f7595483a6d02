"""Pods with claims in the batch engine's gangs (gpufleet.engine.Engine).

``set_claims(engine, dra, {task: [claims]})`` hands the engine what each task's claims ask of
every node profile of a DraCluster (candidates from the CEL verdicts, made here once per profile)
and what claims hold on each node (cpp/gpufleet/engine/dra_ledger.h). In the engine's cycles a
task with claims fits a node only where its claims can be allocated (the devices picked by the
DraCluster's strategy, ``pack`` or ``first``, unless ``set_claims`` is given another); placing
the task allocates them and adds their GPUs to its allocation (whole, or the cores and memory a
claim consumes of a GPU shared by capacity), and a gang that cannot be placed whole gives every
claim back with its tasks. ``claim_results`` reads what the placed tasks'
claims hold as AllocationResults, to commit into the DraCluster (or write to the API server).

One accounting: a slice device that is a whole GPU of the engine's node (legacy.device_map: the
same UUID, or a GPU of the same minor), a MIG partition that is exactly one of its instances, or
a GPU it splits (all of its instances) is in use for claims while a pod holds any of it, a GPU
shared by capacity (``cores``, ``memory``) has what pods hold of it consumed, and a claim's
devices are taken in the engine's accounting (whole, or its share), so no pod asking through
nvidia.com/gpu, nvidia.com/mig-<profile> or shares is given them. Accounting devices are counted
as the engine does: the spec's devices in order, a split GPU as its instances.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from gpufleet import _core
from gpufleet.dra import legacy
from gpufleet.dra.allocator import STRATEGIES, outcome_of
from gpufleet.dra.objects import DraError
from gpufleet.dra.quota import (
    allocated_devices,
    claim_devices,
    class_devices,
    class_names,
    counted,
    resource_of_class,
)
from gpufleet.k8s import keys


def _accounting_gpus(spec: dict[str, Any]) -> tuple[dict[tuple[str, int], tuple[int, int]], int]:
    """(type, minor) -> (index among the node's accounting devices, memory bytes) for its whole
    GPUs and MIG instances, and how many accounting devices the node has: the spec's devices in
    order, a GPU split into MIG instances counting as its instances."""
    single = spec.get("mig_strategy") == "single"
    out: dict[tuple[str, int], tuple[int, int]] = {}
    index = 0
    for d in spec.get("devices") or []:
        if d.get("type", "gpu") == "gpu" and d.get("mig"):
            for inst in d["mig"]:
                kind = "gpu" if single else f"mig-{inst['profile']}"
                memory = int(_core.parse_quantity(str(inst.get("memory", "0"))))
                out[(kind, 8 * d["minor"] + inst["start"])] = (index, memory)
                index += 1
            continue
        if d.get("type", "gpu") == "gpu":
            memory = (d.get("resources") or {}).get(keys.RES_GPU_MEMORY, "0")
            out[("gpu", d["minor"])] = (index, int(_core.parse_quantity(str(memory))))
        index += 1
    return out, index


def _profiles(dra: Any, nodes: list[str]) -> tuple[list[Any], dict[str, int]]:
    """One table per node profile (the first node's), and each node's profile."""
    tables: list[Any] = []
    index: dict[str, int] = {}
    of: dict[str, int] = {}
    for node in nodes:
        table = dra._table(node)
        p = index.setdefault(table.profile, len(tables))
        if p == len(tables):
            tables.append(table)
        of[node] = p
    return tables, of


def _claims_usage(count: int, keys_of: dict[int, tuple[str, int]], use: dict[tuple[str, int], tuple[int, int]],
                  dra: Any, table: Any, counterparts: list[Any]) -> list[tuple[int, int]]:
    """Per accounting device of the engine's node (`count` of them, `keys_of` naming the GPUs,
    which hold `use`): what of its usage is the committed claims' shares (as far as the usage
    goes), so that the core counts them once (the claims hold them, the rest is pods')."""
    usage = [[0, 0] for _ in range(count)]
    for i, parts in enumerate(counterparts):
        mine = dra._held.shared.get(table.devices[i].id) if table.multi[i] else None
        whole = not table.multi[i] and table.devices[i].id in dra._held.devices
        for device, _, _, cores_slot, memory_slot in parts:
            key = keys_of[device]
            if whole and key in use:  # a claim holds it whole: all of its usage is the claim's
                usage[device] = list(use[key])
                continue
            if not mine or key not in use:
                continue
            core, memory = use[key]
            usage[device][0] += min(core, math.ceil(mine.get(legacy.CORES, 0)))
            usage[device][1] += min(memory, math.ceil(mine.get(legacy.MEMORY, 0)))
    return [(c, m) for c, m in usage]


def _pods_partitions(table: Any, mapping: Any, gpus: dict[tuple[str, int], tuple[int, int]],
                     use: dict[tuple[str, int], tuple[int, int]], usage: list[tuple[int, int]],
                     held: Any) -> Any:
    """`held` and the exact partitions of the MIG instances pods hold now, where their counters
    refuse every whole GPU that takes the instance too: the instance's usage then counts as
    held (in `usage`), so the native ledger does not mark the whole GPU in use with all its
    counters, which would keep claims off the GPU's other partitions."""
    extra = set()
    for key, p in mapping.exact.items():
        if key not in gpus or key not in use or table.multi[p] or table.devices[p].id in held.devices:
            continue
        index = gpus[key][0]
        pods = use[key][0] - usage[index][0] > 0 or use[key][1] - usage[index][1] > 0
        parents = [i for i in mapping.parents if key in mapping.grants[i]]
        if pods and parents and all(legacy.refused_by_counters(table, i, p) for i in parents):
            extra.add(table.devices[p].id)
            usage[index] = use[key]
    return held if not extra else type(held)(devices=held.devices | extra, shared=held.shared)


def _split_allocated(dra: Any, tasks: Mapping[str, Sequence[str]]
                     ) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """The tasks whose claims are pending, and those whose claims are all allocated (running
    pods: counted in their queues, not placed). DraError for a task with both."""
    pending, allocated = {}, {}
    for task, claims in tasks.items():
        done = [n for n in claims if ((dra._claims.get(n) or {}).get("status") or {}).get("allocation")]
        if done and len(done) < len(claims):
            raise DraError(f"task {task}: ResourceClaim {done[0]} is allocated and others are not; "
                           "a task's claims are placed together")
        (allocated if done else pending)[task] = list(claims)
    return pending, allocated


def set_claims(engine: Any, dra: Any, tasks: Mapping[str, Sequence[str]],
               device_class_mappings: Mapping[str, Sequence[str]] | None = None,
               strategy: str | None = None) -> None:
    """Gives the engine its tasks' claims (``{task: ["namespace/claim", ...]}``, unallocated
    claims of `dra`) for its next cycles; nodes of the engine that `dra` does not know offer no
    devices for claims. Replaces what an earlier call set, so commit the claims of placed tasks
    first (claim_results) and name those tasks again: a task whose claims are all allocated is
    not placed, only counted in its queue. KeyError or DraError naming the claim when one cannot
    be read.

    The devices each task's claims take count against the quotas of its queue tree, per
    DeviceClass or per the resource that `device_class_mappings` (``{resource: [classes]}``, as
    Kueue's deviceClassMappings) names for it (gpufleet.dra.quota); ValueError for a bad
    mapping.

    The claims' devices are picked by `strategy` (``pack`` or ``first``, as
    DraCluster.allocate), by default the DraCluster's; DraError for another name, before
    anything is set."""
    strategy = dra._strategy if strategy is None else strategy
    if strategy not in STRATEGIES:
        raise DraError(f"set_claims: unknown strategy {strategy!r} (known: {', '.join(STRATEGIES)})")
    resource_of = resource_of_class(device_class_mappings)
    eng_nodes = {name: engine.cluster.node(name) for name in engine.cluster.node_names()}
    with dra._lock:
        nodes = sorted(n for n in eng_nodes if n in dra._nodes)
        tables, profile_of = _profiles(dra, nodes)
        use = legacy.device_use(engine.cluster)
        rows = []
        for node in nodes:
            table = dra._table(node)
            gpus, count = _accounting_gpus(eng_nodes[node])
            counterparts: list[list[tuple[int, int, int, int, int]]] = [[] for _ in table.devices]
            mapping = legacy.device_map(eng_nodes[node], table.devices)
            # A device that is exactly a whole GPU or a MIG instance, and a whole GPU the node
            # splits (all its instances). A MIG partition the node's layout lacks is the DRA
            # ledger's alone: two claims' partitions inside one instance would take it twice here.
            for i, grants in mapping.grants.items():
                if i not in mapping.parents and mapping.exact.get(grants[0]) != i:
                    continue
                if any(g not in gpus for g in grants):
                    continue
                if not table.multi[i]:
                    counterparts[i] += [(gpus[g][0], 100, gpus[g][1], -1, -1) for g in grants]
                    continue
                device = gpus[grants[0]][0]
                # Shared by capacity: its cores and memory are the GPU's percent and bytes.
                cores_slot = table.capacity_slot.get((i, legacy.CORES), -1)
                memory_slot = table.capacity_slot.get((i, legacy.MEMORY), -1)
                if cores_slot >= 0 or memory_slot >= 0:
                    counterparts[i].append((device, 0, 0, cores_slot, memory_slot))
            keys_of = {index: key for key, (index, _) in gpus.items()}
            usage = _claims_usage(count, keys_of, use.get(node, {}), dra, table, counterparts)
            held = _pods_partitions(table, mapping, gpus, use.get(node, {}), usage, dra._held)
            rows.append((node, profile_of[node], table.held(held), counterparts, usage))
        task_rows = []
        # Claims of one shape ask the same of a profile: their requests are made once (unless
        # shared devices make them depend on what is held).
        made: dict[tuple[str, int], tuple[Any, str]] = {}
        pending, allocated = _split_allocated(dra, tasks)
        questions = {task: dra._question(list(claims), None) for task, claims in pending.items()}
        claimed = [c for _, targets, _, _ in questions.values() for c in targets]
        claimed += [dra._claims[n] for names in allocated.values() for n in names]
        named = {c for c in set(resource_of) | class_names(claimed) if counted(c, resource_of) is not None}
        total, most = class_devices([dra._table(n) for n in nodes], dra._classes, sorted(named), dra._matcher)
        capacity: dict[str, float] = {}
        for cls in named:
            resource = counted(cls, resource_of)
            capacity[resource] = capacity.get(resource, 0.0) + total[cls]  # type: ignore[index]
        devices = {task: allocated_devices([dra._claims[n] for n in names], resource_of)
                   for task, names in allocated.items()}
        for task, claims in pending.items():
            _, targets, classes, held = questions[task]
            devices[task] = claim_devices(targets, resource_of, most)
            shape = "\x00".join([*(dra._shapes[n] for n in claims), str(dra._classes_version)])
            by_profile: list[Any] = []
            refusals: list[str] = []
            for p, table in enumerate(tables):
                hit = made.get((shape, p))
                if hit is None:
                    try:
                        part = table.request_part(targets, classes, held, dra._matcher)
                        hit = (part.native(table), "")
                        if part.static:
                            made[(shape, p)] = hit
                    except DraError as e:
                        hit = made[(shape, p)] = (None, str(e))
                by_profile.append(hit[0])
                refusals.append(hit[1])
            task_rows.append((task, by_profile, refusals))
        _core.engine_dra_set(engine._native, [t.native() for t in tables], rows, task_rows, capacity,
                             {task: d for task, d in devices.items() if d}, strategy)


def claim_results(engine: Any, dra: Any, tasks: Mapping[str, Sequence[str]]
                  ) -> dict[str, tuple[str, dict[str, dict[str, Any]]]]:
    """What the placed tasks' claims hold: ``{task: (node, {claim: AllocationResult})}``, for the
    tasks of `tasks` that the engine placed (the claims as set_claims named them)."""
    out = {}
    holdings = _core.engine_dra_holdings(engine._native)
    with dra._lock:
        for task, (node, choices) in holdings.items():
            if task not in tasks:
                continue
            claims = list(tasks[task])
            _, targets, classes, held = dra._question(claims, None)
            table = dra._table(node)
            part = table.request_part(targets, classes, held, dra._matcher)
            answer = {"verdict": "allocated", "choices": choices, "steps": 0, "score": {},
                      "gave_up": False, "proved_best": True}
            results = outcome_of(part, answer, targets, table).results
            out[task] = (node, dict(zip(claims, results)))
    return out
