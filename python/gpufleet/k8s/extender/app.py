"""The kube-scheduler extender as a Starlette ASGI app: filter, prioritize, bind, preempt.

Handlers are `async` and call the native core inline: each call is microseconds and CPU-bound, so
hopping to a worker thread would cost more than it saves. The state lock is never held across an
`await`. Only a blocking binder (the Kubernetes API) and the journal's fsync run in a worker
thread, while the pod's devices stay reserved so no concurrent bind can take them.

Input is read strictly: a body over the size limit is refused from its Content-Length before it
is read (or once the stream passes the limit), and JSON nested deeper than MAX_DEPTH is refused,
so no request can make the extender buffer without bound or recurse out of its stack.
"""
from __future__ import annotations

import inspect
import logging
import time
from typing import Any, Awaitable, Callable

from gpufleet._extras import require

for _name in ("anyio", "orjson", "starlette"):
    require(_name, "k8s", "the scheduler extender (gpufleet extender)")

import anyio
import anyio.to_thread
import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from . import convert, protocol
from .auth import OPEN_PATHS, RequireToken
from .convert import ConvertError
from .guard import BindGuard, release_refusal
from .metrics import ExtenderMetrics, readiness
from .protocol import ProtocolError
from .state import ExtenderState

log = logging.getLogger("gpufleet.extender")

UNKNOWN_NODE = "node unknown to gpufleet"
MAX_EXTENDER_PRIORITY = 10  # k8s.io/kube-scheduler/extender/v1 MaxExtenderPriority
MAX_BODY_BYTES = 64 << 20   # a NodeList of thousands of nodes fits; anything larger is refused
MAX_DEPTH = 100             # Kubernetes objects nest about 20 levels (managedFields included)


