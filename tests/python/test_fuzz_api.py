"""The hostile-input probe as a campaign over the Python API: node specs, pods, quantities,
scenarios, engine configurations, queues and jobs made from valid ones by mutation, and sequences
of cluster calls with generated arguments. Every refusal is a ValueError, KeyError or TypeError
with a message, and leaves the state as it was (Cluster.snapshot(), the engine's jobs and queues);
every acceptance leaves a state that passes check_invariants. Settings: tests/fuzz/README.md."""
from __future__ import annotations

import json
from typing import Any, Callable

from hypothesis import given
from hypothesis import strategies as st

from fuzz_support import ODD_VALUES, campaign, mutated_document, time_limit
from gpufleet import Cluster, Engine, Pod, parse_milli, parse_quantity
from gpufleet.scenario import build_scenario

REFUSALS = (ValueError, KeyError, TypeError)
GPU = {"type": "gpu", "minor": 0, "model": "A100", "id": "GPU-0",
       "resources": {"koordinator.sh/gpu-core": "100", "koordinator.sh/gpu-memory": "80Gi",
                     "koordinator.sh/gpu-memory-ratio": "100"},
       "topology": {"socketID": 0, "nodeID": 0, "pcieID": "pci0", "busID": "0000:01:00.0"}}
NODES = [
    {"name": "m", "cpu": "32", "memory": "128Gi", "pods": 110, "labels": {"zone": "a"},
     "taints": [{"key": "gpu", "value": "yes", "effect": "NoSchedule"}],
     "gpus": {"count": 4, "model": "V100M16", "memory": "16Gi"}, "nvlink_groups": [[0, 1], [2, 3]]},
    {"name": "m", "cpu": "64", "memory": "256Gi", "devices": [GPU, {**GPU, "minor": 1, "id": "GPU-1"}]},
    {"name": "m", "gpus": {"count": 2, "model": "A100-SXM4-80GB", "memory": "80Gi"},
     "mig_strategy": "mixed"},
]
PODS = [
    {"name": "p", "requests": {"nvidia.com/gpu": 2, "cpu": "4", "memory": "8Gi"}, "priority": 3,
     "scope": "pcie", "gpu_models": ["V100M16"], "node_selector": {"zone": "a"},
     "tolerations": [{"key": "gpu", "operator": "Equal", "value": "yes", "effect": "NoSchedule"}]},
    {"name": "p", "requests": {"koordinator.sh/gpu-core": "50", "koordinator.sh/gpu-memory-ratio": "50"}},
    {"name": "p", "requests": {"aliyun.com/gpu-mem": 4096}},
]
JOB = {"name": "j", "queue": "q", "priority": 1, "min_available": 2, "replicas": 2,
       "requests": {"nvidia.com/gpu": 1, "cpu": "1"}}
QUEUE = {"name": "q", "weight": 2, "capability": {"gpu": 8}, "reclaimable": True}
CONFIG = {"actions": "enqueue, allocate, preempt, backfill",
          "tiers": [{"plugins": [{"name": "priority"}, {"name": "gang"}]},
                    {"plugins": [{"name": "drf"}, {"name": "predicates"}, {"name": "proportion"},
                                 {"name": "nodeorder", "arguments": {"leastrequested.weight": 1}}]}]}


def base_cluster() -> Cluster:
    c = Cluster()
    c.add_node({"name": "n1", "cpu": "32", "memory": "128Gi", "labels": {"zone": "a"},
                "gpus": {"count": 4, "model": "V100M16", "memory": "16Gi"}})
    c.add_node({"name": "n2", "cpu": "64", "memory": "256Gi", "devices": [GPU]})
    c.reserve(Pod("ns/held", {"nvidia.com/gpu": "1"}), "n1")
    c.commit("ns/held")
    c.reserve(Pod("ns/reserved", {"koordinator.sh/gpu-core": "50",
                                  "koordinator.sh/gpu-memory-ratio": "50"}), "n2")
    return c


def refused_or_done(call: Callable[[], Any], before: Callable[[], Any], after_refusal: Any) -> bool:
    """Runs ``call``: True when it answered; on a refusal checks its type and message and that
    ``before()`` still gives ``after_refusal`` (the state as it was), then False."""
    try:
        with time_limit(20, repr(call)):
            call()
        return True
    except REFUSALS as e:
        assert str(e).strip(), f"{type(e).__name__} without a message"
        assert before() == after_refusal, f"state changed by a refused call: {e}"
        return False


@campaign(200)
@given(st.sampled_from(NODES).flatmap(mutated_document))
def test_add_node_answers_or_refuses_leaving_the_cluster_as_it_was(spec):
    c = base_cluster()
    snapshot = c.snapshot()
    if refused_or_done(lambda: c.add_node(spec), c.snapshot, snapshot):
        c.check_invariants()
        assert len(c.node_names()) == 3


@campaign(200)
@given(st.sampled_from(PODS).flatmap(mutated_document), st.sampled_from(["n1", "n2", "n9", ""]),
       st.sampled_from(["binpack", "spread", "fgd", "topology", "random(seed=3)", "nope", "binpack(x=1)"]))
def test_pods_place_reserve_and_filter_or_refuse_leaving_the_cluster_as_it_was(spec, node, strategy):
    c = base_cluster()
    snapshot = c.snapshot()
    pod: list[Pod] = []
    if not refused_or_done(lambda: pod.append(Pod.from_dict(spec)), c.snapshot, snapshot):
        return
    for call in (lambda: c.filter(pod[0], node), lambda: c.score_nodes(pod[0], ["n1", "n2", node]),
                 lambda: c.place(pod[0], strategy, commit=False), lambda: c.reserve(pod[0], node, strategy)):
        state = c.snapshot()
        refused_or_done(call, c.snapshot, state)
        c.check_invariants()


