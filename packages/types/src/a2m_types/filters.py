"""``where`` with operators: the filter language a server may declare beyond §5.2's
equality (describe ``where.operators``), parsed and matched the same way by the client and
the bundled server. ``docs/adapters.md`` states the semantics; in short:

- a key names a record field (``role``, ``created_at``…), else a top-level metadata key,
  exactly as in §5.2; a key starting with ``metadata.`` is a path into metadata
  (``metadata.user.id``), one segment per dot;
- a value is a scalar (``$eq``), a list (``$in``, as §5.2's "any of"), or an object of
  operators that must all hold: ``{"$gte": 3, "$lt": 10}``;
- the keys ``$and`` and ``$or`` with a list of where objects: all of them, or at least
  one, must hold (``{"$or": [{"n": {"$gte": 3}}, {"n": "x"}]}``), nested up to
  :data:`MAX_LOGICAL_DEPTH` deep. A list of objects was never a §5.2 value, so no filter
  that meant something before means something else now; ``$or`` with any other value is
  still a metadata key of that name;
- values compare only with values of their own kind: numbers with numbers, strings with
  strings (by code point), booleans only for equality; record timestamps as instants. A
  missing key, or null, never matches a comparison; it matches ``$ne``, ``$nin`` and
  ``$exists: false``.

:func:`parse` refuses what cannot be meant (an unknown operator, ``$gt`` with an object,
an empty ``$in``) with :class:`FilterError` naming the key; :func:`matches` runs a filter
against one record's wire form."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ._time import parse_timestamp, to_epoch_ms

__all__ = [
    "COMPARISONS",
    "FIELD_NAMES",
    "LOGICAL_OPERATORS",
    "MAX_LOGICAL_DEPTH",
    "MAX_WHERE_LIST",
    "METADATA_PATH",
    "OPERATORS",
    "TIME_FIELDS",
    "Condition",
    "FilterError",
    "matches",
    "operators_used",
    "parse",
    "uses_extension",
]

OPERATORS: tuple[str, ...] = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists")
"""Every operator, in the order describe lists them."""
LOGICAL_OPERATORS: tuple[str, ...] = ("$and", "$or")
"""The keys that combine where objects, listed in describe after :data:`OPERATORS`."""
MAX_LOGICAL_DEPTH = 4
"""How deep ``$and`` / ``$or`` may nest (one where object inside another is one level)."""
MAX_WHERE_LIST = 100
"""How many where objects one ``$and`` / ``$or`` may hold."""
COMPARISONS = frozenset({"$gt", "$gte", "$lt", "$lte"})
"""The ordering operators: a number or a string, never null, a boolean or a container."""

TIME_FIELDS = frozenset({"created_at", "accessed_at", "updated_at"})
"""Record fields holding instants: compared as instants, their operands RFC 3339 strings."""
FIELD_NAMES = frozenset(
    {
        "id",
        "content",
        "role",
        "group",
        "tier",
        "owner",
        "session",
        "key",
        "revision",
        "uri",
        "media_type",
        "salience",
        "access_count",
    }
    | TIME_FIELDS
)
"""Record fields a ``where`` key names directly; any other key is a metadata key."""

METADATA_PATH = "metadata."
"""The prefix of a nested metadata path: ``metadata.a.b`` is ``metadata["a"]["b"]``."""

Kind = Literal["field", "time", "metadata", "logical"]


class FilterError(ValueError):
    """A ``where`` that cannot be meant; ``field`` is the offending key (``where.x``)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


@dataclass(frozen=True)
class Condition:
    """One test of a parsed ``where``: ``op`` of ``operand`` on a field or metadata path."""

    name: str
    """The key as given."""
    kind: Kind
    target: tuple[str, ...]
    """The field name (one element), or the metadata path's segments (empty for
    ``$and`` / ``$or``)."""
    op: str
    operand: Any
    """The value tested against; for ``$and`` / ``$or`` a tuple of the parsed where
    objects, each a tuple of conditions that must all hold."""


def _is_mapping(value: Any) -> bool:
    """``isinstance(value, Mapping)``, answered at once for a plain ``dict`` (what JSON
    parses to), since the ABC check costs more than the rest of a small filter's parse."""
    return type(value) is dict or isinstance(value, Mapping)


