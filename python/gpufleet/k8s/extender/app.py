"""The kube-scheduler extender as a Starlette ASGI app: filter, prioritize, bind, preempt.

Handlers are `async` and call the native core inline: each call is microseconds and CPU-bound, so
hopping to a worker thread would cost more than it saves. The state lock is never held across an
`await`. Only a blocking binder (the Kubernetes API) runs in a worker thread, while its devices
stay reserved so no concurrent bind can take them.
"""
from __future__ import annotations

import inspect
import json
import logging
import time
from typing import Any, Awaitable, Callable

import anyio.to_thread
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from . import convert, protocol
from .convert import ConvertError
from .protocol import ProtocolError
from .state import ExtenderState

log = logging.getLogger("gpufleet.extender")

UNKNOWN_NODE = "node unknown to gpufleet"
MAX_EXTENDER_PRIORITY = 10  # k8s.io/kube-scheduler/extender/v1 MaxExtenderPriority
MAX_BODY_BYTES = 64 << 20   # a NodeList of thousands of nodes fits; anything larger is refused


class BadBody(Exception):
    """The body is not JSON at all: answered with HTTP 400."""


def _json(data: Any, status: int = 200) -> Response:
    body = json.dumps(data, separators=(",", ":")).encode()
    return Response(body, status_code=status, media_type="application/json")


async def _read(request: Request) -> Any:
    body = await request.body()
    if len(body) > MAX_BODY_BYTES:
        raise BadBody(f"body of {len(body)} bytes is over the {MAX_BODY_BYTES} byte limit")
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError) as e:
        raise BadBody(f"body is not valid JSON: {e}") from None


def _scale(score: float) -> int:
    # Cluster.score is 0..100; the extender protocol wants 0..MaxExtenderPriority.
    s = int(round(float(score) * MAX_EXTENDER_PRIORITY / 100.0))
    return min(MAX_EXTENDER_PRIORITY, max(0, s))


class Extender:
    """Request handlers bound to one ExtenderState."""

    def __init__(self, state: ExtenderState) -> None:
        self.state = state

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
            cluster = st.cluster
            with st.lock:  # one native call for all nodes
                codes, reasons = cluster.filter_nodes(pod, names)
            for n, code, reason in zip(names, codes.tolist(), reasons):
                if code == 0:
                    passed.append(n)
                elif code == 2:
                    unresolvable[n] = reason
                elif code == 1:
                    failed[n] = reason
                else:
                    failed[n] = UNKNOWN_NODE
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
        out = []
        cluster, strategy = st.cluster, st.strategy
        with st.lock:  # the scheduler only sends nodes that passed every filter
            scores = cluster.score_nodes(pod, names, strategy)
        for n, score in zip(names, scores.tolist()):
            out.append({"Host": n, "Score": 0 if score != score else _scale(score)})  # NaN: unknown
        return out

    # ---- bind --------------------------------------------------------------------------------
    async def bind(self, data: Any) -> dict[str, Any]:
        st = self.state
        args = protocol.normalise(data, protocol.BIND_ARGS)
        name = protocol.want_str(args, "PodName")
        ns = protocol.want_str(args, "PodNamespace", required=False) or "default"
        uid = protocol.want_str(args, "PodUID", required=False)
        node = protocol.want_str(args, "Node")
        key = f"{ns}/{name}"
        pod_args = st.find_pod(ns, name, uid)
        if pod_args is None:
            return {"Error": f"pod {key} (uid {uid or '?'}) is unknown: it was not seen by "
                             "filter/prioritize and the pod source does not have it"}
        try:
            pod = st.make_pod(pod_args)
        except ValueError as e:
            return {"Error": f"pod {key}: invalid request: {e}"}
        with st.lock:
            prev = st.cluster.allocation(key)
            if prev is not None:
                if prev.node == node and prev.state == "Bound":
                    return {"Error": ""}   # a retried bind that already succeeded
                return {"Error": f"pod {key} already holds an allocation on {prev.node} "
                                 f"({prev.state})"}
            if not st.cluster.has_node(node):
                return {"Error": f"node {node}: {UNKNOWN_NODE}"}
            try:
                alloc = st.cluster.reserve(pod, node, st.strategy)
            except (ValueError, KeyError) as e:
                return {"Error": f"pod {key} does not fit on {node}: {e}"}
        # From here on the devices are reserved: every exit either commits or unreserves.
        try:
            annotations = alloc.annotations(gpushare=st.want_gpushare(pod_args))
            binder = st.binder
            if getattr(binder, "blocking", False):
                await anyio.to_thread.run_sync(binder.bind, ns, name, uid, node, annotations)
            else:
                binder.bind(ns, name, uid, node, annotations)
            with st.lock:
                st.cluster.commit(key)
                st.bound_at[key] = time.time_ns()
                if uid:
                    st.uid_to_pod[uid] = key
        except BaseException as e:  # includes cancellation: never leave a reservation behind
            with st.lock:
                st.cluster.unreserve(key)
            if not isinstance(e, Exception):
                raise
            log.warning("bind of %s to %s failed: %s", key, node, e)
            return {"Error": f"bind of {key} to {node} failed: {e}"}
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


def create_app(state: ExtenderState, prefix: str = "") -> Starlette:
    """The ASGI app. `prefix` is the path part of the scheduler's urlPrefix, e.g. "/gpufleet"."""
    prefix = "/" + prefix.strip("/") if prefix.strip("/") else ""
    ext = Extender(state)

    Endpoint = Callable[[Request], Awaitable[Response]]

    def verb(fn: Callable[[Any], Any], error_status: int | None) -> Endpoint:
        # error_status None: the verb's result has an Error field (filter, bind), so bad input is
        # a 200 with Error; otherwise bad input is that HTTP status with a JSON error.
        name = fn.__name__

        async def endpoint(request: Request) -> Response:
            state.count(name)
            try:
                t0 = time.perf_counter()
                data = await _read(request)
                result = fn(data)
                if inspect.isawaitable(result):
                    result = await result
                if isinstance(result, dict) and result.get("Error"):
                    state.count(f"{name}_errors")
                response = _json(result)
                state.observe(name, time.perf_counter() - t0)
                return response
            except BadBody as e:
                state.count(f"{name}_errors")
                return _json({"Error": str(e)}, 400)
            except (ProtocolError, ConvertError, ValueError, KeyError, TypeError) as e:
                state.count(f"{name}_errors")
                msg = str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e)
                if error_status is None:
                    return _json({"Error": msg})
                return _json({"Error": msg}, error_status)
            except Exception as e:  # noqa: BLE001 - an extender must answer, not crash
                state.count(f"{name}_errors")
                log.exception("%s failed", name)
                return _json({"Error": f"internal error: {type(e).__name__}: {e}"},
                             200 if error_status is None else 500)

        return endpoint

    async def healthz(request: Request) -> Response:
        return Response("ok", media_type="text/plain")

    async def state_view(request: Request) -> Response:
        return _json(state.usage())

    routes = [
        Route(f"{prefix}/filter", verb(ext.filter, None), methods=["POST"]),
        Route(f"{prefix}/prioritize", verb(ext.prioritize, 400), methods=["POST"]),
        Route(f"{prefix}/bind", verb(ext.bind, None), methods=["POST"]),
        Route(f"{prefix}/preempt", verb(ext.preempt, 400), methods=["POST"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/state", state_view, methods=["GET"]),
    ]
    if prefix:
        routes += [Route(f"{prefix}/healthz", healthz, methods=["GET"]),
                   Route(f"{prefix}/state", state_view, methods=["GET"])]
    app = Starlette(routes=routes)
    app.state.extender = state
    return app
