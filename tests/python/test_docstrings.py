"""Every public name of the Python API explains itself: gpufleet.__all__ and the public functions,
classes, methods and properties of the modules below carry a docstring of a sentence or more."""
from __future__ import annotations

import importlib
import inspect

import pytest

import gpufleet

MODULES = ("gpufleet.sim", "gpufleet.engine", "gpufleet.scenario", "gpufleet.plots", "gpufleet.report",
           "gpufleet.replay", "gpufleet.registries", "gpufleet.documents", "gpufleet.cli",
           "gpufleet.commands._output")

def _doc(obj) -> str:
    doc = inspect.getdoc(obj) or ""
    if inspect.isbuiltin(obj) and doc.startswith(f"{obj.__name__}("):
        doc = doc.partition("\n")[2].strip()  # pybind11 puts the signature first
    return doc


def _explains(obj, name: str) -> bool:
    doc = _doc(obj)
    return len(doc) >= 25 and len(doc.split()) >= 4 and doc.strip(" .") != name


def _public(module) -> list[str]:
    names = getattr(module, "__all__", None)
    if names is None:
        names = [k for k, v in vars(module).items() if not k.startswith("_")
                 and (inspect.isfunction(v) or inspect.isclass(v)) and v.__module__ == module.__name__]
    return [n for n in names if callable(getattr(module, n)) or inspect.ismodule(getattr(module, n))]


def _members(cls) -> list[tuple[str, object]]:
    """Public methods and properties the class itself defines (dataclass fields are data)."""
    out = []
    for name, value in vars(cls).items():
        if name.startswith("_"):
            continue
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        if inspect.isfunction(value) or isinstance(value, property):
            out.append((name, value))
    return out


def _python_defined(obj) -> bool:
    module = getattr(obj, "__module__", "") or ""
    return module != "gpufleet._core" and not module.startswith("gpufleet._core.")


@pytest.mark.parametrize("name", gpufleet.__all__)
def test_package_exports_are_documented(name):
    obj = getattr(gpufleet, name)
    assert _explains(obj, name), f"gpufleet.{name} has no docstring worth the name: {_doc(obj)!r}"
    if inspect.isclass(obj) and _python_defined(obj):
        for member, value in _members(obj):
            assert _explains(value, member), f"gpufleet.{name}.{member} lacks a docstring"


@pytest.mark.parametrize("module_name", MODULES)
def test_module_public_names_are_documented(module_name):
    module = importlib.import_module(module_name)
    assert _explains(module, module_name), f"{module_name} lacks a module docstring"
    missing = []
    for name in _public(module):
        obj = getattr(module, name)
        if not _python_defined(obj):
            continue  # re-exported native names are checked above
        if not _explains(obj, name):
            missing.append(name)
        if inspect.isclass(obj):
            missing += [f"{name}.{m}" for m, v in _members(obj) if not _explains(v, m)]
    assert not missing, f"{module_name}: undocumented public names: {missing}"


def _native_members(cls) -> list[tuple[str, object]]:
    """Public methods and properties a native class binds (pybind11 methods are builtins)."""
    return [(n, v) for n, v in vars(cls).items() if not n.startswith("_")
            and (isinstance(v, property) or callable(v))]


@pytest.mark.parametrize("name", [n for n in gpufleet.__all__
                                  if inspect.isclass(getattr(gpufleet, n))
                                  and not _python_defined(getattr(gpufleet, n))])
def test_native_class_members_are_documented(name):
    cls = getattr(gpufleet, name)
    missing = []
    for member, value in _native_members(cls):
        doc = inspect.getdoc(value) or ""
        if doc.startswith(f"{member}("):
            doc = doc.partition("\n")[2].strip()   # pybind11 puts the signature first
        if len(doc) < 12 or len(doc.split()) < 3:
            missing.append(member)
    assert not missing, f"gpufleet.{name}: members without a docstring: {missing}"
