"""Strict HTTP input through the real uvicorn server: oversized bodies are refused before they are
read, null / non-object / deeply nested JSON gets a clear Error, never an internal error."""
from __future__ import annotations

import socket
from typing import Iterator

import httpx
import pytest

import gpufleet
from gpufleet.k8s.extender.app import MAX_DEPTH
from gpufleet.k8s.extender.binder import MemoryBinder
from gpufleet.k8s.extender.server import BackgroundServer
from gpufleet.k8s.extender.state import state_from_scenario
from test_extender import kpod, node

P = "/gpufleet"
LIMIT = 1 << 20
VERBS = ("filter", "prioritize", "bind", "preempt", "release")
HAS_ERROR_FIELD = {"filter", "bind", "release"}   # their results carry Error: HTTP 200


@pytest.fixture(scope="module")
def server():
    binder = MemoryBinder()
    st = state_from_scenario({"nodes": [node("n1")],
                              "pods": [{"name": "held", "requests": {"nvidia.com/gpu": "1"},
                                        "node": "n1"}]}, api=gpufleet, binder=binder)
    with BackgroundServer(st, prefix=P, max_body_bytes=LIMIT) as srv, \
            httpx.Client(base_url=srv.url, timeout=10) as client:
        srv.client = client
        yield srv, st, binder


def _raw_exchange(url: str, head: bytes, chunks: Iterator[bytes] = iter(())) -> bytes:
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(head)
        try:
            for c in chunks:
                s.sendall(c)
        except OSError:
            pass   # the server answered and closed while we were still sending: expected
        data = b""
        while b"\r\n\r\n" not in data or not data.rstrip().endswith(b"}"):
            part = s.recv(65536)
            if not part:
                break
            data += part
        return data


def _check_unchanged(srv, st, binder, before) -> None:
    assert st.cluster.snapshot() == before and binder.records == {}
    assert srv.client.get("/healthz").text == "ok"


@pytest.mark.parametrize("verb", VERBS)
def test_content_length_over_the_limit_is_refused_before_reading(server, verb: str):
    srv, st, binder = server
    before = st.cluster.snapshot()
    # Only the headers are sent: an answer proves the body was never waited for.
    head = (f"POST {P}/{verb} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: {10**12}\r\n\r\n").encode()
    answer = _raw_exchange(srv.url, head)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert b'"Error":"body of 1000000000000 bytes (Content-Length) is over the 1048576 byte' in answer
    _check_unchanged(srv, st, binder, before)


def test_chunked_body_is_capped_while_streaming(server):
    srv, st, binder = server
    before = st.cluster.snapshot()
    head = (f"POST {P}/filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            "Transfer-Encoding: chunked\r\n\r\n").encode()
    piece = b" " * 16384

    def chunks() -> Iterator[bytes]:
        for _ in range(256):   # 4 MiB in all, 4x the limit, never terminated
            yield b"%x\r\n%s\r\n" % (len(piece), piece)

    answer = _raw_exchange(srv.url, head, chunks())
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert b"over the 1048576 byte limit (stopped reading at" in answer
    _check_unchanged(srv, st, binder, before)


def test_a_body_under_the_limit_is_served(server):
    srv, st, _ = server
    pod = kpod("p", {"nvidia.com/gpu": "1"})
    r = srv.client.post(f"{P}/filter", json={"Pod": pod, "NodeNames": ["n1"]})
    assert r.status_code == 200 and r.json()["NodeNames"] == ["n1"]


NOT_OBJECTS = [(b"null", "null"), (b"[]", "an array"), (b'"x"', "a string"), (b"7", "a number"),
               (b"true", "a boolean")]


@pytest.mark.parametrize("verb", VERBS)
@pytest.mark.parametrize("body,what", NOT_OBJECTS)
def test_null_and_non_object_bodies_get_a_clear_error(server, verb: str, body: bytes, what: str):
    srv, st, binder = server
    before = st.cluster.snapshot()
    r = srv.client.post(f"{P}/{verb}", content=body, headers={"Content-Type": "application/json"})
    assert r.status_code == (200 if verb in HAS_ERROR_FIELD else 400)
    assert r.json() == {"Error": f"body: expected a JSON object, got {what}"}
    _check_unchanged(srv, st, binder, before)


DEEP = [b"[" * 100_000 + b"]" * 100_000,                               # past Python's own limit
        b'{"Pod": ' + b'{"a": ' * (MAX_DEPTH + 5) + b"1" + b"}" * (MAX_DEPTH + 6),  # past ours
        b'{"NodeNames": ' + b"[" * 500 + b"]" * 500 + b"}"]


@pytest.mark.parametrize("verb", VERBS)
@pytest.mark.parametrize("body", DEEP, ids=["arrays-100k", "pod-object", "node-names"])
def test_deeply_nested_bodies_get_a_clear_error(server, verb: str, body: bytes):
    srv, st, binder = server
    before = st.cluster.snapshot()
    r = srv.client.post(f"{P}/{verb}", content=body, headers={"Content-Type": "application/json"})
    assert r.status_code == 400
    assert r.json() == {"Error": f"body is not valid JSON: nested more than {MAX_DEPTH} levels "
                                 "deep"}
    _check_unchanged(srv, st, binder, before)
    assert "internal" not in r.text


@pytest.mark.parametrize("text, what", [
    ("nodes: []\nnodes: []\n", "duplicate key"),
    ("nodes:\n  - {name: n1, cpu: .nan}\n", "NaN"),
    ("\xff\xfe junk", "not UTF-8"),
])
def test_a_bad_scenario_file_stops_the_start_with_one_line(tmp_path, capsys, text: str, what: str):
    from gpufleet.cli import main

    path = tmp_path / "scenario.yaml"
    path.write_bytes(text.encode("latin-1"))
    assert main(["extender", "--state", str(path), "--listen", "127.0.0.1:0"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(path) in err and what.lower() in err.lower(), err
    assert not (tmp_path / "scenario.yaml.journal").exists()
