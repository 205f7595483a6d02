"""The trace options `simulate` and `sweep` share, spelled once so that both commands read a trace
with the same arguments: the format, its side inputs (``--nodes``, ``--throughputs``, any other a
format declares as ``--input NAME=FILE``), ``--cluster``, ``--missing`` and ``--list-formats``.
:func:`gpufleet.traces.load` does the reading; nothing here imports it before a command runs, so
``gpufleet --help`` stays fast."""
from __future__ import annotations

import argparse
from typing import Any

from gpufleet.commands._bounds import JOBS_MAX, count
from gpufleet.commands._output import emit, is_document, table

# gpufleet.traces.MISSING_RULES (importing it would load pandas; a test holds the two equal).
MISSING_RULES = ("single_worker", "error", "drop")


def add_trace_options(p: argparse.ArgumentParser, *, generated: str) -> None:
    """Adds the shared trace options to ``p``; ``generated`` says how many jobs a synthetic trace
    without a file gets."""
    p.add_argument("--format", help="trace format (default: told from the file's name or header); "
                                    "--list-formats lists them")
    p.add_argument("--nodes", help="openb node list CSV (default: openb_node_list_gpu_node.csv beside "
                                   "the pod list)")
    p.add_argument("--throughputs", help="Gavel throughput JSON, simulation_throughputs.json (gavel traces)")
    p.add_argument("--input", action="append", default=[], metavar="NAME=FILE",
                   help="another side input a format declares, by name (--list-formats); repeatable")
    p.add_argument("--cluster", help="GPUs for job traces: 'N', 'v100:4,k80:4', a Tiresias cluster CSV "
                                     "or a Gavel cluster-spec JSON (synthetic traces default to "
                                     "v100:16,p100:16,k80:16)")
    p.add_argument("--missing", choices=MISSING_RULES, default="single_worker",
                   help="a job its side inputs cannot describe (gavel: a job type and scale factor the "
                        "throughput table lacks): single_worker (default) takes the job type's 1-GPU "
                        "throughputs, as Gavel did; error refuses the trace; drop skips the job")
    p.add_argument("--num-jobs", type=count(1, JOBS_MAX), default=500,
                   help=f"{generated}, 1 to {JOBS_MAX:,}")
    p.add_argument("--list-formats", action="store_true",
                   help="list the trace formats with their side inputs and how their files are "
                        "recognised, and exit")


def side_inputs(args: argparse.Namespace) -> dict[str, str]:
    """The side inputs given on the command line, by name; ValueError for a malformed or repeated
    ``--input``."""
    out = {name: getattr(args, name) for name in ("nodes", "throughputs") if getattr(args, name)}
    for item in args.input:
        name, sep, path = item.partition("=")
        name = name.strip().replace("-", "_")
        if not sep or not name or not path:
            raise ValueError(f"--input {item!r}: expected NAME=FILE")
        if name in out:
            raise ValueError(f"--input {item!r}: {name} is given twice")
        out[name] = path
    return out


def missing_hint(error: Any) -> str:
    """What to add to the command line for a :class:`gpufleet.traces.MissingInput`."""
    name = getattr(error, "input", None)
    if name is None:
        return ": give --trace FILE"
    return f": give --{name}" if name in ("nodes", "throughputs") else f": give --input {name}=FILE"


def named_files(args: argparse.Namespace) -> list[str | None]:
    """Every file the trace options name (for the device check)."""
    return [args.nodes, args.throughputs, args.cluster, *(i.partition("=")[2] for i in args.input)]


def print_formats(fmt: str | None) -> None:
    """``--list-formats``: a table (wide: with the side inputs' help), or the document."""
    from gpufleet.traces import describe_formats
    formats = describe_formats()
    if is_document(fmt):
        emit({"formats": formats}, fmt)
        return
    rows = []
    for f in formats:
        inputs = ", ".join(_side(s, fmt == "wide") for s in f["side_inputs"]) or "-"
        rows.append([f["name"], f["kind"], inputs, f["recognised"] or "-", f["summary"]])
    print(table(rows, ["FORMAT", "KIND", "SIDE INPUTS", "RECOGNISED BY", "DESCRIPTION"]))


def _side(s: dict[str, Any], wide: bool) -> str:
    text = s["name"] + (f" ({s['help']})" if wide else "")
    return text + (f" [default: {s['beside']} beside the trace]" if wide and s["beside"] else "")
