"""Who may call the extender: mutual TLS admits only clients with a certificate from the client
CA, the bearer token guards every verb and /state (not the probes), a release must name the right
uid, and the CLI refuses to expose the verbs on a non-loopback address without authentication or
with unusable TLS files. Certificates are made for each run with the openssl command."""
from __future__ import annotations

import os
import shutil
import signal
import ssl
import subprocess
import sys
import time
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any, Optional

import httpx
import pytest
import yaml

import gpufleet

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient  # noqa: E402

from gpufleet.k8s.extender.app import create_app  # noqa: E402
from gpufleet.k8s.extender.auth import Access, read_token_file  # noqa: E402
from gpufleet.k8s.extender.server import BackgroundServer  # noqa: E402
from gpufleet.k8s.extender.state import state_from_scenario  # noqa: E402
from test_extender import gpu, kpod, node  # noqa: E402
from test_extender_crash import STARTUP_S, free_port  # noqa: E402

P = "/gpufleet"
TOKEN = "s3cr3t-token-for-tests-0123456789"

# ---- a throwaway PKI ---------------------------------------------------------------------------
OPENSSL_CONF = """
[req]
distinguished_name = dn
[dn]
[ca]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
[server]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = DNS:localhost, IP:127.0.0.1
[client]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = clientAuth
"""
EC_KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]


def _openssl(d: Path, *args: str) -> None:
    subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)


def make_pki(d: Path) -> dict[str, str]:
    """ca, server (for 127.0.0.1 and localhost), client (signed by ca), and a rogue CA with a
    client of its own. Returns name -> path of the .crt/.key files."""
    (d / "openssl.cnf").write_text(OPENSSL_CONF)
    for ca in ("ca", "rogue-ca"):
        _openssl(d, "req", "-x509", "-new", *EC_KEY, "-keyout", f"{ca}.key", "-out", f"{ca}.crt",
                 "-subj", f"/CN={ca}", "-days", "2", "-config", "openssl.cnf", "-extensions", "ca")
    for name, ca, kind in (("server", "ca", "server"), ("client", "ca", "client"),
                           ("rogue-client", "rogue-ca", "client")):
        _openssl(d, "req", "-new", *EC_KEY, "-keyout", f"{name}.key", "-out", f"{name}.csr",
                 "-subj", f"/CN={name}", "-config", "openssl.cnf")
        _openssl(d, "x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.crt", "-CAkey",
                 f"{ca}.key", "-CAcreateserial", "-out", f"{name}.crt", "-days", "2",
                 "-extfile", "openssl.cnf", "-extensions", kind)
    return {f"{n}.{ext}": str(d / f"{n}.{ext}") for n in ("ca", "rogue-ca", "server", "client",
                                                          "rogue-client") for ext in ("crt", "key")}


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is not installed (Debian: apt-get install openssl)")
    return make_pki(tmp_path_factory.mktemp("pki"))


def mtls_access(pki: dict[str, str]) -> Access:
    return Access(tls_cert=pki["server.crt"], tls_key=pki["server.key"],
                  tls_client_ca=pki["ca.crt"])


def tls_client(url: str, pki: dict[str, str], cert: Optional[str] = "client") -> httpx.Client:
    """A client that trusts the test CA and presents `cert` (None: no certificate)."""
    ctx = ssl.create_default_context(cafile=pki["ca.crt"])
    if cert is not None:
        ctx.load_cert_chain(pki[f"{cert}.crt"], pki[f"{cert}.key"])
    return httpx.Client(base_url=url, verify=ctx, timeout=10)


def scenario() -> dict[str, Any]:
    return {"nodes": [node("n1", gpus=2)]}


def filter_body(name: str) -> dict[str, Any]:
    return {"Pod": kpod(name, {"nvidia.com/gpu": "1"}), "NodeNames": ["n1"]}


def bind_body(name: str, uid: Optional[str] = None) -> dict[str, Any]:
    return {"PodName": name, "PodNamespace": "default", "PodUID": uid or f"uid-{name}",
            "Node": "n1"}


