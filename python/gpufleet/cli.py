"""The `gpufleet` command. Each subcommand lives in gpufleet/commands/<name>.py and registers
itself with `register(subparsers)`; this file only discovers them, so areas stay independent."""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

import gpufleet.commands


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gpufleet",
        description="Scheduling core for deep-learning GPU clusters.",
    )
    parser.add_argument("--version", action="version", version=f"gpufleet {gpufleet.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(gpufleet.commands.__path__), key=lambda m: m.name):
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
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
