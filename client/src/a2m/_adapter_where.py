"""An adapter call's ``where``: checked before anything is sent, and split into what the
server runs and what the adapter matches itself (:func:`a2m.filters.matches`) when the
server does not declare the operators it uses."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from a2m_types.filters import uses_extension

from . import filters
from .errors import InvalidParams

__all__ = ["checked_where", "split_where"]

_OWNED = ("namespace", "type")


def _refuse(message: str) -> InvalidParams:
    return InvalidParams(message + " (nothing was sent)")


def checked_where(where: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """``where`` checked before anything is sent; ``namespace`` and ``type`` are the
    adapter's arguments, not filter keys."""
    if where is None:
        return None
    if not isinstance(where, Mapping):
        raise _refuse("where is a mapping of keys to conditions")
    owned = [name for name in _OWNED if name in where]
    if owned:
        raise _refuse(f"where.{owned[0]}: pass {owned[0]}= to the method instead")
    filters.validate(where)
    return dict(where)


def split_where(
    operators: frozenset[str], where: Mapping[str, Any] | None
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """(what the server runs, what is matched here): everything goes to a server declaring
    operators; to any other only §5.2 equality, the whole filter then matched here too."""
    if not where:
        return {}, None
    if operators or not uses_extension(where):
        return dict(where), None
    equality = {name: value for name, value in where.items() if not uses_extension({name: value})}
    return equality, dict(where)
