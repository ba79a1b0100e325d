"""``where`` compiled to SQLite: §5.2's equality on a record field, else on a metadata key
(a list means any of its values), and the operators of :mod:`a2m_types.filters` on fields,
metadata keys and nested metadata paths. Each key becomes one parenthesised SQL condition
and its parameters, so a filter never runs in Python.

A long list is one ``IN (SELECT value FROM json_each(?))`` rather than a chain of ``OR``s:
a chain of a thousand alternatives exceeds SQLite's expression depth."""

from __future__ import annotations

import functools
import json
import math
from typing import Any

from a2m_types import parse_timestamp, to_epoch_ms
from a2m_types.filters import Condition

from ._where import Clause, Conditions, Dialect

__all__ = ["FIELD_COLUMNS", "TIME_COLUMNS", "json_path", "where_clause"]

FIELD_COLUMNS = {
    "id": "id",
    "content": "content",
    "role": "role",
    "group": "grp",
    "tier": "tier",
    "owner": "owner",
    "session": "session",
    "key": "key",
    "revision": "revision",
    "uri": "uri",
    "media_type": "media_type",
    "salience": "salience",
    "access_count": "access_count",
}
"""Record fields a ``where`` clause may name directly; anything else is a metadata key."""

TIME_COLUMNS = {
    "created_at": "created_at",
    "accessed_at": "accessed_at",
    "updated_at": "updated_at",
}
"""Timestamp fields: a where value is their wire form, compared as epoch milliseconds."""

_INT64 = range(-(2**63), 2**63)
_SYMBOLS = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
_COMPARABLE = "json_type(r.metadata, ?) IN ('integer', 'real', 'text')"


@functools.lru_cache(maxsize=1024)
def json_path(*segments: str) -> str:
    """The SQLite JSON path of a metadata key, or of a nested path (each segment quoted);
    kept for the paths filters name again and again."""
    quoted = ('"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"' for s in segments)
    return "$." + ".".join(quoted)


def _dump(values: list[Any]) -> str:
    return json.dumps(values, ensure_ascii=False, allow_nan=False)


def _number(value: Any) -> Any:
    """``value`` as SQLite can compare it: an integer beyond 64 bits is held as a REAL (in
    JSON too), so compare one; beyond any float, an infinity of its sign."""
    if isinstance(value, int) and not isinstance(value, bool) and value not in _INT64:
        try:
            return float(value)
        except OverflowError:
            return math.copysign(math.inf, value)
    return value


def _moment(value: Any) -> int | None:
    try:
        return to_epoch_ms(parse_timestamp(value)) if isinstance(value, str) else None
    except ValueError:
        return None


def _equality(condition: Condition, values: list[Any]) -> tuple[str, list[Any]]:
    """Any of ``values`` (§5.2): SQL that is 1 or 0, never NULL."""
    found = Conditions()
    scalars: list[Any] = []
    if condition.kind == "time":
        column = f"r.{TIME_COLUMNS[condition.target[0]]}"
        for value in values:
            moment = _moment(value)
            if value is None:
                found.add(f"{column} IS NULL")
            elif moment is None:
                found.add("0")  # not a timestamp: equal to none
            else:
                scalars.append(moment)
        _gather(found, scalars, *_column_tests(column))
        return found.any()
    if condition.kind == "field":
        column = f"r.{FIELD_COLUMNS[condition.target[0]]}"
        for value in map(_number, values):
            if value is None:
                found.add(f"{column} IS NULL")
            else:
                scalars.append(int(value) if isinstance(value, bool) else value)
        _gather(found, scalars, *_column_tests(column))
        return found.any()
    path = json_path(*condition.target)
    for value in map(_number, values):
        if value is None:
            found.add("coalesce(json_type(r.metadata, ?), 'null') = 'null'", path)
        elif isinstance(value, bool):
            found.add("coalesce(json_type(r.metadata, ?) = ?, 0)", path, str(value).lower())
        elif isinstance(value, float) and math.isinf(value):
            found.add("0")  # beyond any stored number
        else:
            # json_extract reports true/false as 1/0 and containers as JSON text: only
            # numbers and strings may compare equal to a scalar.
            scalars.append(value)
    extract = "json_extract(r.metadata, ?)"
    if all(map(_unambiguous, scalars)):
        # No value that json_extract could also give for a boolean or a container: the
        # type test is implied, and each row's metadata is parsed once rather than twice.
        _gather(
            found,
            scalars,
            f"coalesce({extract} = ?, 0)",
            f"coalesce({extract} IN (SELECT value FROM json_each(?)), 0)",
            path,
        )
        return found.any()
    _gather(
        found,
        scalars,
        f"coalesce({_COMPARABLE} AND {extract} = ?, 0)",
        f"coalesce({_COMPARABLE} AND {extract} IN (SELECT value FROM json_each(?)), 0)",
        path,
        path,
    )
    return found.any()


