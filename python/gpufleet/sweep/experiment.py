"""One run of a sweep and what makes it that run: the description (the trace's contents by hash,
the policy, seed, options and the code) and the key, its hash, which names its result file."""
from __future__ import annotations

import functools
import hashlib
import itertools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import SweepError

__all__ = ["Experiment", "canonical", "code_identity", "digest", "grid", "key"]


@dataclass(frozen=True)
class Experiment:
    """One run of a sweep. ``description`` is everything that determines its result (the trace's
    contents by hash, not its path or label); ``key`` is the hash of that description and names
    its result file."""

    kind: str
    trace: str
    policy: str
    seed: int
    options: tuple[tuple[str, Any], ...]
    description: Mapping[str, Any] = field(repr=False, compare=False)
    key: str = field(compare=False)

    def labels(self) -> dict[str, Any]:
        """The experiment's columns in the sweep's DataFrame (before ``metric`` and ``value``)."""
        return {"kind": self.kind, "trace": self.trace, "policy": self.policy, "seed": self.seed,
                **{k: _cell(v) for k, v in self.options}}


def _cell(v: Any) -> Any:
    """An option value as a DataFrame cell: scalars as they are, lists and dicts as JSON text."""
    return v if v is None or isinstance(v, (bool, int, float, str)) else json.dumps(v, sort_keys=True)


def canonical(value: Any, where: str) -> Any:
    """``value`` as plain JSON data (NumPy scalars become Python numbers); SweepError otherwise."""
    if hasattr(value, "item") and not isinstance(value, (list, tuple, dict)):
        value = value.item()
    try:
        return json.loads(json.dumps(value, sort_keys=True, allow_nan=False))
    except (TypeError, ValueError) as e:
        raise SweepError(f"{where}: {value!r} cannot be recorded as JSON ({e}); options must be "
                         "numbers, strings, booleans, lists or dicts") from None


def key(description: Mapping[str, Any]) -> str:
    """The hash of a description: the experiment's key and result file name."""
    text = json.dumps(description, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


@functools.lru_cache(maxsize=1)
def code_identity() -> dict[str, str]:
    """What code computes the results: the package version and a hash of every Python and native
    file of the installed package, so a result is reused only by the same code (a rebuilt native
    module or an edited policy runs its experiments again)."""
    from gpufleet import __version__
    root = Path(__file__).resolve().parents[1]  # the gpufleet package
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.suffix in (".py", ".so") and p.is_file()):
        h.update(str(path.relative_to(root)).encode() + b"\0")
        h.update(path.read_bytes())
    return {"gpufleet": __version__, "files_sha256": h.hexdigest()[:16]}


def digest(path: str | Path) -> str:
    """The SHA-256 of a file's contents."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def grid(options: Mapping[str, Any] | None) -> list[tuple[tuple[str, Any], ...]]:
    """Every combination of the options' alternatives: a list (or tuple, range) value is the
    alternatives of that option, anything else a single value."""
    if not options:
        return [()]
    names = sorted(options)
    axes = []
    for name in names:
        v = options[name]
        alternatives = list(v) if isinstance(v, (list, tuple, range)) else [v]
        if not alternatives:
            raise SweepError(f"option {name!r}: no values given")
        axes.append([canonical(a, f"option {name!r}") for a in alternatives])
    return [tuple(zip(names, combo)) for combo in itertools.product(*axes)]
