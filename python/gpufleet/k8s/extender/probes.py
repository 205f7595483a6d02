"""`--probe-listen`: /healthz and /readyz over plain HTTP on a port of their own.

With mutual TLS the extender's port refuses every connection without a client certificate, and
the kubelet's probes present none. This listener answers only the two probes, which say nothing
but "ok" or which readiness check fails, so it needs no authentication.
"""
from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Optional

from .metrics import readiness
from .state import ExtenderState


class ProbeServer:
    """Binds at construction (so a taken port stops the start); `start(state)` serves."""

    def __init__(self, host: str, port: int) -> None:
        server_cls = _IPv6Server if ":" in host else ThreadingHTTPServer
        self.state: Optional[ExtenderState] = None
        self.server = server_cls((host, port), self._handler())
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever,
                                       name="gpufleet-probes", daemon=True)

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    def start(self, state: ExtenderState) -> "ProbeServer":
        self.state = state
        self.thread.start()
        return self

    def stop(self) -> None:
        if self.thread.is_alive():
            self.server.shutdown()
        self.server.server_close()

    def _answer(self, path: str) -> tuple[int, str]:
        if path == "/healthz":
            return 200, "ok"
        if path == "/readyz":
            failing = readiness(self.state.ready_checks) if self.state is not None else ["state"]
            return (503, "not ready: " + ", ".join(failing)) if failing else (200, "ok")
        return 404, "not found: this port serves /healthz and /readyz only"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        probes = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                status, text = probes._answer(self.path.split("?", 1)[0])
                body = text.encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass   # a probe every few seconds is not worth a log line

        return Handler


class _IPv6Server(ThreadingHTTPServer):
    address_family = socket.AF_INET6
