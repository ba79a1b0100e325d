"""A :class:`RecordFilter` as a PostgreSQL WHERE clause, with the same meaning as the
SQLite store's (``where`` equality on fields and metadata, scopes, groups, tags, keys)."""

from __future__ import annotations

import json
from typing import Any

from a2m_types import parse_timestamp, to_epoch_ms

from .base import RecordFilter, Scope

__all__ = ["Sql", "add_scope", "build_filter", "dump_json"]

_TEXT_COLUMNS = {
    "id": "id",
    "content": "content",
    "role": "role",
    "group": "grp",
    "tier": "tier",
    "owner": "owner",
    "session": "session",
    "key": "key",
    "uri": "uri",
    "media_type": "media_type",
}
_NUMBER_COLUMNS = {"revision": "revision", "salience": "salience", "access_count": "access_count"}
_TIME_COLUMNS = {
    "created_at": "created_at",
    "accessed_at": "accessed_at",
    "updated_at": "updated_at",
}


def dump_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


class Sql:
    """Accumulates a WHERE clause and its parameters (``%s`` placeholders)."""

    def __init__(self) -> None:
        self.clauses: list[str] = []
        self.params: list[Any] = []

    def add(self, clause: str, *params: Any) -> None:
        self.clauses.append(clause)
        self.params.extend(params)

    def text(self) -> str:
        return " AND ".join(self.clauses) if self.clauses else "TRUE"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _where_clause(name: str, expected: Any) -> tuple[str, list[Any]]:
    """One ``where`` entry (§5.2): equality on a record field, else on a metadata key;
    a list means any of its values, gathered into one ``= ANY(array)`` so a long list
    stays one condition (as the SQLite store gathers them into one ``IN``)."""
    if name in _TIME_COLUMNS:
        return _time_clause(_TIME_COLUMNS[name], expected)
    alternatives: list[str] = []
    params: list[Any] = []
    scalars: list[Any] = []
    for value in expected if isinstance(expected, list) else [expected]:
        if name in _TEXT_COLUMNS:
            if value is None:
                alternatives.append(f"r.{_TEXT_COLUMNS[name]} IS NULL")
            elif isinstance(value, str):
                scalars.append(value)
            # a number or a boolean never equals a text field
        elif name in _NUMBER_COLUMNS:
            if value is None:
                alternatives.append(f"r.{_NUMBER_COLUMNS[name]} IS NULL")
            elif isinstance(value, (int, float)):
                scalars.append(str(int(value) if isinstance(value, bool) else value))
        elif value is None:
            alternatives.append("coalesce(jsonb_typeof(r.meta -> %s), 'null') = 'null'")
            params.append(name)
        elif isinstance(value, bool):
            alternatives.append("r.meta -> %s = %s::jsonb")
            params += [name, "true" if value else "false"]
        elif _is_number(value) or isinstance(value, str):
            scalars.append(dump_json(value))
    if scalars:
        if name in _TEXT_COLUMNS:
            alternatives.append(f"r.{_TEXT_COLUMNS[name]} = ANY(%s::text[])")
            params.append(scalars)
        elif name in _NUMBER_COLUMNS:
            alternatives.append(f"r.{_NUMBER_COLUMNS[name]}::numeric = ANY(%s::numeric[])")
            params.append(scalars)
        else:
            # Containers and booleans never equal a scalar; numbers compare as numbers.
            alternatives.append(
                "(jsonb_typeof(r.meta -> %s) IN ('number', 'string') "
                "AND r.meta -> %s = ANY(%s::jsonb[]))"
            )
            params += [name, name, scalars]
    return "(" + (" OR ".join(alternatives) or "FALSE") + ")", params


def _time_clause(column: str, expected: Any) -> tuple[str, list[Any]]:
    alternatives: list[str] = []
    params: list[Any] = []
    for value in expected if isinstance(expected, list) else [expected]:
        if value is None:
            alternatives.append(f"r.{column} IS NULL")
            continue
        try:
            moment = to_epoch_ms(parse_timestamp(value)) if isinstance(value, str) else None
        except ValueError:
            moment = None
        if moment is not None:
            alternatives.append(f"r.{column} = %s")
            params.append(moment)
    return "(" + (" OR ".join(alternatives) or "FALSE") + ")", params


