"""`gpufleet extender`: serve the kube-scheduler extender over HTTP."""
from __future__ import annotations

import argparse
import sys
from typing import Any

from gpufleet import logs
from gpufleet.commands._bounds import amount, seconds

# Ranges of the numeric options (docs/extender.md, "Options"). The hold timeout's upper end is the
# state's (HOLD_TIMEOUT_MAX_S); its lower end leaves a retry the time of a round trip.
MAX_BODY_MIB = (0.1, 1024.0)     # a bind is 200 bytes; a NodeList of 5,000 nodes about 50 MiB
RESYNC_S = (1.0, 86_400.0)       # re-lists: not a busy loop, at least daily
HOLD_TIMEOUT_S = (1.0, 86_400.0)
# gpufleet.topology.FITS, spelled here so that `--help` does not import the native core.
TOPOLOGY_FITS = ("best-fit", "least-free-capacity", "largest-fit", "fragmentation")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "extender", help="serve the kube-scheduler extender (filter/prioritize/bind/preempt)",
        description="Serve the kube-scheduler extender protocol over HTTP, backed by gpufleet.")
    p.add_argument("--listen", default="127.0.0.1:8888", help="HOST:PORT (default %(default)s)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--state", metavar="SCENARIO",
                     help="scenario file (YAML/JSON with nodes: and pods:); binds and releases "
                          "are journalled beside it and survive a restart")
    src.add_argument("--kube", action="store_true",
                     help="read nodes and bound pods from the Kubernetes API and bind there")
    p.add_argument("--journal", metavar="FILE",
                   help="with --state: the journal of binds and releases, its .mark and .lock "
                        "beside it, in an existing directory (default SCENARIO.journal, beside the "
                        "scenario)")
    p.add_argument("--accept-journal-loss", action="store_true",
                   help="with --state: start even when the journal shows that binds which may "
                        "have been answered were lost (damaged or cut short); they are logged")
    p.add_argument("--strategy", default="binpack",
                   help="device placement strategy with its parameters, e.g. 'random(seed=1)' "
                        "(gpufleet place --list-strategies; default %(default)s)")
    p.add_argument("--prefix", default="/gpufleet", help="URL path prefix (default %(default)s)")
    p.add_argument("--gpushare-annotations", choices=["auto", "always", "never"], default="auto",
                   help="write ALIYUN_COM_GPU_MEM_* annotations (auto: for aliyun.com/gpu-mem pods)")
    p.add_argument("--resync-s", type=seconds(*RESYNC_S), default=300.0,
                   help="with --kube: seconds between full re-lists behind the watches (the DRA ones too), "
                        f"{RESYNC_S[0]:g} to {RESYNC_S[1]:,.0f} (default %(default)s)")
    p.add_argument("--dra", action="store_true",
                   help="with --kube: watch ResourceSlices, DeviceClasses and ResourceClaims, and "
                        "write each pod's claim allocations before its Binding (docs/dra.md)")
    p.add_argument("--topology", metavar="FILE",
                   help="place gangs by network topology (docs/topology.md): a YAML or JSON file "
                        "with a levels list, a Kueue or KAI Topology object, or Volcano HyperNodes")
    p.add_argument("--topology-fit", default="best-fit", choices=TOPOLOGY_FITS,
                   help="how a gang's domain is chosen (default %(default)s)")
    p.add_argument("--hold-timeout-s", type=seconds(*HOLD_TIMEOUT_S), default=60.0,
                   help="seconds a hold nobody was answered for (a bind journalled but not "
                        "answered before a restart; with --kube, one the API server does not show "
                        "yet) waits for the scheduler's retry before it is released, "
                        f"{HOLD_TIMEOUT_S[0]:g} to {HOLD_TIMEOUT_S[1]:,.0f} (default %(default)s)")
    p.add_argument("--max-body-mib", type=amount(*MAX_BODY_MIB, "MiB"), default=64.0,
                   help="largest request body accepted, MiB, "
                        f"{MAX_BODY_MIB[0]:g} to {MAX_BODY_MIB[1]:,.0f} (default %(default)s)")
    _add_security_arguments(p)
    logs.add_arguments(p)
    p.set_defaults(func=handler)


def _add_security_arguments(p: argparse.ArgumentParser) -> None:
    """TLS, authentication, the probe port and the bind checks (docs/extender.md#security)."""
    g = p.add_argument_group("security", "a non-loopback --listen needs TLS with a client CA "
                                         "or a token, or --insecure")
    g.add_argument("--tls-cert", metavar="FILE", help="serve HTTPS with this PEM certificate")
    g.add_argument("--tls-key", metavar="FILE", help="the certificate's PEM private key")
    g.add_argument("--tls-client-ca", metavar="FILE",
                   help="require a client certificate signed by this CA (mutual TLS, as "
                        "kube-scheduler's tlsConfig certFile/keyFile present)")
    g.add_argument("--token-file", metavar="FILE",
                   help="require 'Authorization: Bearer <token>' with the token in FILE on every "
                        "request but /healthz and /readyz (for clients other than kube-scheduler)")
    g.add_argument("--insecure", action="store_true",
                   help="allow a non-loopback --listen without TLS and authentication")
    g.add_argument("--probe-listen", metavar="HOST:PORT",
                   help="also serve /healthz and /readyz over plain HTTP here (for the kubelet, "
                        "which cannot present a client certificate)")
    g.add_argument("--scheduler-name", default="default-scheduler",
                   help="with --kube: bind only pods whose spec.schedulerName is this "
                        "(default %(default)s)")


