"""A pod's effective request is computed once, by the core, from its containers as Kubernetes
defines it (kubernetes.io, "Init containers" and "Sidecar containers", 1.29+):

- a container's request for a resource is its request, or its limit when it sets only a limit;
- during initialization each init container runs alone beside the sidecars (init containers with
  restartPolicy Always) listed before it; the largest such need is the effective init request;
- after it, the sidecars and the regular containers run together: their sum;
- the effective request is the larger of the two, plus the pod's overhead.

The extender's Pod conversion, scenario pods and gpufleet.Pod all take this one computation."""
from __future__ import annotations

import pytest

import gpufleet
from gpufleet import Pod
from gpufleet._core.cluster import effective_requests
from gpufleet.engine import Engine
from gpufleet.k8s.extender import convert
from gpufleet.scenario import build_scenario

from conftest import gpu_node

GiB = 1 << 30


def container(requests=None, limits=None, **extra):
    return {"requests": requests or {}, "limits": limits or {}, **extra}


def sidecar(requests):
    return container(requests, restart_policy="Always")


def test_the_init_containers_page_example():
    # Init 250m/256Mi then 500m/1Gi; apps 500m/1Gi and 250m/1Gi: cpu max(500m, 750m), memory 2Gi.
    spec = {"init_containers": [container({"cpu": "250m", "memory": "256Mi"}),
                                container({"cpu": "500m", "memory": "1Gi"})],
            "containers": [container({"cpu": "500m", "memory": "1Gi"}),
                           container({"cpu": "250m", "memory": "1Gi"})]}
    assert effective_requests(spec) == {"cpu": "0.75", "memory": str(2 * GiB)}


@pytest.mark.parametrize("init, expected_cpu", [
    ([sidecar({"cpu": "100m"}), container({"cpu": "1"})], "1.1"),  # 1 beside the sidecar before it
    ([container({"cpu": "1"}), sidecar({"cpu": "100m"})], "1"),    # the sidecar starts after it
    ([container({"cpu": "200m"}), sidecar({"cpu": "300m"})], "0.8"),  # after init: 500m + 300m
    ([sidecar({"cpu": "1"}), sidecar({"cpu": "1"}), container({"cpu": "1"})], "3"),
])
def test_sidecars_run_beside_the_init_containers_after_them_and_the_app(init, expected_cpu):
    assert effective_requests({"containers": [container({"cpu": "500m"})],
                               "init_containers": init})["cpu"] == expected_cpu


def test_limits_default_requests_and_overhead_is_added_last():
    spec = {"containers": [container({"cpu": "1"}, {"cpu": "4", "nvidia.com/gpu": 1})],
            "init_containers": [container({"cpu": "2"})],
            "overhead": {"cpu": "250m", "memory": "120Mi"}}
    assert effective_requests(spec) == {"cpu": "2.25", "memory": str(120 << 20), "nvidia.com/gpu": "1"}


def test_one_pod_whichever_way_it_is_written():
    by_containers = Pod("p", containers=[container({"cpu": "1500m", "memory": "1Gi"}),
                                         container({"cpu": "0.5"}, {"nvidia.com/gpu": "2"})],
                        init_containers=[container({"memory": "3Gi"})])
    by_requests = Pod("p", {"cpu": "2", "memory": "3Gi", "nvidia.com/gpu": "2"})
    from_dict = Pod.from_dict({"name": "p", "containers": [container({"cpu": "2", "nvidia.com/gpu": 2})],
                               "overhead": {"memory": "3Gi"}})
    for pod in (by_containers, from_dict):
        assert (pod.cpu_milli, pod.memory_bytes) == (by_requests.cpu_milli, by_requests.memory_bytes) == \
            (2000, 3 * GiB)
        assert [(d.type, d.count) for d in pod.devices] == [("gpu", 2)]


def test_scenario_pods_and_engine_jobs_take_containers():
    s = build_scenario({"nodes": [gpu_node("n1")], "pods": [
        {"name": "w", "containers": [container({"cpu": "1", "nvidia.com/gpu": 1})],
         "init_containers": [sidecar({"cpu": "500m"})]}]})
    assert s.pending[0].cpu_milli == 1500 and s.pending[0].devices[0].count == 1
    e = Engine()
    e.add_node(gpu_node("n1"))
    e.submit({"name": "j", "replicas": 2, "containers": [container({"cpu": "2", "nvidia.com/gpu": 1})]})
    r = e.run_cycle()
    assert list(r.binds["cpu_milli"]) == [2000, 2000]


def test_the_extender_reads_kubernetes_pods_through_it():
    pod = {"metadata": {"name": "p", "namespace": "ns"}, "spec": {
        "containers": [{"name": "app", "image": "x", "resources": {"requests": {"cpu": "500m"},
                                                                   "limits": {"nvidia.com/gpu": "1"}}}],
        "initContainers": [{"name": "proxy", "restartPolicy": "Always",
                            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}},
                           {"name": "fetch", "resources": {"requests": {"cpu": "2"}}}],
        "overhead": {"cpu": "50m"}}}
    args = convert.pod_args(pod)
    assert args.requests == {"cpu": "2.15", "memory": str(64 << 20), "nvidia.com/gpu": "1"}
    assert Pod(**args.kwargs()).cpu_milli == 2150


def test_errors_name_the_field_and_leave_nothing_half_read():
    with pytest.raises(gpufleet.InvalidInputError,
                       match=r'^pod: containers\[1\]\.requests\.cpu: invalid quantity "lots": no digits$'):
        effective_requests({"containers": [container({"cpu": "1"}), container({"cpu": "lots"})]})
    with pytest.raises(ValueError, match=r"init_containers\[0\]\.limits\.nvidia\.com/gpu: .*whole numbers only"):
        effective_requests({"init_containers": [container(limits={"nvidia.com/gpu": "1.5"})]})
    with pytest.raises(ValueError, match="restart policy may only be Always"):
        effective_requests({"init_containers": [container(restart_policy="OnFailure")]})
    with pytest.raises(ValueError, match="give either requests or containers"):
        Pod.from_dict({"name": "p", "requests": {"cpu": "1"}, "containers": [container({"cpu": "1"})]})
    with pytest.raises(ValueError, match=r"pod p: restart_policy|init containers|restart_policy"):
        Pod.from_dict({"name": "p", "containers": [container(restart_policy="Always")]})
    bad = {"metadata": {"name": "p"}, "spec": {"containers": [
        {"name": "a", "resources": {"limits": {"memory": "lots"}}}]}}
    with pytest.raises(convert.ConvertError, match=r"^pod default/p: spec: containers\[0\]\.limits\.memory: "):
        convert.pod_args(bad)
