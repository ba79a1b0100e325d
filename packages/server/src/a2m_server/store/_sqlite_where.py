"""``where`` (spec §5.2) compiled to SQLite: equality on a record field, else on a metadata
key; a list means any of its values. Each entry becomes one parenthesised SQL condition and
its parameters, so a filter never runs in Python.

A long list is one ``IN (SELECT value FROM json_each(?))`` rather than a chain of ``OR``s:
a chain of a thousand alternatives exceeds SQLite's expression depth."""

from __future__ import annotations

import json
from typing import Any

from a2m_types import parse_timestamp, to_epoch_ms

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
_COMPARABLE = "json_type(r.metadata, ?) IN ('integer', 'real', 'text')"


def json_path(key: str) -> str:
    """The SQLite JSON path of the metadata key ``key`` (one segment, quoted)."""
    return '$."' + key.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _dump(values: list[Any]) -> str:
    return json.dumps(values, ensure_ascii=False, allow_nan=False)


class _Alternatives:
    """The ``OR`` of one entry's values; plain scalars are gathered into one ``IN``."""

    def __init__(self) -> None:
        self.clauses: list[str] = []
        self.params: list[Any] = []
        self.scalars: list[Any] = []

    def add(self, clause: str, *params: Any) -> None:
        self.clauses.append(clause)
        self.params.extend(params)

    def result(self, single: str, many: str, *lead: Any) -> tuple[str, list[Any]]:
        """The condition, with ``single`` (one scalar, ``?`` last) or ``many`` (a JSON
        array, ``?`` last) for the gathered scalars; ``lead`` precedes their parameter."""
        if len(self.scalars) == 1:
            self.add(single, *lead, self.scalars[0])
        elif self.scalars:
            self.add(many, *lead, _dump(self.scalars))
        return "(" + (" OR ".join(self.clauses) or "0") + ")", self.params


def _number(value: Any) -> Any:
    """``value`` as SQLite can compare it; ``None`` for an integer beyond any stored one."""
    if isinstance(value, int) and not isinstance(value, bool) and value not in _INT64:
        # SQLite holds such an integer (in JSON too) as a REAL; so compare one.
        try:
            return float(value)
        except OverflowError:
            return None
    return value


def where_clause(name: str, expected: Any) -> tuple[str, list[Any]]:
    """One ``where`` entry as ``(condition, parameters)``."""
    if name in TIME_COLUMNS:
        return _time_clause(TIME_COLUMNS[name], expected)
    column = FIELD_COLUMNS.get(name)
    path = json_path(name)
    found = _Alternatives()
    for raw in expected if isinstance(expected, list) else [expected]:
        value = _number(raw)
        if value is None and raw is not None:
            found.add("0")  # beyond any stored number
        elif column is not None:
            if value is None:
                found.add(f"r.{column} IS NULL")
            else:
                found.scalars.append(int(value) if isinstance(value, bool) else value)
        elif value is None:
            found.add("coalesce(json_type(r.metadata, ?), 'null') = 'null'", path)
        elif isinstance(value, bool):
            found.add("json_type(r.metadata, ?) = ?", path, "true" if value else "false")
        else:
            # json_extract reports true/false as 1/0 and containers as JSON text: only
            # numbers and strings may compare equal to a scalar.
            found.scalars.append(value)
    if column is not None:
        return found.result(f"r.{column} = ?", f"r.{column} IN (SELECT value FROM json_each(?))")
    return found.result(
        f"({_COMPARABLE} AND json_extract(r.metadata, ?) = ?)",
        f"({_COMPARABLE} AND json_extract(r.metadata, ?) IN (SELECT value FROM json_each(?)))",
        path,
        path,
    )


def _time_clause(column: str, expected: Any) -> tuple[str, list[Any]]:
    found = _Alternatives()
    for value in expected if isinstance(expected, list) else [expected]:
        if value is None:
            found.add(f"r.{column} IS NULL")
            continue
        try:
            moment = to_epoch_ms(parse_timestamp(value)) if isinstance(value, str) else None
        except ValueError:
            moment = None
        if moment is None:
            found.add("0")  # not a timestamp: equal to none
        else:
            found.scalars.append(moment)
    return found.result(f"r.{column} = ?", f"r.{column} IN (SELECT value FROM json_each(?))")
