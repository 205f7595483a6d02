"""The Kubernetes manifests (examples/k8s, the chart in deploy/helm and the kustomize base made
from it), the Containerfile and the package agree: one image, named with the package's version,
whose entrypoint is the gpufleet CLI and whose containers run real commands."""
from __future__ import annotations

import re
import warnings
import tomllib
from pathlib import Path

import yaml

import gpufleet
from gpufleet.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
IMAGE_REPO = "ghcr.io/gpufleet/gpufleet"


MANIFESTS = [*sorted((ROOT / "examples" / "k8s").glob("*.yaml")),
             *sorted((ROOT / "deploy" / "kustomize" / "base").glob("*.yaml"))]


def _containers() -> list[tuple[str, dict]]:
    """(file name, container) of every gpufleet container (kube-scheduler's is upstream's)."""
    out = []
    for path in MANIFESTS:
        for doc in yaml.safe_load_all(path.read_text()):
            spec = (doc or {}).get("spec", {}).get("template", {}).get("spec", {})
            out += [(path.name, c) for c in spec.get("containers", [])
                    if c["name"] != "kube-scheduler"]
    return out


def _subcommands() -> set[str]:
    parser = build_parser()
    action = next(a for a in parser._actions if a.dest == "command")
    return set(action.choices)


def test_every_manifest_runs_the_one_image_of_this_version():
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert version == gpufleet.__version__
    containers = _containers()
    assert {name for name, _ in containers} == {"extender-deployment.yaml",
                                                "scheduler-deployment.yaml",
                                                "deviceplugin-daemonset.yaml"}
    assert {c["image"] for _, c in containers} == {f"{IMAGE_REPO}:{version}"}
    text = (ROOT / "Containerfile").read_text()
    assert f'org.opencontainers.image.version="{version}"' in text
    assert f"-t {IMAGE_REPO}:{version}" in text
    # The chart: its version and appVersion (the image's default tag) are the package's.
    chart = yaml.safe_load((ROOT / "deploy" / "helm" / "gpufleet" / "Chart.yaml").read_text())
    assert (chart["version"], chart["appVersion"]) == (version, version)
    values = yaml.safe_load((ROOT / "deploy" / "helm" / "gpufleet" / "values.yaml").read_text())
    assert (values["image"]["repository"], values["image"]["tag"]) == (IMAGE_REPO, "")


def test_containers_run_gpufleet_commands_through_the_entrypoint():
    text = (ROOT / "Containerfile").read_text()
    assert re.search(r'^ENTRYPOINT \["gpufleet"\]$', text, flags=re.M)
    commands = _subcommands()
    for name, c in _containers():
        assert "command" not in c, f"{name}: the image's entrypoint is the gpufleet CLI"
        assert c["args"][0] in commands, f"{name}: {c['args'][0]} is not a gpufleet command"
        build_parser().parse_args(c["args"])  # the arguments parse as the CLI reads them


def test_probes_use_paths_the_extender_serves():
    from gpufleet.k8s.extender.app import create_app
    from gpufleet.k8s.extender.state import ExtenderState

    with warnings.catch_warnings():  # starlette >= 1.x nudges towards httpx2; httpx works
        warnings.simplefilter("ignore")
        from starlette.testclient import TestClient

    client = TestClient(create_app(ExtenderState()))
    probed = 0
    for name, c in _containers():
        for probe in ("readinessProbe", "livenessProbe"):
            if probe in c and c["args"][0] == "extender":
                r = client.get(c[probe]["httpGet"]["path"])
                assert r.status_code == 200, f"{name}: {probe} {c[probe]['httpGet']['path']}: {r.status_code}"
                probed += 1
    assert probed >= 4, "each extender manifest has a readiness and a liveness probe"


def test_dependency_floors_are_the_tested_minimum_versions():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    floors = {}
    for req in project["dependencies"] + [r for deps in project["optional-dependencies"].values()
                                          for r in deps]:
        m = re.match(r"\s*([A-Za-z0-9_.-]+)\s*>=\s*([^,;\s]+)", req)
        if m:
            floors[m.group(1).lower()] = m.group(2)
    pins = {}
    for line in (ROOT / "tests" / "min-versions.txt").read_text().splitlines():
        if "==" in line and not line.startswith("#"):
            name, version = line.split("==")
            pins[name.strip().lower()] = version.strip()
    assert pins and all(floors.get(name) == version for name, version in pins.items()), \
        {n: (floors.get(n), v) for n, v in pins.items() if floors.get(n) != v}


