"""gpufleet's exception family: every error the core reports is a gpufleet.Error of the class its
status names, with the core's message as str() (no quotes, even for a KeyError), and still the
built-in exception callers caught before (KeyError, ValueError, RuntimeError)."""
from __future__ import annotations

import subprocess
import sys

import pytest

import gpufleet
from gpufleet import (Cluster, ConflictError, Error, FailedPreconditionError, InternalError,
                      InvalidInputError, NotFoundError, Pod)
from gpufleet.engine import Engine

from conftest import gpu_node

FAMILY = {NotFoundError: KeyError, InvalidInputError: ValueError, ConflictError: ValueError,
          FailedPreconditionError: ValueError, InternalError: RuntimeError}


@pytest.mark.parametrize("cls, builtin", FAMILY.items())
def test_each_class_is_an_error_and_the_builtin_it_replaces(cls, builtin):
    assert issubclass(cls, Error) and issubclass(cls, builtin)
    e = cls("node n9 does not exist")
    assert str(e) == "node n9 does not exist"
    with pytest.raises(builtin):
        raise e
    assert getattr(gpufleet, cls.__name__) is cls and cls.__name__ in gpufleet.__all__


def test_a_not_found_error_prints_its_message_where_a_key_error_quotes_it():
    assert str(KeyError("node n9 does not exist")) == "'node n9 does not exist'"
    assert str(NotFoundError("node n9 does not exist")) == "node n9 does not exist"
    assert f"{NotFoundError('x y')}" == "x y"
    assert str(NotFoundError("a", "b")) == "('a', 'b')"  # more than one argument: as Exception shows them


def _raised(call) -> BaseException:
    with pytest.raises(Error) as info:
        call()
    return info.value


def test_the_cores_status_codes_raise_their_classes_with_the_cores_message():
    c = Cluster()
    c.add_node(gpu_node("n1"))
    before = c.snapshot()
    e = _raised(lambda: c.remove_node("ghost"))
    assert type(e) is NotFoundError and isinstance(e, KeyError)
    assert str(e) == "node ghost does not exist"
    e = _raised(lambda: c.add_node(gpu_node("n1")))
    assert type(e) is ConflictError and str(e) == "node n1 already exists"
    e = _raised(lambda: Pod("p", {"cpu": "lots"}))
    assert type(e) is InvalidInputError and str(e) == 'pod p: request cpu: invalid quantity "lots": no digits'
    c.reserve(Pod("p", {"nvidia.com/gpu": "1"}), "n1")
    e = _raised(lambda: c.remove_node("n1"))
    assert type(e) is FailedPreconditionError and "node n1 still holds pod p" in str(e)
    c.release("p")
    assert c.snapshot() == before  # refused calls changed nothing
    # The bindings' own checks belong to the family too.
    e = _raised(lambda: Engine().job_tasks("nope"))
    assert type(e) is NotFoundError and str(e) == "job nope does not exist"
    e = _raised(lambda: gpufleet.engine.water_fill(-1.0, [1.0], [1.0]))
    assert type(e) is InvalidInputError and str(e).startswith("water_fill: total must be")


def test_callers_that_catch_the_builtins_keep_working():
    c = Cluster()
    with pytest.raises(KeyError):
        c.release("nobody")
    with pytest.raises(ValueError):
        Pod("p", {"nvidia.com/gpu": "1.5"})
    try:
        c.commit("nobody")
    except KeyError as e:
        assert "nobody" in str(e) and not str(e).startswith("'")
    else:
        pytest.fail("commit of a pod without an allocation passed")


def test_the_family_imports_without_the_extension():
    # The node side runs where the extension was never built; it raises and catches these too.
    code = ("import sys; sys.modules['gpufleet._core'] = None\n"
            "import gpufleet\n"
            "assert gpufleet._core_error is not None\n"
            "from gpufleet.errors import NotFoundError\n"
            "assert gpufleet.NotFoundError is NotFoundError and str(NotFoundError('a b')) == 'a b'\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
