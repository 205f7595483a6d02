"""The Helm chart (deploy/helm/gpufleet) and the kustomize base generated from it.

Rendered by Helm's own engine (helm-python-sdk, Helm's Go SDK behind a C interface), linted as
`helm lint --strict` does, and every object checked against the Kubernetes OpenAPI schemas
(kubernetes-validate, strict: an unknown field is an error). What a schema cannot say is checked
here: the scheduler's profile calls the extender beside it, both sides agree on ports, names and
TLS files, RBAC is the least each component needs, the device plugin lands on GPU nodes."""
from __future__ import annotations

import copy
import json
import shutil
import subprocess
from pathlib import Path
from urllib.parse import urlparse

import kubernetes_validate
import pytest
import yaml
from helm_python.chart import Chart, lint
from helm_python.errors import HelmValuesError

from gpufleet.cli import build_parser
from gpufleet.k8s.deviceplugin.metrics import DEFAULT_PORT

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "deploy" / "helm" / "gpufleet"
BASE = ROOT / "deploy" / "kustomize" / "base"
# The oldest Kubernetes the chart supports (Chart.yaml kubeVersion) and the newest the validator
# knows.
KUBE_VERSIONS = ["1.30.0", kubernetes_validate.utils.latest_version()]

# Value sets an operator would use; every test that renders goes over all of them.
VALUE_SETS = {
    "default": {},
    "shared": {"devicePlugin": {"sharing": {"mode": "shared", "mpsPipeDir": "/tmp/nvidia-mps"}}},
    "shared-replicas": {"devicePlugin": {"sharing": {"mode": "shared", "replicas": 4,
                                                      "resourceName": "gpufleet.io/gpu-shared"}}},
    "tls-dra-monitor": {"extender": {"tls": {"enabled": True}, "dra": True},
                        "serviceMonitor": {"enabled": True, "labels": {"release": "prom"}},
                        "logFormat": "json"},
    "quiet": {"devicePlugin": {"metrics": {"enabled": False}}, "extender": {"admissionPolicy": False}},
    "plugin-only": {"scheduler": {"enabled": False},
                    "devicePlugin": {"nodeSelector": {"pool": "gpu"}, "runtimeClassName": "nvidia"}},
    "scheduler-only": {"devicePlugin": {"enabled": False}},
    # docs/deploy.md's walk-through on kind, where no node has a GPU.
    "kind": yaml.safe_load((CHART / "ci" / "kind-values.yaml").read_text()),
}


def render(values: dict | None = None, namespace: str = "kube-system") -> list[dict]:
    with Chart.load(CHART) as chart:
        out = chart.render(values or {}, name="gpufleet", namespace=namespace)
    return [d for path, text in sorted(out.items()) if path.endswith(".yaml")
            for d in yaml.safe_load_all(text) if d]


def one(docs: list[dict], kind: str, name: str | None = None) -> dict:
    found = [d for d in docs if d["kind"] == kind and name in (None, d["metadata"]["name"])]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


def containers(docs: list[dict]) -> dict[str, dict]:
    return {c["name"]: c for d in docs if d["kind"] in ("Deployment", "DaemonSet")
            for c in d["spec"]["template"]["spec"]["containers"]}


def scheduler_config(docs: list[dict]) -> dict:
    return yaml.safe_load(one(docs, "ConfigMap", "gpufleet-scheduler")["data"]["config.yaml"])


def arg(container: dict, option: str) -> str:
    (value,) = [a.split("=", 1)[1] for a in container["args"] if a.startswith(option + "=")]
    return value


# ---- Helm's own checks -------------------------------------------------------------------------
@pytest.mark.parametrize("name", VALUE_SETS)
def test_helm_lint_strict_finds_nothing(name):
    for version in KUBE_VERSIONS:
        report = lint(CHART, VALUE_SETS[name], strict=True, kube_version=f"v{version}",
                      namespace="kube-system")
        assert report["errors"] == [], report
        # Severity 1 is information ("icon is recommended"); 2 and 3 are warnings and errors.
        assert [m for m in report["messages"] if m["severity"] >= 2] == [], report