class BadBody(Exception):
    """The body cannot be read as JSON (or is too large or too deep): an HTTP error status."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def _json(data: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(data), status_code=status, media_type="application/json")


async def _send_body(send: Send, body: bytes, status: int = 200) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", b"%d" % len(body))]})
    await send({"type": "http.response.body", "body": body})


async def _send_json(send: Send, data: Any, status: int = 200) -> None:
    # orjson: the 1,000-node answers are encoded in C, about ten times faster than json.dumps.
    await _send_body(send, orjson.dumps(data), status)


def _too_deep(value: Any, limit: int) -> bool:
    """Whether containers nest more than `limit` levels (iterative: no recursion to exhaust)."""
    stack = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if depth > limit:
            return True
        children = v.values() if type(v) is dict else v
        for c in children:
            if type(c) is dict or type(c) is list:
                stack.append((c, depth + 1))
    return False


async def _read(scope: dict[str, Any], receive: Receive, limit: int = MAX_BODY_BYTES) -> Any:
    declared = None
    for k, v in scope["headers"]:
        if k == b"content-length":
            declared = v.decode("latin-1")
    if declared is not None:
        if not declared.strip().isdigit():
            raise BadBody(f"Content-Length {declared!r} is not a byte count")
        if int(declared) > limit:
            # Refused before a byte of it is read.
            raise BadBody(f"body of {int(declared)} bytes (Content-Length) is over the {limit} "
                          "byte limit", 413)
    chunks, size, more = [], 0, True
    while more:   # chunked or unannounced bodies: cap while reading
        message = await receive()
        if message["type"] == "http.disconnect":
            raise BadBody("the client went away before the body was read")
        chunk = message.get("body", b"")
        more = message.get("more_body", False)
        size += len(chunk)
        if size > limit:
            raise BadBody(f"body is over the {limit} byte limit (stopped reading at {size} "
                          "bytes)", 413)
        chunks.append(chunk)
    body = b"".join(chunks)
    try:
        # orjson is strict where json is lax: NaN/Infinity, integers past 64 bits and invalid
        # UTF-8 are refused, as Go's decoder refuses them.
        data = orjson.loads(body)
    except (ValueError, UnicodeDecodeError) as e:
        if "depth limit" in str(e):   # orjson stops at 1,024 levels, far past ours
            raise BadBody(f"body is not valid JSON: nested more than {MAX_DEPTH} levels "
                          "deep") from None
        raise BadBody(f"body is not valid JSON: {e}") from None
    # Counting brackets is C-speed and bounds the depth; only bodies with many pay for the walk.
    if body.count(b"[") + body.count(b"{") > MAX_DEPTH and _too_deep(data, MAX_DEPTH):
        raise BadBody(f"body is not valid JSON: nested more than {MAX_DEPTH} levels deep")
    return data


class Extender:
    """Request handlers bound to one ExtenderState."""

    def __init__(self, state: ExtenderState, bind_guard: BindGuard | None = None) -> None:
        from gpufleet._core import extender as native  # the protocol's filter and prioritize

        self.state = state
        self.bind_guard = bind_guard   # --kube: which pods a bind may touch (guard.py)
        self._native = native

    # ---- filter ------------------------------------------------------------------------------
    def filter(self, data: Any) -> dict[str, Any]:
        st = self.state
        args = protocol.normalise(data, protocol.FILTER_ARGS)
        pod_args = convert.pod_args(args.get("Pod"))
        names, items = protocol.node_names_of(args)
        st.pods.put(pod_args)
        passed: list[str] = []
        failed: dict[str, str] = {}
        unresolvable: dict[str, str] = {}
        try:
            pod = st.make_pod(pod_args)
        except ValueError as e:
            # An invalid request is infeasible everywhere, and no preemption can help.
            unresolvable = {n: f"invalid request: {e}" for n in names}
            pod = None
        if pod is not None:
            with st.lock:  # one native call for all nodes, answering in the protocol's terms
                passed, failed, unresolvable, unknown = self._native.partition_nodes(st.cluster, pod, names)
                if st.gangs is not None and st.gangs.key(pod_args) is not None:
                    plan, why = st.gangs.plan(st.cluster, pod_args, st.strategy)
                    passed = st.gangs.narrow(plan, why, passed, failed)
            for n in unknown:
                failed[n] = UNKNOWN_NODE
            # A retried bind goes back to the devices the pod already holds: its node passes
            # rather than look full with the pod's own devices.
            own = st.held_node(pod_args) if st.held else None
            if own is not None and (own in failed or own in unresolvable):
                failed.pop(own, None)
                unresolvable.pop(own, None)
                keep = set(passed) | {own}
                passed = [n for n in names if n in keep]
            if st.claims_filter is not None:  # --dra: the pod's claims must be had there too
                passed = st.claims_filter.narrow(args.get("Pod"), passed, failed)
        out: dict[str, Any] = {"Nodes": None, "NodeNames": None, "FailedNodes": failed,
                               "FailedAndUnresolvableNodes": unresolvable, "Error": ""}
        if items is None:
            out["NodeNames"] = passed
        else:
            keep = set(passed)
            node_list = {k: v for k, v in args["Nodes"].items() if k != "items"}
            node_list["items"] = [it for it in items if it["metadata"]["name"] in keep]
            out["Nodes"] = node_list
        return out

    # ---- prioritize --------------------------------------------------------------------------
    def prioritize(self, data: Any) -> list[dict[str, Any]]:
        st = self.state
        args = protocol.normalise(data, protocol.FILTER_ARGS)
        pod_args = convert.pod_args(args.get("Pod"))
        names, _ = protocol.node_names_of(args)
        st.pods.put(pod_args)
        try:
            pod = st.make_pod(pod_args)
        except ValueError:
            return [{"Host": n, "Score": 0} for n in names]
        with st.lock:  # the scheduler only sends nodes that passed every filter
            scores = self._native.host_priorities(st.cluster, pod, names, st.strategy,
                                                  MAX_EXTENDER_PRIORITY)
            if st.gangs is not None and st.gangs.key(pod_args) is not None:
                plan, _ = st.gangs.plan(st.cluster, pod_args, st.strategy)
                for s in scores:  # the gang's held nodes first
                    if plan is not None and plan.slots.get(s["Host"], 0) > 0:
                        s["Score"] = MAX_EXTENDER_PRIORITY
            return scores

    # ---- bind --------------------------------------------------------------------------------
    async def bind(self, data: Any) -> dict[str, Any]:
        st = self.state
        args = protocol.normalise(data, protocol.BIND_ARGS)
        name = protocol.want_str(args, "PodName")
        ns = protocol.want_str(args, "PodNamespace", required=False) or "default"
        uid = protocol.want_str(args, "PodUID", required=False)
        node = protocol.want_str(args, "Node")
        key = f"{ns}/{name}"
        if self.bind_guard and (refused := await self.bind_guard.refusal(st, ns, name, uid)):
            return {"Error": refused}
        pod_args = st.find_pod(ns, name, uid)
        if pod_args is None or pod_args.name != key:
            return {"Error": f"pod {key} (uid {uid or '?'}) is unknown: it was not seen by "
                             "filter/prioritize and the pod source does not have it"}
        try:
            pod = st.make_pod(pod_args)
        except ValueError as e:
            return {"Error": f"pod {key}: invalid request: {e}"}
        with st.lock:
            # A retry of a bind already answered, or journalled and never answered (confirmed
            # below), or in scenario mode a move of the pod's hold to another node.
            prior = st.prior_bind(key, uid, node)
            if prior.action == "error":
                return {"Error": prior.error}
            if prior.action == "done":
                return {"Error": ""}   # a retried bind that already succeeded
            if prior.action != "confirm":
                if not st.cluster.has_node(node):
                    st.undo_move(prior)
                    return {"Error": f"node {node}: {UNKNOWN_NODE}"}
                try:
                    alloc = st.cluster.reserve(pod, node, st.strategy)
                except (ValueError, KeyError) as e:
                    st.undo_move(prior)
                    return {"Error": str(e)}   # the core names the pod, the node and why
        if prior.action == "confirm" and prior.held is not None:
            try:
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(st.confirm_bind, prior.held)
            except (ValueError, OSError) as e:
                st.undo_confirm(prior)
                log.warning("retried bind of %s to %s failed: %s", key, node, e)
                return {"Error": f"bind of {key} to {node} failed: {e}"}
            return {"Error": ""}
        # From here on the devices are reserved: every exit either commits or unreserves.
        try:
            annotations = alloc.annotations(gpushare=st.want_gpushare(pod_args))
            binder, journal = st.binder, st.journal
            gang = st.gangs.key(pod_args) if st.gangs is not None else None

            def bind_and_record() -> None:
                # The binder writes the cluster's record (annotations, then Binding); the journal
                # is scenario mode's. Both are durable before the bind is committed and answered.
                binder.bind(ns, name, uid, node, annotations)
                if journal is not None:
                    journal.record_bind(pod_args, node, annotations, gang)

            # Shielded: once the record may exist, a client that goes away must not leave the
            # state behind it. The bind completes and a retry is answered from the state.
            with anyio.CancelScope(shield=True):
                if getattr(binder, "blocking", False) or journal is not None:
                    await anyio.to_thread.run_sync(bind_and_record)
                else:
                    bind_and_record()
                st.commit_bind(pod_args, node, annotations)
                if st.gangs is not None:
                    st.gangs.bound(pod_args, node)
        except BaseException as e:  # never leave a reservation behind
            st.unreserve(key)
            st.undo_move(prior)
            # A binder that keeps its own record (scenario mode's) forgets a bind that failed
            # after it: a refused bind leaves nothing behind.
            forget = getattr(st.binder, "forget", None)
            if forget is not None:
                forget(ns, name, uid)
            if not isinstance(e, Exception):
                raise
            log.warning("bind of %s to %s failed: %s", key, node, e)
            return {"Error": f"bind of {key} to {node} failed: {e}"}
        return {"Error": ""}

    # ---- release (scenario mode: stands in for the pod's deletion) --------------------------
    def release(self, data: Any) -> dict[str, Any]:
        st = self.state
        args = protocol.normalise(data, protocol.RELEASE_ARGS)
        name = protocol.want_str(args, "PodName")
        ns = protocol.want_str(args, "PodNamespace", required=False) or "default"
        uid = protocol.want_str(args, "PodUID", required=False)
        key = f"{ns}/{name}"
        if not st.manual_release:
            return {"Error": "release is only served with a scenario file; in a cluster, "
                             "deleting the pod releases its devices"}
        refused = release_refusal(st, key, uid)
        if refused:
            return {"Error": refused}
        if not st.release_pod(key, uid):
            return {"Error": f"pod {key} holds no bound allocation"
                             + (f" with uid {uid}" if uid else "")}
        return {"Error": ""}

    # ---- preempt -----------------------------------------------------------------------------
    def preempt(self, data: Any) -> dict[str, Any]:
        st = self.state
        args = protocol.normalise(data, protocol.PREEMPT_ARGS)
        pod_args = convert.pod_args(args.get("Pod"))
        pod = st.make_pod(pod_args)
        # node -> (victim uids, victim names, NumPDBViolations)
        victims: dict[str, tuple[list[str], list[str], Any]] = {}
        meta = args.get("NodeNameToMetaVictims")
        if meta is not None:
            for node, v in meta.items():
                uids = []
                for i, p in enumerate((v or {}).get("Pods") or []):
                    uid = (p or {}).get("UID")
                    if not isinstance(uid, str):
                        raise ProtocolError(f"NodeNameToMetaVictims.{node}.Pods[{i}].UID: "
                                            "missing or not a string")
                    uids.append(uid)
                victims[node] = (uids, [], (v or {}).get("NumPDBViolations", 0))
        else:
            for node, v in (args.get("NodeNameToVictims") or {}).items():
                pods = (v or {}).get("Pods") or []
                if not isinstance(pods, list):
                    raise ProtocolError(f"NodeNameToVictims.{node}.Pods: expected a list")
                parsed = [convert.pod_args(p) for p in pods]
                victims[node] = ([p.uid for p in parsed], [p.name for p in parsed],
                                 (v or {}).get("NumPDBViolations", 0))
        # Simulate on a copy (Cluster.copy() is restore(snapshot()) without the text round
        # trip): the live state is never touched by a preemption question. Nodes are
        # independent, so one copy with every node's victims released answers them all.
        with st.lock:
            sim = st.cluster.copy()
            uid_to_pod = dict(st.uid_to_pod)
        for node, (uids, names, _) in victims.items():
            for pname in [uid_to_pod.get(u, "") for u in uids] + names:
                a = sim.allocation(pname) if pname else None
                if a is not None and a.node == node:
                    if a.state == "Bound":
                        sim.release(pname)
                    else:
                        sim.unreserve(pname)
        out: dict[str, Any] = {}
        for node, (uids, _, pdb) in victims.items():
            if sim.has_node(node) and sim.filter(pod, node).ok:
                out[node] = {"Pods": [{"UID": u} for u in uids], "NumPDBViolations": pdb}
        return {"NodeNameToMetaVictims": out}


def create_app(state: ExtenderState, prefix: str = "",
               max_body_bytes: int = MAX_BODY_BYTES, token: bytes | None = None,
               bind_guard: BindGuard | None = None,
               metrics: ExtenderMetrics | None = None) -> ASGIApp:
    """The ASGI app. `prefix` is the path part of the scheduler's urlPrefix, e.g. "/gpufleet".
    `token`: every request but the health probes needs it as a bearer token (auth.py);
    `bind_guard`: the `--kube` checks of which pods a bind may touch (guard.py); `metrics`: the
    registry the app counts into and /metrics renders (new when None; the probe port shares it)."""
    prefix = "/" + prefix.strip("/") if prefix.strip("/") else ""
    ext = Extender(state, bind_guard)
    metrics = metrics if metrics is not None else ExtenderMetrics(state)

    Endpoint = Callable[[Scope, Receive, Send], Awaitable[None]]

    def verb(fn: Callable[[Any], Any], error_status: int | None) -> Endpoint:
        # error_status None: the verb's result has an Error field (filter, bind), so bad input is
        # a 200 with Error; otherwise bad input is that HTTP status with a JSON error.
        name = fn.__name__

        # A plain ASGI endpoint: the verbs are the hot path, and a framework's request and
        # response objects cost as much as the 1,000-node filter itself.
        async def endpoint(scope: Scope, receive: Receive, send: Send) -> None:
            state.count(name)
            try:
                t0 = time.perf_counter()
                data = protocol.body_object(await _read(scope, receive, max_body_bytes))
                result = fn(data)
                if inspect.isawaitable(result):
                    result = await result
                failed = isinstance(result, dict) and bool(result.get("Error"))
                if failed:
                    state.count(f"{name}_errors")
                body = orjson.dumps(result)
                seconds = time.perf_counter() - t0
                state.observe(name, seconds)
                metrics.observe(name, "error" if failed else "ok", seconds)
            except BadBody as e:
                state.count(f"{name}_errors")
                metrics.observe(name, "bad_request", None)
                return await _send_json(send, {"Error": str(e)}, e.status)
            except (ProtocolError, ConvertError, ValueError, KeyError, TypeError) as e:
                state.count(f"{name}_errors")
                metrics.observe(name, "bad_request", None)
                return await _send_json(send, {"Error": str(e)},
                                        200 if error_status is None else error_status)
            except Exception as e:  # noqa: BLE001 - an extender must answer, not crash
                state.count(f"{name}_errors")
                metrics.observe(name, "internal", None)
                log.exception("%s failed", name)
                return await _send_json(send, {"Error": f"internal error: {type(e).__name__}: {e}"},
                                        200 if error_status is None else 500)
            await _send_body(send, body)

        return endpoint

    async def healthz(request: Request) -> Response:
        return Response("ok", media_type="text/plain")

    async def readyz(request: Request) -> Response:
        # Serving means the state was loaded and rebuilt; the checks cover what runs after that
        # (the Kubernetes watches).
        failing = readiness(state.ready_checks)
        if failing:
            return Response("not ready: " + ", ".join(failing), status_code=503,
                            media_type="text/plain")
        return Response("ok", media_type="text/plain")

    async def metrics_view(request: Request) -> Response:
        body, content_type = metrics.render()
        return Response(body, media_type=content_type)

    async def state_view(request: Request) -> Response:
        return _json(state.usage())

    verbs = {f"{prefix}/{fn.__name__}": verb(fn, status) for fn, status in (
        (ext.filter, None), (ext.prioritize, 400), (ext.bind, None), (ext.preempt, 400),
        (ext.release, None))}
    reads = {"/healthz": healthz, "/readyz": readyz, "/metrics": metrics_view, "/state": state_view}
    routes = []
    for base in ("", prefix) if prefix else ("",):
        routes += [Route(f"{base}{path}", view, methods=["GET"]) for path, view in reads.items()]
    views = Starlette(routes=routes)
    views.state.extender = state
    app: ASGIApp = _VerbsFirst(verbs, views)
    if token is not None:
        # Refusals are counted as requests_total{verb, outcome="unauthorized"}; any path that
        # is not a verb or a view is counted as "other", so a scan cannot add label values.
        named = {path: path.rsplit("/", 1)[1] for path in [*verbs] + [
            f"{base}{path}" for base in {"", prefix} for path in reads]}
        app = RequireToken(
            app, token, [f"{base}{path}" for base in {"", prefix} for path in OPEN_PATHS],
            lambda path: metrics.observe(named.get(path, "other"), "unauthorized", None))
    return app


class _VerbsFirst:
    """POST verbs go straight to their endpoints; everything else to the Starlette app (GET
    views, 404s, lifespan)."""

    def __init__(self, verbs: dict[str, Callable[[Scope, Receive, Send], Awaitable[None]]],
                 views: Starlette) -> None:
        self.verbs = verbs
        self.views = views
        self.state = views.state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        endpoint = self.verbs.get(scope.get("path", "")) if scope["type"] == "http" else None
        if endpoint is None:
            return await self.views(scope, receive, send)
        if scope["method"] != "POST":
            await send({"type": "http.response.start", "status": 405,
                        "headers": [(b"allow", b"POST"), (b"content-type", b"text/plain"),
                                    (b"content-length", b"18")]})
            return await send({"type": "http.response.body", "body": b"Method Not Allowed"})
        return await endpoint(scope, receive, send)
