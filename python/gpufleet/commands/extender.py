"""`gpufleet extender`: serve the kube-scheduler extender over HTTP."""
from __future__ import annotations

import argparse
import sys

from gpufleet import logs


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
                   help="with --state: the journal of binds and releases (default SCENARIO.journal)")
    p.add_argument("--strategy", default="binpack", help="device placement strategy")
    p.add_argument("--prefix", default="/gpufleet", help="URL path prefix (default %(default)s)")
    p.add_argument("--gpushare-annotations", choices=["auto", "always", "never"], default="auto",
                   help="write ALIYUN_COM_GPU_MEM_* annotations (auto: for aliyun.com/gpu-mem pods)")
    p.add_argument("--resync-s", type=float, default=300.0,
                   help="with --kube: seconds between full re-lists behind the watches "
                        "(default %(default)s)")
    p.add_argument("--dra", action="store_true",
                   help="with --kube: watch ResourceSlices, DeviceClasses and ResourceClaims, and "
                        "write each pod's claim allocations before its Binding (docs/dra.md)")
    p.add_argument("--max-body-mib", type=float, default=64.0,
                   help="largest request body accepted, MiB (default %(default)s)")
    logs.add_arguments(p)
    p.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    logs.configure(args.log_level, args.log_format)
    from gpufleet.k8s.extender import server, state
    from gpufleet.k8s.listen import parse_listen

    watcher = None
    dra_sync = None
    try:
        host, port = parse_listen(args.listen)
        if args.journal and args.kube:
            raise ValueError("--journal goes with --state; with --kube the pods' annotations "
                             "are the record")
        kw = dict(strategy=args.strategy, gpushare_annotations=args.gpushare_annotations)
        if args.dra and not args.kube:
            raise ValueError("--dra goes with --kube")
        if args.kube:
            from gpufleet.k8s.extender import kube

            st, _, watcher = kube.load_kube(resync_s=args.resync_s, **kw)
            if args.dra:
                from gpufleet.k8s.extender import dra
                dra_sync = dra.enable(st)
        else:
            st = state.load_scenario(args.state, journal=args.journal or f"{args.state}.journal",
                                     **kw)
    except Exception as e:  # noqa: BLE001 - any start-up failure is a clean exit 2
        print(f"gpufleet extender: {e}", file=sys.stderr)
        return 2
    if watcher is not None:
        watcher.start()   # deletions, completions and node changes, as they happen
    if dra_sync is not None:
        dra_sync.start()  # slices, classes and claims, as they change
    try:
        server.serve(st, host, port, args.prefix, args.log_level,
                     max_body_bytes=int(args.max_body_mib * (1 << 20)))
    finally:
        if watcher is not None:
            watcher.stop()
        if dra_sync is not None:
            dra_sync.stop()
        if st.journal is not None:
            st.journal.close()
    return 0