@pytest.mark.parametrize("values, where", [
    ({"devicePlugin": {"sharing": {"mode": "half"}}}, "/devicePlugin/sharing/mode"),
    ({"extender": {"prot": 8888}}, "additional properties 'prot'"),
    ({"extender": {"port": 0}}, "/extender/port"),
    ({"devicePlugin": {"gpuNodeLabels": [{"values": ["true"]}]}}, "missing property 'key'"),
    ({"scheduler": {"name": "GPU_Scheduler"}}, "/scheduler/name"),
    ({"devicePlugin": {"sharing": {"memoryUnit": "1 GiB"}}}, "/devicePlugin/sharing/memoryUnit"),
])
def test_a_wrong_value_is_refused_naming_it(values, where):
    with pytest.raises(HelmValuesError) as e:
        render(values)
    assert where in str(e.value)


# ---- Kubernetes schemas --------------------------------------------------------------------------
@pytest.mark.parametrize("name", VALUE_SETS)
def test_every_object_is_valid_for_kubernetes(name):
    docs = render(VALUE_SETS[name])
    kinds = {d["kind"] for d in docs}
    for doc in docs:
        if doc["kind"] == "ServiceMonitor":   # a CRD: checked in its own test
            continue
        for version in KUBE_VERSIONS:
            kubernetes_validate.validate(doc, version, strict=True)
    if name == "default":
        assert kinds == {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role",
                         "RoleBinding", "ConfigMap", "Deployment", "DaemonSet", "Service",
                         "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}


def test_the_validator_would_see_a_wrong_field():
    """The schema check is strict: a misspelt field of a rendered object fails it."""
    deployment = one(render(), "Deployment")
    bad = copy.deepcopy(deployment)
    bad["spec"]["template"]["spec"]["containers"][0]["readinessProbes"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, KUBE_VERSIONS[0], strict=True)
    kubernetes_validate.validate(deployment, KUBE_VERSIONS[0], strict=True)


# ---- the scheduler: kube-scheduler's profile and the extender beside it ------------------------
# KubeSchedulerConfiguration v1 (kubescheduler.config.k8s.io/v1): the fields of each type it
# uses. kube-scheduler decodes its file strictly, so a field outside these stops it.
SCHEDULER_CONFIG_FIELDS = {
    "": {"apiVersion", "kind", "parallelism", "leaderElection", "clientConnection",
         "enableProfiling", "enableContentionProfiling", "percentageOfNodesToScore",
         "podInitialBackoffSeconds", "podMaxBackoffSeconds", "profiles", "extenders",
         "delayCacheUntilActive"},
    "leaderElection": {"leaderElect", "leaseDuration", "renewDeadline", "retryPeriod",
                       "resourceLock", "resourceName", "resourceNamespace"},
    "profiles": {"schedulerName", "percentageOfNodesToScore", "plugins", "pluginConfig"},
    "extenders": {"urlPrefix", "filterVerb", "preemptVerb", "prioritizeVerb", "weight",
                  "bindVerb", "enableHTTPS", "tlsConfig", "httpTimeout", "nodeCacheCapable",
                  "managedResources", "ignorable"},
    "tlsConfig": {"insecure", "serverName", "certFile", "keyFile", "caFile", "certData",
                  "keyData", "caData"},
    "managedResources": {"name", "ignoredByScheduler"},
}


def check_scheduler_config_fields(config: dict) -> None:
    """Every key is a field of its KubeSchedulerConfiguration v1 type."""
    assert (config["apiVersion"], config["kind"]) == ("kubescheduler.config.k8s.io/v1",
                                                      "KubeSchedulerConfiguration")
    assert set(config) <= SCHEDULER_CONFIG_FIELDS[""], set(config) - SCHEDULER_CONFIG_FIELDS[""]
    assert set(config.get("leaderElection", {})) <= SCHEDULER_CONFIG_FIELDS["leaderElection"]
    for p in config["profiles"]:
        assert set(p) <= SCHEDULER_CONFIG_FIELDS["profiles"], p
    for e in config.get("extenders", []):
        assert set(e) <= SCHEDULER_CONFIG_FIELDS["extenders"], set(e) - SCHEDULER_CONFIG_FIELDS["extenders"]
        assert set(e.get("tlsConfig", {})) <= SCHEDULER_CONFIG_FIELDS["tlsConfig"]
        for r in e.get("managedResources", []):
            assert set(r) <= SCHEDULER_CONFIG_FIELDS["managedResources"], r
    # kube-scheduler's own validation: at most one extender binds; a prioritizer has a weight.
    assert sum(1 for e in config.get("extenders", []) if e.get("bindVerb")) <= 1
    assert all(e.get("weight", 0) > 0 for e in config.get("extenders", []) if e.get("prioritizeVerb"))


@pytest.mark.parametrize("name", [n for n in VALUE_SETS if n != "plugin-only"])
def test_the_profile_calls_the_extender_beside_it_on_loopback(name):
    from gpufleet.k8s.extender.auth import Access
    from gpufleet.k8s.listen import parse_listen

    values = VALUE_SETS[name]
    docs = render(values, namespace="gpu-system")
    config = scheduler_config(docs)
    check_scheduler_config_fields(config)
    deployment = one(docs, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    c = {x["name"]: x for x in pod["containers"]}
    assert set(c) == {"kube-scheduler", "extender"}
    args = build_parser().parse_args(c["extender"]["args"])   # the CLI reads them as written
    (profile,) = config["profiles"]
    assert profile["schedulerName"] == "gpufleet-scheduler" == args.scheduler_name
    (ext,) = config["extenders"]
    url = urlparse(ext["urlPrefix"])
    host, port = parse_listen(args.listen)
    assert (url.hostname, url.port, url.path) == ("127.0.0.1", port, args.prefix) and host == url.hostname
    assert ext["ignorable"] is False and ext["bindVerb"] == "bind" and ext["nodeCacheCapable"]
    # What the extender's start checks: loopback needs no authentication, TLS must be whole.
    Access(tls_cert=args.tls_cert, tls_key=args.tls_key,
           tls_client_ca=args.tls_client_ca).check_exposure(host)
    assert (url.scheme == "https") == ext["enableHTTPS"] == bool(args.tls_client_ca)
    # kube-scheduler reads the ConfigMap where --config points.
    config_arg = next(a for a in c["kube-scheduler"]["command"] if a.startswith("--config="))
    mounts = {m["name"]: m["mountPath"] for m in c["kube-scheduler"]["volumeMounts"]}
    assert config_arg == f"--config={mounts['config']}/config.yaml"
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["config"]["configMap"]["name"] == "gpufleet-scheduler"
    # Leader election on its own Lease, which its Role may renew.
    le = config["leaderElection"]
    assert le == {"leaderElect": True, "resourceName": "gpufleet-scheduler",
                  "resourceNamespace": "gpu-system"}
    (rule,) = one(docs, "Role")["rules"]
    assert rule["resourceNames"] == [le["resourceName"]] and set(rule["verbs"]) == {"get", "update"}
    assert one(docs, "Role")["metadata"]["namespace"] == le["resourceNamespace"]
    # The device plugin's resource is one the extender manages.
    if values.get("devicePlugin", {}).get("enabled", True):
        resource = arg(containers(docs)["deviceplugin"], "--resource-name")
        if resource != "gpufleet.io/gpu-shared":
            assert resource in {r["name"] for r in ext["managedResources"]}
    # One replica, replaced not rolled: never two extenders handing out devices.
    assert deployment["spec"]["replicas"] == 1 and deployment["spec"]["strategy"]["type"] == "Recreate"
    # The kubelet probes the extender on its probe port, which serves only the probes and
    # /metrics; scrape annotations point Prometheus there (the extender's own port is loopback).
    probe_port = parse_listen(args.probe_listen)[1]
    assert c["extender"]["ports"] == [{"name": "probes", "containerPort": probe_port}]
    for probe in ("readinessProbe", "livenessProbe"):
        assert c["extender"][probe]["httpGet"]["port"] == "probes"
        assert c["kube-scheduler"][probe]["httpGet"]["scheme"] == "HTTPS"
    scrape = deployment["spec"]["template"]["metadata"]["annotations"]
    assert parse_listen(args.listen)[0] == "127.0.0.1"
    assert (scrape["prometheus.io/scrape"], scrape["prometheus.io/path"]) == ("true", "/metrics")
    assert int(scrape["prometheus.io/port"]) == probe_port
    assert pod["securityContext"]["runAsNonRoot"] is True
    for x in c.values():
        sc = x["securityContext"]
        assert sc["allowPrivilegeEscalation"] is False and sc["readOnlyRootFilesystem"] is True
        assert sc["capabilities"]["drop"] == ["ALL"]


def test_the_scheduler_image_follows_the_cluster_unless_pinned():
    import re

    image = containers(render())["kube-scheduler"]["image"]
    assert re.fullmatch(r"registry\.k8s\.io/kube-scheduler:v\d+\.\d+\.\d+", image), image
    pinned = {"scheduler": {"image": {"repository": "mirror.example/kube-scheduler", "tag": "v1.31.4"}}}
    assert containers(render(pinned))["kube-scheduler"]["image"] == "mirror.example/kube-scheduler:v1.31.4"
    ours = {"image": {"repository": "registry.example/gpufleet", "tag": "dev"}}
    docs = render(ours)
    assert {c["image"] for n, c in containers(docs).items() if n != "kube-scheduler"} == \
        {"registry.example/gpufleet:dev"}


def test_mutual_tls_gives_each_container_only_its_own_key():
    from gpufleet.k8s.extender.auth import Access

    docs = render({"extender": {"tls": {"enabled": True, "secretName": "my-tls",
                                        "serverName": "gpufleet-extender"}}})
    ext = scheduler_config(docs)["extenders"][0]
    pod = one(docs, "Deployment")["spec"]["template"]["spec"]
    c = {x["name"]: x for x in pod["containers"]}
    args = build_parser().parse_args(c["extender"]["args"])
    assert args.tls_client_ca and not args.insecure and args.token_file is None
    Access(tls_cert=args.tls_cert, tls_key=args.tls_key,
           tls_client_ca=args.tls_client_ca).check_exposure("0.0.0.0")   # would hold off loopback too
    tls = ext["tlsConfig"]
    assert tls["serverName"] == "gpufleet-extender" and not tls["insecure"]

    def files(container: dict) -> dict[str, str]:
        """Path inside the container -> the Secret key it holds."""
        out = {}
        for m in container.get("volumeMounts", []):
            volume = next(v for v in pod["volumes"] if v["name"] == m["name"])
            if "secret" in volume:
                assert volume["secret"]["secretName"] == "my-tls" and m["readOnly"]
                out.update({f"{m['mountPath']}/{i['path']}": i["key"] for i in volume["secret"]["items"]})
        return out

    ext_files, sched_files = files(c["extender"]), files(c["kube-scheduler"])
    assert [ext_files[p] for p in (args.tls_cert, args.tls_key, args.tls_client_ca)] == \
        ["tls.crt", "tls.key", "ca.crt"]
    assert [sched_files[tls[k]] for k in ("certFile", "keyFile", "caFile")] == \
        ["client.crt", "client.key", "ca.crt"]
    assert "client.key" not in ext_files.values() and "tls.key" not in sched_files.values()
    assert pod["securityContext"]["fsGroup"] == pod["securityContext"]["runAsUser"]


# ---- RBAC ---------------------------------------------------------------------------------------
def rules_of(role: dict) -> dict[tuple[str, str], set[str]]:
    out: dict[tuple[str, str], set[str]] = {}
    for rule in role["rules"]:
        for g in rule["apiGroups"]:
            for r in rule["resources"]:
                out.setdefault((g, r), set()).update(rule["verbs"])
    return out


def bound_roles(docs: list[dict], namespace: str, sa: str) -> set[str]:
    subject = {"kind": "ServiceAccount", "name": sa, "namespace": namespace}
    return {b["roleRef"]["name"] for b in docs if b["kind"] in ("ClusterRoleBinding", "RoleBinding")
            and subject in b["subjects"]}


EXTENDER_RULES = {("", "nodes"): {"list", "watch"}, ("", "pods"): {"get", "list", "watch", "patch"},
                  ("", "bindings"): {"create"}}
DRA_RULES = {("resource.k8s.io", "resourceslices"): {"list", "watch"},
             ("resource.k8s.io", "deviceclasses"): {"list", "watch"},
             ("resource.k8s.io", "resourceclaims"): {"list", "watch"},
             ("resource.k8s.io", "resourceclaims/status"): {"patch"}}


@pytest.mark.parametrize("dra", [False, True])
def test_the_scheduler_account_has_kube_schedulers_roles_and_the_extenders(dra):
    docs = render({"extender": {"dra": dra}}, namespace="gpu-system")
    pod = one(docs, "Deployment")["spec"]["template"]["spec"]
    sa = pod["serviceAccountName"]
    assert one(docs, "ServiceAccount", sa)["metadata"]["namespace"] == "gpu-system"
    roles = bound_roles(docs, "gpu-system", sa)
    extender_role = one(docs, "ClusterRole", "gpufleet-scheduler-extender")
    assert roles == {"system:kube-scheduler", "system:volume-scheduler",
                     "gpufleet-scheduler-leader-election", "gpufleet-scheduler-extender"}
    assert rules_of(extender_role) == (EXTENDER_RULES | DRA_RULES if dra else EXTENDER_RULES)
    # The same rules as the standalone extender's manifest in examples/k8s.
    example = [d for d in yaml.safe_load_all((ROOT / "examples/k8s/extender-deployment.yaml").read_text())
               if d and d["kind"] == "ClusterRole"]
    assert [rules_of(r) for r in example] == [EXTENDER_RULES]
    # Each rule says what it is for, in a comment just above it.
    text = (CHART / "templates" / "scheduler-rbac.yaml").read_text().splitlines()
    starts = [i for i, line in enumerate(text) if line.strip().startswith("- apiGroups:")]
    assert len(starts) == 6 and all(text[i - 1].strip().startswith("#") for i in starts)
    # RBAC cannot limit patch to annotations: the admission policy does, for this very account.
    policy = one(docs, "ValidatingAdmissionPolicy")
    (match,) = policy["spec"]["matchConditions"]
    assert match["expression"] == f"request.userInfo.username == 'system:serviceaccount:gpu-system:{sa}'"
    assert "object.spec == oldObject.spec" in [v["expression"] for v in policy["spec"]["validations"]]
    assert policy["spec"]["failurePolicy"] == "Fail"
    assert one(docs, "ValidatingAdmissionPolicyBinding")["spec"] == {
        "policyName": policy["metadata"]["name"], "validationActions": ["Deny"]}


@pytest.mark.parametrize("name", VALUE_SETS)
def test_the_device_plugin_gets_rights_in_shared_mode_only(name):
    values = VALUE_SETS[name]
    docs = render(values)
    if not values.get("devicePlugin", {}).get("enabled", True):
        assert not [d for d in docs if "deviceplugin" in d["metadata"]["name"]]
        return
    ds = one(docs, "DaemonSet")
    pod = ds["spec"]["template"]["spec"]
    roles = bound_roles(docs, "kube-system", pod["serviceAccountName"])
    shared = arg(pod["containers"][0], "--mode") == "shared"
    if shared:
        (role,) = roles
        assert rules_of(one(docs, "ClusterRole", role)) == {("", "pods"): {"get", "list", "patch"}}
        env = {e["name"]: e for e in pod["containers"][0]["env"]}
        assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
        assert pod.get("automountServiceAccountToken", True) is True
    else:
        assert roles == set() and pod["automountServiceAccountToken"] is False


@pytest.mark.parametrize("name", VALUE_SETS)
def test_no_rule_grants_everything(name):
    for d in render(VALUE_SETS[name]):
        for rule in d.get("rules", []):
            for field in ("apiGroups", "resources", "verbs"):
                assert "*" not in rule.get(field, []), (d["metadata"]["name"], rule)
            assert not set(rule["verbs"]) & {"delete", "deletecollection", "escalate", "bind",
                                             "impersonate"}, rule


# ---- the device plugin --------------------------------------------------------------------------
def selects(pod: dict, labels: dict[str, str]) -> bool:
    """Whether a node with these labels satisfies the pod's nodeSelector and required affinity."""
    if any(labels.get(k) != v for k, v in pod.get("nodeSelector", {}).items()):
        return False
    required = pod.get("affinity", {}).get("nodeAffinity", {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution")
    if not required:
        return True

    def holds(e: dict) -> bool:
        if e["operator"] == "Exists":
            return e["key"] in labels
        if e["operator"] == "In":
            return labels.get(e["key"]) in e["values"]
        raise AssertionError(f"operator {e['operator']} not expected here")

    return any(all(holds(e) for e in term["matchExpressions"]) for term in required["nodeSelectorTerms"])


def test_the_device_plugin_lands_on_gpu_nodes_with_or_without_feature_discovery():
    pod = one(render(), "DaemonSet")["spec"]["template"]["spec"]
    for labels in ({"nvidia.com/gpu.present": "true"},                        # GPU feature discovery
                   {"feature.node.kubernetes.io/pci-10de.present": "true"},   # NFD only
                   {"cloud.google.com/gke-accelerator": "nvidia-l4"},
                   {"kubernetes.azure.com/accelerator": "nvidia"},
                   {"gpufleet.io/gpu": "true"}):                               # labelled by hand
        assert selects(pod, {"kubernetes.io/hostname": "n", **labels}), labels
    assert not selects(pod, {"kubernetes.io/hostname": "cpu-1"})
    assert not selects(pod, {"nvidia.com/gpu.present": "false"})
    tolerated = {(t["key"], t.get("effect")) for t in pod["tolerations"]}
    assert ("nvidia.com/gpu", "NoSchedule") in tolerated
    # nodeSelector narrows it; an affinity of one's own replaces the label list.
    narrowed = one(render({"devicePlugin": {"nodeSelector": {"pool": "gpu"}}}), "DaemonSet")
    narrowed = narrowed["spec"]["template"]["spec"]
    assert selects(narrowed, {"gpufleet.io/gpu": "true", "pool": "gpu"})
    assert not selects(narrowed, {"gpufleet.io/gpu": "true"})
    own = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "gpu", "operator": "In", "values": ["yes"]}]}]}}}
    replaced = one(render({"devicePlugin": {"affinity": own}}), "DaemonSet")["spec"]["template"]["spec"]
    assert replaced["affinity"] == own


