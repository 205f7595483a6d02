"""Kubernetes names are spelled once in Python (gpufleet.k8s.keys) and agree with the core's."""
from __future__ import annotations

import io
import tokenize
from pathlib import Path

import gpufleet
from gpufleet import _core
from gpufleet.k8s import keys

PACKAGE = Path(gpufleet.__file__).parent


def _key_values() -> set[str]:
    return {v for k, v in vars(keys).items() if k.isupper() and isinstance(v, str)}


def test_python_and_core_spell_every_shared_name_the_same():
    assert _core.wire_keys() == keys.CORE_NAMES


def test_every_constant_is_distinct():
    values = [v for k, v in vars(keys).items() if k.isupper() and isinstance(v, str)]
    assert len(values) == len(set(values))


def test_no_other_module_spells_a_key_as_a_literal():
    wanted = _key_values()
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "keys.py" or path.name.endswith("_pb2.py") or "_pb2_" in path.name:
            continue
        tokens = tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
        for tok in tokens:
            if tok.type != tokenize.STRING or tok.string[:1] not in "'\"":
                continue  # f-strings and prefixed literals are not plain names
            try:
                value = eval(tok.string, {})  # a plain literal; tokenize guarantees that
            except SyntaxError:
                continue
            if value in wanted:
                found.append(f"{path.relative_to(PACKAGE)}:{tok.start[0]} {value}")
    assert found == [], "use gpufleet.k8s.keys instead of:\n" + "\n".join(found)
