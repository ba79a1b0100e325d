"""Checking a call's ``where`` before it reaches the store: §5.2 equality always, the
operators of :mod:`a2m_types.filters` and nested ``metadata.`` paths only where the server
declares them (``where_operators``). A filter that cannot be meant is INVALID_PARAMS
naming its key, before anything is read or written."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from a2m_server.config import ServerConfig
from a2m_server.errors import ProtocolError
from a2m_types.filters import LOGICAL_OPERATORS, OPERATORS, FilterError, parse, uses_extension

__all__ = ["checked_where", "where_info"]


def where_info(config: ServerConfig) -> dict[str, Any] | None:
    """The describe ``where`` object, or ``None`` when only equality is offered."""
    return {"operators": [*OPERATORS, *LOGICAL_OPERATORS]} if config.where_operators else None


def checked_where(
    config: ServerConfig, where: Mapping[str, Any] | None
) -> Mapping[str, Any] | None:
    """``where`` as given, once it is known to be runnable here."""
    if not where:
        return where
    if not config.where_operators and uses_extension(where):
        name = next(name for name, value in where.items() if uses_extension({name: value}))
        raise ProtocolError.invalid_params(
            f"where.{name}: this server runs §5.2 equality only (describe declares no "
            "where.operators); match on plain values, or filter the records yourself",
            field=f"where.{name}",
        )
    try:
        parse(where)
    except FilterError as exc:
        raise ProtocolError.invalid_params(str(exc), field=exc.field) from None
    return where
