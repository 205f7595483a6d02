#!/usr/bin/env python3
"""Writes the registry tables of the docs from the registrations (gpufleet.registry_docs):
docs/registries.md, and the callback-point and switch tables of docs/engine.md. With --check it
writes nothing and exits 1 when a file is out of date. tests/python/test_registry_docs.py runs
the check."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gpufleet.registry_docs import render

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="only report files out of date")
    args = parser.parse_args()
    rendered = render(ROOT)
    stale = [path for path, text in rendered.items()
             if not path.exists() or path.read_text() != text]
    if args.check:
        for path in stale:
            print(f"{path.relative_to(ROOT)} is out of date: run tools/make_registry_docs.py",
                  file=sys.stderr)
        return 1 if stale else 0
    for path in stale:
        path.write_text(rendered[path])
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
