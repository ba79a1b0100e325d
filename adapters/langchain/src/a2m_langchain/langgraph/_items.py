"""One LangGraph item as one A2M record, and back; and LangGraph's filter semantics.

A record of an item carries the item's value verbatim in ``metadata.value`` (the shared
record convention, so any adapter reads it back), its readable JSON as ``content`` (what
lexical recall ranks), ``role`` ``memory``, and its TTL as ``metadata.ttl_s``."""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from langgraph.store.base import Item, SearchItem

from a2m import InvalidParams, Record
from a2m_types import parse_timestamp
from a2m_types.json_values import MAX_JSON_DEPTH, JSONValueError, check_json_value

from ._addressing import parse_address

__all__ = [
    "DISTANCES",
    "MAX_VALUE_DEPTH",
    "RESERVED_ROOT",
    "ValueRefused",
    "checked_value",
    "cosines",
    "item_value",
    "matches_filter",
    "ordered",
    "readable_content",
    "similarity",
    "to_item",
    "ttl_seconds",
]

RESERVED_ROOT = "langgraph"
"""LangGraph refuses this root label for items; the checkpointer's records live there."""

VALUE_UPDATED_AT = "value_updated_at"
"""Set when a TTL refresh rewrites a record: when its value last changed."""


MAX_VALUE_DEPTH = MAX_JSON_DEPTH - 1
"""How deeply a value's objects and lists may nest (the value itself is level 1): a
record's JSON may nest :data:`a2m_types.json_values.MAX_JSON_DEPTH` levels, and the value
sits inside ``metadata``."""


class ValueRefused(InvalidParams, TypeError):
    """A value that would not come back exactly as it was put: not a JSON object of
    string keys, finite numbers, strings, booleans, nulls, lists and objects, nested at
    most :data:`MAX_VALUE_DEPTH` deep. An :class:`~a2m.InvalidParams` raised before
    anything is sent (and a ``TypeError``, as Python says of a value of the wrong kind)."""

    hint = "Store plain JSON: convert sets, tuples, bytes and NaN yourself, as you mean them."

    def __init__(self, message: str) -> None:
        super().__init__(message, data={"refused_by": "a2m_langchain.langgraph"})


def checked_value(value: Any, where: str = "value") -> dict[str, Any]:
    """``value`` as a plain dict, after checking it survives JSON exactly, by the check
    the client and the server share (the value itself is sent as it is: nothing is
    converted on the way)."""
    if not isinstance(value, Mapping):
        raise ValueRefused(f"{where} must be a mapping, not {type(value).__name__}")
    plain = dict(value)
    try:
        check_json_value(plain, where, max_depth=MAX_VALUE_DEPTH)
    except JSONValueError as refused:
        raise ValueRefused(str(refused)) from None
    return plain


