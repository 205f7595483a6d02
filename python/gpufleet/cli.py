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
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(gpufleet.commands.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"gpufleet.commands.{info.name}")
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
