"""Output formats shared by the commands, as kubectl spells them: ``-o json|yaml|wide``.

Without ``-o`` a command prints human tables; ``-o wide`` prints the same tables with more
columns (or an extra detail table); ``-o json`` and ``-o yaml`` print one document, the same in
both formats. ``--json`` stays as an alias of ``-o json``. PyYAML is imported only when YAML is
asked for, so ``gpufleet --help`` stays fast.
"""
from __future__ import annotations

import argparse
import json
import math
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


def table(rows: Sequence[Sequence[Any]], header: Sequence[str], right: Sequence[str] = (),
          signed: Sequence[str] = ()) -> str:
    """A plain table: an upper-case header, columns two spaces apart, left-aligned except the
    columns named in ``right`` and the columns of numbers. Trailing spaces are cut.

    Cells that are numbers are written in one format per column (:func:`column_format`):
    thousands separated, every float of the column with the same decimals (integers, counts,
    with none), with a sign in the columns named in ``signed``; None and NaN print as ``-``.
    Other cells are printed as they are."""
    body = [list(row) for row in rows]
    numeric = set()
    for i, h in enumerate(header):
        values = [row[i] for row in body if _is_number(row[i])]
        if not values:
            continue
        numeric.add(i)
        fmt = column_format(values, sign=h in signed)
        count = "{:" + ("+" if h in signed else "") + ",d}"
        for row in body:
            v = row[i]
            if _is_number(v):
                row[i] = "-" if v != v else (count if isinstance(v, int) else fmt).format(v)
    cells = [[str(h) for h in header]] + [["-" if x is None else str(x) for x in row] for row in body]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = []
    for row in cells:
        parts = [c.rjust(w) if h in right or i in numeric else c.ljust(w)
                 for i, (c, w, h) in enumerate(zip(row, widths, header))]
        lines.append("  ".join(parts).rstrip())
    return "\n".join(lines)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


# The most decimals a table column gets: a share of 1e-5 still shows, a ratio keeps four digits.
MAX_DECIMALS = 6


def column_format(values: Sequence[float], sign: bool = False) -> str:
    """One ``str.format`` pattern for the floats of a column: thousands separated, with the decimals
    its most demanding value needs: four significant digits (none at 10,000 and above), no more
    than the value has (``12.5`` needs one), none for integers, at most :data:`MAX_DECIMALS`. So
    ``1556.48`` and ``365265.0`` print as ``1,556`` and ``365,265``, and ``0.9527`` above ``12.5``
    as ``0.9527`` and ``12.5000``."""
    decimals = 0
    for v in values:
        if isinstance(v, int) or not math.isfinite(v):
            continue
        v = round(float(v), 9)   # 0.9 * 100 is 90.00000000000001: not a figure with 14 decimals
        if v.is_integer():
            continue
        significant = 3 - math.floor(math.log10(abs(v)))
        written = repr(v)
        own = significant if "e" in written else len(written.partition(".")[2])
        decimals = max(decimals, min(MAX_DECIMALS, significant, own))
    return "{:" + ("+" if sign else "") + f",.{decimals}f" + "}"


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


def print_listing(kinds: dict[str, str], fmt: str | None,
                  more: dict[str, tuple[str, list[dict[str, Any]]]] | None = None) -> None:
    """Prints registry listings (``--list-*``). ``kinds`` maps a registry of
    :data:`gpufleet.registries.KINDS` to its title (``""``: no title); ``more`` adds listings no
    native registry holds, each name mapped to its title and entries
    (:func:`gpufleet.registries.listed`). Default: each name with its description and one line
    per parameter; ``wide``: one table row per name and per parameter (grep-able, every field);
    json/yaml: ``{registry: [entries]}`` as :func:`gpufleet.registries.entries` returns them."""
    from gpufleet.registries import entries, format_entries
    listings = {kind: (title, entries(kind)) for kind, title in kinds.items()}
    listings.update(more or {})
    if is_document(fmt):
        emit({kind: listing for kind, (_, listing) in listings.items()}, fmt)
        return
    if fmt != "wide":
        for title, listing in listings.values():
            if title:
                print(title)
            print(format_entries(listing, prefix="  " if title else ""))
        return
    rows = []
    for kind, (_, listing) in listings.items():
        for e in listing:
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