# ---- mutual TLS --------------------------------------------------------------------------------
def test_mutual_tls_admits_only_clients_with_a_certificate_from_the_client_ca(pki):
    st = state_from_scenario(scenario(), api=gpufleet)
    with BackgroundServer(st, prefix=P, access=mtls_access(pki)) as srv:
        assert srv.url.startswith("https://127.0.0.1:")
        with tls_client(srv.url, pki) as c:
            out = c.post(f"{P}/filter", json=filter_body("p")).json()
            assert out["NodeNames"] == ["n1"]
            assert c.post(f"{P}/bind", json=bind_body("p")).json() == {"Error": ""}
            assert c.get("/state").json()["allocations"] == 1
        # No certificate, one from another CA, or the server's own (made for serverAuth only):
        # the handshake fails, so no request reaches a verb.
        for cert in (None, "rogue-client", "server"):
            with tls_client(srv.url, pki, cert) as c, pytest.raises(httpx.TransportError):
                c.post(f"{P}/bind", json=bind_body("q"))
        with pytest.raises(httpx.TransportError):   # plain HTTP gets nowhere either
            httpx.post(srv.url.replace("https", "http") + f"{P}/bind", json=bind_body("q"))
    assert [a.pod for a in st.cluster.allocations()] == ["default/p"]


# ---- the bearer token --------------------------------------------------------------------------
def test_the_token_guards_every_verb_and_state_but_not_the_probes():
    st = state_from_scenario(scenario(), api=gpufleet)
    client = TestClient(create_app(st, P, token=TOKEN.encode()))
    before = st.cluster.snapshot()
    good = {"Authorization": f"Bearer {TOKEN}"}
    for headers, why in (({}, "no bearer token"),
                         ({"Authorization": f"Bearer {TOKEN}x"}, "wrong bearer token"),
                         ({"Authorization": f"Bearer {TOKEN[:-1]}"}, "wrong bearer token"),
                         ({"Authorization": f"Basic {TOKEN}"}, "wrong bearer token")):
        for verb in ("filter", "prioritize", "bind", "preempt", "release"):
            r = client.post(f"{P}/{verb}", json=bind_body("p"), headers=headers)
            assert r.status_code == 401 and why in r.json()["Error"], (verb, r.text)
            assert r.headers["www-authenticate"].startswith("Bearer")
        for view in ("/state", f"{P}/state", "/metrics", "/no-such-path"):
            assert client.get(view, headers=headers).status_code == 401, view
    assert st.cluster.snapshot() == before
    for probe in ("/healthz", "/readyz", f"{P}/healthz", f"{P}/readyz"):
        assert client.get(probe).status_code == 200, probe
    assert client.post(f"{P}/filter", json=filter_body("p"), headers=good).json()["NodeNames"] \
        == ["n1"]
    assert client.post(f"{P}/bind", json=bind_body("p"), headers=good).json() == {"Error": ""}
    assert client.get("/state", headers=good).json()["allocations"] == 1
    # Refusals are counted by verb; paths that are no verb or view share one label value.
    metrics = client.get("/metrics", headers=good).text
    for verb, n in (("bind", 4), ("release", 4), ("state", 8), ("metrics", 4), ("other", 4)):
        assert (f'gpufleet_extender_requests_total{{outcome="unauthorized",verb="{verb}"}} '
                f'{n}.0') in metrics, verb


def test_a_release_without_the_token_leaves_the_devices_held():
    st = state_from_scenario({"nodes": [node("n1", gpus=2)],
                              "pods": [{"name": "team/old", "uid": "u-old", "node": "n1",
                                        "requests": {"nvidia.com/gpu": "1"}}]}, api=gpufleet)
    client = TestClient(create_app(st, P, token=TOKEN.encode()))
    release = {"PodName": "old", "PodNamespace": "team", "PodUID": "u-old"}
    assert client.post(f"{P}/release", json=release).status_code == 401
    assert st.cluster.allocation("team/old") is not None
    out = client.post(f"{P}/release", json=release,
                      headers={"Authorization": f"Bearer {TOKEN}"}).json()
    assert out == {"Error": ""} and st.cluster.allocation("team/old") is None


