"""Output formats shared by the commands, as kubectl spells them: ``-o json|yaml|wide``.

Without ``-o`` a command prints human tables; ``-o wide`` prints the same tables with more
columns (or an extra detail table); ``-o json`` and ``-o yaml`` print one document, the same in
both formats. ``--json`` stays as an alias of ``-o json``. PyYAML is imported only when YAML is
asked for, so ``gpufleet --help`` stays fast.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Sequence, TextIO

OUTPUT_FORMATS = ("json", "yaml", "wide")
DOCUMENT_FORMATS = ("json", "yaml")


def add_output_options(parser: argparse.ArgumentParser, default: str = "human-readable tables") -> None:
    """Adds ``-o/--output {json,yaml,wide}`` and its alias ``--json`` (both set ``args.output``;
    ``None`` means the default output, described by ``default`` in the help)."""
    parser.add_argument("-o", "--output", choices=OUTPUT_FORMATS, default=None,
                        help=f"output format: json or yaml (one document), wide (tables with more "
                             f"columns); default: {default}")
    parser.add_argument("--json", dest="output", action="store_const", const="json",
                        help="same as -o json")


def one_line(message: object, limit: int = 400) -> str:
    """An error message on one line (a native signature listing or a pandas report may span
    several), cut at ``limit`` characters."""
    text = " ".join(str(message).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def is_document(fmt: str | None) -> bool:
    """Whether ``fmt`` asks for a JSON or YAML document rather than tables."""
    return fmt in DOCUMENT_FORMATS


def _load_yaml() -> Any:
    try:
        import yaml
    except ImportError:
        # A core dependency, but a stripped environment (or the node side copied alone) may lack it.
        sys.exit("gpufleet: -o yaml needs PyYAML, which is not installed; install it with "
                 "`pip install pyyaml` or use -o json")
    return yaml


def render(doc: Any, fmt: str) -> str:
    """``doc`` as JSON (indented) or YAML text, ending in a newline. The document goes through
    JSON first, so both formats parse to the same object (string keys, lists for tuples).
    ValueError for any other ``fmt``."""
    if fmt not in DOCUMENT_FORMATS:
        raise ValueError(f"output format {fmt!r} is not a document format ({', '.join(DOCUMENT_FORMATS)})")
    text = json.dumps(doc, indent=2)
    if fmt == "json":
        return text + "\n"
    return _load_yaml().safe_dump(json.loads(text), sort_keys=False, allow_unicode=True)


def emit(doc: Any, fmt: str, out: TextIO | None = None) -> None:
    """Writes ``render(doc, fmt)`` to ``out`` (default stdout)."""
    (out or sys.stdout).write(render(doc, fmt))


def table(rows: Sequence[Sequence[Any]], header: Sequence[str], right: Sequence[str] = ()) -> str:
    """A plain table: an upper-case header, columns two spaces apart, left-aligned except the
    columns named in ``right`` (numbers). Trailing spaces are cut."""
    cells = [[str(h) for h in header]] + [["-" if x is None else str(x) for x in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = []
    for row in cells:
        parts = [c.rjust(w) if h in right else c.ljust(w) for c, w, h in zip(row, widths, header)]
        lines.append("  ".join(parts).rstrip())
    return "\n".join(lines)


def number(v: Any) -> str:
    """A number for a table: thousands separated, at most four significant digits below 10,000,
    no exponent for the magnitudes the commands print."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, int):
        return f"{v:,}"
    if v != v:  # NaN
        return "nan"
    if abs(v) >= 1e4:
        return f"{v:,.0f}"
    if v == 0 or abs(v) >= 1e-3:
        return f"{v:,.4g}"
    return f"{v:.3g}"


def print_listing(kinds: dict[str, str], fmt: str | None) -> None:
    """Prints registry listings (``--list-*``). ``kinds`` maps a registry of
    :data:`gpufleet.registries.KINDS` to its title (``""``: no title). Default: each name with its
    description and one line per parameter; ``wide``: one table row per name and per parameter
    (grep-able, every field); json/yaml: ``{registry: [entries]}`` as
    :func:`gpufleet.registries.entries` returns them."""
    from gpufleet.registries import entries, format_listing
    if is_document(fmt):
        emit({kind: entries(kind) for kind in kinds}, fmt)
        return
    if fmt != "wide":
        for kind, title in kinds.items():
            if title:
                print(title)
            print(format_listing(kind, prefix="  " if title else ""))
        return
    rows = []
    for kind in kinds:
        for e in entries(kind):
            caps = list(e["capabilities"]) + (["open-parameters"] if e["open_parameters"] else [])
            rows.append([kind, e["name"], ",".join(caps) or "-", "-", "-", "-", "-", "-",
                         e["description"]])
            for p in e["parameters"]:
                rows.append([kind, e["name"], "-", p["name"], p["type"], _json_value(p["default"]),
                             p["range"] or "-", _json_value(p["example"]), p["help"]])
    print(table(rows, ["REGISTRY", "NAME", "CAPABILITIES", "PARAMETER", "TYPE", "DEFAULT", "RANGE",
                       "EXAMPLE", "DESCRIPTION"]))


def _json_value(v: Any) -> str:
    return "-" if v is None else json.dumps(v)
