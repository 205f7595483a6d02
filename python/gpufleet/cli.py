"""The `gpufleet` command. Each subcommand lives in gpufleet/commands/<name>.py and registers
itself with `register(subparsers)`; this file only discovers them, so areas stay independent."""
from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys

import gpufleet.commands
from gpufleet._extras import MissingExtra


class OneLineErrors(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on stderr (exit 2), as every other
    error of the command is; ``--help`` still shows the usage. Subcommand parsers inherit it."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The ``gpufleet`` parser with every subcommand found in :mod:`gpufleet.commands`. A command
    whose module cannot be imported because the native extension is missing is still listed and
    explains how to build it; any other ImportError propagates."""
    parser = OneLineErrors(
        prog="gpufleet",
        description="Scheduling core for deep-learning GPU clusters.",
    )
    parser.add_argument("--version", action="version", version=f"gpufleet {gpufleet.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(gpufleet.commands.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):  # shared helpers (e.g. _output), not subcommands
            continue
        try:
            module = importlib.import_module(f"gpufleet.commands.{info.name}")
        except ImportError as e:
            # Without the native extension the node commands still work; the others explain why not.
            if gpufleet._core_error is None:
                raise
            _register_unavailable(sub, info.name, e)
            continue
        module.register(sub)
    return parser


def _register_unavailable(sub: argparse._SubParsersAction, name: str, err: ImportError) -> None:
    p = sub.add_parser(name, add_help=False, help="(unavailable: native extension not built)")
    p.add_argument("rest", nargs=argparse.REMAINDER)

    def unavailable(args: argparse.Namespace) -> int:
        print(f"gpufleet {name}: needs the native extension gpufleet._core, which is not built here "
              f"({err}); build it with `bash scripts/setup.sh`", file=sys.stderr)
        return 2

    p.set_defaults(func=unavailable)


def main(argv: list[str] | None = None) -> int:
    """Runs ``gpufleet`` with ``argv`` (default ``sys.argv[1:]``) and returns the exit status: 0 on
    success, otherwise non-zero with the reason on stderr (mostly 1 for an unusable input file and
    2 for a usage error or a missing prerequisite; argparse itself exits with 2)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except MissingExtra as e:
        # An optional dependency the command needs: one line naming the extra, not a traceback.
        print(f"gpufleet {args.command}: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # `gpufleet ... -o wide | head`: the reader is gone; stop quietly, as Unix tools do, and
        # point stdout at /dev/null so the interpreter's final flush does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
