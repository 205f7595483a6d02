"""gpufleet's exception family: one base class, one subclass per kind of failure the core reports.

The native core answers with a status code (Abseil's); the extension raises the matching class here
with the core's message unchanged. Each class also derives from the built-in exception that code
used to raise, so ``except KeyError`` and ``except ValueError`` keep catching what they caught:

==========================  ===============================  =================================
core status                 gpufleet class                   also a
==========================  ===============================  =================================
NotFound                    :class:`NotFoundError`           ``KeyError`` (message not quoted)
InvalidArgument, OutOfRange :class:`InvalidInputError`       ``ValueError``
AlreadyExists               :class:`ConflictError`           ``ValueError``
FailedPrecondition          :class:`FailedPreconditionError` ``ValueError``
anything else               :class:`InternalError`           ``RuntimeError``
==========================  ===============================  =================================

Pure Python, with no import of the extension: the node tools use it on machines without one.
"""
from __future__ import annotations

__all__ = ["ConflictError", "Error", "FailedPreconditionError", "InternalError", "InvalidInputError",
           "NotFoundError"]


class Error(Exception):
    """Base class of every error gpufleet reports; ``str(e)`` is the message, one line naming what
    is wrong and where."""


class NotFoundError(Error, KeyError):
    """Something named does not exist (a node, a pod's allocation, a job, a queue). A ``KeyError``
    whose ``str()`` is the message itself, not its quoted ``repr`` as ``KeyError`` prints it."""

    def __str__(self) -> str:
        return str(self.args[0]) if len(self.args) == 1 else Exception.__str__(self)


class InvalidInputError(Error, ValueError):
    """Input the core refuses: a malformed quantity, an unknown field, a value out of range."""


class ConflictError(Error, ValueError):
    """What was to be added exists already (a node, a queue or a job of that name)."""


class FailedPreconditionError(Error, ValueError):
    """The state does not allow the call now (a node still holds pods, a job's tasks are running)."""


class InternalError(Error, RuntimeError):
    """The core found a broken rule of its own or ran out of a resource (an invariant, a solver)."""
