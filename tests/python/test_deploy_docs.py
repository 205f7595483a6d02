"""docs/deploy.md says what the chart, the kustomize base and the running components do: its Helm
commands render with the values they give, the names it tells operators to look for exist, its
manifests are valid, and its metric names and log lines are the ones the code writes."""
from __future__ import annotations

import ast
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from helm_python import parse_set_string

from test_deploy_chart import (BASE, CHART, KUBE_VERSIONS, containers, one, render,
                               scheduler_config, selects)

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "deploy.md").read_text()


def commands(prefix: str) -> list[list[str]]:
    """Shell commands of the document that start with `prefix`, continuation lines joined."""
    text = re.sub(r"\\\n\s*", " ", DOC)
    return [shlex.split(line.strip()) for line in text.splitlines()
            if line.strip().startswith(prefix)]


def yaml_blocks() -> list[str]:
    return re.findall(r"```yaml\n(.*?)```", DOC, flags=re.S)


def merge(into: dict, more: dict) -> dict:
    for k, v in more.items():
        if isinstance(v, dict) and isinstance(into.get(k), dict):
            merge(into[k], v)
        else:
            into[k] = v
    return into


def helm_values(argv: list[str]) -> tuple[dict, str]:
    """The values and the namespace a `helm install|upgrade` command gives."""
    values: dict = {}
    namespace = "default"
    for i, a in enumerate(argv):
        if a in ("-f", "--values"):
            merge(values, yaml.safe_load((ROOT / argv[i + 1]).read_text()))
        elif a in ("-n", "--namespace"):
            namespace = argv[i + 1]
    for i, a in enumerate(argv):   # Helm applies --set after the files
        if a == "--set":
            merge(values, parse_set_string(argv[i + 1]))
    return values, namespace


def test_every_helm_command_renders_valid_objects():
    argvs = commands("helm install") + commands("helm upgrade")
    assert len(argvs) >= 5
    for argv in argvs:
        assert argv[3] == "deploy/helm/gpufleet", argv
        values, namespace = helm_values(argv)
        assert namespace == "kube-system", argv
        for d in render(values, namespace):
            if d["kind"] != "ServiceMonitor":
                kubernetes_validate.validate(d, KUBE_VERSIONS[-1], strict=True)


def test_the_names_an_operator_is_told_to_look_for_exist():
    docs = render(yaml.safe_load((CHART / "ci" / "kind-values.yaml").read_text()))
    named = {(d["kind"], d["metadata"]["name"]) for d in docs}
    kinds = {"deploy": "Deployment", "ds": "DaemonSet"}
    mentions = set(re.findall(r"\b(deploy|ds)/([a-z0-9-]+)(?![/a-z0-9-])", DOC))
    mentions |= set(re.findall(r"get (deploy|ds) ([a-z0-9-]+)", DOC))
    assert {("deploy", "gpufleet-scheduler"), ("ds", "gpufleet-deviceplugin")} <= mentions
    for short, name in mentions:
        assert (kinds[short], name) in named, (short, name)
    (lease,) = set(re.findall(r"get lease ([a-z0-9-]+)", DOC))
    assert scheduler_config(docs)["leaderElection"]["resourceName"] == lease
    assert set(re.findall(r"logs deploy/gpufleet-scheduler -c ([a-z-]+)", DOC)) <= set(containers(docs))
    # The ports it forwards are the extender's and the plugin's metrics.
    (ext_port,) = set(re.findall(r"port-forward deploy/gpufleet-scheduler (\d+)", DOC))
    assert f"--listen=127.0.0.1:{ext_port}" in containers(docs)["extender"]["args"]
    (dp_port,) = set(re.findall(r"port-forward ds/gpufleet-deviceplugin (\d+)", DOC))
    assert containers(docs)["deviceplugin"]["ports"][0]["containerPort"] == int(dp_port)
    # The selector it uses to find the plugin's pod on a node.
    (selector,) = set(re.findall(r"get pod -l ([^ ]+)", DOC))
    key, value = selector.split("=")
    assert one(docs, "DaemonSet")["spec"]["template"]["metadata"]["labels"][key] == value


def test_the_test_pod_is_valid_and_goes_to_the_second_scheduler():
    (pod,) = [d for block in yaml_blocks() for d in yaml.safe_load_all(block)
              if d and d.get("kind") == "Pod"]
    for version in KUBE_VERSIONS:
        kubernetes_validate.validate(pod, version, strict=True)
    docs = render()
    config = scheduler_config(docs)
    assert pod["spec"]["schedulerName"] == config["profiles"][0]["schedulerName"]
    (resource,) = pod["spec"]["containers"][0]["resources"]["limits"]
    assert resource in {r["name"] for r in config["extenders"][0]["managedResources"]}
    assert f"--resource-name={resource}" in containers(docs)["deviceplugin"]["args"]