# ---- release checks the uid --------------------------------------------------------------------
def test_a_release_with_a_wrong_uid_is_refused():
    st = state_from_scenario({"nodes": [node("n1", gpus=4)], "pods": [
        {"name": "team/old", "uid": "u-old", "node": "n1", "requests": {"nvidia.com/gpu": "1"}},
        {"name": "team/nouid", "node": "n1", "requests": {"nvidia.com/gpu": "1"}},
        {"name": "team/waiting", "requests": {"nvidia.com/gpu": "1"}}]}, api=gpufleet)
    client = TestClient(create_app(st, P))
    bind = {"PodName": "waiting", "PodNamespace": "team", "PodUID": "u-w", "Node": "n1"}
    assert client.post(f"{P}/bind", json=bind).json() == {"Error": ""}
    before = st.cluster.snapshot()

    def release(name: str, uid: Optional[str]) -> str:
        body = {"PodName": name, "PodNamespace": "team"}
        if uid is not None:
            body["PodUID"] = uid
        return client.post(f"{P}/release", json=body).json()["Error"]

    # A pod bound with a uid, and pods whose record has none (a scenario entry without one):
    # a uid that is not the recorded one cannot release them.
    assert "without a uid" in release("nouid", "u-wrong")
    assert "without a uid" in release("waiting", "u-w")
    assert "another uid" in release("old", "u-wrong")
    assert st.cluster.snapshot() == before
    assert release("old", "u-old") == ""      # the right uid
    assert release("nouid", None) == ""       # by name, as deleting a pod by name does
    assert "holds no bound allocation" in release("old", "u-old")
    assert {a.pod for a in st.cluster.allocations()} == {"team/waiting"}


# ---- start-up checks ---------------------------------------------------------------------------
def test_exposure_rules():
    tls = Access(tls_cert="c", tls_key="k")
    for access, host, complaint in (
            (Access(), "0.0.0.0", "--listen 0.0.0.0: not a loopback address"),
            (Access(), "10.1.2.3", "--listen 10.1.2.3: not a loopback address"),
            (Access(), "extender.example", "not a loopback address"),
            (Access(token=b"x" * 32), "0.0.0.0", "not a loopback address"),   # token in clear
            (tls, "::", "not a loopback address"),                            # TLS, nobody checked
            (Access(tls_cert="c"), "127.0.0.1", "--tls-cert and --tls-key go together"),
            (Access(tls_client_ca="ca"), "127.0.0.1", "--tls-client-ca needs --tls-cert"),
            (replace(tls, tls_client_ca="ca", token=b"x" * 32), "127.0.0.1", "alternatives")):
        with pytest.raises(ValueError) as e:
            access.check(host)
        assert complaint in str(e.value) and "\n" not in str(e.value), str(e.value)
    for host in ("127.0.0.1", "127.0.0.2", "::1", "localhost"):
        Access().check(host)        # loopback: nothing required
    Access(insecure=True).check("0.0.0.0")


def test_unusable_tls_files_and_tokens_stop_the_start_with_one_line(pki, tmp_path: Path):
    encrypted = tmp_path / "encrypted.key"
    _openssl(tmp_path, "ec", "-in", pki["server.key"], "-aes256", "-passout", "pass:abcdefgh",
             "-out", str(encrypted))
    missing = str(tmp_path / "missing.crt")
    good = mtls_access(pki)
    for access, complaint in (
            (replace(good, tls_cert=missing), f"--tls-cert {missing}: cannot read it"),
            (replace(good, tls_cert=pki["server.key"]), "--tls-cert"),
            (replace(good, tls_key=pki["client.key"]),
             f"--tls-key {pki['client.key']} does not match the certificate"),
            (replace(good, tls_key=pki["server.crt"]), "no PEM private key"),
            (replace(good, tls_key=str(encrypted)), "encrypted"),
            (replace(good, tls_client_ca=pki["server.key"]), "--tls-client-ca"),
            (replace(good, tls_client_ca=pki["client.crt"]), "holds no CA certificate")):
        with pytest.raises(ValueError) as e:
            access.check("0.0.0.0")
        assert complaint in str(e.value) and "\n" not in str(e.value), str(e.value)
    good.check("0.0.0.0")
    short = tmp_path / "short"
    short.write_text("abc\n")
    spaced = tmp_path / "spaced"
    spaced.write_text("a token with spaces in it\n")
    for path, complaint in ((tmp_path / "none", "cannot read it"), (short, "fewer than 16"),
                            (spaced, "printable ASCII")):
        with pytest.raises(ValueError, match=complaint):
            read_token_file(str(path))
    ok = tmp_path / "token"
    ok.write_text(TOKEN + "\n")
    assert read_token_file(str(ok)) == TOKEN.encode()


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "gpufleet", "extender", "--log-level", "warning", *args]


