"""
What the registries hold and declare.
"""
from __future__ import annotations
import collections.abc
import typing
__all__: list[str] = ['registry_duplicates', 'registry_metadata']
def registry_duplicates() -> list[str]:
    """
    Names registered twice in any registry (the second registration is refused).
    """
def registry_metadata(kinds: collections.abc.Sequence[str] | None = None) -> dict:
    """
    Per registry (strategies, plugins, actions, policies; all, or those in `kinds`), what each registered name declares: a list of dicts with name, description, parameters (name, type, default, help, example, range), traits and open_parameters; plugins also list the callback points they answer (observed on an empty session; None when they cannot be built without arguments).
    """