def test_the_kind_walk_through_labels_a_node_the_plugin_and_the_extender_accept():
    from gpufleet.k8s.extender.convert import node_spec

    values = yaml.safe_load((CHART / "ci" / "kind-values.yaml").read_text())
    (label,) = commands("kubectl label node")
    labels = dict(a.split("=", 1) for a in label[4:])
    assert selects(one(render(values), "DaemonSet")["spec"]["template"]["spec"], labels)
    devices = values["devicePlugin"]["devices"]
    assert f"serving {len(devices)} devices (whole mode)" in DOC
    node = {"metadata": {"name": label[3], "labels": labels},
            "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110",
                                       "nvidia.com/gpu": str(len(devices))}}, "spec": {}}
    assert [d["model"] for d in node_spec(node)["devices"]] == ["T4"] * len(devices)


def test_the_kustomize_overlay_names_images_of_the_base(tmp_path):
    (overlay,) = [yaml.safe_load(b) for b in yaml_blocks() if "kind: Kustomization" in b]
    base_images = {c["image"].rsplit(":", 1)[0]
                   for p in BASE.glob("*.yaml") for d in yaml.safe_load_all(p.read_text())
                   if d and d["kind"] in ("Deployment", "DaemonSet")
                   for c in d["spec"]["template"]["spec"]["containers"]}
    assert {i["name"] for i in overlay["images"]} == base_images
    assert "namespace" not in overlay
    tag = re.search(r'KUBE_SCHEDULER_TAG = "(v[0-9.]+)"',
                    (ROOT / "deploy" / "kustomize" / "generate.py").read_text()).group(1)
    assert f"oldest release the chart supports, {tag}" in DOC
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not installed: the overlay's build is not run")
    # kustomize takes bases by relative path only.
    base = os.path.relpath(BASE, tmp_path)
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump({**overlay, "resources": [base]}))
    out = subprocess.run(["kubectl", "kustomize", str(tmp_path)], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    images = {c["image"] for d in yaml.safe_load_all(out) if d and d["kind"] in ("Deployment", "DaemonSet")
              for c in d["spec"]["template"]["spec"]["containers"]}
    assert images == {"registry.k8s.io/kube-scheduler:v1.33.5", "registry.example.com/gpufleet:0.1.0"}


def test_metric_names_are_the_ones_served(tmp_path):
    from prometheus_client import generate_latest

    from gpufleet.k8s.deviceplugin.metrics import DevicePluginMetrics
    from gpufleet.k8s.deviceplugin.server import DevicePluginServer
    from gpufleet.k8s.extender.metrics import ExtenderMetrics
    from gpufleet.k8s.extender.state import ExtenderState

    metrics = DevicePluginMetrics()
    DevicePluginServer("nvidia.com/gpu", [{"minor": 0, "id": "GPU-0"}], "whole", None,
                       str(tmp_path)).enable_metrics(metrics)
    served = generate_latest(metrics.registry).decode()
    served += ExtenderMetrics(ExtenderState()).render()[0].decode()
    names = set(re.findall(r"\b(gpufleet_(?:deviceplugin|extender)_[a-z_]+)", served))
    mentioned = set(re.findall(r"\b(gpufleet_(?:deviceplugin|extender)_[a-z_]*[a-z])\b(?!_?\()", DOC))
    for kind, alternatives in re.findall(r"gpufleet_(deviceplugin|extender)_\(([a-z_|]+)\)", DOC):
        mentioned |= {f"gpufleet_{kind}_{n}" for n in alternatives.split("|")}
    assert len(mentioned) >= 5 and mentioned <= names, mentioned - names


def log_formats(path: Path) -> list[re.Pattern]:
    """The format strings of the module's log calls, as patterns of the lines they write."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "log"):
            fmt = next((a.value for a in node.args
                        if isinstance(a, ast.Constant) and isinstance(a.value, str)), None)
            if fmt:
                rx = re.escape(fmt)
                for spec, repl in (("%d", r"\d+"), ("%s", r".+"), ("%g", r"[0-9.]+")):
                    rx = rx.replace(re.escape(spec), repl)
                out.append(re.compile(rx + r"\Z"))
    return out


def test_quoted_log_lines_are_the_device_plugins():
    patterns = log_formats(ROOT / "python/gpufleet/k8s/deviceplugin/server.py")
    quoted = [line.split("... ", 1)[1] for line in DOC.splitlines() if line.startswith("... ")]
    assert len(quoted) >= 3
    for line in quoted:
        assert any(p.match(line) for p in patterns), line
    waiting = re.search(r"says `(waiting for the kubelet: no socket at) \.\.\.`", DOC).group(1)
    line = f"nvidia.com/gpu: {waiting} /var/lib/kubelet/device-plugins/kubelet.sock yet (checking every 1s)"
    assert any(p.match(line) for p in patterns)
