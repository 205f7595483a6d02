"""`--kube` mode against a fake API server: the official client lists, watches, patches and binds
over real HTTP on loopback; deletions, completions and node changes reach the state through the
watches; an expired watch re-lists; a restart rebuilds the same allocations from annotations."""
from __future__ import annotations

import copy
import json
import threading
import time
import warnings
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Optional
from urllib.parse import parse_qs, urlparse

import pytest

import gpufleet

pytest.importorskip("kubernetes", reason="the k8s extra (official client) is not installed")

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient  # noqa: E402

from gpufleet.k8s.extender import convert  # noqa: E402
from gpufleet.k8s.extender.app import create_app  # noqa: E402
from gpufleet.k8s.extender.kube import load_kube  # noqa: E402
from gpufleet.k8s.extender.state import ANN_DEVICE_ALLOCATED  # noqa: E402
from test_extender import gpu, kpod  # noqa: E402

P = "/gpufleet"


# ---- the fake API server -----------------------------------------------------------------------
def _matches(obj: dict[str, Any], selector: str) -> bool:
    """Field selectors the extender uses: `spec.nodeName!=`, `status.phase!=X`, `a=b`."""
    for term in filter(None, (selector or "").split(",")):
        neg = "!=" in term
        field, value = term.split("!=" if neg else "=", 1)
        cur: Any = obj
        for part in field.split("."):
            cur = (cur or {}).get(part) if isinstance(cur, dict) else None
        if ((cur or "") == value) == neg:
            return False
    return True