def readable_content(value: Mapping[str, Any], limit: int) -> str:
    """The record's ``content``: compact JSON of the value, cut to the server's limit."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text[:limit]


def ttl_seconds(minutes: float | None) -> int | None:
    """A LangGraph TTL (minutes) as ``metadata.ttl_s`` (whole seconds, at least one)."""
    if minutes is None:
        return None
    return max(1, math.ceil(minutes * 60))


def item_value(record: Record) -> dict[str, Any]:
    """The item value a record holds: ``metadata.value`` when it is an object; a record
    another framework wrote reads as ``{"content": …}`` (or ``{"value": …}``)."""
    metadata = record.metadata or {}
    value = metadata.get("value", record.content)
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        return {"content": value}
    return {"value": value}


def _updated_at(record: Record) -> datetime:
    metadata = record.metadata or {}
    for stamp in (metadata.get(VALUE_UPDATED_AT), (record.model_extra or {}).get("updated_at")):
        if isinstance(stamp, str):
            try:
                return parse_timestamp(stamp)
            except ValueError:
                continue
    return record.created_at


def to_item(
    record: Record,
    root: Sequence[str],
    *,
    score: float | None = None,
    search: bool = False,
    value: dict[str, Any] | None = None,
) -> Item | None:
    """The item ``record`` is, or ``None`` when it is no item (no key, no namespace, or
    in the checkpointer's reserved namespace). ``value``: its :func:`item_value`, when
    the caller has it already."""
    if record.key is None:
        return None
    address = parse_address(record.key, record.metadata, root)
    if address is None or (not root and address[0][0] == RESERVED_ROOT):
        return None
    namespace, key = address
    if value is None:
        value = item_value(record)
    updated = _updated_at(record)
    if search:
        return SearchItem(namespace, key, value, record.created_at, updated, score)
    return Item(
        value=value, key=key, namespace=namespace, created_at=record.created_at, updated_at=updated
    )


def matches_filter(value: Mapping[str, Any], filter: Mapping[str, Any] | None) -> bool:
    """Whether an item value passes a LangGraph filter, with exactly the semantics of
    LangGraph's own stores: top-level keys; a nested object matches the keys it names; a
    list matches element by element; ``$eq $ne $gt $gte $lt $lte`` compare (the ordering
    ones as numbers)."""
    if not filter:
        return True
    return all(_compare(value.get(key), expected) for key, expected in filter.items())


def _compare(actual: Any, expected: Any) -> bool:
    if isinstance(expected, dict):
        if any(name.startswith("$") for name in expected):
            return all(_operator(actual, op, operand) for op, operand in expected.items())
        if not isinstance(actual, dict):
            return False
        return all(_compare(actual.get(k), v) for k, v in expected.items())
    if isinstance(expected, (list, tuple)):
        return (
            isinstance(actual, (list, tuple))
            and len(actual) == len(expected)
            and all(_compare(a, e) for a, e in zip(actual, expected, strict=True))
        )
    return bool(actual == expected)


def _operator(actual: Any, operator: str, operand: Any) -> bool:
    if operator == "$eq":
        return bool(actual == operand)
    if operator == "$ne":
        return bool(actual != operand)
    if operator not in ("$gt", "$gte", "$lt", "$lte"):
        raise ValueError(f"unsupported filter operator {operator!r}")
    try:
        left, right = float(actual), float(operand)
    except (TypeError, ValueError):
        # LangGraph's stores raise here; a value that is no number simply does not match.
        return False
    return ordered(operator, left, right)


def ordered(operator: str, left: float, right: float) -> bool:
    """Whether ``left`` stands to ``right`` as the ordering ``operator`` (``$gt``, ``$gte``,
    ``$lt`` or ``$lte``) says: LangGraph's comparison, once both sides are floats."""
    if operator == "$gt":
        return left > right
    if operator == "$gte":
        return left >= right
    if operator == "$lt":
        return left < right
    return left <= right


def check_filter(filter: Mapping[str, Any] | None) -> None:
    """Refuse an operator LangGraph does not define, before anything is sent."""
    for expected in (filter or {}).values():
        if isinstance(expected, dict):
            for name in expected:
                if name.startswith("$") and name not in (
                    "$eq",
                    "$ne",
                    "$gt",
                    "$gte",
                    "$lt",
                    "$lte",
                ):
                    raise ValueError(f"unsupported filter operator {name!r}")


def cosines(
    query: Sequence[float], vectors: Sequence[Sequence[float] | None]
) -> list[float | None]:
    """Cosine similarity of each vector to ``query``, as LangGraph's stores score a
    semantic search (with numpy when it is installed, as they do); ``None`` for a missing
    vector or one of another width."""
    comparable = [i for i, v in enumerate(vectors) if v is not None and len(v) == len(query)]
    scores: list[float | None] = [None] * len(vectors)
    if not comparable:
        return scores
    numpy = _numpy()
    if numpy is not None:
        matrix = numpy.asarray([vectors[i] for i in comparable], dtype=float)
        q = numpy.asarray(query, dtype=float)
        norms = numpy.linalg.norm(matrix, axis=1) * numpy.linalg.norm(q)
        dots = matrix @ q
        safe = numpy.where(norms == 0, 1.0, norms)
        values = numpy.where(norms == 0, 0.0, dots / safe).tolist()
    else:
        q_norm = math.sqrt(sum(x * x for x in query))
        values = []
        for i in comparable:
            vector = vectors[i]
            assert vector is not None
            norm = math.sqrt(sum(x * x for x in vector)) * q_norm
            dot = sum(a * b for a, b in zip(query, vector, strict=True))
            values.append(dot / norm if norm else 0.0)
    for i, value in zip(comparable, values, strict=True):
        scores[i] = float(value)
    return scores


DISTANCES = ("cosine", "inner_product", "l2")
"""The ``IndexConfig.distance_type`` values the store scores as LangGraph's stores do."""


def similarity(
    query: Sequence[float], vectors: Sequence[Sequence[float] | None], distance: str
) -> list[float | None]:
    """Each vector's score against ``query`` as PostgresStore gives it for ``distance``:
    the cosine, the inner product, or the negated Euclidean distance (``l2``)."""
    if distance == "cosine":
        return cosines(query, vectors)
    scores: list[float | None] = []
    for vector in vectors:
        if vector is None or len(vector) != len(query):
            scores.append(None)
        elif distance == "inner_product":
            scores.append(float(math.fsum(a * b for a, b in zip(query, vector, strict=True))))
        else:
            scores.append(-math.dist(query, vector))
    return scores


@functools.cache
def _numpy() -> Any:
    try:
        import numpy
    except ImportError:
        return None
    return numpy