def handler(args: argparse.Namespace) -> int:
    logs.configure(args.log_level, args.log_format)
    from gpufleet.k8s.extender import server, state
    from gpufleet.k8s.listen import parse_listen

    from gpufleet.registries import check_strategy

    watcher = probes = dra_sync = None
    try:
        check_strategy(args.strategy)   # before anything starts: a bad spec fails every request
        host, port = parse_listen(args.listen)
        access = _access(args, host)
        if args.probe_listen:
            from gpufleet.k8s.extender.probes import ProbeServer

            probes = ProbeServer(*parse_listen(args.probe_listen, "--probe-listen"))
        if args.journal and args.kube:
            raise ValueError("--journal goes with --state; with --kube the pods' annotations "
                             "are the record")
        kw = dict(strategy=args.strategy, gpushare_annotations=args.gpushare_annotations,
                  hold_timeout_s=args.hold_timeout_s, topology=read_topology(args.topology),
                  topology_fit=args.topology_fit)
        if args.dra and not args.kube:
            raise ValueError("--dra goes with --kube")
        if args.kube:
            from gpufleet.k8s.extender import kube

            st, _, watcher = kube.load_kube(resync_s=args.resync_s, **kw)
            if args.dra:
                from gpufleet.k8s.extender import dra
                dra_sync = dra.enable(st, resync_s=args.resync_s)
        else:
            st = state.load_scenario(args.state, journal=args.journal or f"{args.state}.journal",
                                     accept_journal_loss=args.accept_journal_loss, **kw)
        check_topology(st, args.topology)
    except Exception as e:  # noqa: BLE001 - any start-up failure is a clean exit 2
        if probes is not None:
            probes.stop()
        print(f"gpufleet extender: {e}", file=sys.stderr)
        return 2
    _log_exposure(access, host)
    guard = None
    if watcher is not None:
        watcher.start()   # deletions, completions and node changes, as they happen
        guard = _bind_guard(watcher, args.scheduler_name)
    if dra_sync is not None:
        dra_sync.start()  # slices, classes and claims, as they change
    try:
        server.serve(st, host, port, args.prefix, args.log_level,
                     max_body_bytes=int(args.max_body_mib * (1 << 20)),
                     access=access, bind_guard=guard, probes=probes)
    finally:
        if watcher is not None:
            watcher.stop()
        if dra_sync is not None:
            dra_sync.stop()
        if st.journal is not None:
            st.journal.close()
    return 0


def read_topology(path: str | None) -> Any:
    """The topology file as the core reads it: Volcano HyperNodes (documents or a List) as
    ``{"hyper_nodes": [...]}``, any other single document (levels, a Topology object) as it is."""
    if path is None:
        return None
    import yaml

    try:
        with open(path, encoding="utf-8") as f:
            docs = [d for d in yaml.safe_load_all(f) if d is not None]
    except OSError as e:
        raise ValueError(f"--topology {path}: {e.strerror}") from None
    except yaml.YAMLError as e:
        raise ValueError(f"--topology {path}: not YAML or JSON ({str(e).splitlines()[0]})") from None
    if not docs:
        raise ValueError(f"--topology {path}: the file is empty")
    # A List (kubectl get -o yaml) holds its objects in items.
    objects = [o for d in docs for o in (d.get("items", []) if isinstance(d, dict)
                                         and str(d.get("kind", "")).endswith("List") else [d])]
    if objects and all(isinstance(o, dict) and o.get("kind") == "HyperNode" for o in objects):
        topology: Any = {"hyper_nodes": objects}
    elif len(docs) == 1:
        topology = docs[0]
    else:
        raise ValueError(f"--topology {path}: several documents must all be Volcano HyperNodes")
    # Its form is checked before the state (and its journal) is loaded; its nodes after.
    from gpufleet import _core

    _check_domains(_core.Cluster(), topology, path)
    return topology


def check_topology(st: Any, path: str | None) -> None:
    """Compile the topology over the loaded nodes once, so that bad input stops the start instead
    of failing every gang's filter."""
    if st.gangs is not None:
        _check_domains(st.cluster, st.gangs.topology, path)


def _check_domains(cluster: Any, topology: Any, path: str | None) -> None:
    from gpufleet.topology import domains

    try:
        domains(cluster, topology)
    except ValueError as e:
        raise ValueError(f"--topology {path}: {e}") from None


def _access(args: argparse.Namespace, host: str) -> Any:
    """The checked security settings (ValueError names the option at fault)."""
    from gpufleet.k8s.extender.auth import Access, read_token_file

    access = Access(tls_cert=args.tls_cert, tls_key=args.tls_key,
                    tls_client_ca=args.tls_client_ca,
                    token=read_token_file(args.token_file) if args.token_file else None,
                    insecure=args.insecure)
    access.check(host)
    return access


def _log_exposure(access: Any, host: str) -> None:
    import logging

    from gpufleet.k8s.extender.auth import is_loopback

    if not access.authenticates:
        logging.getLogger("gpufleet.extender").log(
            logging.INFO if is_loopback(host) else logging.WARNING,
            "serving on %s without authentication: whoever reaches it can bind and release",
            host)


def _bind_guard(watcher: Any, scheduler_name: str) -> Any:
    """--kube: binds only for pods this scheduler filtered through us (guard.py)."""
    from functools import partial

    from gpufleet.k8s.extender.guard import BindGuard
    from gpufleet.k8s.extender.kube import read_pod_object

    return BindGuard(partial(read_pod_object, watcher.api), scheduler_name)