# ---- the extender's security: TLS, the network policy, RBAC (docs/extender.md#security) ----------
def _docs(name: str) -> list[dict]:
    return [d for d in yaml.safe_load_all((ROOT / "examples" / "k8s" / name).read_text()) if d]


def _one(docs: list[dict], kind: str) -> dict:
    found = [d for d in docs if d["kind"] == kind]
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
    return found[0]


def _extender() -> tuple[dict, dict, object]:
    """The extender's Deployment, its container and its parsed arguments."""
    deployment = _one(_docs("extender-deployment.yaml"), "Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return deployment, container, build_parser().parse_args(container["args"])


def _port(listen: str) -> int:
    from gpufleet.k8s.listen import parse_listen

    return parse_listen(listen)[1]


def test_the_extender_serves_mutual_tls_from_a_mounted_secret():
    from gpufleet.k8s.extender.auth import Access
    from gpufleet.k8s.listen import parse_listen

    deployment, c, args = _extender()
    pod = deployment["spec"]["template"]["spec"]
    access = Access(tls_cert=args.tls_cert, tls_key=args.tls_key,
                    tls_client_ca=args.tls_client_ca)
    assert access.tls_client_ca and not args.insecure and args.token_file is None
    access.check_exposure(parse_listen(args.listen)[0])   # what the start checks first
    secrets = {v["name"]: v["secret"]["secretName"] for v in pod["volumes"] if "secret" in v}
    mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"] if m["name"] in secrets}
    for path in (args.tls_cert, args.tls_key, args.tls_client_ca):
        assert any(path.startswith(f"{mount}/") for mount in mounts), f"{path} is not mounted"
    assert all(m.get("readOnly") for m in c["volumeMounts"])
    # The kubelet cannot present a client certificate: its probes use the plain probe port,
    # which serves nothing but them.
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert ports == {"https": _port(args.listen), "probes": _port(args.probe_listen)}
    for probe in ("readinessProbe", "livenessProbe"):
        assert c[probe]["httpGet"]["port"] == "probes"
    sc = c["securityContext"]
    assert sc["allowPrivilegeEscalation"] is False and sc["capabilities"]["drop"] == ["ALL"]
    assert pod["securityContext"]["runAsNonRoot"] is True


def test_the_probe_port_answers_the_probes_the_metrics_and_nothing_else():
    import httpx

    from gpufleet.k8s.extender.metrics import ExtenderMetrics
    from gpufleet.k8s.extender.probes import ProbeServer
    from gpufleet.k8s.extender.state import ExtenderState

    _, c, _ = _extender()
    st = ExtenderState()
    metrics = ExtenderMetrics(st)
    metrics.observe("bind", "ok", 0.01)
    probes = ProbeServer("127.0.0.1", 0).start(st, metrics)
    try:
        url = f"http://127.0.0.1:{probes.port}"
        for probe in ("readinessProbe", "livenessProbe"):
            r = httpx.get(url + c[probe]["httpGet"]["path"])
            assert (r.status_code, r.text) == (200, "ok"), probe
        st.ready_checks["kubernetes watches"] = lambda: False
        r = httpx.get(f"{url}/readyz")
        assert (r.status_code, r.text) == (503, "not ready: kubernetes watches")
        # /metrics renders the registry it was given, the one the extender's app counts into.
        r = httpx.get(f"{url}/metrics")
        assert r.status_code == 200 and r.content == metrics.render()[0]
        assert r.headers["content-type"] == metrics.render()[1]
        assert "gpufleet_extender_binds_total 1.0" in r.text.splitlines()
        assert httpx.get(f"{url}/state").status_code == 404
    finally:
        probes.stop()


def test_kube_scheduler_reaches_the_extender_over_mutual_tls():
    from urllib.parse import urlparse

    deployment, _, args = _extender()
    service = _one(_docs("extender-deployment.yaml"), "Service")
    config = _docs("scheduler-config.yaml")[0]
    (ext,) = config["extenders"]
    url = urlparse(ext["urlPrefix"])
    svc = f"{service['metadata']['name']}.{service['metadata']['namespace']}.svc"
    assert (url.scheme, url.hostname, url.path) == ("https", svc, args.prefix)
    (port,) = service["spec"]["ports"]
    assert url.port == port["port"] and port["targetPort"] == "https"
    assert ext["enableHTTPS"] is True
    tls = ext["tlsConfig"]
    assert not tls.get("insecure") and tls["serverName"] == svc
    assert all(tls.get(k, "").startswith("/") for k in ("certFile", "keyFile", "caFile"))
    # The extender binds only pods of the profile that calls it.
    assert [p["schedulerName"] for p in config["profiles"]] == [args.scheduler_name]
    from test_deploy_chart import check_scheduler_config_fields

    check_scheduler_config_fields(config)   # kube-scheduler decodes its file strictly


def test_the_network_policy_admits_only_the_scheduler_to_the_extender_port():
    deployment, _, args = _extender()
    policy = _one(_docs("extender-deployment.yaml"), "NetworkPolicy")
    assert policy["metadata"]["namespace"] == deployment["metadata"]["namespace"]
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= labels.items()
    assert "Ingress" in policy["spec"]["policyTypes"]
    (rule,) = policy["spec"]["ingress"]
    assert rule["ports"] == [{"protocol": "TCP", "port": _port(args.listen)}]
    assert rule["from"], "an ingress rule without peers admits everyone"
    for peer in rule["from"]:
        assert "namespaceSelector" not in peer, peer
        assert peer.get("podSelector", {}).get("matchLabels") or "ipBlock" in peer, peer
        assert peer.get("ipBlock", {}).get("cidr") not in ("0.0.0.0/0", "::/0"), peer


def test_the_extender_rbac_is_the_least_its_verbs_need():
    docs = _docs("extender-deployment.yaml")
    deployment, _, _ = _extender()
    role = _one(docs, "ClusterRole")
    rules = {(g, r): set(rule["verbs"]) for rule in role["rules"]
             for g in rule["apiGroups"] for r in rule["resources"]}
    assert rules == {("", "nodes"): {"list", "watch"},
                     ("", "pods"): {"get", "list", "watch", "patch"},
                     ("", "bindings"): {"create"}}
    # Each rule says what it is for, in a comment just above it.
    text = (ROOT / "examples" / "k8s" / "extender-deployment.yaml").read_text().splitlines()
    starts = [i for i, line in enumerate(text) if line.strip().startswith("- apiGroups:")]
    role_starts = starts[:len(role["rules"])]
    assert all(text[i - 1].strip().startswith("#") for i in role_starts)
    ns = deployment["metadata"]["namespace"]
    sa = deployment["spec"]["template"]["spec"]["serviceAccountName"]
    binding = _one(docs, "ClusterRoleBinding")
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": sa, "namespace": ns}]
    # RBAC cannot limit patch to annotations: the admission policy does, for this account.
    policy = _one(docs, "ValidatingAdmissionPolicy")
    (match,) = policy["spec"]["matchConditions"]
    assert f"'system:serviceaccount:{ns}:{sa}'" in match["expression"]
    (res,) = policy["spec"]["matchConstraints"]["resourceRules"]
    assert res["resources"] == ["pods"] and res["operations"] == ["UPDATE"]
    checks = [v["expression"] for v in policy["spec"]["validations"]]
    assert "object.spec == oldObject.spec" in checks
    assert policy["spec"]["failurePolicy"] == "Fail"
    vap_binding = _one(docs, "ValidatingAdmissionPolicyBinding")
    assert vap_binding["spec"]["policyName"] == policy["metadata"]["name"]
    assert vap_binding["spec"]["validationActions"] == ["Deny"]


def test_every_extender_command_in_the_docs_passes_the_start_checks():
    import shlex

    from gpufleet.k8s.extender.auth import Access
    from gpufleet.k8s.listen import parse_listen

    text = (ROOT / "docs" / "extender.md").read_text().replace("\\\n", " ")
    commands = [line.strip() for line in text.splitlines()
                if line.strip().startswith("gpufleet extender ")]
    assert len(commands) >= 2
    for line in commands:
        args = build_parser().parse_args(shlex.split(line)[1:])
        token = b"x" * 32 if args.token_file else None
        Access(tls_cert=args.tls_cert, tls_key=args.tls_key, tls_client_ca=args.tls_client_ca,
               token=token, insecure=args.insecure).check_exposure(parse_listen(args.listen)[0])
        assert not args.insecure, line