def _key_bounds(prefix: str) -> tuple[str, str]:
    # Segment-wise ranges: '0' is the character after '/'; keys compare bytewise (COLLATE C).
    return prefix + "/", prefix + "0"


def build_filter(where: RecordFilter, now: int) -> Sql:
    sql = Sql()
    sql.add("(r.expires_at IS NULL OR r.expires_at > %s)", now)
    if where.ids is not None:
        sql.add("r.id = ANY(%s::text[])", list(where.ids))
    if where.tier is not None:
        sql.add("r.tier = %s", where.tier)
    if where.tiers is not None:
        sql.add("r.tier = ANY(%s::text[])", list(where.tiers))
    if where.has_session:
        if where.session is None:
            sql.add("r.session IS NULL")
        else:
            sql.add("r.session = %s", where.session)
    if where.key_prefix is not None:
        prefix = where.key_prefix.rstrip("/")
        if prefix:
            low, high = _key_bounds(prefix)
            sql.add(
                '(r.key = %s OR (r.key COLLATE "C" >= %s AND r.key COLLATE "C" < %s))',
                prefix,
                low,
                high,
            )
        else:
            sql.add("r.key IS NOT NULL")
    if where.scope is not None:
        add_scope(sql, where.scope, owner_column="r.owner", tier_column="r.tier")
    if where.groups is not None:
        owners = [owner or "" for owner, _ in where.groups]
        groups = [group for _, group in where.groups]
        sql.add(
            "(coalesce(r.owner, ''), r.grp) IN (SELECT * FROM unnest(%s::text[], %s::text[]))",
            owners,
            groups,
        )
    for tag in where.tags_all or ():
        # As SQLite's json_each: the elements of an array, or a lone scalar itself.
        sql.add(
            "(CASE jsonb_typeof(r.meta -> 'tags') WHEN 'array' THEN r.meta -> 'tags' @> %s::jsonb "
            "ELSE r.meta -> 'tags' = %s::jsonb END)",
            dump_json([tag]),
            dump_json(tag),
        )
    if where.with_embedding:
        sql.add("r.dims IS NOT NULL")
    if where.earned_at_least is not None:
        sql.add("r.access_count + r.salience >= %s", where.earned_at_least)
    for name, expected in (where.where or {}).items():
        clause, params = _where_clause(name, expected)
        sql.add(clause, *params)
    for beneath in (where.key_under, where.key_child_of):
        if beneath is not None:
            low, high = _key_bounds(beneath.rstrip("/"))
            sql.add('(r.key COLLATE "C" > %s AND r.key COLLATE "C" < %s)', low, high)
    if where.key_child_of is not None:
        depth = len(where.key_child_of.rstrip("/")) + 2
        sql.add("strpos(substr(r.key, %s), '/') = 0", depth)
    if where.has_uri is not None:
        sql.add("r.uri IS NOT NULL" if where.has_uri else "r.uri IS NULL")
    if where.any_of is not None:
        branches = [build_filter(branch, now) for branch in where.any_of]
        clause = " OR ".join(f"({branch.text()})" for branch in branches)
        sql.add(f"({clause or 'FALSE'})", *[p for branch in branches for p in branch.params])
    return sql


def add_scope(sql: Sql, scope: Scope, *, owner_column: str, tier_column: str) -> None:
    if scope.include_shared:
        clause = f"({owner_column} = %s OR {owner_column} IS NULL"
        params: list[Any] = [scope.owner]
        if scope.shared_tiers:
            clause += f" OR {tier_column} = ANY(%s::text[])"
            params.append(list(scope.shared_tiers))
        sql.add(clause + ")", *params)
    else:
        sql.add(f"{owner_column} = %s", scope.owner)