class FakeKubeAPI:
    """Nodes and pods with resourceVersions, list/watch (with field selectors), get, patch and
    bindings, and an `expire()` that makes open and old watches answer 410 Gone."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.rv = 0
        self.objects: dict[str, dict[str, dict[str, Any]]] = {"nodes": {}, "pods": {}}
        self.log: list[tuple[int, str, Optional[dict], Optional[dict]]] = []
        self.oldest_rv = 0          # watches from before this are expired
        self.expirations = 0
        self.requests: list[str] = []
        self.closing = False
        self.server: Optional[ThreadingHTTPServer] = None

    # ---- state changes (tests call these; the handler too) ----
    def _put(self, kind: str, key: str, new: Optional[dict[str, Any]]) -> None:
        with self.cond:
            old = self.objects[kind].get(key)
            self.rv += 1
            if new is not None:
                new = copy.deepcopy(new)
                new.setdefault("metadata", {})["resourceVersion"] = str(self.rv)
                self.objects[kind][key] = new
            else:
                self.objects[kind].pop(key, None)
                old = copy.deepcopy(old)
                old["metadata"]["resourceVersion"] = str(self.rv)
            self.log.append((self.rv, kind, old, new))
            self.cond.notify_all()

    def put_node(self, node: dict[str, Any]) -> None:
        self._put("nodes", node["metadata"]["name"], node)

    def delete_node(self, name: str) -> None:
        self._put("nodes", name, None)

    def put_pod(self, pod: dict[str, Any]) -> None:
        m = pod["metadata"]
        self._put("pods", f"{m.get('namespace', 'default')}/{m['name']}", pod)

    def pod(self, key: str) -> dict[str, Any]:
        with self.cond:
            return copy.deepcopy(self.objects["pods"][key])

    def delete_pod(self, key: str) -> None:
        self._put("pods", key, None)

    def set_phase(self, key: str, phase: str) -> None:
        pod = self.pod(key)
        pod.setdefault("status", {})["phase"] = phase
        self._put("pods", key, pod)

    def expire(self) -> None:
        """Compact history: every watch, open or to come, from an older version gets 410."""
        with self.cond:
            self.oldest_rv = self.rv + 1
            self.expirations += 1
            self.cond.notify_all()

    # ---- HTTP ----
    def start(self) -> "FakeKubeAPI":
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"   # watches stream chunked, as the real server does

            def log_message(self, *a: Any) -> None:
                pass

            def _send(self, code: int, obj: Any) -> None:
                body = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _status(self, code: int, reason: str, message: str) -> None:
                self._send(code, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                  "reason": reason, "message": message, "code": code})

            def _body(self) -> Any:
                return json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))

            def do_GET(self) -> None:
                url = urlparse(self.path)
                q = {k: v[0] for k, v in parse_qs(url.query).items()}
                parts = url.path.strip("/").split("/")
                api.requests.append(f"GET {url.path}{' watch' if q.get('watch') else ''}")
                if parts[:2] == ["api", "v1"] and len(parts) == 3 and parts[2] in api.objects:
                    kind = parts[2]
                    if q.get("watch") in ("true", "1"):
                        return self._watch(kind, q)
                    with api.cond:
                        items = [copy.deepcopy(o) for o in api.objects[kind].values()
                                 if _matches(o, q.get("fieldSelector", ""))]
                        rv = str(api.rv)
                    return self._send(200, {"kind": "List", "apiVersion": "v1",
                                            "metadata": {"resourceVersion": rv}, "items": items})
                if len(parts) == 6 and parts[2] == "namespaces" and parts[4] == "pods":
                    with api.cond:
                        pod = api.objects["pods"].get(f"{parts[3]}/{parts[5]}")
                    if pod is None:
                        return self._status(404, "NotFound", f"pod {parts[5]} not found")
                    return self._send(200, pod)
                self._status(404, "NotFound", url.path)

            def _watch(self, kind: str, q: dict[str, str]) -> None:
                since = int(q.get("resourceVersion") or 0)
                selector = q.get("fieldSelector", "")
                deadline = time.monotonic() + float(q.get("timeoutSeconds") or 30)
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                self.close_connection = True
                gen = api.expirations
                while True:
                    with api.cond:
                        if since < api.oldest_rv - 1 or api.expirations != gen:
                            lines = [{"type": "ERROR", "object": {
                                "kind": "Status", "status": "Failure", "reason": "Expired",
                                "message": f"too old resource version: {since}", "code": 410}}]
                            done = True
                        else:
                            lines, done = [], False
                            for rv, k, old, new in api.log:
                                if rv <= since or k != kind:
                                    continue
                                was = old is not None and _matches(old, selector)
                                now = new is not None and _matches(new, selector)
                                typ = {(False, True): "ADDED", (True, True): "MODIFIED",
                                       (True, False): "DELETED"}.get((was, now))
                                if typ:
                                    lines.append({"type": typ, "object": new if now else old})
                                since = rv
                        if not lines and not done:
                            if api.closing or time.monotonic() > deadline:
                                done = True
                            else:
                                api.cond.wait(0.05)
                                continue
                    data = b"".join(json.dumps(e).encode() + b"\n" for e in lines)
                    try:
                        if data:
                            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                        if done:
                            self.wfile.write(b"0\r\n\r\n")
                        self.wfile.flush()
                    except OSError:
                        return
                    if done:
                        return

            def do_PATCH(self) -> None:
                parts = urlparse(self.path).path.strip("/").split("/")
                api.requests.append(f"PATCH {'/'.join(parts)}")
                key = f"{parts[3]}/{parts[5]}"
                patch = self._body()
                with api.cond:
                    pod = copy.deepcopy(api.objects["pods"].get(key))
                if pod is None:
                    return self._status(404, "NotFound", f"pod {key} not found")
                ann = (patch.get("metadata") or {}).get("annotations") or {}
                pod["metadata"].setdefault("annotations", {}).update(ann)
                api.put_pod(pod)
                self._send(200, api.pod(key))

            def do_POST(self) -> None:
                parts = urlparse(self.path).path.strip("/").split("/")
                api.requests.append(f"POST {'/'.join(parts)}")
                binding = self._body()
                key = f"{parts[3]}/{binding['metadata']['name']}"
                with api.cond:
                    pod = copy.deepcopy(api.objects["pods"].get(key))
                if pod is None:
                    return self._status(404, "NotFound", f"pod {key} not found")
                if (pod.get("spec") or {}).get("nodeName"):
                    return self._status(409, "Conflict", f"pod {key} is already assigned")
                pod["spec"]["nodeName"] = binding["target"]["name"]
                api.put_pod(pod)
                self._send(201, {"kind": "Status", "apiVersion": "v1", "status": "Success",
                                 "code": 201})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        with self.cond:
            self.closing = True
            self.cond.notify_all()
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()

    def client(self) -> Any:
        from kubernetes import client

        cfg = client.Configuration()
        cfg.host = self.url
        return client.CoreV1Api(client.ApiClient(cfg))

    def kubeconfig(self, path: Any) -> None:
        path.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "fake",
            "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
            "users": [{"name": "fake", "user": {"token": "fake"}}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake"}}]}))


# ---- objects ---------------------------------------------------------------------------------
def api_node(name: str, gpus: int = 2, labels: Optional[dict] = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels or {},
                         "annotations": {convert.ANN_DEVICES: json.dumps(
                             [gpu(i) for i in range(gpus)])}},
            "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110"}}}


def whole_gpu(minor: int) -> str:
    return json.dumps({"gpu": [{"minor": minor, "resources": {
        "koordinator.sh/gpu-core": "100", "koordinator.sh/gpu-memory": "16Gi",
        "koordinator.sh/gpu-memory-ratio": "100"}}]})


def api_pod(name: str, node: str = "", minor: Optional[int] = None,
            phase: str = "Pending") -> dict[str, Any]:
    ann = {ANN_DEVICE_ALLOCATED: whole_gpu(minor)} if minor is not None else {}
    pod = kpod(name, {"nvidia.com/gpu": "1"}, annotations=ann)
    pod["spec"]["nodeName"] = node
    pod["status"] = {"phase": "Running" if node else phase}
    return pod


def eventually(check: Callable[[], bool], timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)
    return check()


def holdings(st: Any) -> dict[str, tuple[str, tuple[int, ...]]]:
    return {a.pod: (a.node, tuple(sorted(g.minor for g in a.devices)))
            for a in st.cluster.allocations()}


@pytest.fixture
def fake_api():
    api = FakeKubeAPI().start()
    yield api
    api.stop()


# ---- tests -----------------------------------------------------------------------------------
def test_kube_mode_watches_deletions_completions_and_node_changes(fake_api: FakeKubeAPI):
    api = fake_api
    for n in ("n1", "n2"):
        api.put_node(api_node(n))
    api.put_pod(api_pod("old", "n1", minor=0))            # bound before the start
    api.put_pod(api_pod("plain", "n1"))                   # bound without annotations: skipped
    api.put_pod(api_pod("liar", "n2", minor=7))           # n2 has no gpu 7: refused
    for name in ("p1", "p2", "p3"):
        api.put_pod(api_pod(name))                        # pending
    st, report, watcher = load_kube(api.client(), api=gpufleet, resync_s=300, watch_timeout_s=30)
    assert report.restored == ["default/old"]
    assert [p for p, _ in report.skipped] == ["default/plain"]
    assert [p for p, _ in report.refused] == ["default/liar"] and "gpu 7" in report.refused[0][1]
    watcher.start()
    try:
        client = TestClient(create_app(st, P))
        assert client.get("/state").json()["rebuild"]["refused"][0]["pod"] == "default/liar"
        for name, node in (("p1", "n1"), ("p2", "n2"), ("p3", "n2")):
            out = client.post(f"{P}/bind", json={"PodName": name, "PodNamespace": "default",
                                                 "PodUID": f"uid-{name}", "Node": node}).json()
            assert out == {"Error": ""}
            pod = api.pod(f"default/{name}")
            assert pod["spec"]["nodeName"] == node and ANN_DEVICE_ALLOCATED in \
                pod["metadata"]["annotations"]
        assert api.requests.index("PATCH api/v1/namespaces/default/pods/p1") < \
            api.requests.index("POST api/v1/namespaces/default/bindings")
        # Our own Bindings come back through the watch and change nothing.
        time.sleep(0.2)
        assert set(holdings(st)) == {"default/old", "default/p1", "default/p2", "default/p3"}

        api.delete_pod("default/old")                                      # deleted
        assert eventually(lambda: st.cluster.allocation("default/old") is None)
        api.set_phase("default/p1", "Succeeded")                           # completed
        assert eventually(lambda: st.cluster.allocation("default/p1") is None)
        api.put_node(api_node("n1", gpus=4, labels={"zone": "b"}))         # node updated
        assert eventually(lambda: len(st.node_specs["n1"]["devices"]) == 4)
        assert st.node_specs["n1"]["labels"] == {"zone": "b"}
        api.put_node(api_node("n3", gpus=1))                               # node added
        assert eventually(lambda: st.cluster.has_node("n3"))
        api.delete_node("n2")                                              # node deleted
        assert eventually(lambda: not st.cluster.has_node("n2"))
        assert set(holdings(st)) == set()   # p2, p3 were on n2

        # A watch that expires is replaced by a fresh list, and events keep coming.
        api.put_pod(api_pod("late", "n1", minor=3))
        assert eventually(lambda: st.cluster.allocation("default/late") is not None)
        lists = watcher.counters.get("pod_lists", 0)
        api.expire()
        assert eventually(lambda: watcher.counters.get("pod_lists", 0) > lists)
        assert watcher.counters.get("pods_expired", 0) >= 1
        api.delete_pod("default/late")
        assert eventually(lambda: st.cluster.allocation("default/late") is None)
        st.cluster.check_invariants()
        assert client.get("/readyz").status_code == 200
    finally:
        watcher.stop()
    # Watches stopped: the extender is alive but no longer ready.
    r = client.get("/readyz")
    assert r.status_code == 503 and "kubernetes watches" in r.text


def test_kube_restart_rebuilds_the_same_state_from_annotations(fake_api: FakeKubeAPI):
    api = fake_api
    api.put_node(api_node("n1", gpus=4))
    api.put_node(api_node("n2", gpus=4))
    names = [f"p{i}" for i in range(6)]
    for name in names:
        api.put_pod(api_pod(name))
    st, _, _ = load_kube(api.client(), api=gpufleet)
    client = TestClient(create_app(st, P))
    for i, name in enumerate(names):
        out = client.post(f"{P}/bind", json={"PodName": name, "PodNamespace": "default",
                                             "PodUID": f"uid-{name}", "Node": f"n{i % 2 + 1}"})
        assert out.json() == {"Error": ""}
    before = holdings(st)
    assert len(before) == 6
    # A new process knows only what the API server holds.
    st2, report, _ = load_kube(api.client(), api=gpufleet)
    assert sorted(report.restored) == sorted(before) and report.refused == []
    assert holdings(st2) == before
    # It hands out only what is still free: one GPU remains on each node.
    client2 = TestClient(create_app(st2, P))
    for name, node in (("q1", "n1"), ("q2", "n2")):
        api.put_pod(api_pod(name))
        out = client2.post(f"{P}/bind", json={"PodName": name, "PodNamespace": "default",
                                              "PodUID": f"uid-{name}", "Node": node}).json()
        assert out == {"Error": ""}
    api.put_pod(api_pod("q5"))
    out = client2.post(f"{P}/bind", json={"PodName": "q5", "PodNamespace": "default",
                                          "PodUID": "uid-q5", "Node": "n1"}).json()
    assert "does not fit" in out["Error"]
    for node in ("n1", "n2"):
        used = [m for n, ms in holdings(st2).values() if n == node for m in ms]
        assert sorted(used) == [0, 1, 2, 3]
    st2.cluster.check_invariants()