@pytest.fixture
def scenario_file(tmp_path: Path) -> str:
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump({"nodes": [{"name": "n1", "cpu": "8", "memory": "32Gi",
                                               "devices": [gpu(0), gpu(1)]}]}))
    return str(path)


def test_cli_refuses_a_non_loopback_listen_without_authentication(scenario_file, pki):
    for extra, complaint in (([], "not a loopback address"),
                             (["--tls-cert", pki["server.crt"], "--tls-key", pki["ca.key"],
                               "--tls-client-ca", pki["ca.crt"]], "does not match")):
        out = subprocess.run(_cli("--listen", f"0.0.0.0:{free_port()}", "--state",
                                  scenario_file, *extra),
                             capture_output=True, text=True, timeout=60)
        err = out.stderr.strip()
        assert out.returncode == 2 and len(err.splitlines()) == 1 and complaint in err, err
    assert not os.path.exists(scenario_file + ".journal")   # refused before the state was loaded


def _families(text: str) -> set[str]:
    """The metric families a Prometheus text exposition declares (its # TYPE lines)."""
    return {line.split()[2] for line in text.splitlines() if line.startswith("# TYPE ")}


def test_cli_serves_mutual_tls_on_loopback_with_plain_probes_and_metrics(scenario_file, pki, tmp_path):
    port, probe_port = free_port(), free_port()
    log = tmp_path / "extender.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(_cli("--listen", f"127.0.0.1:{port}", "--state", scenario_file,
                                     "--tls-cert", pki["server.crt"], "--tls-key",
                                     pki["server.key"], "--tls-client-ca", pki["ca.crt"],
                                     "--probe-listen", f"127.0.0.1:{probe_port}"),
                                stdout=out, stderr=subprocess.STDOUT)
    try:
        probes = f"http://127.0.0.1:{probe_port}"
        deadline = time.monotonic() + STARTUP_S
        while True:
            try:
                if httpx.get(f"{probes}/readyz", timeout=1).text == "ok":
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "extender did not come up"
            time.sleep(0.05)
        assert httpx.get(f"{probes}/healthz").text == "ok"
        assert httpx.get(f"{probes}/state").status_code == 404   # probes only, no pod names
        url = f"https://127.0.0.1:{port}"
        with tls_client(url, pki) as c:
            assert c.post(f"{P}/filter", json=filter_body("p")).json()["NodeNames"] == ["n1"]
            assert c.post(f"{P}/bind", json=bind_body("p")).json() == {"Error": ""}
            assert c.get("/state").json()["allocations"] == 1
            served = c.get("/metrics").text
        # The probe port renders the same registry: a scraper without a client certificate reads
        # the families the TLS port serves, the bind this run answered counted in it.
        scraped = httpx.get(f"{probes}/metrics")
        assert scraped.status_code == 200 and scraped.headers["content-type"].startswith("text/plain")
        assert _families(scraped.text) == _families(served)
        assert {"gpufleet_extender_binds_total", "gpufleet_extender_requests_total"} <= _families(served)
        assert "gpufleet_extender_binds_total 1.0" in scraped.text.splitlines()
        with tls_client(url, pki, None) as c, pytest.raises(httpx.TransportError):
            c.get("/state")
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            assert proc.wait(timeout=15) in (0, -signal.SIGINT)
        finally:
            if proc.poll() is None:
                proc.kill()
