"""``where`` filters with operators — ``$eq $ne $gt $gte $lt $lte $in $nin $exists``, and
``$and`` / ``$or`` over where objects — as plain dicts or built with the helpers here, checked and matched exactly as the bundled
server runs them in SQL (``docs/adapters.md`` has the semantics).

A server declares operators in describe (``where.operators``;
:meth:`a2m.A2MClient.filter_operators`); the client refuses an operator filter before
sending it to one that does not, since a plain §5.2 server would read
``{"$gt": 3}`` as "equals this object" and match nothing. :func:`matches` lets a caller
(an adapter) apply the same filter to records itself when the server cannot.

```python
from a2m import filters

where = {"metadata.user.id": "u1", "score": filters.gte(0.8), "tier": filters.nin(["working"])}
filters.validate(where)
```
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from a2m_types.filters import (
    FIELD_NAMES,
    LOGICAL_OPERATORS,
    OPERATORS,
    FilterError,
    matches,
    parse,
    uses_extension,
)

from .errors import InvalidParams

__all__ = [
    "FIELD_NAMES",
    "LOGICAL_OPERATORS",
    "OPERATORS",
    "FilterError",
    "all_of",
    "and_",
    "eq",
    "exists",
    "gt",
    "gte",
    "in_",
    "lt",
    "lte",
    "matches",
    "ne",
    "nin",
    "or_",
    "uses_operators",
    "validate",
]

Scalar = str | int | float | bool | None


def validate(where: Mapping[str, Any] | None) -> None:
    """Raise :class:`~a2m.InvalidParams` naming the key (``where.score: …``) if ``where``
    cannot be meant: an unknown operator, ``$gt`` with an object, an empty ``$in``…"""
    try:
        parse(where)
    except FilterError as exc:
        raise InvalidParams(f"{exc} (nothing was sent)", data={"field": exc.field}) from None


def uses_operators(where: Mapping[str, Any] | None) -> bool:
    """Whether ``where`` needs a server declaring operators (an operator object, or a
    nested ``metadata.`` path); plain §5.2 equality does not."""
    return uses_extension(where)


def eq(value: Scalar) -> dict[str, Any]:
    """Equal to ``value`` (null: missing or null)."""
    return {"$eq": value}


def ne(value: Scalar) -> dict[str, Any]:
    """Not equal to ``value``; a missing key is not equal to anything but null."""
    return {"$ne": value}


def gt(value: str | float) -> dict[str, Any]:
    """Greater than ``value`` (numbers with numbers, strings with strings)."""
    return {"$gt": value}


def gte(value: str | float) -> dict[str, Any]:
    """At least ``value``."""
    return {"$gte": value}


def lt(value: str | float) -> dict[str, Any]:
    """Less than ``value``."""
    return {"$lt": value}


def lte(value: str | float) -> dict[str, Any]:
    """At most ``value``."""
    return {"$lte": value}


def in_(values: Iterable[Scalar]) -> dict[str, Any]:
    """Equal to one of ``values`` (at least one)."""
    return {"$in": list(values)}


def nin(values: Iterable[Scalar]) -> dict[str, Any]:
    """Equal to none of ``values`` (at least one); a missing key qualifies."""
    return {"$nin": list(values)}


def exists(present: bool = True) -> dict[str, Any]:
    """Present and not null (or, with ``False``, missing or null)."""
    return {"$exists": present}


def or_(*wheres: Mapping[str, Any]) -> dict[str, Any]:
    """At least one of ``wheres`` holds: ``{"$or": [...]}``, to merge into a where (needs
    a server declaring ``$or``)."""
    return {"$or": [dict(where) for where in wheres]}


def and_(*wheres: Mapping[str, Any]) -> dict[str, Any]:
    """All of ``wheres`` hold: ``{"$and": [...]}``, for two ``$or`` in one where (needs a
    server declaring ``$and``)."""
    return {"$and": [dict(where) for where in wheres]}


def all_of(*conditions: Mapping[str, Any]) -> dict[str, Any]:
    """One operator object holding every operator of ``conditions``: ``all_of(gte(1),
    lt(5))`` is ``{"$gte": 1, "$lt": 5}``. An operator given twice is refused."""
    merged: dict[str, Any] = {}
    for condition in conditions:
        for op, operand in condition.items():
            if op in merged:
                raise InvalidParams(f"{op} given twice (nothing was sent)")
            merged[op] = operand
    return merged
