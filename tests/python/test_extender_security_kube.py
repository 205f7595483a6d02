"""`--kube` binds only what kube-scheduler sent through filter: a bare bind of a pod never
filtered, a pod of another scheduler (whatever a filter body claimed), a bind without or with a
wrong uid are refused, and nothing reaches the API server; a retry after a restart still binds.
Against the fake API server of test_extender_kube, in-process and through the real CLI."""
from __future__ import annotations

import os
import warnings
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest

import gpufleet

pytest.importorskip("kubernetes", reason="the k8s extra (official client) is not installed")

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient  # noqa: E402

from gpufleet.k8s.extender.app import create_app  # noqa: E402
from gpufleet.k8s.extender.guard import BindGuard  # noqa: E402
from gpufleet.k8s.extender.kube import load_kube, read_pod_object  # noqa: E402
from test_extender import kpod  # noqa: E402
from test_extender_crash import Extender  # noqa: E402
from test_extender_kube import FakeKubeAPI, api_node, api_pod, fake_api  # noqa: E402,F401

P = "/gpufleet"


def cpu_pod(name: str, scheduler: str) -> dict[str, Any]:
    """A pod of another scheduler that asks for no GPU: never sent to the extender."""
    pod = kpod(name, {"cpu": "1"})
    pod["spec"]["schedulerName"] = scheduler
    pod["status"] = {"phase": "Pending"}
    return pod


def bind_body(name: str, uid: Any = "default", node: str = "n1") -> dict[str, Any]:
    body = {"PodName": name, "PodNamespace": "default", "Node": node}
    if uid is not None:
        body["PodUID"] = f"uid-{name}" if uid == "default" else uid
    return body


def filter_body(pod: dict[str, Any]) -> dict[str, Any]:
    return {"Pod": pod, "NodeNames": ["n1"]}


def unbound(api: FakeKubeAPI, name: str) -> bool:
    pod = api.pod(f"default/{name}")
    return not pod["spec"].get("nodeName") and not pod["metadata"].get("annotations")


def test_kube_binds_only_pods_this_scheduler_filtered(fake_api: FakeKubeAPI):
    api = fake_api
    api.put_node(api_node("n1", gpus=4))
    api.put_pod(cpu_pod("web", "other-scheduler"))
    sneaky = api_pod("sneaky")
    sneaky["spec"]["schedulerName"] = "other-scheduler"
    api.put_pod(sneaky)
    for name in ("gpu-a", "gpu-b"):
        api.put_pod(api_pod(name))
    core = api.client()
    st, _, _ = load_kube(core, api=gpufleet)
    client = TestClient(create_app(st, P, bind_guard=BindGuard(partial(read_pod_object, core))))

    def bind(body: dict[str, Any]) -> str:
        return client.post(f"{P}/bind", json=body).json()["Error"]

    # A bare bind of another scheduler's CPU pod, and of a GPU pod never filtered.
    assert "was not sent to filter" in bind(bind_body("web"))
    assert "was not sent to filter" in bind(bind_body("gpu-a"))
    # A filter body claiming the default scheduler does not make the live pod ours.
    claimed = dict(sneaky, spec=dict(sneaky["spec"], schedulerName="default-scheduler"))
    assert client.post(f"{P}/filter", json=filter_body(claimed)).json()["NodeNames"] == ["n1"]
    assert "schedulerName 'other-scheduler', not 'default-scheduler'" in \
        bind(bind_body("sneaky"))
    client.post(f"{P}/filter", json=filter_body(api.pod("default/web")))
    assert "schedulerName 'other-scheduler'" in bind(bind_body("web"))
    # The filtered pod, but no uid or another pod's uid.
    client.post(f"{P}/filter", json=filter_body(api.pod("default/gpu-a")))
    assert "PodUID is missing" in bind(bind_body("gpu-a", uid=None))
    assert "was not sent to filter" in bind(bind_body("gpu-a", uid="uid-gpu-b"))
    assert st.cluster.allocations() == []
    assert not any(r.startswith(("PATCH", "POST")) for r in api.requests)
    assert all(unbound(api, n) for n in ("web", "sneaky", "gpu-a", "gpu-b"))

    assert bind(bind_body("gpu-a")) == ""    # filtered, ours, the right uid
    assert api.pod("default/gpu-a")["spec"]["nodeName"] == "n1"

    # After a restart, kube-scheduler's retry of a bind that went through is answered (the pod
    # holds this extender's annotations, so it is held again), and a stranger is still refused.
    st2, report, _ = load_kube(core, api=gpufleet)
    assert report.restored == ["default/gpu-a"]
    client2 = TestClient(create_app(st2, P, bind_guard=BindGuard(partial(read_pod_object,
                                                                         core))))
    assert client2.post(f"{P}/bind", json=bind_body("gpu-a")).json() == {"Error": ""}
    assert "was not sent to filter" in \
        client2.post(f"{P}/bind", json=bind_body("gpu-b")).json()["Error"]
    assert unbound(api, "gpu-b") and unbound(api, "web")


def test_cli_kube_refuses_a_bare_bind_of_another_schedulers_pod(fake_api: FakeKubeAPI,
                                                               tmp_path: Path):
    api = fake_api
    api.put_node(api_node("n1", gpus=2))
    api.put_pod(cpu_pod("web", "other-scheduler"))
    api.put_pod(api_pod("trainer"))
    api.kubeconfig(tmp_path / "kubeconfig")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_")}
    env["KUBECONFIG"] = str(tmp_path / "kubeconfig")
    ext = Extender(["--kube"], env, tmp_path / "extender.log").start()
    try:
        out = httpx.post(f"{ext.url}{P}/bind", json=bind_body("web"), timeout=10).json()
        assert out["Error"] and unbound(api, "web")
        # kube-scheduler's own cycle still binds.
        httpx.post(f"{ext.url}{P}/filter", json=filter_body(api.pod("default/trainer")),
                   timeout=10)
        out = httpx.post(f"{ext.url}{P}/bind", json=bind_body("trainer"), timeout=10).json()
        assert out == {"Error": ""}
        assert api.pod("default/trainer")["spec"]["nodeName"] == "n1" and unbound(api, "web")
    finally:
        ext.stop()