@pytest.mark.parametrize("name", [n for n in VALUE_SETS if n != "scheduler-only"])
def test_device_plugin_arguments_follow_the_values(name):
    from gpufleet.k8s.listen import parse_listen

    values = VALUE_SETS[name]
    docs = render(values)
    ds = one(docs, "DaemonSet")
    pod = ds["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    args = build_parser().parse_args(c["args"])
    sharing = values.get("devicePlugin", {}).get("sharing", {})
    assert args.mode == sharing.get("mode", "whole")
    assert args.resource_name == sharing.get("resourceName") or args.resource_name == {
        "whole": "nvidia.com/gpu", "shared": "aliyun.com/gpu-mem"}[args.mode]
    if args.mode == "shared":
        assert (args.replicas, args.memory_unit) == (
            (sharing["replicas"], None) if sharing.get("replicas") else (None, "1Gi"))
    assert args.mps_pipe_dir == (sharing.get("mpsPipeDir") or None)
    if args.mps_pipe_dir:
        mounts = {m["mountPath"] for m in c["volumeMounts"]}
        assert args.mps_pipe_dir in mounts
    # The kubelet's directory is the socket directory, from the host.
    (mount,) = [m for m in c["volumeMounts"] if m["name"] == "device-plugins"]
    assert mount["mountPath"] == args.socket_dir
    (volume,) = [v for v in pod["volumes"] if v["name"] == "device-plugins"]
    assert volume["hostPath"]["path"] == args.socket_dir
    # Root for the kubelet's socket, but nothing more.
    assert pod["securityContext"]["runAsUser"] == 0
    sc = c["securityContext"]
    assert sc["allowPrivilegeEscalation"] is False and sc["capabilities"]["drop"] == ["ALL"]
    assert "privileged" not in sc and not pod.get("hostNetwork")
    # Metrics: on by default, on the command's default port, which the Service and the
    # ServiceMonitor scrape.
    metrics_on = values.get("devicePlugin", {}).get("metrics", {}).get("enabled", True)
    services = [d for d in docs if d["kind"] == "Service"]
    monitors = [d for d in docs if d["kind"] == "ServiceMonitor"]
    if not metrics_on:
        assert args.metrics_listen == "off" and not services and not monitors and "ports" not in c
        return
    assert parse_listen(args.metrics_listen) == ("0.0.0.0", DEFAULT_PORT)
    assert c["ports"] == [{"name": "metrics", "containerPort": DEFAULT_PORT}]
    (svc,) = services
    assert svc["spec"]["selector"].items() <= pod.get("labels", ds["spec"]["template"]["metadata"]["labels"]).items()
    assert svc["spec"]["ports"] == [{"name": "metrics", "port": DEFAULT_PORT, "targetPort": "metrics"}]
    assert svc["spec"]["clusterIP"] == "None"
    if values.get("serviceMonitor", {}).get("enabled"):
        (sm,) = monitors
        assert sm["apiVersion"] == "monitoring.coreos.com/v1"
        assert set(sm["spec"]) == {"selector", "namespaceSelector", "endpoints"}
        assert sm["spec"]["selector"]["matchLabels"].items() <= svc["metadata"]["labels"].items()
        assert sm["spec"]["namespaceSelector"] == {"matchNames": [svc["metadata"]["namespace"]]}
        (ep,) = sm["spec"]["endpoints"]
        assert set(ep) <= {"port", "path", "interval", "relabelings"}
        assert (ep["port"], ep["path"]) == ("metrics", "/metrics")
        assert sm["metadata"]["labels"]["release"] == "prom"
    else:
        assert not monitors


# ---- the kustomize base ---------------------------------------------------------------------------
def test_the_kustomize_base_is_the_chart_rendered():
    import importlib.util

    spec = importlib.util.spec_from_file_location("generate", ROOT / "deploy/kustomize/generate.py")
    generate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generate)
    files = generate.render()
    on_disk = {p.name: p.read_text() for p in BASE.glob("*.yaml")}
    assert set(on_disk) == set(files), "run python deploy/kustomize/generate.py"
    for name in files:
        assert on_disk[name] == files[name], f"{name} differs: run python deploy/kustomize/generate.py"
    # The same objects as the chart's default install, without Helm's own labels.
    chart = render({"scheduler": {"image": {"tag": generate.KUBE_SCHEDULER_TAG}}})
    helm_only = {"helm.sh/chart", "app.kubernetes.io/managed-by"}
    for d in chart:
        labels = d["metadata"].get("labels", {})
        for k in helm_only:
            labels.pop(k, None)
        d["spec"]["template"]["metadata"].get("annotations", {}).pop("checksum/config", None) \
            if d["kind"] == "Deployment" else None
        if d["kind"] == "Deployment" and not d["spec"]["template"]["metadata"]["annotations"]:
            del d["spec"]["template"]["metadata"]["annotations"]
    kustomization = yaml.safe_load(on_disk["kustomization.yaml"])
    assert "namespace" not in kustomization
    base = [d for name in kustomization["resources"] for d in yaml.safe_load_all(on_disk[name]) if d]
    key = lambda d: (d["kind"], d["metadata"]["name"])   # noqa: E731
    assert sorted(base, key=key) == sorted(chart, key=key)


