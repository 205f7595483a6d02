"""Serve the extender with uvicorn, in the foreground (CLI) or in a background thread (tests)."""
from __future__ import annotations

import gc
import threading
import time
from typing import Any, Optional

from .app import MAX_BODY_BYTES, create_app
from .auth import Access
from .guard import BindGuard
from .metrics import ExtenderMetrics
from .probes import ProbeServer
from .state import ExtenderState


def make_server(state: ExtenderState, host: str = "127.0.0.1", port: int = 0,
                prefix: str = "", log_level: str = "warning",
                max_body_bytes: int = MAX_BODY_BYTES, access: Optional[Access] = None,
                bind_guard: Optional[BindGuard] = None, metrics: Optional[ExtenderMetrics] = None,
                **uvicorn_kwargs: Any) -> Any:
    """A uvicorn server for the extender; `access` adds TLS, the client CA and the token;
    `metrics`: the registry its /metrics renders (a new one when None)."""
    from gpufleet._extras import require
    uvicorn = require("uvicorn", "k8s", "the scheduler extender (gpufleet extender)")

    access = access or Access()
    app = create_app(state, prefix, max_body_bytes, token=access.token, bind_guard=bind_guard,
                     metrics=metrics)
    config = uvicorn.Config(app, host=host, port=port, log_level=log_level, access_log=False,
                            **access.uvicorn_ssl(), **uvicorn_kwargs)
    return uvicorn.Server(config)


def serve(state: ExtenderState, host: str, port: int, prefix: str = "",
          log_level: str = "info", max_body_bytes: int = MAX_BODY_BYTES,
          access: Optional[Access] = None, bind_guard: Optional[BindGuard] = None,
          probes: Optional[ProbeServer] = None) -> None:
    """Run until interrupted (SIGINT/SIGTERM are handled by uvicorn). uvicorn's own loggers are
    left unconfigured, so they go through the process's logging set-up (gpufleet.logs).
    `probes`: the plain-HTTP /healthz, /readyz and /metrics listener, served alongside (its
    /metrics renders the same registry as the main port's)."""
    freeze_gc()
    metrics = ExtenderMetrics(state)
    if probes is not None:
        probes.start(state, metrics)
    try:
        make_server(state, host, port, prefix, log_level, max_body_bytes, access, bind_guard,
                    metrics=metrics, log_config=None).run()
    finally:
        if probes is not None:
            probes.stop()


def freeze_gc() -> None:
    """Move the loaded state's objects out of the collector's reach: full collections then walk
    only what requests allocate, which keeps them from adding milliseconds to the p99."""
    gc.collect()
    gc.freeze()


class BackgroundServer:
    """A uvicorn server on an ephemeral loopback port in a daemon thread; a context manager."""

    def __init__(self, state: ExtenderState, prefix: str = "", host: str = "127.0.0.1",
                 start_timeout_s: float = 10.0, freeze: bool = False,
                 max_body_bytes: int = MAX_BODY_BYTES, access: Optional[Access] = None,
                 bind_guard: Optional[BindGuard] = None) -> None:
        if freeze:
            freeze_gc()
        self.server = make_server(state, host, 0, prefix, max_body_bytes=max_body_bytes,
                                  access=access, bind_guard=bind_guard)
        self.scheme = "https" if access is not None and access.tls else "http"
        self.thread = threading.Thread(target=self.server.run, name="gpufleet-extender",
                                       daemon=True)
        self.start_timeout_s = start_timeout_s
        self.url: Optional[str] = None

    def __enter__(self) -> "BackgroundServer":
        self.thread.start()
        deadline = time.monotonic() + self.start_timeout_s
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                self.server.should_exit = True
                raise RuntimeError("extender server did not start")
            time.sleep(0.01)
        sock = self.server.servers[0].sockets[0]
        host, port = sock.getsockname()[:2]
        self.url = f"{self.scheme}://{host}:{port}"
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=self.start_timeout_s)
