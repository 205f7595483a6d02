"""`--probe-listen`: /healthz, /readyz and /metrics over plain HTTP on a port of their own.

With mutual TLS the extender's port refuses every connection without a client certificate, and
the kubelet's probes present none; a Prometheus scraper presents none either, and cannot reach a
port bound to loopback. This listener answers only the two probes, which say nothing but "ok" or
which readiness check fails, and the extender's own /metrics (the same registry the main port
renders: counts and gauges, no pod names), so it needs no authentication.
"""
from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Optional

from .metrics import ExtenderMetrics, readiness
from .state import ExtenderState


class ProbeServer:
    """Binds at construction (so a taken port stops the start); `start(state)` serves."""

    def __init__(self, host: str, port: int) -> None:
        server_cls = _IPv6Server if ":" in host else ThreadingHTTPServer
        self.state: Optional[ExtenderState] = None
        self.metrics: Optional[ExtenderMetrics] = None
        self.server = server_cls((host, port), self._handler())
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever,
                                       name="gpufleet-probes", daemon=True)

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    def start(self, state: ExtenderState, metrics: Optional[ExtenderMetrics] = None) -> "ProbeServer":
        """Serves the probes of ``state`` and, given the app's ``metrics``, its /metrics."""
        self.state = state
        self.metrics = metrics
        self.thread.start()
        return self

    def stop(self) -> None:
        if self.thread.is_alive():
            self.server.shutdown()
        self.server.server_close()

    def _answer(self, path: str) -> tuple[int, bytes, str]:
        """Status, body and content type for a GET of ``path``."""
        if path == "/metrics" and self.metrics is not None:
            body, content_type = self.metrics.render()
            return 200, body, content_type
        if path == "/healthz":
            return 200, b"ok", "text/plain"
        if path == "/readyz":
            failing = readiness(self.state.ready_checks) if self.state is not None else ["state"]
            text = "not ready: " + ", ".join(failing) if failing else "ok"
            return 503 if failing else 200, text.encode(), "text/plain"
        served = "/healthz, /readyz" + (" and /metrics" if self.metrics is not None else "")
        return 404, f"not found: this port serves {served} only".encode(), "text/plain"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        probes = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                status, body, content_type = probes._answer(self.path.split("?", 1)[0])
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass   # a probe every few seconds is not worth a log line

        return Handler


class _IPv6Server(ThreadingHTTPServer):
    address_family = socket.AF_INET6
