"""An adapter call's ``where``: checked before anything is sent, and split into what the
server runs and what the adapter matches itself (:func:`a2m.filters.matches`) when the
server does not declare the operators it uses."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from a2m_types.filters import operators_used, uses_extension
from a2m_types.json_values import JSONValueError, check_json_value

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
    try:
        # What the adapter may match itself never reaches the client's own check.
        check_json_value(dict(where), "where")
    except JSONValueError as exc:
        raise _refuse(str(exc)) from None
    filters.validate(where)
    return dict(where)


def split_where(
    operators: frozenset[str], where: Mapping[str, Any] | None
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """(what the server runs, what is matched here): every entry whose operators the
    server declares goes to it; to a server declaring none only §5.2 equality. When an
    entry stays behind, the whole filter is matched here too."""
    if not where:
        return {}, None
    sent = {name: value for name, value in where.items() if _runs(operators, name, value)}
    return sent, (None if len(sent) == len(where) else dict(where))


def _runs(operators: frozenset[str], name: str, value: Any) -> bool:
    entry = {name: value}
    if not uses_extension(entry):
        return True
    return bool(operators) and operators_used(entry) <= operators