def _unambiguous(value: Any) -> bool:
    """Whether only a JSON number or string at a path can give ``json_extract`` this
    value: it reads ``true``/``false`` as 1/0 and an array or object as its JSON text
    (which starts with ``[`` or ``{``); SQLite never finds a number equal to text."""
    if isinstance(value, str):
        return not value.startswith(("[", "{"))
    return bool(value != 0 and value != 1)


def _column_tests(column: str) -> tuple[str, str]:
    """Equality with one value and with any of several, each 1 or 0 (never NULL) and in a
    form the column's index serves, partial indexes (``WHERE x IS NOT NULL``) included: the
    values compared are never NULL, so only the column's NULL needs turning into 0."""
    return (
        f"({column} IS NOT NULL AND {column} = ?)",
        f"({column} IS NOT NULL AND {column} IN (SELECT value FROM json_each(?)))",
    )


def _gather(found: Conditions, scalars: list[Any], single: str, many: str, *lead: Any) -> None:
    if len(scalars) == 1:
        found.add(single, *lead, scalars[0])
    elif scalars:
        found.add(many, *lead, _dump(scalars))


def _ordering(condition: Condition) -> tuple[str, list[Any]]:
    symbol = _SYMBOLS[condition.op]
    operand = _number(condition.operand)
    if condition.kind == "time":
        return f"(r.{TIME_COLUMNS[condition.target[0]]} {symbol} ?)", [_moment(operand)]
    numeric = not isinstance(operand, str)
    if condition.kind == "field":
        column = f"r.{FIELD_COLUMNS[condition.target[0]]}"
        kinds = "('integer', 'real')" if numeric else "('text')"
        return f"(typeof({column}) IN {kinds} AND {column} {symbol} ?)", [operand]
    return _metadata_ordering(json_path(*condition.target), condition.op, operand)


# The ends of each kind's range in SQLite's order: every number lies between the
# infinities, and every text between '' and the empty blob (numbers < text < blobs).
_NUMBERS = (-math.inf, math.inf)
_TEXTS = ("", b"")


def _metadata_ordering(path: str, op: str, operand: Any) -> Clause:
    """A comparison with a metadata value of the operand's kind (numbers with numbers,
    strings with strings). ``x BETWEEN lo AND hi`` reads the value once, where a type
    test and a comparison would parse the row's metadata twice; it holds values of the
    operand's kind only, and the rest of the type test runs on rows in range alone: for
    strings (an array's JSON text sorts among them), and for numbers where the range
    holds 0 or 1 (what ``json_extract`` gives for false and true)."""
    symbol = _SYMBOLS[op]
    numeric = not isinstance(operand, str)
    low, high = _NUMBERS if numeric else _TEXTS
    if op in ("$gt", "$gte"):
        low = operand
    else:
        high = operand
    extract = "json_extract(r.metadata, ?)"
    clause = f"({extract} BETWEEN ? AND ?"
    params: list[Any] = [path, low, high]
    if op in ("$gt", "$lt"):
        clause += f" AND {extract} {symbol} ?"
        params += [path, operand]
    if not numeric:
        clause += " AND json_type(r.metadata, ?) = 'text'"
        params.append(path)
    elif any(_holds(op, flag, operand) for flag in (0, 1)):
        clause += " AND json_type(r.metadata, ?) IN ('integer', 'real')"
        params.append(path)
    return clause + ")", params


def _holds(op: str, value: float, operand: float) -> bool:
    if op == "$gt":
        return value > operand
    if op == "$gte":
        return value >= operand
    if op == "$lt":
        return value < operand
    return value <= operand


def _presence(condition: Condition) -> tuple[str, list[Any]]:
    if condition.kind == "metadata":
        test = "!=" if condition.operand else "="
        return f"(coalesce(json_type(r.metadata, ?), 'null') {test} 'null')", [
            json_path(*condition.target)
        ]
    columns = TIME_COLUMNS if condition.kind == "time" else FIELD_COLUMNS
    null = "IS NOT NULL" if condition.operand else "IS NULL"
    return f"(r.{columns[condition.target[0]]} {null})", []


_SQLITE = Dialect(equality=_equality, ordering=_ordering, presence=_presence)


def where_clause(name: str, expected: Any) -> tuple[str, list[Any]]:
    """One ``where`` entry as ``(condition, parameters)`` in SQLite's SQL."""
    return _SQLITE.clause(name, expected)