def _scalar(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    return value is None or isinstance(value, (str, int, bool))


def _target(name: Any) -> tuple[Kind, tuple[str, ...]]:
    if not isinstance(name, str):
        raise FilterError(f"where.{name}", "a where key is a string")
    if name.startswith(METADATA_PATH):
        segments = tuple(name[len(METADATA_PATH) :].split("."))
        if not all(segments):
            # Not a path (it has an empty segment): a plain metadata key, as §5.2 reads it.
            return "metadata", (name,)
        return "metadata", segments
    if name in TIME_FIELDS:
        return "time", (name,)
    if name in FIELD_NAMES:
        return "field", (name,)
    return "metadata", (name,)


def _check(field: str, kind: Kind, op: str, operand: Any) -> None:
    if op not in OPERATORS:
        raise FilterError(
            field, f"unknown operator {op!r}; the operators are {', '.join(OPERATORS)}"
        )
    if op in ("$eq", "$ne"):
        if not _scalar(operand):
            raise FilterError(field, f"{op} takes a string, number, boolean or null")
    elif op in COMPARISONS:
        if kind == "time":
            if not isinstance(operand, str) or not _instant(operand):
                raise FilterError(field, f"{op} on a timestamp takes an RFC 3339 string")
        elif isinstance(operand, bool) or not (
            isinstance(operand, str) or (isinstance(operand, (int, float)) and _scalar(operand))
        ):
            raise FilterError(field, f"{op} takes a number or a string, not {operand!r}")
    elif op in ("$in", "$nin"):
        if not isinstance(operand, list) or not operand:
            raise FilterError(field, f"{op} takes a non-empty list")
        if not all(_scalar(item) for item in operand):
            raise FilterError(field, f"{op} takes a list of strings, numbers, booleans or nulls")
    elif not isinstance(operand, bool):  # $exists
        raise FilterError(field, "$exists takes true or false")


def _logical(name: Any, expected: Any) -> bool:
    """Whether ``name: expected`` is ``$and`` / ``$or`` over where objects (else it is
    what it always was: a metadata key of that name)."""
    return (
        name in LOGICAL_OPERATORS
        and isinstance(expected, list)
        and any(_is_mapping(item) for item in expected)
    )


def _parse_logical(field: str, op: str, expected: list[Any], depth: int) -> Condition:
    if depth >= MAX_LOGICAL_DEPTH:
        raise FilterError(field, f"$and and $or nest at most {MAX_LOGICAL_DEPTH} deep")
    if len(expected) > MAX_WHERE_LIST:
        raise FilterError(field, f"{op} takes at most {MAX_WHERE_LIST} where objects")
    branches = []
    for index, branch in enumerate(expected):
        where = f"{field}[{index}]"
        if not _is_mapping(branch) or not branch:
            raise FilterError(where, f"{op} takes a list of non-empty where objects")
        branches.append(tuple(_parse(branch, f"{where}.", depth + 1)))
    return Condition(op, "logical", (), op, tuple(branches))


def parse(where: Mapping[str, Any] | None) -> list[Condition]:
    """Every test ``where`` makes, checked; :class:`FilterError` names the first bad key."""
    if where is None:
        return []
    if not _is_mapping(where):
        raise FilterError("where", "where is an object of keys to conditions")
    return _parse(where, "where.", 0)


def _parse(where: Mapping[str, Any], prefix: str, depth: int) -> list[Condition]:
    conditions = []
    for name, expected in where.items():
        field = f"{prefix}{name}"
        if _logical(name, expected):
            conditions.append(_parse_logical(field, name, expected, depth))
            continue
        kind, target = _target(name)
        if _is_mapping(expected):
            if not expected:
                raise FilterError(field, "an operator object needs at least one operator")
            for op, operand in expected.items():
                _check(field, kind, str(op), operand)
                conditions.append(Condition(name, kind, target, str(op), operand))
        elif isinstance(expected, list):
            if not all(_scalar(item) for item in expected):
                raise FilterError(field, "a list holds strings, numbers, booleans or nulls")
            conditions.append(Condition(name, kind, target, "$in", expected))
        elif _scalar(expected):
            conditions.append(Condition(name, kind, target, "$eq", expected))
        else:
            raise FilterError(field, f"{expected!r} is not a value or an operator object")
    return conditions


def uses_extension(where: Mapping[str, Any] | None) -> bool:
    """Whether ``where`` goes beyond §5.2 equality (an operator object, a nested
    metadata path, ``$and`` / ``$or``), so that only a server declaring operators may be
    sent it."""
    if not where:
        return False
    return any(
        _is_mapping(value)
        or (isinstance(name, str) and name.startswith(METADATA_PATH))
        or _logical(name, value)
        for name, value in where.items()
    )


def operators_used(where: Mapping[str, Any] | None) -> frozenset[str]:
    """The operators ``where`` uses, ``$and`` / ``$or`` and those inside them included:
    what a server must declare before it is sent ``where``."""
    used: set[str] = set()
    for name, value in (where or {}).items():
        if _logical(name, value):
            used.add(name)
            for branch in value:
                if _is_mapping(branch):
                    used |= operators_used(branch)
        elif _is_mapping(value):
            used.update(str(op) for op in value)
    return frozenset(used)


# --- matching one record ----------------------------------------------------------------


def _instant(value: Any) -> int | None:
    if not isinstance(value, str):
        return None
    try:
        return to_epoch_ms(parse_timestamp(value))
    except ValueError:
        return None


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _lookup(record: Mapping[str, Any], condition: Condition) -> Any:
    if condition.kind != "metadata":
        return record.get(condition.target[0])
    value: Any = record.get("metadata")
    for segment in condition.target:
        if not _is_mapping(value):
            return None
        value = value.get(segment)
    return value


def _equal(kind: Kind, value: Any, operand: Any) -> bool:
    if operand is None:
        return value is None
    if kind == "time":
        moment = _instant(operand)
        return moment is not None and _instant(value) == moment
    if isinstance(operand, bool) or isinstance(value, bool):
        return isinstance(operand, bool) and isinstance(value, bool) and value == operand
    if _number(operand):
        return _number(value) and bool(value == operand)
    return isinstance(value, str) and value == operand


def _ordered(kind: Kind, value: Any, op: str, operand: Any) -> bool:
    left: Any
    right: Any
    if kind == "time":
        left, right = _instant(value), _instant(operand)
        if left is None or right is None:
            return False
    elif _number(operand):
        if not _number(value):
            return False
        left, right = value, operand
    elif isinstance(value, str):
        left, right = value, operand
    else:
        return False
    if op == "$gt":
        return bool(left > right)
    if op == "$gte":
        return bool(left >= right)
    if op == "$lt":
        return bool(left < right)
    return bool(left <= right)


def _holds(condition: Condition, value: Any) -> bool:
    op, operand, kind = condition.op, condition.operand, condition.kind
    if op == "$eq":
        return _equal(kind, value, operand)
    if op == "$ne":
        return not _equal(kind, value, operand)
    if op == "$in":
        return any(_equal(kind, value, item) for item in operand)
    if op == "$nin":
        return not any(_equal(kind, value, item) for item in operand)
    if op == "$exists":
        return (value is not None) is operand
    return _ordered(kind, value, op, operand)


def _any_all(condition: Condition, record: Mapping[str, Any]) -> bool:
    """``$and`` / ``$or``: whether all, or any, of its where objects hold for ``record``."""
    combine = all if condition.op == "$and" else any
    return combine(_passes(branch, record) for branch in condition.operand)


def _passes(conditions: Sequence[Condition], record: Mapping[str, Any]) -> bool:
    return all(
        _any_all(c, record) if c.kind == "logical" else _holds(c, _lookup(record, c))
        for c in conditions
    )


def matches(where: Mapping[str, Any] | None, record: Mapping[str, Any]) -> bool:
    """Whether the record ``record`` (its wire form: fields, and ``metadata``) passes
    ``where``, as a server declaring operators would decide it."""
    return _passes(parse(where), record)


def conditions_by_name(conditions: Sequence[Condition]) -> dict[str, list[Condition]]:
    """The conditions of a parsed ``where`` grouped by key, in order."""
    grouped: dict[str, list[Condition]] = {}
    for condition in conditions:
        grouped.setdefault(condition.name, []).append(condition)
    return grouped