KOORD = "scheduling.koordinator.sh/device-allocated"
ANNOTATIONS = [
    {KOORD: json.dumps({"gpu": [{"minor": 1, "resources": {"koordinator.sh/gpu-core": "100",
                                                          "koordinator.sh/gpu-memory": "16Gi",
                                                          "koordinator.sh/gpu-memory-ratio": "100"}}]})},
    {"ALIYUN_COM_GPU_MEM_IDX": "2", "ALIYUN_COM_GPU_MEM_POD": "4096"},
]


@st.composite
def annotations(draw) -> dict[str, Any]:
    chosen = draw(st.sampled_from(ANNOTATIONS))
    if KOORD in chosen and draw(st.booleans()):   # mutate the JSON inside the annotation
        return {KOORD: json.dumps(draw(mutated_document(json.loads(chosen[KOORD]))))}
    ann = draw(mutated_document(chosen))
    if isinstance(ann, dict) and draw(st.booleans()):   # as text, the way Kubernetes holds them
        ann = {str(k): str(v) for k, v in ann.items()}
    return ann


@campaign(200)
@given(st.sampled_from(PODS[:1] + [{"name": "p", "requests": {"aliyun.com/gpu-mem": 4096}}]),
       annotations(), st.sampled_from(["n1", "n2", "n9"]))
def test_restore_allocation_answers_or_refuses_leaving_the_cluster_as_it_was(spec, ann, node):
    c = base_cluster()
    snapshot = c.snapshot()
    pod = Pod.from_dict({**spec, "requests": {"nvidia.com/gpu": 1}} if "scope" in spec else spec)
    if refused_or_done(lambda: c.restore_allocation(pod, node, ann), c.snapshot, snapshot):
        c.check_invariants()


NAMES = st.sampled_from(["ns/held", "ns/reserved", "nobody", "", "n1", "\x00", "x" * 500])
OPS = st.one_of(
    st.tuples(st.just("commit"), NAMES), st.tuples(st.just("unreserve"), NAMES),
    st.tuples(st.just("release"), NAMES), st.tuples(st.just("remove_node"), NAMES),
    st.tuples(st.just("set_device_health"), st.sampled_from(["n1", "n2", "n9"]),
              st.sampled_from(["gpu", "rdma", "", "x"]), st.integers(-2, 5), st.booleans()),
    st.tuples(st.just("allocation"), NAMES), st.tuples(st.just("node"), NAMES),
    st.tuples(st.just("restore"), st.sampled_from(["", "{}", "[]", "null", '{"nodes": 5}', "x" * 100])),
)


@campaign(150)
@given(st.lists(OPS, max_size=8))
def test_sequences_of_cluster_calls_keep_the_accounting_whole(ops):
    c = base_cluster()
    for name, *args in ops:
        state = c.snapshot()
        call = (lambda: Cluster.restore(*args)) if name == "restore" else \
            (lambda: getattr(c, name)(*args))
        refused_or_done(call, c.snapshot, state)
        c.check_invariants()


@campaign(200)
@given(st.one_of(st.text(max_size=24), st.sampled_from(["1Ei", "8Ei", "9223372036854775807",
                                                        "1e18", "0.5m", "-0", "1" * 40]),
                 ODD_VALUES))
def test_quantities_are_numbers_or_value_errors(text):
    for parse in (parse_quantity, parse_milli):
        try:
            value = parse(text)
        except (ValueError, TypeError) as e:
            assert str(e).strip()
            continue
        assert isinstance(value, int) and 0 <= value < 2**63


SCENARIO = {"nodes": [NODES[0] | {"name": "n1"}, NODES[1] | {"name": "n2"}],
            "pods": [PODS[0], PODS[1] | {"name": "q"},
                     {"name": "b", "node": "n1", "requests": {"aliyun.com/gpu-mem": 4096},
                      "annotations": {"ALIYUN_COM_GPU_MEM_IDX": "0", "ALIYUN_COM_GPU_MEM_POD": "4096"}}],
            "queues": [QUEUE], "jobs": [JOB]}


@campaign(200)
@given(mutated_document(SCENARIO))
def test_scenarios_build_or_refuse_with_a_scenario_error(data):
    try:
        with time_limit(20, "build_scenario"):
            s = build_scenario(data, "fuzz.yaml")
    except ValueError as e:
        assert str(e).startswith("fuzz.yaml") and "\n" not in str(e), str(e)
        return
    s.cluster.check_invariants()


def engine_state(e: Engine) -> tuple[str, Any, Any]:
    return e.cluster.snapshot(), e.jobs().to_dict("list"), e.queues().to_dict("list")


@campaign(150)
@given(mutated_document(CONFIG), mutated_document(QUEUE), mutated_document(JOB))
def test_engine_configs_queues_and_jobs_answer_or_refuse_leaving_the_engine_as_it_was(conf, queue, job):
    try:
        with time_limit(20, "Engine(config)"):
            engine = Engine(conf)
    except REFUSALS as e:
        assert str(e).strip()
        engine = Engine(CONFIG)
    engine.add_node({"name": "n1", "cpu": "32", "memory": "128Gi",
                     "gpus": {"count": 4, "model": "V100M16", "memory": "16Gi"}})
    engine.add_queue("q")
    for call in (lambda: engine.add_queue(queue), lambda: engine.update_queue(queue),
                 lambda: engine.submit(job)):
        refused_or_done(call, lambda: engine_state(engine), engine_state(engine))
    with time_limit(20, "run_cycle"):
        engine.run_cycle()
    engine.cluster.check_invariants()
