"""`gpufleet extender`: serve the kube-scheduler extender over HTTP."""
from __future__ import annotations

import argparse
import logging
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "extender", help="serve the kube-scheduler extender (filter/prioritize/bind/preempt)",
        description="Serve the kube-scheduler extender protocol over HTTP, backed by gpufleet.")
    p.add_argument("--listen", default="127.0.0.1:8888", help="HOST:PORT (default %(default)s)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--state", metavar="SCENARIO",
                     help="scenario file (YAML/JSON with nodes: and pods:); binds are recorded")
    src.add_argument("--kube", action="store_true",
                     help="read nodes and bound pods from the Kubernetes API and bind there")
    p.add_argument("--strategy", default="binpack", help="device placement strategy")
    p.add_argument("--prefix", default="/gpufleet", help="URL path prefix (default %(default)s)")
    p.add_argument("--gpushare-annotations", choices=["auto", "always", "never"], default="auto",
                   help="write ALIYUN_COM_GPU_MEM_* annotations (auto: for aliyun.com/gpu-mem pods)")
    p.add_argument("--resync-s", type=float, default=30.0,
                   help="with --kube: seconds between pod/node resyncs (default %(default)s)")
    p.add_argument("--log-level", default="info",
                   choices=["critical", "error", "warning", "info", "debug"])
    p.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    logging.basicConfig(level=args.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from gpufleet.k8s.extender import server, state

    try:
        host, port = server.parse_listen(args.listen)
        kw = dict(strategy=args.strategy, gpushare_annotations=args.gpushare_annotations)
        reconciler = None
        if args.kube:
            core_v1 = state.kube_client()
            st, report = state.load_kube(core_v1, **kw)
            for pod, why in report.skipped:
                logging.getLogger("gpufleet.extender").warning("not restored: %s: %s", pod, why)
            # Deleted and finished pods give their devices back; new nodes are picked up.
            reconciler = state.KubeReconciler(st, core_v1, args.resync_s)
        else:
            st = state.load_scenario(args.state, **kw)
    except Exception as e:  # noqa: BLE001 - any start-up failure is a clean exit 2
        print(f"gpufleet extender: {e}", file=sys.stderr)
        return 2
    if reconciler is not None:
        reconciler.start()
    try:
        server.serve(st, host, port, args.prefix, args.log_level)
    finally:
        if reconciler is not None:
            reconciler.stop()
    return 0