@pytest.mark.skipif(shutil.which("kubectl") is None,
                    reason="kubectl is not installed: the base is checked without kustomize above")
def test_kustomize_builds_the_base_into_valid_objects():
    out = subprocess.run(["kubectl", "kustomize", str(BASE)], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    docs = [d for d in yaml.safe_load_all(out) if d]
    assert len(docs) == len(render())
    for d in docs:
        for version in KUBE_VERSIONS:
            kubernetes_validate.validate(d, version, strict=True)
    assert json.dumps(docs).count("ghcr.io/gpufleet/gpufleet:") == 2


def test_devices_given_as_values_are_what_the_plugin_serves(tmp_path):
    from gpufleet.k8s.deviceplugin.server import DevicePluginServer
    from gpufleet.node.inventory import load_devices_file

    values = VALUE_SETS["kind"]
    docs = render(values)
    pod = one(docs, "DaemonSet")["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    args = build_parser().parse_args(c["args"])
    (mount,) = [m for m in c["volumeMounts"] if args.devices.startswith(m["mountPath"] + "/")]
    (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    cm = one(docs, "ConfigMap", volume["configMap"]["name"])
    path = tmp_path / args.devices.rsplit("/", 1)[1]
    path.write_text(cm["data"][path.name])
    inv = load_devices_file(str(path))
    assert inv.devices == values["devicePlugin"]["devices"]
    server = DevicePluginServer(args.resource_name, inv.devices, args.mode, None, str(tmp_path))
    assert [d.ID for d in server.device_list().devices] == ["GPU-kind-0", "GPU-kind-1"]
    assert "--devices" not in " ".join(containers(render())["deviceplugin"]["args"])
