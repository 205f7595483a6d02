"""Which Python package may import which, read from the source (every import statement, at the top
of a module or inside a function): the node side needs nothing from the Kubernetes adapters, and the
sweep's modules import each other in one direction only."""
from __future__ import annotations

import ast
from pathlib import Path

import gpufleet

PACKAGE = Path(gpufleet.__file__).resolve().parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    """Every module ``path`` imports, as absolute names (``from x import y`` counts as ``x`` and
    ``x.y``, since y may be a module; ``from . import y`` as the sibling ``y`` only)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")
            if node.level:
                base = base[:len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if node.module:
                found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def test_the_import_reader_resolves_relative_imports():
    assert imports(PACKAGE / "sweep" / "driver.py") >= {"gpufleet.sweep.executors", "gpufleet.sweep.errors"}
    assert "gpufleet.node.keys" in imports(PACKAGE / "node" / "annotations.py")


def test_node_side_imports_nothing_from_k8s():
    offenders = {f"{p.relative_to(PACKAGE)}: {m}" for p in (PACKAGE / "node").rglob("*.py")
                 for m in imports(p) if m == "gpufleet.k8s" or m.startswith("gpufleet.k8s.")}
    assert offenders == set()
    # ... while the adapters do import it: the dependency points one way.
    assert any(m.startswith("gpufleet.node") for p in (PACKAGE / "k8s").rglob("*.py") for m in imports(p))


def test_sweep_modules_import_each_other_without_a_cycle():
    modules = {_module_name(p): p for p in (PACKAGE / "sweep").glob("*.py")}
    edges = {name: {m for m in imports(path) if m in modules and m != name and m != "gpufleet.sweep"}
             for name, path in modules.items()}
    assert edges["gpufleet.sweep.driver"], "the reader found no imports: it is broken"
    order: list[str] = []
    visiting: set[str] = set()

    def visit(name: str, path: tuple[str, ...]) -> None:
        assert name not in visiting, f"import cycle: {' -> '.join(path + (name,))}"
        if name in order:
            return
        visiting.add(name)
        for other in sorted(edges[name]):
            visit(other, path + (name,))
        visiting.discard(name)
        order.append(name)

    for name in sorted(modules):
        visit(name, ())
    # Only the package's own __init__ gathers the public names; no module reaches back to it.
    assert not any("gpufleet.sweep" in imports(p) for n, p in modules.items() if n != "gpufleet.sweep")
    assert not (PACKAGE / "_sweep_exec.py").exists()
